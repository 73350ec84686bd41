"""Kafka clients against an ``isrcheck serve`` cluster: produce throughput and latency, consume throughput.

A 3-broker cluster of real processes (``ProcessCluster`` in Kafka mode, as ``isrcheck serve`` starts
it: SERVE_DEFAULTS timings, kip-320, min.insync.replicas=2) on free localhost ports in a temporary
directory, with one topic of ``--partitions`` partitions replicated on all three brokers. Then, for
each client and each acks setting, a new producer sends records of ``--record-size`` random bytes
(no key) for ``--seconds``:

* ``librdkafka`` is confluent-kafka with librdkafka's defaults (linger.ms, batch.size,
  enable.idempotence=false, queue.buffering.max.messages); ``kafka-python`` is KafkaProducer with
  its defaults (linger_ms=0, batch_size=16384, idempotence on, which it drops by itself at acks=1).
* ``flood``: records are sent as fast as the client accepts them (its buffer full: produce() waits),
  as Kafka's producer-perf-test with ``--throughput -1``. Records/s and MB/s (10^6 bytes of record
  values) are the delivered records from the first send to the last delivery callback; unsent
  records left in the client's queue at the deadline are dropped (purged, not counted). Its
  latencies are queueing in the client's own buffer (Little's law: buffer / throughput).
* ``paced``: the same producer settings at ``--paced-fraction`` of that flood throughput, sent on
  a fixed schedule (open loop), so that p50/p99 show the cluster's latency, not the client's queue.
  Latency is per record: from the send call to its delivery callback.

Then each client consumes everything produced (by partition assignment, no group), from offset 0
to the high watermark, for at most ``--seconds``. Each run also shows the CPU each process used
(share of one core) -- the machine has 2 cores for the client and the 4 node processes. Targets
(acks=all at least 10 MB/s of 1 KiB records with librdkafka's default batching; acks=all at least a
third of acks=1 with the same client) are printed beside the figures with whether they were met.

``--profile DIR`` samples every broker with py-spy (``pip install py-spy``) during the librdkafka
acks=all flood run, writes the collapsed stacks to DIR and prints each broker's top functions by
self and cumulative time.

Usage: python benchmarks/kafka.py [--seconds S] [--record-size B] [--partitions P]
           [--clients librdkafka,kafka-python] [--acks 1,all] [--paced-fraction F] [--profile DIR]
"""
from __future__ import annotations

import argparse
import os
import random
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from importlib import metadata

# run as a script, this file's directory leads sys.path and this file would shadow kafka-python
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

from isrcheck.impl.controller import CONTROLLER_ID
from isrcheck.impl.real import serve
from isrcheck.impl.real.processes import ProcessCluster

TOPIC = "bench"
CLIENTS = ("librdkafka", "kafka-python")
ACKS = {"1": 1, "all": -1}
TARGET_MB_S = 10.0        # acks=all with librdkafka's default batching, 1 KiB records
TARGET_RATIO = 1 / 3      # acks=all against acks=1, same client settings
_TICK = os.sysconf("SC_CLK_TCK")


# -- the cluster ------------------------------------------------------------------------------------
def _free_base(count: int) -> int:
    """A port BASE with BASE..BASE+count-1 all free on 127.0.0.1."""
    rng = random.Random()
    for _ in range(200):
        base = rng.randrange(20_000, 60_000)
        socks = []
        try:
            for port in range(base, base + count):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free run of ports")


def start_cluster(directory: str, partitions: int) -> tuple[ProcessCluster, str]:
    parser = argparse.ArgumentParser()
    serve.add_arguments(parser)
    args = parser.parse_args(["--replicas", "3", "--protocol", "kip-320", "--min-insync-replicas", "2",
                              "--dir", directory, "--port", str(_free_base(3)), "--topic", f"{TOPIC}:{partitions}"])
    config, directory, kafka = serve.prepare(args)
    cluster = ProcessCluster(config, directory, kafka=kafka)
    cluster.start()
    bootstrap = ",".join(f"127.0.0.1:{port}" for port in kafka["listeners"].values())
    return cluster, bootstrap


