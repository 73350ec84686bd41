"""Kafka clients against an ``isrcheck serve`` cluster: produce throughput and latency, consume throughput.

A 3-broker cluster of real processes (``ProcessCluster`` in Kafka mode, as ``isrcheck serve`` starts
it: SERVE_DEFAULTS timings, kip-320, min.insync.replicas=2) on free localhost ports in a temporary
directory, with one topic of ``--partitions`` partitions replicated on all three brokers. Then, for
each client and each acks setting, a new producer sends records of ``--record-size`` random bytes
(no key) for ``--seconds``:

* ``librdkafka`` is confluent-kafka with librdkafka's defaults (linger.ms, batch.size,
  enable.idempotence=false, queue.buffering.max.messages); ``kafka-python`` is KafkaProducer with
  its defaults (linger_ms=0, batch_size=16384, idempotence on, which it drops by itself at acks=1).
* ``flood``: records are sent as fast as the client accepts them (with its buffer full, librdkafka's
  produce() refuses and the loop polls for deliveries, kafka-python's send() blocks), as Kafka's
  producer-perf-test with ``--throughput -1``. Records/s and MB/s (10^6 bytes of record
  values) are the delivered records from the first send to the last delivery callback; unsent
  records left in the client's queue at the deadline are dropped (purged, not counted). Its
  latencies are queueing in the client's own buffer (Little's law: buffer / throughput).
* ``paced``: the same producer settings at ``--paced-fraction`` of that flood throughput, sent on
  a fixed schedule (open loop), so that p50/p99 show the cluster's latency (and the client's own
  batching wait: librdkafka's linger.ms is 5), not the client's queue; a run whose client could not
  keep to the schedule says so.
  Latency is per record, from the send to the delivery callback: librdkafka's own message latency
  (produce() to the broker's acknowledgement, read in the callback), kafka-python's from send() to
  its future's callback.

Then each client consumes everything produced (by partition assignment, no group), from offset 0
to the high watermark, for at most ``--seconds``. Each run also shows the CPU each process used
(% of one core: the client process with its librdkafka threads, brokers 0-2, the controller) and the
machine's busy time beyond them ("oth": other programs and kernel threads, which the figures then
had to share the cores with) -- the machine has 2 cores for the client and the 4 node processes. Targets
(acks=all at least 10 MB/s of 1 KiB records with librdkafka's default batching; acks=all at least a
third of acks=1 with the same client) are printed beside the figures with whether they were met.

``--profile DIR`` profiles every broker during the librdkafka acks=all flood run and prints each
one's top functions by self and cumulative time, its files left in DIR. ``--profiler py-spy`` (the
default; ``pip install py-spy``) samples each broker from outside (``py-spy record --native``): wall
time off the event loop's wait, split into system calls and libc's copies. ``--profiler cprofile``
starts the nodes under cProfile on their thread's CPU time, switched on for that run only (SIGUSR1,
SIGUSR2 writes the stats): exact call counts, but it slows the broker down about twofold.

Usage: python benchmarks/kafka_clients.py [--seconds S] [--record-size B] [--partitions P]
           [--clients librdkafka,kafka-python] [--acks 1,all] [--paced-fraction F]
           [--profile DIR [--profiler py-spy|cprofile] [--top N]] [--keep]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from importlib import metadata

# run as a script, this file's directory leads sys.path and this file would shadow kafka-python
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

from isrcheck.conformance.cli import serve  # noqa: E402 (after the sys.path edit above)
from isrcheck.impl.controller import CONTROLLER_ID  # noqa: E402 (after the sys.path edit above)
from isrcheck.impl.real.processes import ProcessCluster  # noqa: E402 (after the sys.path edit above)

TOPIC = "bench"
CLIENTS = ("librdkafka", "kafka-python")
ACKS = {"1": 1, "all": -1}
TARGET_MB_S = 10.0  # acks=all with librdkafka's default batching, 1 KiB records
TARGET_RATIO = 1 / 3  # acks=all against acks=1, same client settings
_TICK = os.sysconf("SC_CLK_TCK")


# -- the cluster ------------------------------------------------------------------------------------
def _free_base(count: int) -> int:
    """A port BASE with BASE..BASE+count-1 all free on 127.0.0.1."""
    from isrcheck.conformance.engines.apache.cluster import free_port_base

    return free_port_base(count)


def start_cluster(directory: str, partitions: int) -> tuple[ProcessCluster, str]:
    parser = argparse.ArgumentParser()
    serve.add_arguments(parser)
    args = parser.parse_args(
        [
            "--replicas",
            "3",
            "--protocol",
            "kip-320",
            "--min-insync-replicas",
            "2",
            "--dir",
            directory,
            "--port",
            str(_free_base(3)),
            "--topic",
            f"{TOPIC}:{partitions}",
        ]
    )
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
        if (
            topic is not None
            and topic.error is None
            and len(topic.partitions) == partitions
            and all(p.leader >= 0 and len(p.isrs) == 3 for p in topic.partitions.values())
        ):
            return {i: p.leader for i, p in topic.partitions.items()}
        time.sleep(0.2)
    raise RuntimeError(f"topic {TOPIC} not ready (leaders and a full ISR) within {timeout_s:.0f} s")


class CpuMeter:
    """CPU seconds of this process (the client, its librdkafka threads included) and of each node."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids

    def sample(self) -> dict[str, float]:
        out = {"client": sum(os.times()[:2]), "machine": 0.0}
        try:
            with open("/proc/stat") as f:
                ticks = [int(x) for x in f.readline().split()[1:]]
            out["machine"] = (sum(ticks[:8]) - ticks[3] - ticks[4]) / _TICK  # all but idle and iowait
        except (OSError, ValueError, IndexError):
            pass
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
        """Each process's CPU as a share of one core; ``other``: the rest of the machine's busy time
        (other programs on this machine, which the figures then share it with)."""
        out = {k: (after[k] - before[k]) / seconds for k in before}
        machine = out.pop("machine")
        out["other"] = max(0.0, machine - sum(out.values())) if machine else float("nan")
        return out


