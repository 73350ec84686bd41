"""Apache Kafka under test: start time and memory, produce throughput beside isrcheck's brokers, soaks.

    python benchmarks/apache_kafka.py [--only start,throughput,agent,soak] [--kafka-version V]
                                      [--seconds S] [--rounds N] [--soak-duration S] [--seed N]

``start``: a 3-broker cluster with one controller of its own (what ``isrcheck kafka`` starts) and
three combined broker+controller nodes (a three-voter quorum), each formatted and started twice in
a new folder: seconds until every broker is registered and a 3-partition topic has leaders, and
the resident memory of every JVM then.

``throughput``: librdkafka (confluent-kafka, its default batching) floods one topic of 3
partitions, replication factor 3, min.insync.replicas 2, with 1 KiB records for ``--seconds`` at
acks=all and acks=1, against ``isrcheck serve``'s brokers (kip-320) and against Apache Kafka, one
after the other in this run on this machine: MB/s, the ratio, and the CPU seconds each cluster's
processes used per MB (``benchmarks/kafka_clients.py`` measures the same way).

``agent``: the cost of isrcheck's event recorder (the Java agent of ``isrcheck kafka --events``): the
acks=all flood above against Apache Kafka started without the agent and with it, ``--rounds`` rounds
in the order without, with, with, without... (a linear drift of the machine's load cancels): MB/s and
CPU per MB each, the ratio with/without against a target (at most 20% of the throughput), the events
and bytes recorded per second of flood and by which hooks, then ``isrcheck validate`` on each
recording: its verdict line, events/s and the candidate-state bound.

``soak``: ``isrcheck soak --cluster kafka`` on Kafka's defaults (acks=all, min.insync.replicas 2,
replication factor 3), each run ``--soak-duration`` seconds: kill, stop, pause and partition;
power losses of one broker at a time; power losses of every broker at once (lost writes
expected: Kafka does not fsync each write, so they are outside the durability budget, and said
so); unclean election with a lagging replica (the scenario of benchmarks/soak.py: outside the
budget too). Anomalies, budget, throughput and the faults played, per run; folders kept.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kafka_clients import TOPIC, CpuMeter, produce_librdkafka, start_cluster, wait_ready  # noqa: E402

from isrcheck.conformance.engines.apache.admin import cluster_view, create_topics  # noqa: E402
from isrcheck.conformance.engines.apache.cluster import (  # noqa: E402
    JVM_OPTIONS,
    KafkaCluster,
    KafkaSettings,
    _log4j_config,
    free_port_base,
    random_uuid,
)
from isrcheck.conformance.engines.apache.distribution import DEFAULT_VERSION, distribution  # noqa: E402
from isrcheck.conformance.engines.soak.driver import SoakOptions, run_soak  # noqa: E402
from isrcheck.conformance.engines.soak.faults import Fault  # noqa: E402
from isrcheck.conformance.engines.validate.validation import summary_lines, validate_path  # noqa: E402

KIB = b"x" * 1024
MB = 1e6


def rss_mb(pids) -> float:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                total += next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        except (OSError, StopIteration):
            pass
    return total / 1024


# -- start ------------------------------------------------------------------------------------------
def start_separate(dist, root: str) -> tuple[float, float]:
    folder = tempfile.mkdtemp(dir=root, prefix="separate-")
    started = time.monotonic()
    cluster = KafkaCluster(KafkaSettings(brokers=3, port=free_port_base(4), topics=[("t", 3)]), folder, dist)
    cluster.start()
    seconds = time.monotonic() - started
    memory = rss_mb(n.process.pid for n in cluster.nodes)
    cluster.stop()
    return seconds, memory


def start_combined(dist, root: str) -> tuple[float, float]:
    """Three nodes each broker and controller, a three-voter quorum: the alternative not taken."""
    folder = tempfile.mkdtemp(dir=root, prefix="combined-")
    base = free_port_base(6)
    voters = ",".join(f"{i}@127.0.0.1:{base + 3 + i}" for i in range(3))
    started = time.monotonic()
    cid, procs = random_uuid(), []
    for i in range(3):
        node = os.path.join(folder, f"node-{i}")
        os.makedirs(node)
        with open(os.path.join(node, "server.properties"), "w") as f:
            f.write(
                f"process.roles=broker,controller\nnode.id={i}\ncontroller.quorum.voters={voters}\n"
                f"listeners=PLAINTEXT://127.0.0.1:{base + i},CONTROLLER://127.0.0.1:{base + 3 + i}\n"
                f"advertised.listeners=PLAINTEXT://127.0.0.1:{base + i}\ncontroller.listener.names=CONTROLLER\n"
                f"listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n"
                f"inter.broker.listener.name=PLAINTEXT\nlog.dirs={node}/data\nmin.insync.replicas=2\n"
                f"offsets.topic.replication.factor=3\n"
            )
    jvm = (f"-Dlog4j2.configurationFile={_log4j_config()}", f"-Dkafka.logs.dir={folder}")
    formats = [
        subprocess.Popen(
            dist.java(
                "kafka.tools.StorageTool", "format", "-t", cid, "-c", f"{folder}/node-{i}/server.properties", jvm=jvm
            ),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for i in range(3)
    ]
    assert all(p.wait() == 0 for p in formats)
    for i in range(3):
        procs.append(
            subprocess.Popen(
                dist.java(
                    "kafka.Kafka",
                    f"{folder}/node-{i}/server.properties",
                    jvm=("-Xmx768m", "-Xms128m", *JVM_OPTIONS, *jvm),
                ),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
    addresses = [f"127.0.0.1:{base + i}" for i in range(3)]
    try:
        while True:
            view = cluster_view(addresses)
            if view is not None and len(view.brokers) == 3:
                break
            time.sleep(0.2)
        create_topics(",".join(addresses), [("t", 3)], 3)
        while not (cluster_view(addresses) or view).has_leaders([("t", 3)]):
            time.sleep(0.2)
        return time.monotonic() - started, rss_mb(p.pid for p in procs)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(60)


def bench_start(dist, root: str) -> None:
    print(f"\n## start: 3 brokers, format included (Apache Kafka {dist.version}; load {os.getloadavg()[0]:.1f})")
    for name, start in (
        ("separate controller (isrcheck kafka)", start_separate),
        ("combined broker+controller nodes", start_combined),
    ):
        runs = [start(dist, root) for _ in range(2)]
        print(
            f"{name:40} start {min(s for s, _ in runs):5.1f}-{max(s for s, _ in runs):5.1f} s   "
            f"memory {min(m for _, m in runs):6.0f}-{max(m for _, m in runs):6.0f} MB "
            f"({4 if 'separate' in name else 3} JVMs)",
            flush=True,
        )


# -- throughput -------------------------------------------------------------------------------------
def produce_run(bootstrap: str, pids: dict, seconds: float, acks: str) -> dict:
    """One librdkafka flood of 1 KiB records: MB/s, the cluster's CPU seconds (per MB), errors, its seconds."""
    meter = CpuMeter(pids)
    before = meter.sample()
    d = produce_librdkafka(bootstrap, acks, seconds, KIB, None)
    after = meter.sample()
    elapsed = max(1e-9, d.last_done - d.first_send)
    cluster_cpu = sum(after[k] - before[k] for k in pids)
    mb = d.ok * len(KIB) / MB
    return {
        "mb_s": mb / elapsed,
        "cpu_s": cluster_cpu,
        "cpu_s_per_mb": cluster_cpu / mb if mb else 0,
        "errors": dict(d.errors),
        "seconds": elapsed,
    }