def wait_ready(bootstrap: str, partitions: int, timeout_s: float = 60.0) -> dict[int, int]:
    """Partition -> leader, once every partition has a leader and all three replicas in its ISR."""
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            topic = admin.list_topics(TOPIC, timeout=5).topics.get(TOPIC)
        except Exception:  # the brokers are still coming up
            topic = None
        if topic is not None and topic.error is None and len(topic.partitions) == partitions and all(
                p.leader >= 0 and len(p.isrs) == 3 for p in topic.partitions.values()):
            return {i: p.leader for i, p in topic.partitions.items()}
        time.sleep(0.2)
    raise RuntimeError(f"topic {TOPIC} not ready (leaders and a full ISR) within {timeout_s:.0f} s")


class CpuMeter:
    """CPU seconds of this process (the client, its librdkafka threads included) and of each node."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids

    def sample(self) -> dict[str, float]:
        out = {"client": sum(os.times()[:2])}
        for name, pid in self.pids.items():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                out[name] = (int(fields[11]) + int(fields[12])) / _TICK
            except (OSError, IndexError, ValueError):
                out[name] = 0.0
        return out

    @staticmethod
    def shares(before: dict[str, float], after: dict[str, float], seconds: float) -> dict[str, float]:
        return {k: (after[k] - before[k]) / seconds for k in before}


# -- runs -------------------------------------------------------------------------------------------
@dataclass
class Run:
    client: str
    mode: str            # flood, paced, consume
    acks: str            # "1", "all", or "" for consume
    records: int = 0
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)   # seconds
    errors: Counter = field(default_factory=Counter)
    cpu: dict[str, float] = field(default_factory=dict)
    note: str = ""

    def rate(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else 0.0

    def mb_s(self, size: int) -> float:
        return self.rate() * size / 1e6

    def pct(self, q: float) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


class _Deliveries:
    """Delivery callbacks: count, latency from the send, first send and last delivery times."""

    def __init__(self) -> None:
        self.ok = 0
        self.latencies: list[float] = []
        self.errors: Counter = Counter()
        self.first_send = 0.0
        self.last_done = 0.0
        self.lock = threading.Lock()  # kafka-python calls back from its sender thread

    def done(self, sent_at: float, error) -> None:
        now = time.perf_counter()
        with self.lock:
            if error is None:
                self.ok += 1
                self.latencies.append(now - sent_at)
                self.last_done = now
            else:
                self.errors[str(error)] += 1


def _pace(rate: float | None, start: float, sent: int) -> int:
    """How many records may go now: unlimited in a flood, the schedule's due count when paced."""
    if rate is None:
        return 1 << 30
    ahead = sent - (time.perf_counter() - start) * rate   # records sent before their time
    if ahead >= 1:
        time.sleep(min(0.001, ahead / rate))
        return 0
    return int(1 - ahead)


def produce_librdkafka(bootstrap: str, acks: str, seconds: float, value: bytes, rate: float | None) -> _Deliveries:
    from confluent_kafka import KafkaError, Producer
    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks})
    d = _Deliveries()

    def callback(sent_at: float, err, msg) -> None:
        if err is not None and err.code() == KafkaError._PURGE_QUEUE:
            return  # left unsent at the deadline
        d.done(sent_at, err)
    producer.list_topics(TOPIC, timeout=10)  # metadata before the clock starts
    produce, poll, clock = producer.produce, producer.poll, time.perf_counter
    start = d.first_send = clock()
    deadline, sent = start + seconds, 0
    while clock() < deadline:
        for _ in range(min(_pace(rate, start, sent), 1000)):
            try:
                produce(TOPIC, value, on_delivery=partial(callback, clock()))
                sent += 1
            except BufferError:  # queue.buffering.max.messages / kbytes: wait for deliveries
                poll(0.005)
                break
        poll(0)
    producer.purge(in_queue=True, in_flight=False)
    producer.flush(60)
    return d