# -- runs -------------------------------------------------------------------------------------------
@dataclass
class Run:
    client: str
    mode: str  # flood, paced, consume
    acks: str  # "1", "all", or "" for consume
    records: int = 0
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)  # seconds
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
    ahead = sent - (time.perf_counter() - start) * rate  # records sent before their time
    if ahead >= 1:
        time.sleep(min(0.001, ahead / rate))
        return 0
    return int(1 - ahead)


def produce_librdkafka(bootstrap: str, acks: str, seconds: float, value: bytes, rate: float | None) -> _Deliveries:
    from confluent_kafka import KafkaError, Producer

    d = _Deliveries()
    latencies, errors, clock, purged = d.latencies, d.errors, time.perf_counter, KafkaError._PURGE_QUEUE

    def delivered(err, msg) -> None:
        """One callback for every record, no closure per record (the client shares the 2 cores with
        the brokers); the latency is librdkafka's own, from produce() to the broker's acknowledgement."""
        if err is None:
            latencies.append(msg.latency() or 0.0)
            d.last_done = clock()
        elif err.code() != purged:  # purged: left unsent at the deadline, not counted
            errors[err.str()] += 1

    producer = Producer({"bootstrap.servers": bootstrap, "acks": acks, "on_delivery": delivered})
    producer.list_topics(TOPIC, timeout=10)  # metadata before the clock starts
    produce, poll = producer.produce, producer.poll
    start = d.first_send = clock()
    deadline, sent = start + seconds, 0
    while clock() < deadline:
        for _ in range(min(_pace(rate, start, sent), 1000)):
            try:
                produce(TOPIC, value)
                sent += 1
            except BufferError:  # queue.buffering.max.messages / kbytes: wait for deliveries
                poll(0.005)
                break
        poll(0)
    producer.purge(in_queue=True, in_flight=False)
    producer.flush(60)
    d.ok = len(latencies)
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

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "isrcheck-bench-offsets", "enable.auto.commit": False})
    try:
        return {p: c.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10)[1] for p in range(partitions)}
    finally:
        c.close()