def flood(bootstrap: str, pids: dict, seconds: float) -> dict:
    return {acks: produce_run(bootstrap, pids, seconds, acks) for acks in ("all", "1")}


def bench_throughput(dist, root: str, seconds: float) -> None:
    print(
        f"\n## throughput: librdkafka, 1 KiB records, 3 partitions, RF 3, min.insync.replicas 2, {seconds:g} s "
        f"each (load {os.getloadavg()[0]:.1f})"
    )
    results = {}
    cluster, bootstrap = start_cluster(tempfile.mkdtemp(dir=root, prefix="isrcheck-"), 3)
    try:
        wait_ready(bootstrap, 3)
        pids = {f"n{n}": p.pid for n, p in cluster.processes.items() if p is not None}
        results["isrcheck serve"] = flood(bootstrap, pids, seconds)
    finally:
        cluster.stop()
    kafka = KafkaCluster(
        KafkaSettings(brokers=3, port=free_port_base(4), topics=[(TOPIC, 3)]),
        tempfile.mkdtemp(dir=root, prefix="kafka-"),
        dist,
    )
    kafka.start()
    try:
        wait_ready(kafka.bootstrap, 3)
        results[f"Apache Kafka {dist.version}"] = flood(
            kafka.bootstrap, {n.name: n.process.pid for n in kafka.nodes}, seconds
        )
    finally:
        kafka.stop()
    for acks in ("all", "1"):
        for name, r in results.items():
            x = r[acks]
            print(
                f"acks={acks:3} {name:22} {x['mb_s']:7.2f} MB/s   cluster CPU {x['cpu_s']:6.1f} s "
                f"({x['cpu_s_per_mb']:.3f} s/MB)" + (f"   errors {x['errors']}" if x["errors"] else "")
            )
        own, theirs = (r[acks] for r in results.values())
        print(
            f"acks={acks:3} isrcheck / Kafka: {own['mb_s'] / theirs['mb_s']:.2f}x the throughput, "
            f"{own['cpu_s_per_mb'] / max(1e-9, theirs['cpu_s_per_mb']):.1f}x the CPU per MB",
            flush=True,
        )


