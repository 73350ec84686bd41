"""The soak history checker's speed: a seeded synthetic history of 1,000,000 events read and
checked on one core (target: under one minute, ``load_history`` and ``check`` together).

    python benchmarks/soak_checker.py [--events N] [--seed S] [--partitions P] [--producers N]
                                      [--consumers N] [--keep FILE]

The history is what a clean run looks like: producers send to random partitions (about 3% of the
sends fail, 3% end indeterminate, half of those still appended); consumers poll their assignment
from their position (a few polls fail or end indeterminate, some reassign and seek), each client
doing one operation at a time with the clients' operations interleaved; at the end a fresh consumer
reads every partition from the beginning (the final read). The checker must find no anomaly: the
script exits 1 if it does. The process is pinned to one CPU where the OS allows it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import sys
import tempfile
import time
from pathlib import Path

from isrcheck.conformance.engines.soak.checker import check, load_history

TARGET_S = 60.0
FINAL_CHUNK = 2000  # records per partition in one poll of the final read
FINAL_PROCESS = 10_000


class Run:
    """A synthetic cluster (one log per partition) and its clients, emitting history events."""

    def __init__(self, seed: int, partitions: int, producers: int, consumers: int) -> None:
        self.rng = random.Random(seed)
        self.logs: list[list[int]] = [[] for _ in range(partitions)]
        self.producers = list(range(producers))
        self.consumers = list(range(1000, 1000 + consumers))
        self.events: list[dict] = []
        self.time = 0
        self.next_value = 0
        self.pending: dict[int, dict] = {}  # process -> its open invoke
        self.assignment = {c: self._random_assignment() for c in self.consumers}
        self.position = {c: {p: 0 for p in self.assignment[c]} for c in self.consumers}

    def _random_assignment(self) -> list[int]:
        n = len(self.logs)
        return sorted(self.rng.sample(range(n), self.rng.randint(1, min(4, n))))

    def emit(self, process: int, type_: str, f: str, **fields) -> dict:
        self.time += self.rng.randint(1_000, 200_000)
        event = {"index": len(self.events), "time": self.time, "process": process, "type": type_, "f": f, **fields}
        self.events.append(event)
        return event

    def step(self) -> None:
        """One event: a random client invokes an operation, or completes its open one."""
        process = self.rng.choice(self.producers) if self.rng.random() < 0.6 else self.rng.choice(self.consumers)
        invoke = self.pending.pop(process, None)
        if invoke is None:
            self.pending[process] = self._invoke(process)
        elif invoke["f"] == "send":
            self._complete_send(invoke)
        elif invoke["f"] == "poll":
            self._complete_poll(invoke)
        else:
            self._complete_assign(invoke)

    def _invoke(self, process: int) -> dict:
        if process in self.assignment:
            if self.rng.random() < 0.02:
                return self.emit(process, "invoke", "assign", partitions=self._random_assignment())
            return self.emit(process, "invoke", "poll", partitions=self.assignment[process])
        self.next_value += 1
        return self.emit(process, "invoke", "send", partition=self.rng.randrange(len(self.logs)), value=self.next_value)

    def _complete_send(self, invoke: dict) -> None:
        p, value, roll = invoke["partition"], invoke["value"], self.rng.random()
        if roll < 0.03:
            self.emit(invoke["process"], "fail", "send", partition=p, value=value, error="NOT_ENOUGH_REPLICAS")
            return
        if roll < 0.06:  # indeterminate: half of these reached the log anyway
            if self.rng.random() < 0.5:
                self.logs[p].append(value)
            self.emit(invoke["process"], "info", "send", partition=p, value=value, error="timeout")
            return
        self.logs[p].append(value)
        self.emit(invoke["process"], "ok", "send", partition=p, value=value, offset=len(self.logs[p]) - 1)

    def _read(self, process: int, limit: int) -> dict[str, list[list[int]]]:
        records = {}
        for p, at in self.position[process].items():
            taken = self.logs[p][at : at + self.rng.randint(0, limit)]
            if taken:
                records[str(p)] = [[at + i, v] for i, v in enumerate(taken)]
                self.position[process][p] = at + len(taken)
        return records

    def _complete_poll(self, invoke: dict) -> None:
        process, roll = invoke["process"], self.rng.random()
        if roll < 0.01:
            self.emit(process, "fail", "poll", error="not coordinator")
        elif roll < 0.02:  # the consumer advanced, but the answer never came back
            self._read(process, 8)
            self.emit(process, "info", "poll", error="timeout")
        else:
            self.emit(process, "ok", "poll", records=self._read(process, 8))

    def _complete_assign(self, invoke: dict) -> None:
        process, partitions = invoke["process"], invoke["partitions"]
        self.assignment[process] = partitions
        # a new assignment may seek: to a recent offset (a consumer catching up re-reads a little)
        self.position[process] = {p: max(0, len(self.logs[p]) - self.rng.randint(0, 40)) for p in partitions}
        self.emit(process, "ok", "assign", partitions=partitions)

    def final_read_events(self) -> int:
        return 2 + 2 * max(1, -(-max(map(len, self.logs)) // FINAL_CHUNK))

    def final_read(self, total: int) -> None:
        """Complete every open operation, then a fresh consumer reads every partition from the
        beginning; empty final polls fill the history up to ``total`` events."""
        complete = {"send": self._complete_send, "poll": self._complete_poll, "assign": self._complete_assign}
        for invoke in list(self.pending.values()):
            self.pending.pop(invoke["process"])
            complete[invoke["f"]](invoke)
        everything = list(range(len(self.logs)))
        self.emit(FINAL_PROCESS, "invoke", "assign", partitions=everything)
        self.emit(FINAL_PROCESS, "ok", "assign", partitions=everything)
        self.position[FINAL_PROCESS] = {p: 0 for p in everything}
        while len(self.events) + 2 <= total:
            self.emit(FINAL_PROCESS, "invoke", "poll", partitions=everything, final=True)
            self.emit(FINAL_PROCESS, "ok", "poll", records=self._read_all(FINAL_PROCESS), final=True)
        if len(self.events) < total:  # an odd total: the last poll never completes
            self.emit(FINAL_PROCESS, "invoke", "poll", partitions=everything, final=True)

    def _read_all(self, process: int) -> dict:
        records = {}
        for p, at in self.position[process].items():
            taken = self.logs[p][at : at + FINAL_CHUNK]
            if taken:
                records[str(p)] = [[at + i, v] for i, v in enumerate(taken)]
                self.position[process][p] = at + len(taken)
        return records


def synthetic_history(events: int, seed: int, partitions: int, producers: int, consumers: int) -> list[dict]:
    run = Run(seed, partitions, producers, consumers)
    while len(run.events) + len(run.pending) + run.final_read_events() < events:
        run.step()
    run.final_read(events)
    assert all(at == len(run.logs[p]) for p, at in run.position[FINAL_PROCESS].items()), "final read fell short"
    return run.events


def pin_to_one_core() -> str:
    if hasattr(os, "sched_setaffinity"):
        cpu = min(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpu})
        return f"pinned to CPU {cpu}"
    return "not pinned (no sched_setaffinity here)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="events in the history (default 1,000,000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--producers", type=int, default=8)
    parser.add_argument("--consumers", type=int, default=4)
    parser.add_argument("--keep", metavar="FILE", default=None, help="write the history here and keep it")
    args = parser.parse_args()
    if args.events < 10 or min(args.partitions, args.producers, args.consumers) < 1:
        parser.error("--events at least 10; --partitions, --producers, --consumers at least 1")

    print("$ " + shlex.join(["python", "benchmarks/soak_checker.py", *sys.argv[1:]]))
    print(f"Python {sys.version.split()[0]}, {pin_to_one_core()}")
    t0 = time.perf_counter()
    history = synthetic_history(args.events, args.seed, args.partitions, args.producers, args.consumers)
    generated = time.perf_counter() - t0
    with tempfile.TemporaryDirectory(prefix="isrcheck-bench-soak-checker-") as scratch:
        path = Path(args.keep or Path(scratch) / "history.jsonl")
        with path.open("w") as f:
            for event in history:
                f.write(json.dumps(event, separators=(",", ":")) + "\n")
        size = path.stat().st_size
        del history
        t1 = time.perf_counter()
        ops = load_history(path)
        t2 = time.perf_counter()
        result = check(ops)
        t3 = time.perf_counter()
    n, load_s, check_s = len(ops), t2 - t1, t3 - t2
    s = result.stats
    print(
        f"history: {n:,} events, {size / 1e6:.0f} MB (seed {args.seed}; {args.partitions} partitions, "
        f"{args.producers} producers, {args.consumers} consumers; {s['sends']:,} sends: {s['sends-ok']:,} ok, "
        f"{s['sends-fail']:,} fail, {s['sends-info']:,} info; {s['polls-ok']:,} ok polls returning "
        f"{s['records-polled']:,} records, {s['final-polls']:,} of them final); generated in {generated:.1f} s"
    )
    print(f"  load_history: {load_s:6.2f} s  {n / load_s:>11,.0f} events/s")
    print(f"  check:        {check_s:6.2f} s  {n / check_s:>11,.0f} events/s")
    total = load_s + check_s
    print(
        f"  together:     {total:6.2f} s  {n / total:>11,.0f} events/s   (target: under {TARGET_S:.0f} s on one "
        f"core: {'met' if total < TARGET_S else 'MISSED'})"
    )
    found = {name: c for name, c in result.counts.items() if c}
    print(
        f"  anomalies: {found or 'none'} ({'ok' if result.ok else 'NOT ok'})"
        + (f"; notes: {'; '.join(result.notes)}" if result.notes else "")
    )
    return 0 if result.ok and not found and total < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