def produce_kafka_python(bootstrap: str, acks: str, seconds: float, value: bytes, rate: float | None) -> _Deliveries:
    import logging
    from kafka import KafkaProducer
    logging.getLogger("kafka").setLevel(logging.ERROR)  # the idempotence-off-at-acks=1 warning
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=ACKS[acks])
    d = _Deliveries()
    producer.partitions_for(TOPIC)  # metadata before the clock starts
    clock = time.perf_counter
    start = d.first_send = clock()
    deadline, sent = start + seconds, 0
    # the deadline is checked between sends: send() blocks while buffer_memory is full
    while clock() < deadline:
        for _ in range(min(_pace(rate, start, sent), 100)):
            t0 = clock()
            future = producer.send(TOPIC, value)
            future.add_callback(lambda _meta, t0=t0: d.done(t0, None))
            future.add_errback(lambda exc, t0=t0: d.done(t0, type(exc).__name__))
            sent += 1
    producer.flush(60)
    producer.close(10)
    return d


PRODUCERS = {"librdkafka": produce_librdkafka, "kafka-python": produce_kafka_python}


def end_offsets(bootstrap: str, partitions: int) -> dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "isrcheck-bench-offsets",
                  "enable.auto.commit": False})
    try:
        return {p: c.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10)[1] for p in range(partitions)}
    finally:
        c.close()


def consume_librdkafka(bootstrap: str, ends: dict[int, int], seconds: float) -> tuple[int, float]:
    from confluent_kafka import Consumer, TopicPartition
    # a group.id is required by the client, but unused: assign() and no commits reach no coordinator
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "isrcheck-bench", "enable.auto.commit": False,
                  "enable.auto.offset.store": False})
    c.assign([TopicPartition(TOPIC, p, 0) for p, end in ends.items() if end > 0])
    want, got = sum(ends.values()), 0
    start = time.perf_counter()
    deadline = start + seconds
    while got < want and time.perf_counter() < deadline:
        for msg in c.consume(num_messages=10_000, timeout=0.5):
            if msg.error() is None:
                got += 1
    elapsed = time.perf_counter() - start
    c.close()
    return got, elapsed


def consume_kafka_python(bootstrap: str, ends: dict[int, int], seconds: float) -> tuple[int, float]:
    from kafka import KafkaConsumer, TopicPartition
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                      auto_offset_reset="earliest")
    parts = [TopicPartition(TOPIC, p) for p, end in ends.items() if end > 0]
    c.assign(parts)
    c.seek_to_beginning(*parts)
    want, got = sum(ends.values()), 0
    start = time.perf_counter()
    deadline = start + seconds
    while got < want and time.perf_counter() < deadline:
        for records in c.poll(timeout_ms=500, max_records=10_000).values():
            got += len(records)
    elapsed = time.perf_counter() - start
    c.close()
    return got, elapsed


CONSUMERS = {"librdkafka": consume_librdkafka, "kafka-python": consume_kafka_python}