# -- agent ------------------------------------------------------------------------------------------
AGENT_TARGET = 0.80  # the target: the agent costs at most 20% of acks=all throughput
EV = re.compile(rb'"ev":"([^"]+)"')


def event_sizes(folder: str) -> dict[str, int]:
    """The size of each node's event file now."""
    return {path: os.path.getsize(path) for path in glob.glob(os.path.join(folder, "*.jsonl"))}


def recorded_between(before: dict[str, int], after: dict[str, int]) -> tuple[Counter, Counter]:
    """Lines and bytes per event (``ev``; ``header`` for an agent's header line) appended between two sizes."""
    lines: Counter = Counter()
    size: Counter = Counter()
    for path, end in after.items():
        start = before.get(path, 0)
        with open(path, "rb") as f:
            f.seek(start)
            chunk = f.read(end - start)
        for line in chunk.splitlines():
            m = EV.search(line)
            ev = m.group(1).decode() if m else "header"
            lines[ev] += 1
            size[ev] += len(line) + 1
    return lines, size


def agent_round(dist, root: str, seconds: float, record: bool) -> dict:
    """Apache Kafka started (with the agent if ``record``), one acks=all flood, stopped; what the agent wrote
    during the flood."""
    folder = tempfile.mkdtemp(dir=root, prefix="agent-" if record else "plain-")
    events = os.path.join(folder, "events") if record else None
    kafka = KafkaCluster(
        KafkaSettings(brokers=3, port=free_port_base(4), topics=[(TOPIC, 3)]), folder, dist, events=events
    )
    kafka.start()
    try:
        wait_ready(kafka.bootstrap, 3)
        before, started = (event_sizes(events) if record else {}), time.monotonic()
        out = produce_run(kafka.bootstrap, {n.name: n.process.pid for n in kafka.nodes}, seconds, "all")
        if record:
            out["window"] = time.monotonic() - started
            out["lines"], out["bytes"] = recorded_between(before, event_sizes(events))
    finally:
        kafka.stop()
    out["events"] = events
    return out


