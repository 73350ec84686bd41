"""What a fingerprint-partitioned frontier would give the explorer on one machine, measured.

    python benchmarks/explore_partitioned.py [--protocol P] [--workers 1,2] [--max-records N] [--max-epoch E]

The reachable states of a scope (default: the default kip-320 scope of ``isrcheck explore``,
without symmetry reduction or property checks: the state graph alone), breadth first, level by
level, by W worker processes. Worker w owns the fingerprints f with f % W == w: it keeps their
visited set and their frontier, expands its frontier (successors, fault ledger, fingerprints,
as the explorer does) and sends each successor to its owner, which keeps it if new. The
parent only routes each level's successors, as a Spark shuffle by fingerprint would. Run with
1 worker and with 2 it gives the speed-up a partitioned frontier brings on two cores, with what
the exchange between processes costs included; the states counted must equal the explorer's
``--no-symmetry`` count. The in-process explorer on the same scope is timed beside it.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import pickle
import sys
import time
from array import array

from isrcheck.model import ModelConfig, initial_state
from isrcheck.model.budget import EMPTY_LEDGER
from isrcheck.model.config import Scope
from isrcheck.model.explorer import explore, fingerprint, successors


def _expand(config: ModelConfig, scope: Scope, frontier: list, workers: int) -> tuple[list, int]:
    """The successors of ``frontier`` ((fingerprint, state, ledger) each, as the explorer computes
    them), bucketed by their fingerprint's owner, each fingerprint once; and the transitions."""
    known = config.rules.known_losses
    out: list[list] = [[] for _ in range(workers)]
    sent: set[int] = set()  # successors already bucketed this level (many parents share one)
    transitions = 0
    for _fp, s, ledger in frontier:
        for steps, t, inside in successors(config, scope, s):
            transitions += 1
            if inside:  # a fetch round: the ledger after handle_fetch, then after the response
                led = ledger.after(s, steps[1], inside[0], known).after(inside[0], steps[2], t, known)
            else:
                led = ledger.after(s, steps[0], t, known)
            f = fingerprint(scope, t, led)
            if f not in sent:
                sent.add(f)
                out[f % workers].append((f, t, led))
    return out, transitions


def _worker(conn, config: ModelConfig, scope: Scope, workers: int, exchange: str) -> None:
    """One partition: the visited set of the fingerprints it owns. With ``exchange`` "states" it
    receives the candidate states it owns, keeps the new ones as its frontier and answers their
    successors bucketed by owner. With "fingerprints" a state stays where it was generated: the
    worker sends only the fingerprints of its successors to their owners, answers which of the
    fingerprints it owns are new (the first claim of a level wins), and keeps the successors
    whose fingerprints were new as its frontier. ``b"end"`` ends it with its counts."""
    seen: set[int] = set()
    transitions = 0
    frontier: list = []
    while True:
        data = conn.recv_bytes()
        if data == b"end":
            conn.send((len(seen), transitions))
            return
        if exchange == "states":
            frontier = [c for c in pickle.loads(data) if c[0] not in seen and not seen.add(c[0])]
            out, n = _expand(config, scope, frontier, workers)
            transitions += n
            conn.send_bytes(pickle.dumps(out, pickle.HIGHEST_PROTOCOL))
            continue
        for c in pickle.loads(data):  # the first level: the initial state, to its owner
            seen.add(c[0])
            frontier.append(c)
        out, n = _expand(config, scope, frontier, workers)
        transitions += n
        conn.send_bytes(pickle.dumps([array("q", (c[0] for c in bucket)) for bucket in out]))
        claims = pickle.loads(conn.recv_bytes())  # per sender, the fingerprints it claims here
        conn.send_bytes(pickle.dumps([array("B", (f not in seen and not seen.add(f) for f in fps)) for fps in claims]))
        verdicts = pickle.loads(conn.recv_bytes())  # per owner, which of my claims were new
        frontier = [c for bucket, new in zip(out, verdicts) for c, keep in zip(bucket, new) if keep]