def consume_librdkafka(bootstrap: str, ends: dict[int, int], seconds: float) -> tuple[int, float]:
    from confluent_kafka import Consumer, TopicPartition

    # a group.id is required by the client, but unused: assign() and no commits reach no coordinator
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "isrcheck-bench",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
        }
    )
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

    c = KafkaConsumer(
        bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False, auto_offset_reset="earliest"
    )
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
_PROFILED_NODE = """\
import cProfile, os, signal, sys, time
from isrcheck.impl.real import node
name = sys.argv[sys.argv.index("--node") + 1]
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"node-{name}.prof")
profiler = cProfile.Profile(time.thread_time_ns, 1e-9)   # CPU time of the node's (only) thread
signal.signal(signal.SIGUSR1, lambda *_: profiler.enable())
def stop(*_):
    profiler.disable()
    profiler.dump_stats(out + ".tmp")
    os.replace(out + ".tmp", out)
signal.signal(signal.SIGUSR2, stop)
sys.exit(node.main(sys.argv[1:]))
"""


class Profiler:
    """Profiles the brokers during the librdkafka acks=all flood run (``start``/``finish``) and
    ``report``s each one's top functions by self and cumulative time."""

    def __init__(self, kind: str, directory: str, top: int) -> None:
        self.kind, self.directory, self.top = kind, os.path.abspath(directory), top
        os.makedirs(self.directory, exist_ok=True)
        self.results: list[tuple[str, str]] = []
        self._spies: list[tuple[str, str, subprocess.Popen]] = []
        self._pids: dict[str, int] = {}
        if kind == "py-spy" and shutil.which("py-spy") is None:
            raise SystemExit("--profiler py-spy needs py-spy on PATH (pip install py-spy)")

    def launching(self):
        """A context in which ProcessCluster starts its nodes: under cProfile (disabled until ``start``)."""
        profiler = self

        class _Launching:
            def __enter__(self):
                self.saved = sys.executable
                if profiler.kind == "cprofile":
                    script = os.path.join(profiler.directory, "profiled_node.py")
                    with open(script, "w") as f:
                        f.write(_PROFILED_NODE)
                    wrapper = os.path.join(profiler.directory, "python")
                    with open(wrapper, "w") as f:  # called as: python -m isrcheck.impl.real.node ARGS
                        f.write(f'#!/bin/sh\nshift 2\nexec {shlex.quote(self.saved)} {shlex.quote(script)} "$@"\n')
                    os.chmod(wrapper, 0o755)
                    sys.executable = wrapper

            def __exit__(self, *exc):
                sys.executable = self.saved

        return _Launching()

    def start(self, pids: dict[str, int], seconds: float) -> None:
        self._pids = {name: pid for name, pid in pids.items() if name != "controller"}
        for name, pid in self._pids.items():
            if self.kind == "cprofile":
                os.kill(pid, signal.SIGUSR1)
                continue
            path = os.path.join(self.directory, f"{name.replace(' ', '-')}.collapsed")
            proc = subprocess.Popen(
                [
                    shutil.which("py-spy"),
                    "record",
                    "--native",
                    "--pid",
                    str(pid),
                    "--rate",
                    "200",
                    "--format",
                    "raw",
                    "--duration",
                    str(max(1, int(seconds))),
                    "--output",
                    path,
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            self._spies.append((name, path, proc))

    def finish(self, seconds: float) -> None:
        for name, path, proc in self._spies:
            proc.wait(timeout=seconds + 60)
            self.results.append((name, path))
        for name, pid in self._pids.items():
            if self.kind == "cprofile":
                path = os.path.join(self.directory, f"node-{name.split()[-1]}.prof")
                os.kill(pid, signal.SIGUSR2)
                deadline = time.monotonic() + 30
                while not os.path.exists(path) and time.monotonic() < deadline:
                    time.sleep(0.1)
                self.results.append((name, path))

    def report(self, cpu: dict[str, float]) -> None:
        for name, path in self.results:
            print()
            if self.kind == "cprofile":
                self._report_cprofile(name, path, cpu.get(name, 0.0))
            else:
                self._report_spy(name, path, cpu.get(name, 0.0))

    def _report_cprofile(self, name: str, path: str, cpu: float) -> None:
        import pstats

        stats = pstats.Stats(path)
        total = stats.total_tt
        print(
            f"cProfile of {name} ({path}): {total:.2f} s of CPU time in its thread ({cpu:.0%} of a core over "
            f"the run, by /proc); shares are of that CPU time, ncalls in brackets"
        )
        loop = {
            "_run_once",
            "_run",
            "run_forever",
            "run_until_complete",
            "<method 'run' of '_contextvars.Context' objects>",
        }
        for title, index in (("self (tottime)", 2), ("cumulative (cumtime; the event loop's own frames left out)", 3)):
            print(f"  {title}:")
            rows = [(fn, row) for fn, row in stats.stats.items() if index == 2 or fn[2] not in loop]
            for fn, row in sorted(rows, key=lambda e: e[1][index], reverse=True)[: self.top]:
                print(f"    {row[index] / total:6.1%} {row[index]:7.2f} s  [{row[1]:>7}]  {_pstats_name(fn)}")

    def _report_spy(self, name: str, path: str, cpu: float) -> None:
        """Self time by the innermost Python function, with the part of it spent in a native leaf
        that is a system call or libc's memmove (py-spy --native); cumulative by Python function."""
        own, cumulative, parts = Counter(), Counter(), Counter()
        samples = idle = 0
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                stack, _, count = line.rstrip("\n").rpartition(" ")
                if not stack or not count.isdigit():
                    continue
                frames = [fr for fr in stack.split(";") if not fr.startswith(("process ", "thread "))]
                python = [_frame_name(fr) for fr in frames if _PY_FRAME.search(fr)]
                if not python:
                    continue
                n, leaf = int(count), frames[-1]
                if "epoll_wait" in leaf or python[-1].startswith("EpollSelector.select"):
                    idle += n  # waiting for the next event: py-spy does not always see it as idle
                    continue
                samples += n
                own[python[-1]] += n
                kind = _native_kind(leaf) if not _PY_FRAME.search(leaf) else None
                if kind is not None:
                    parts[python[-1], kind] += n
                    parts["", kind] += n
                for fr in set(python):
                    cumulative[fr] += n
        total = max(samples, 1)
        print(
            f"py-spy of {name} ({path}): {samples} busy samples at 200/s (+{idle} waiting in epoll, left out), "
            f"{cpu:.0%} of a core by /proc; shares are of the busy samples: wall time off epoll, on a CPU or "
            f"waiting for one. Of all busy samples {parts['', 'syscall'] / total:.0%} were in a system call "
            f"(socket send/recv, file write/pread: the kernel's copies and TCP) and "
            f"{parts['', 'copy'] / total:.0%} in unnamed libc code (libc*: perf shows it is mostly memmove, "
            f"i.e. copies of the records)"
        )
        print("  self (innermost Python function; the part of it in a system call, and in libc*):")
        print(f"    {'share':>6s} {'syscall':>7s} {'libc*':>7s}  function")
        for k, v in own.most_common(self.top):
            print(f"    {v / total:6.1%} {parts[k, 'syscall'] / total:7.1%} {parts[k, 'copy'] / total:7.1%}  {k}")
        print("  cumulative (the event loop's own frames left out):")
        for k, v in [(k, v) for k, v in cumulative.most_common() if k.split(" (")[0] not in _LOOP_FRAMES][: self.top]:
            print(f"    {v / total:6.1%}  {k}")


_LOOP_FRAMES = {
    "_run_module_as_main",
    "_run_code",
    "<module>",
    "main",
    "run",
    "Runner.run",
    "BaseEventLoop.run_until_complete",
    "BaseEventLoop.run_forever",
    "BaseEventLoop._run_once",
    "Handle._run",
}
_PY_FRAME = re.compile(r"\.py:\d+\)$|\(<(frozen [\w.]+|string|codegen_\w+)>(:\d+)?\)$")
_SYSCALLS = {
    "send",
    "recv",
    "write",
    "read",
    "pread64",
    "pwrite64",
    "writev",
    "readv",
    "sendmsg",
    "recvmsg",
    "sendto",
    "recvfrom",
    "fsync",
    "fdatasync",
    "openat",
    "open",
    "close",
    "brk",
    "mmap",
    "munmap",
    "madvise",
    "epoll_ctl",
    "fstat",
    "rename",
    "ftruncate",
}


def _native_kind(frame: str) -> str | None:
    """A native leaf frame as py-spy names it: a system call, libc's memmove (py-spy leaves libc's
    AVX copy routines unnamed: an address in libc.so), or neither (None)."""
    func, _, lib = frame.partition(" (")
    func = func.strip()
    if func in _SYSCALLS or func.lstrip("_").removeprefix("libc_") in _SYSCALLS:
        return "syscall"
    if "memmove" in func or "memcpy" in func or (func.startswith("0x") and "libc" in lib):
        return "copy"
    return None


def _pstats_name(fn: tuple[str, int, str]) -> str:
    path, line, func = fn
    if path == "~":
        return func
    parts = path.split("/")
    return f"{func} ({'/'.join(parts[-2:])}:{line})"


def _frame_name(frame: str) -> str:
    """py-spy's ``function (path/to/file.py:line)`` as ``function (dir/file.py)``: lines differ per sample."""
    func, _, where = frame.partition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    parts = path.split("/")
    return f"{func} ({'/'.join(parts[-2:])})"


# -- report -----------------------------------------------------------------------------------------
def _cpu(run: Run) -> str:
    """client, brokers 0-2, controller, and the rest of the machine, in % of one core."""
    return " ".join(
        f"{run.cpu.get(name, 0) * 100:3.0f}"
        for name in ["client", "broker 0", "broker 1", "broker 2", "controller", "other"]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each run (default 10)")
    parser.add_argument("--record-size", type=int, default=1024, help="bytes of each record's value (default 1024)")
    parser.add_argument("--partitions", type=int, default=1, help="partitions of the topic (default 1)")
    parser.add_argument("--clients", default=",".join(CLIENTS), help=f"comma-separated, of {', '.join(CLIENTS)}")
    parser.add_argument("--acks", default="1,all", help="comma-separated, of 1, all (default 1,all)")
    parser.add_argument(
        "--paced-fraction",
        type=float,
        default=0.5,
        help="paced runs send at this share of the flood throughput; 0 skips them (default 0.5)",
    )
    parser.add_argument(
        "--profile",
        metavar="DIR",
        default=None,
        help="profile every broker during the librdkafka acks=all flood run, files in DIR",
    )
    parser.add_argument(
        "--profiler",
        choices=("py-spy", "cprofile"),
        default="py-spy",
        help="py-spy: sampled wall time off epoll (needs py-spy); cprofile: each node under "
        "cProfile on its thread's CPU time, on only for the run (default py-spy)",
    )
    parser.add_argument("--top", type=int, default=15, help="functions listed per profile (default 15)")
    parser.add_argument("--keep", action="store_true", help="keep the cluster's directory")
    args = parser.parse_args()
    clients = [c for c in args.clients.split(",") if c]
    acks_list = [a for a in args.acks.split(",") if a]
    if any(c not in CLIENTS for c in clients) or any(a not in ACKS for a in acks_list):
        parser.error(f"--clients of {', '.join(CLIENTS)}; --acks of {', '.join(ACKS)}")
    if args.profile and not ("librdkafka" in clients and "all" in acks_list):
        parser.error("--profile profiles the librdkafka acks=all run: --clients and --acks must include it")
    value = random.Random(1).randbytes(args.record_size)

    print("$ " + shlex.join(["python", "benchmarks/kafka_clients.py", *sys.argv[1:]]))
    import confluent_kafka

    print(
        f"confluent-kafka {confluent_kafka.version()[0]} (librdkafka {confluent_kafka.libversion()[0]}), "
        f"kafka-python {metadata.version('kafka-python')}, Python {sys.version.split()[0]}, {os.cpu_count()} cores"
    )
    directory = tempfile.mkdtemp(prefix="isrcheck-bench-kafka-")
    profiler = Profiler(args.profiler, args.profile, args.top) if args.profile else None
    if profiler is not None:
        with profiler.launching():
            cluster, bootstrap = start_cluster(directory, args.partitions)
    else:
        cluster, bootstrap = start_cluster(directory, args.partitions)
    runs: list[Run] = []
    profiled: Run | None = None
    try:
        leaders = wait_ready(bootstrap, args.partitions)
        pids = {f"broker {b}": cluster.processes[b].pid for b in range(3)}
        pids["controller"] = cluster.processes[CONTROLLER_ID].pid

        meter = CpuMeter(pids)
        by_leader = Counter(leaders.values())
        print(
            f"3 brokers (kip-320, min.insync.replicas=2, SERVE_DEFAULTS), topic {TOPIC} with "
            f"{args.partitions} partition(s), leaders: "
            + ", ".join(f"broker {b} x{n}" for b, n in sorted(by_leader.items()))
            + f"; records of {args.record_size} B values, {args.seconds:g} s per run"
        )
        for client in clients:
            for acks in acks_list:
                modes = [("flood", None)] + ([("paced", args.paced_fraction)] if args.paced_fraction > 0 else [])
                flood_rate = None
                for mode, fraction in modes:
                    rate = None if fraction is None else max(1.0, flood_rate * fraction)
                    profiling = profiler is not None and (client, acks, mode) == ("librdkafka", "all", "flood")
                    if profiling:
                        profiler.start(pids, args.seconds)
                    before, t0 = meter.sample(), time.perf_counter()
                    d = PRODUCERS[client](bootstrap, acks, args.seconds, value, rate)
                    wall = time.perf_counter() - t0
                    run = Run(
                        client,
                        mode,
                        acks,
                        d.ok,
                        max(d.last_done - d.first_send, 1e-9),
                        d.latencies,
                        d.errors,
                        CpuMeter.shares(before, meter.sample(), wall),
                    )
                    if rate is not None:
                        run.note = f"target {rate:.0f}/s"
                        if run.rate() < 0.95 * rate:  # the client fell behind its schedule
                            run.note += " NOT kept: the latencies include the client's queue"
                    if profiling:
                        profiler.finish(args.seconds)
                        profiled = run
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
    print(f"{'':44s}{'':>16s}  CPU, % of one core")
    print(
        f"{'client':12s} {'acks':4s} {'mode':7s} {'records/s':>10s} {'MB/s':>7s} {'p50 ms':>8s} {'p99 ms':>8s}  "
        f"{'cl  b0  b1  b2  ctl oth':24s} notes"
    )
    for r in runs:
        lat = f"{r.pct(0.50):8.1f} {r.pct(0.99):8.1f}" if r.latencies else f"{'-':>8s} {'-':>8s}"
        errors = "; ".join(f"{n} x {e}" for e, n in r.errors.most_common(3))
        notes = "; ".join(x for x in (r.note, f"errors: {errors}" if errors else "") if x)
        print(
            f"{r.client:12s} {r.acks or '-':4s} {r.mode:7s} {r.rate():10.0f} {r.mb_s(size):7.2f} {lat}  "
            f"{_cpu(r):24s} {notes}"
        )

    contended = [r for r in runs if r.cpu.get("other", 0) > 0.25]
    if contended:
        print(
            f"  note: {len(contended)} of {len(runs)} runs shared the machine with other programs (oth > 25% "
            f"of a core): their figures are lower than this cluster alone would give"
        )
    print()
    print("targets:")
    flood = {(r.client, r.acks): r for r in runs if r.mode == "flood"}
    if ("librdkafka", "all") in flood:
        mb = flood["librdkafka", "all"].mb_s(size)
        ok = mb >= TARGET_MB_S and size == 1024
        print(
            f"  librdkafka acks=all >= {TARGET_MB_S:g} MB/s of 1 KiB records: {mb:.2f} MB/s -> "
            f"{'met' if ok else 'NOT met'}{'' if size == 1024 else ' (record size is not 1 KiB)'}"
        )
    for client in clients:
        if (client, "all") in flood and (client, "1") in flood:
            a, b = flood[client, "all"].rate(), flood[client, "1"].rate()
            ratio = a / b if b else 0.0
            print(
                f"  {client} acks=all >= 1/3 of acks=1: {a:.0f} / {b:.0f} records/s = {ratio:.2f} -> "
                f"{'met' if ratio >= TARGET_RATIO else 'NOT met'}"
            )

    if profiler is not None and profiled is not None:
        print()
        print(
            f"profiles of the brokers during the librdkafka acks=all flood run ({args.profiler}; "
            f"leaders: {', '.join(f'partition {p} on broker {b}' for p, b in sorted(leaders.items()))})"
        )
        profiler.report(profiled.cpu)
    return 0


if __name__ == "__main__":
    sys.exit(main())