def validate_recording(path: str) -> str:
    """``isrcheck validate`` on a recording: its verdict line, the candidate-state bound, the rates."""
    started = time.perf_counter()
    verdict, n, seconds = validate_path(path)
    total = time.perf_counter() - started
    recorded = sum(recorded_between({}, event_sizes(path))[0].values())
    verdict_line = summary_lines(verdict, n, seconds)[0]
    return (
        f"{verdict_line}\n{'':4}{n} translated events validated at {n / max(seconds, 1e-9):,.0f} events/s, "
        f"max_candidates {verdict.max_candidates}; translation and validation of its {recorded} recorded lines "
        f"{total:.1f} s ({recorded / max(total, 1e-9):,.0f} recorded lines/s)"
    )


def bench_agent(dist, root: str, seconds: float, rounds: int) -> None:
    print(
        f"\n## agent: librdkafka acks=all, 1 KiB records, 3 partitions, RF 3, min.insync.replicas 2, Apache Kafka "
        f"{dist.version} without and with the event recorder, {seconds:g} s each, {rounds} rounds ABBA "
        f"(load {os.getloadavg()[0]:.1f})"
    )
    runs: dict[bool, list] = {False: [], True: []}
    for i in range(rounds):
        for record in (False, True) if i % 2 == 0 else (True, False):  # ABBA: a linear drift cancels
            r = agent_round(dist, root, seconds, record)
            runs[record].append(r)
            line = (
                f"round {i + 1} {'with' if record else 'without':7} the agent {r['mb_s']:7.2f} MB/s   cluster CPU "
                f"{r['cpu_s_per_mb']:.3f} s/MB (load {os.getloadavg()[0]:.1f})"
            )
            if record:
                line += (
                    f"   recorded {sum(r['lines'].values()) / r['window']:,.0f} events/s, "
                    f"{sum(r['bytes'].values()) / r['window'] / 1e3:,.0f} KB/s"
                )
            print(line + (f"   errors {r['errors']}" if r["errors"] else ""), flush=True)
    plain, rec = (sum(r["mb_s"] for r in runs[k]) / rounds for k in (False, True))
    cpu = [sum(r["cpu_s_per_mb"] for r in runs[k]) / rounds for k in (False, True)]
    ratio = rec / max(plain, 1e-9)
    window = sum(r["window"] for r in runs[True])
    lines = sum((r["lines"] for r in runs[True]), Counter())
    size = sum((r["bytes"] for r in runs[True]), Counter())
    pairs = ", ".join(f"{w['mb_s'] / max(o['mb_s'], 1e-9):.2f}" for o, w in zip(runs[False], runs[True]))
    recorded, written = sum(lines.values()), sum(size.values())
    print(
        f"mean: without {plain:.2f} MB/s, with {rec:.2f} MB/s: {ratio:.2f}x the throughput (per round {pairs}), "
        f"{cpu[1] / max(cpu[0], 1e-9):.2f}x the cluster CPU per MB; recorded {recorded / window:,.0f} events/s, "
        f"{written / window / 1e3:,.0f} KB/s ({written / max(1, recorded):.0f} bytes an event)"
    )
    print("events recorded during the floods, most frequent first (per second, share of the bytes):")
    for ev, count in lines.most_common(8):
        print(f"{'':4}{ev:48} {count / window:8,.0f}/s {size[ev] / written:6.1%}")
    print(
        f"target: the agent costs at most {1 - AGENT_TARGET:.0%} of acks=all throughput "
        f"(ratio >= {AGENT_TARGET:.2f}): {'met' if ratio >= AGENT_TARGET else 'NOT met'}",
        flush=True,
    )
    for r in runs[True]:
        print(f"isrcheck validate {r['events']}:\n{'':4}{validate_recording(r['events'])}", flush=True)


# -- soak -------------------------------------------------------------------------------------------
PERIOD_S = 60.0


def every_period(duration: float, *faults: tuple) -> tuple:
    """The scenario ``faults`` ((kind, nodes, start, end, groups)) played again every PERIOD_S seconds."""
    out = []
    t = 0.0
    while t + PERIOD_S <= duration:
        out += [Fault(kind, nodes, t + start, t + end, groups) for kind, nodes, start, end, groups in faults]
        t += PERIOD_S
    return tuple(out)


