"""``isrcheck cover`` figures: replaying a prefix against restoring a copy, and the default scope
on Spark local[1] against local[2].

    python benchmarks/cover.py [--protocol kip-320] [--masters local[1],local[2]] [--sample 200]
                               [--no-spark] [scope flags of isrcheck cover, e.g. --max-records 1]

1. Branching: a schedule of the path cover starts by replaying the shortest path to where its
   new edges begin. The alternative is to branch from a saved copy of the lockstep run (model
   state and the whole simulated implementation: brokers, page caches, disks, network), restored
   by copying it (the implementation side; the model state is immutable). For ``--sample`` schedules the script times
   both for the same prefix: replaying
   it in lockstep from a fresh run, and ``copy.deepcopy`` of the run standing at its end (what a
   restore costs, since the simulation has no cheaper restore); it prints the mean of each.
2. The whole cover run at the scope, once per Spark master, each in a fresh directory and its own
   SparkContext: wall time, the job's time, edges/s and the local[2] / local[1] ratio of job times.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import sys
import tempfile
import time
from pathlib import Path

from isrcheck.conformance.cli.cover import add_arguments
from isrcheck.conformance.cli.explore import config_and_scope
from isrcheck.conformance.core.lockstep import Lockstep
from isrcheck.conformance.core.schedule import load_config
from isrcheck.conformance.engines.cover.driver import run_cover
from isrcheck.conformance.engines.cover.graph import build_graph
from isrcheck.conformance.engines.cover.paths import plan_cover

# running hashes (the trace hash, the simulation's) are copied with their own copy()
copy._deepcopy_dispatch[type(hashlib.blake2b())] = lambda h, memo: h.copy()  # type: ignore[attr-defined]


def branching(config, scope, sample: int) -> None:
    graph = build_graph(config, scope)
    plan = plan_cover(graph)
    cfg = load_config(config.to_schedule())
    step = max(1, len(plan.schedules) // sample)
    replay_s = copy_s = 0.0
    prefix_steps = n = 0
    for sched in plan.schedules[::step][:sample]:
        prefix = [plan.vocabulary[i] for i in sched.steps[: sched.prefix]]
        t0 = time.perf_counter()
        run = Lockstep(config.protocol, cfg)
        for st in prefix:
            run.step(st)
        t1 = time.perf_counter()
        copy.deepcopy(run.impl)  # the model state is immutable: keeping it costs nothing
        t2 = time.perf_counter()
        replay_s += t1 - t0
        copy_s += t2 - t1
        prefix_steps += len(prefix)
        n += 1
    total = plan.steps + plan.refusals
    print(
        f"branching ({n} schedules of {len(plan.schedules):,}; mean prefix {prefix_steps / n:.1f} steps): "
        f"replay {1000 * replay_s / n:.2f} ms, restore by copy {1000 * copy_s / n:.2f} ms "
        f"(replay / copy = {replay_s / copy_s:.2f}); prefixes are {plan.prefix_steps:,} of the "
        f"{total:,} lockstep steps, refused ones included ({plan.prefix_steps / total:.0%})"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    parser.set_defaults(protocol="kip-320")
    for action in parser._actions:
        if action.dest == "protocol":
            action.required = False
    parser.add_argument("--masters", default="local[1],local[2]")
    parser.add_argument("--sample", type=int, default=200)
    parser.add_argument("--no-spark", action="store_true")
    args = parser.parse_args()
    config, scope = config_and_scope(args)
    print(f"{config.protocol}, scope " + ", ".join(f"{k}={v}" for k, v in scope.to_json().items() if v))
    branching(config, scope, args.sample)
    if args.no_spark:
        return 0
    jobs = {}
    for master in args.masters.split(","):
        with tempfile.TemporaryDirectory(prefix="isrcheck-cover-") as tmp:
            t0 = time.perf_counter()
            result = run_cover(config, scope, Path(tmp) / "c", master=master)
            wall = time.perf_counter() - t0
        s, run = result.summary, result.summary["run"]
        jobs[master] = run["job_seconds"]
        print(
            f"{master}: {s['states']:,} states, {s['edges_covered']:,}/{s['edges']:,} edges, "
            f"{s['refusals_covered']:,}/{s['refusals']:,} refusals, {s['schedules']:,} schedules, "
            f"{s['steps_run']:,} steps, verdicts {s['by_verdict']}; explore {run['explore_seconds']:.1f} s, "
            f"plan {run['plan_seconds']:.1f} s, job {run['job_seconds']:.1f} s, wall {wall:.1f} s; "
            f"{run['edges_per_s']} edges/s, {run['steps_per_s']} steps/s"
        )
    if len(jobs) == 2:
        (m1, t1), (m2, t2) = jobs.items()
        print(f"job time {m1} / {m2}: {t1 / t2:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