# -- profiling --------------------------------------------------------------------------------------
def start_profilers(pids: dict[str, int], directory: str, seconds: float) -> list[tuple[str, str, subprocess.Popen]]:
    spy = shutil.which("py-spy")
    if spy is None:
        raise SystemExit("--profile needs py-spy on PATH (pip install py-spy)")
    os.makedirs(directory, exist_ok=True)
    out = []
    for name, pid in pids.items():
        if name == "controller":
            continue
        path = os.path.join(directory, f"{name}.collapsed")
        proc = subprocess.Popen([spy, "record", "--pid", str(pid), "--rate", "200", "--format", "raw",
                                 "--duration", str(max(1, int(seconds))), "--output", path],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        out.append((name, path, proc))
    return out


def _frame_name(frame: str) -> str:
    """py-spy's ``function (path/to/file.py:line)`` as ``function (file.py)``: lines differ per sample."""
    func, _, where = frame.partition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    parts = path.split("/")
    short = "/".join(parts[-2:]) if len(parts) > 1 else path
    return f"{func} ({short})"


def summarize_profile(path: str, top: int) -> tuple[int, list[tuple[str, float]], list[tuple[str, float]]]:
    """(samples, top self, top cumulative) from py-spy's collapsed stacks, shares of all samples."""
    own, total, samples = Counter(), Counter(), 0
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if not stack or not count.isdigit():
                continue
            n = int(count)
            samples += n
            frames = [_frame_name(fr) for fr in stack.split(";")]
            frames = [fr for fr in frames if not fr.startswith("process ") and not fr.startswith("thread ")]
            if not frames:
                continue
            own[frames[-1]] += n
            for fr in set(frames):
                total[fr] += n
    if not samples:
        return 0, [], []
    return (samples, [(k, v / samples) for k, v in own.most_common(top)],
            [(k, v / samples) for k, v in total.most_common(top)])


# -- report -----------------------------------------------------------------------------------------
def _cpu(run: Run, brokers: list[str]) -> str:
    return " ".join(f"{name.split()[-1] if name != 'client' else 'cl'}:{run.cpu.get(name, 0) * 100:3.0f}%"
                    for name in ["client", *brokers, "controller"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each run (default 10)")
    parser.add_argument("--record-size", type=int, default=1024, help="bytes of each record's value (default 1024)")
    parser.add_argument("--partitions", type=int, default=1, help="partitions of the topic (default 1)")
    parser.add_argument("--clients", default=",".join(CLIENTS), help=f"comma-separated, of {', '.join(CLIENTS)}")
    parser.add_argument("--acks", default="1,all", help="comma-separated, of 1, all (default 1,all)")
    parser.add_argument("--paced-fraction", type=float, default=0.5,
                        help="paced runs send at this share of the flood throughput; 0 skips them (default 0.5)")
    parser.add_argument("--profile", metavar="DIR", default=None,
                        help="py-spy every broker during the librdkafka acks=all flood run")
    parser.add_argument("--top", type=int, default=15, help="functions listed per profile (default 15)")
    parser.add_argument("--keep", action="store_true", help="keep the cluster's directory")
    args = parser.parse_args()
    clients = [c for c in args.clients.split(",") if c]
    acks_list = [a for a in args.acks.split(",") if a]
    if any(c not in CLIENTS for c in clients) or any(a not in ACKS for a in acks_list):
        parser.error(f"--clients of {', '.join(CLIENTS)}; --acks of {', '.join(ACKS)}")
    value = random.Random(1).randbytes(args.record_size)

    print("$ " + shlex.join(["python", "benchmarks/kafka.py", *sys.argv[1:]]))
    import confluent_kafka
    print(f"confluent-kafka {confluent_kafka.version()[0]} (librdkafka {confluent_kafka.libversion()[0]}), "
          f"kafka-python {metadata.version('kafka-python')}, Python {sys.version.split()[0]}, {os.cpu_count()} cores")
    directory = tempfile.mkdtemp(prefix="isrcheck-bench-kafka-")
    cluster, bootstrap = start_cluster(directory, args.partitions)
    runs: list[Run] = []
    profiles: list[tuple[str, str]] = []
    try:
        leaders = wait_ready(bootstrap, args.partitions)
        pids = {f"broker {b}": cluster.processes[b].pid for b in range(3)}
        pids["controller"] = cluster.processes[CONTROLLER_ID].pid
        brokers = [f"broker {b}" for b in range(3)]
        meter = CpuMeter(pids)
        by_leader = Counter(leaders.values())
        print(f"3 brokers (kip-320, min.insync.replicas=2, SERVE_DEFAULTS), topic {TOPIC} with "
              f"{args.partitions} partition(s), leaders: "
              + ", ".join(f"broker {b} x{n}" for b, n in sorted(by_leader.items()))
              + f"; records of {args.record_size} B values, {args.seconds:g} s per run")
        for client in clients:
            for acks in acks_list:
                modes = [("flood", None)] + ([("paced", args.paced_fraction)] if args.paced_fraction > 0 else [])
                flood_rate = None
                for mode, fraction in modes:
                    rate = None if fraction is None else max(1.0, flood_rate * fraction)
                    profilers = []
                    if args.profile and mode == "flood" and client == "librdkafka" and acks == "all":
                        profilers = start_profilers(pids, args.profile, args.seconds)
                    before, t0 = meter.sample(), time.perf_counter()
                    d = PRODUCERS[client](bootstrap, acks, args.seconds, value, rate)
                    wall = time.perf_counter() - t0
                    run = Run(client, mode, acks, d.ok, max(d.last_done - d.first_send, 1e-9), d.latencies, d.errors,
                              CpuMeter.shares(before, meter.sample(), wall))
                    if rate is not None:
                        run.note = f"target {rate:.0f}/s"
                    for name, path, proc in profilers:
                        proc.wait(timeout=args.seconds + 60)
                        profiles.append((name, path))
                    if mode == "flood":
                        flood_rate = run.rate()
                    runs.append(run)
                    print(f"  ... {client} acks={acks} {mode}: {run.rate():.0f} records/s", file=sys.stderr, flush=True)
        if clients:
            ends = end_offsets(bootstrap, args.partitions)
            for client in clients:
                before, t0 = meter.sample(), time.perf_counter()
                got, seconds = CONSUMERS[client](bootstrap, ends, args.seconds)
                wall = time.perf_counter() - t0
                run = Run(client, "consume", "", got, seconds, cpu=CpuMeter.shares(before, meter.sample(), wall))
                run.note = f"{got}/{sum(ends.values())} read"
                runs.append(run)
    finally:
        cluster.stop()
        if args.keep:
            print(f"cluster directory kept: {directory}")
        else:
            shutil.rmtree(directory, ignore_errors=True)

    size = args.record_size
    print()
    print(f"{'client':12s} {'acks':4s} {'mode':7s} {'records/s':>10s} {'MB/s':>7s} {'p50 ms':>8s} {'p99 ms':>8s}  "
          f"{'cpu (share of a core)':36s} notes")
    for r in runs:
        lat = f"{r.pct(0.50):8.1f} {r.pct(0.99):8.1f}" if r.latencies else f"{'-':>8s} {'-':>8s}"
        errors = "; ".join(f"{n} x {e}" for e, n in r.errors.most_common(3))
        notes = "; ".join(x for x in (r.note, f"errors: {errors}" if errors else "") if x)
        print(f"{r.client:12s} {r.acks or '-':4s} {r.mode:7s} {r.rate():10.0f} {r.mb_s(size):7.2f} {lat}  "
              f"{_cpu(r, [f'broker {b}' for b in range(3)]):36s} {notes}")

    print()
    print("targets:")
    flood = {(r.client, r.acks): r for r in runs if r.mode == "flood"}
    if ("librdkafka", "all") in flood:
        mb = flood["librdkafka", "all"].mb_s(size)
        ok = mb >= TARGET_MB_S and size == 1024
        print(f"  librdkafka acks=all >= {TARGET_MB_S:g} MB/s of 1 KiB records: {mb:.2f} MB/s -> "
              f"{'met' if ok else 'NOT met'}{'' if size == 1024 else ' (record size is not 1 KiB)'}")
    for client in clients:
        if (client, "all") in flood and (client, "1") in flood:
            a, b = flood[client, "all"].rate(), flood[client, "1"].rate()
            ratio = a / b if b else 0.0
            print(f"  {client} acks=all >= 1/3 of acks=1: {a:.0f} / {b:.0f} records/s = {ratio:.2f} -> "
                  f"{'met' if ratio >= TARGET_RATIO else 'NOT met'}")

    for name, path in profiles:
        samples, own, total = summarize_profile(path, args.top)
        print()
        print(f"profile of {name} ({path}, {samples} samples at 200/s; idle time in the event loop's "
              f"select counts as samples only with --idle, so shares are of busy samples)")
        print("  self:")
        for k, v in own:
            print(f"    {v:6.1%}  {k}")
        print("  cumulative:")
        for k, v in total:
            print(f"    {v:6.1%}  {k}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
