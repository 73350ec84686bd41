"""Schedules per second of a fuzzing campaign: one plain process vs Spark local[1] vs local[2].

    python benchmarks/fuzz_scaling.py [--protocol kip-320] [--schedules 2000] [--steps 100]

Each Spark run gets its own session (fresh JVM) and a warm-up campaign on other seeds, so the
figure is the steady rate of the fuzzing job itself (JVM start-up and aggregation are printed
apart). The plain run calls the same executor code in this process, with no Spark at all.
"""
from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from isrcheck.conformance.campaign import CampaignParams, run_campaign, start_spark
from isrcheck.conformance.campaign.executor import TaskSpec, run_locally
from isrcheck.conformance.campaign.plan import split


def plain(params: CampaignParams, out: Path) -> float:
    spec = TaskSpec(out=str(out), protocol=params.protocol, steps=params.steps,
                    faults=params.faults, shrink_budget_s=params.shrink_budget_s)
    from isrcheck.conformance.campaign.store import CampaignStore
    CampaignStore(out, params.protocol).bind(params.identity())
    warm = (params.seed + 10**9, params.seed + 10**9 + 20)
    run_locally(spec, [[warm]])  # imports and caches, as a warm Spark worker has them
    started = time.perf_counter()
    run_locally(spec, split([(params.seed, params.seed + params.schedules)], 10))
    return params.schedules / (time.perf_counter() - started)


def on_spark(params: CampaignParams, cores: int, out: Path) -> dict:
    started = time.perf_counter()
    spark = start_spark(f"local[{cores}]")
    startup = time.perf_counter() - started
    try:
        warm = CampaignParams(params.protocol, schedules=10 * cores, seed=params.seed + 10**9,
                              steps=params.steps, faults=params.faults)
        run_campaign(warm, out / "warm", spark=spark, partitions=cores)
        result = run_campaign(params, out / "run", spark=spark, partitions=8 * cores)
    finally:
        spark.stop()
    run = result.summary["run"]
    return {"rate": run["schedules_per_s"], "job_s": run["job_seconds"], "startup_s": startup,
            "wall_s": run["wall_time_s"], "failing": result.summary["failing_schedules"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--protocol", default="kip-320")
    ap.add_argument("--schedules", type=int, default=2000)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    params = CampaignParams(args.protocol, schedules=args.schedules, seed=args.seed, steps=args.steps)
    root = Path(tempfile.mkdtemp(prefix="isrcheck-fuzz-bench-"))
    try:
        base = plain(params, root / "plain")
        one = on_spark(params, 1, root / "local1")
        two = on_spark(params, 2, root / "local2")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"{args.schedules} schedules of {args.steps} steps, protocol {args.protocol}")
    print(f"  plain process : {base:8.1f} schedules/s")
    for name, r in (("local[1]", one), ("local[2]", two)):
        print(f"  Spark {name}: {r['rate']:8.1f} schedules/s  (job {r['job_s']:.1f} s, JVM start "
              f"{r['startup_s']:.1f} s, whole campaign {r['wall_s']:.1f} s)")
    print(f"  scaling local[2] / local[1]      : {two['rate'] / one['rate']:.2f}x")
    print(f"  Spark overhead local[1] vs plain : {(base / one['rate'] - 1) * 100:+.1f} % per schedule")


if __name__ == "__main__":
    main()