def _cpu() -> float:
    """CPU seconds of this process and its finished children."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def partitioned(config: ModelConfig, scope: Scope, workers: int, exchange: str) -> tuple[int, int, int, float, float]:
    """(states, transitions, levels, seconds, CPU seconds) of a breadth-first search over
    ``workers`` processes exchanging ``exchange`` (CPU: the parent's and the workers')."""
    start, cpu = time.perf_counter(), _cpu()
    pipes, procs = [], []
    ctx = mp.get_context("fork")
    for _ in range(workers):
        here, there = ctx.Pipe()
        proc = ctx.Process(target=_worker, args=(there, config, scope, workers, exchange), daemon=True)
        proc.start()
        there.close()  # the worker's end: a worker that dies ends the parent's reads (EOFError)
        pipes.append(here)
        procs.append(proc)
    init = initial_state(config)
    fp = fingerprint(scope, init, EMPTY_LEDGER)
    inbox: list[list] = [[] for _ in range(workers)]
    inbox[fp % workers].append((fp, init, EMPTY_LEDGER))
    levels = 0
    while True:
        levels += 1
        for w, conn in enumerate(pipes):
            conn.send_bytes(pickle.dumps(inbox[w], pickle.HIGHEST_PROTOCOL))
        inbox = [[] for _ in range(workers)]
        if exchange == "states":
            for conn in pipes:
                for w, bucket in enumerate(pickle.loads(conn.recv_bytes())):
                    inbox[w].extend(bucket)
            if not any(inbox):
                break
            continue
        claims = [pickle.loads(conn.recv_bytes()) for conn in pipes]  # [sender][owner] fingerprints
        for owner, conn in enumerate(pipes):
            conn.send_bytes(pickle.dumps([claims[sender][owner] for sender in range(workers)]))
        answers = [pickle.loads(conn.recv_bytes()) for conn in pipes]  # [owner][sender] new or not
        for sender, conn in enumerate(pipes):
            conn.send_bytes(pickle.dumps([answers[owner][sender] for owner in range(workers)]))
        if not any(any(a) for per_owner in answers for a in per_owner):
            break
    states = transitions = 0
    for conn, proc in zip(pipes, procs):
        conn.send_bytes(b"end")
        n, t = conn.recv()
        states, transitions = states + n, transitions + t
        proc.join()
    return states, transitions, levels, time.perf_counter() - start, _cpu() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--protocol", default="kip-320")
    parser.add_argument("--workers", default="1,2", help="comma-separated worker counts to time in turn")
    parser.add_argument(
        "--exchange",
        default="fingerprints,states",
        help="what crosses processes: fingerprints (states stay where generated) and/or states",
    )
    parser.add_argument("--max-records", type=int, default=Scope().max_records)
    parser.add_argument("--max-epoch", type=int, default=Scope().max_epoch)
    args = parser.parse_args()
    config = ModelConfig(protocol=args.protocol)
    scope = Scope(max_records=args.max_records, max_epoch=args.max_epoch)
    print("command: python benchmarks/explore_partitioned.py " + " ".join(sys.argv[1:]))
    print(
        f"{args.protocol}, scope max_records={scope.max_records} max_epoch={scope.max_epoch} "
        f"(otherwise the default), {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}"
    )
    cpu = _cpu()
    result = explore(config, scope, properties=(), symmetry=False)
    alone = _cpu() - cpu
    print(
        f"in-process explorer, no symmetry, no properties: {result.states:,} states in "
        f"{result.seconds:.1f} s ({result.states / result.seconds:,.0f} states/s, {alone:.1f} CPU s)"
    )
    for exchange in args.exchange.split(","):
        times = {}
        for workers in (int(w) for w in args.workers.split(",")):
            states, transitions, levels, seconds, cpu = partitioned(config, scope, workers, exchange)
            times[workers] = seconds
            same = "equal to the explorer's" if states == result.states else f"NOT the explorer's {result.states:,}"
            print(
                f"partitioned frontier exchanging {exchange}, {workers} worker(s): {states:,} states ({same}), "
                f"{transitions:,} transitions, {levels} levels, {seconds:.1f} s ({states / seconds:,.0f} states/s), "
                f"{cpu:.1f} CPU s: {cpu / alone:.2f}x the explorer's; so on {workers} idle core(s) at best "
                f"{alone / (cpu / workers):.2f}x its speed"
            )
        for workers, seconds in sorted(times.items()):
            if workers > 1 and 1 in times:
                print(
                    f"  measured: {workers} workers {times[1] / seconds:.2f}x as fast as 1; "
                    f"{result.seconds / seconds:.2f}x the in-process explorer (load now {os.getloadavg()[0]:.2f})"
                )


if __name__ == "__main__":
    main()
