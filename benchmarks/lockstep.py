"""Lockstep throughput on one core: steps/s and schedules/s, and where the time goes.

    python benchmarks/lockstep.py [--schedules N] [--steps K] [--protocol P] [--faults F]
    python benchmarks/lockstep.py --walks 10000 --steps 110    # a campaign: verdict counts

Schedules come from seeded random walks (generated once, on the model alone, outside the timed
part), then are replayed with ``Lockstep.run``: in lockstep, and on the model alone. The model's
and the implementation's shares are measured inside the runner (time in ``apply`` versus time in
the adapter and the abstraction function); the rest is the runner itself (comparison, invariants,
trace hash).
"""

from __future__ import annotations

import argparse
import collections
import sys
import time

from isrcheck.conformance import random_walk
from isrcheck.conformance.core.lockstep import Lockstep


def _replay(schedules, impl: bool) -> tuple[float, float, float, int, float]:
    model_s = impl_s = 0.0
    steps = 0
    cpu = time.process_time()
    start = time.perf_counter()
    for schedule in schedules:
        run = Lockstep.run(schedule, impl=impl)
        steps += run.verdict.steps_run
        model_s += run.model_seconds
        impl_s += run.impl_seconds
    return time.perf_counter() - start, model_s, impl_s, steps, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, default=200)
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--protocol", default="kip-320")
    parser.add_argument("--faults", default="default")
    parser.add_argument(
        "--walks", type=int, default=0, help="instead: run this many seeded walks in lockstep and count verdicts"
    )
    args = parser.parse_args()
    if args.walks:
        return _campaign(args)

    schedules = [
        random_walk(seed, args.protocol, args.steps, args.faults, impl=False)[0] for seed in range(args.schedules)
    ]
    _replay(schedules[:1], impl=True)  # start-up (loading the implementation) off the timed part
    total, model_s, impl_s, steps, cpu = _replay(schedules, impl=True)
    alone, alone_model_s, _, alone_steps, _ = _replay(schedules, impl=False)
    runner_s = total - model_s - impl_s

    print("command: python benchmarks/lockstep.py " + " ".join(sys.argv[1:]))
    print(f"{len(schedules)} schedules, {steps} steps, protocol {args.protocol}, faults {args.faults!r}")
    print(
        f"lockstep:   {steps / total:10.0f} steps/s   {len(schedules) / total:8.1f} schedules/s   "
        f"({steps / cpu:.0f} steps per CPU second: less sensitive to other jobs on the machine)"
    )
    print(f"model only: {alone_steps / alone:10.0f} steps/s   {len(schedules) / alone:8.1f} schedules/s")
    print(
        f"time share in lockstep: model {model_s / total:5.1%}, implementation (adapter + abstraction) "
        f"{impl_s / total:5.1%}, runner (compare, invariants, trace hash) {runner_s / total:5.1%}"
    )
    per_cpu = steps / cpu
    print(
        f"  target (issue 30): 20,000 lockstep steps/s on one core: {'met' if per_cpu >= 20_000 else 'NOT met'} "
        f"({per_cpu:,.0f} steps per CPU second)"
    )
    started = time.perf_counter()
    for seed in range(20):
        random_walk(10_000 + seed, args.protocol, args.steps, args.faults)
    walk_s = time.perf_counter() - started
    print(f"random walk in lockstep (generation included): {20 * args.steps / walk_s:10.0f} steps/s")


def _campaign(args) -> None:
    counts: collections.Counter = collections.Counter()
    first: dict = {}
    steps = 0
    start = time.perf_counter()
    for seed in range(args.walks):
        schedule, verdict = random_walk(seed, args.protocol, args.steps, args.faults)
        steps += len(schedule.steps)
        key = (verdict.kind, verdict.property)
        counts[key] += 1
        first.setdefault(key, seed)
    elapsed = time.perf_counter() - start
    print(
        f"{args.walks} walks of {args.steps} steps, protocol {args.protocol}, faults {args.faults!r}: "
        f"{steps} steps in {elapsed:.0f} s ({steps / elapsed:.0f} steps/s, {args.walks / elapsed:.1f} walks/s)"
    )
    for (kind, prop), n in sorted(counts.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        print(f"  {kind:<12} {prop or '':<28} {n:6d}   first seed {first[(kind, prop)]}")


if __name__ == "__main__":
    main()