def soak_runs(duration: float):
    """(name, fault kinds, scenario, max down, unclean election, what Kafka promises)."""
    # an out-of-sync replica elected: broker 2 cut off from the others (and the controller) leaves
    # every ISR, writes go on on 0 and 1, both die, the link heals; with unclean election 2, the
    # only live broker, is elected without what 0 and 1 had
    unclean = every_period(
        duration, ("partition", (2,), 5.0, 25.0, ((2,), (0, 1, 100))), ("kill", (0, 1), 20.0, 35.0, ())
    )
    power_all = every_period(duration, ("power", (0, 1, 2), 10.0, 16.0, ()))
    return [
        ("kill, stop, pause, partition", ("kill", "stop", "pause", "partition"), (), 1, False, "no anomaly"),
        ("power losses, one broker at a time", ("power",), (), 1, False, "no anomaly"),
        ("power losses of every broker at once", (), power_all, 3, False, "lost writes, outside the budget"),
        ("unclean election, a lagging replica", (), unclean, 2, True, "lost writes, outside the budget"),
    ]


def bench_soak(version: str, root: str, duration: float, seed: int, only: set | None = None) -> None:
    print(
        f"\n## soak: Apache Kafka {version}, 3 brokers, acks=all, min.insync.replicas 2, RF 3, "
        f"{duration:g} s each (load {os.getloadavg()[0]:.1f})"
    )
    for i, (name, kinds, script, max_down, unclean, expected) in enumerate(soak_runs(duration)):
        if only is not None and i not in only:
            continue
        folder = os.path.join(root, f"soak-{i}")
        result = run_soak(
            SoakOptions(
                cluster="kafka",
                kafka_version=version,
                duration_s=duration,
                faults=kinds,
                script=script,
                max_down=max_down,
                unclean_election=unclean,
                seed=seed + i,
                directory=folder,
            )
        )
        counts = result.anomaly_counts
        faults: dict = {}
        for r in result.faults:
            faults[r["kind"]] = faults.get(r["kind"], 0) + 1
        print(
            f"{name:40} {result.throughput()['sends_ok_per_s']:6.1f} sends/s  faults {faults}  anomalies "
            f"{[f'{a} ({counts.get(a, 1)})' for a in result.anomalies] or 'none'}  outside the budget "
            f"{[f'{a} ({counts.get(a, 1)})' for a in result.beyond_budget] or 'none'}  (expected: {expected}); "
            f"{folder}",
            flush=True,
        )
        for reason in dict.fromkeys(result.budget.values()):
            print(f"{'':40} outside a budget: {reason}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="start,throughput,agent,soak")
    parser.add_argument("--kafka-version", default=DEFAULT_VERSION)
    parser.add_argument("--seconds", type=float, default=20.0, help="each throughput run (default 20)")
    parser.add_argument("--soak-duration", type=float, default=600.0, help="each soak run (default 600)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=2, help="agent: rounds of (without, with) the agent (default 2)")
    parser.add_argument("--soaks", default=None, help="comma-separated indexes of the soak runs to do (default all)")
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the runs' folders (brokers' logs, soak results); they can take tens of GB",
    )
    args = parser.parse_args()
    parts = set(args.only.split(","))
    dist = distribution(args.kafka_version)
    root = tempfile.mkdtemp(prefix="isrcheck-apache-bench-")
    print(
        f"$ python benchmarks/apache_kafka.py {' '.join(sys.argv[1:])}\nfolders in {root}; "
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}"
    )
    try:
        if "start" in parts:
            bench_start(dist, root)
        if "throughput" in parts:
            bench_throughput(dist, root, args.seconds)
        if "agent" in parts:
            bench_agent(dist, root, args.seconds, args.rounds)
        if "soak" in parts:
            bench_soak(
                dist.version,
                root,
                args.soak_duration,
                args.seed,
                None if args.soaks is None else {int(i) for i in args.soaks.split(",")},
            )
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
            print(f"removed {root} (--keep keeps it)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
