"""Trace validation's figures: how fast ``isrcheck validate`` explains a self-driven run's event
log, whether the cost of an event stays flat as the log grows, what logging costs the simulation,
how a ``fuzz --mode auto`` campaign scales from one Spark core to two, and whether a soak's event
log (real processes, real Kafka clients, every fault kind) validates in less time than the soak ran.

    python benchmarks/validate.py [--protocol kip-966] [--seed 3] [--lengths 2000,4000,8000,16000,32000]
                                  [--overhead-runs 5] [--spark-schedules 400] [--skip-spark]
                                  [--soak SECONDS] [--soak-dir DIR] [--log DIR] [--prefixes 4]
                                  [--only soak|throughput|log|overhead|spark]
    python benchmarks/validate.py --sim-only 6000 --logged   # and without --logged, timed in turn

``--only log --log DIR`` validates an existing event log (a soak's ``DIR/events``) whole and in
growing prefixes. The second form is logging's cost measured from outside, A and B in turn: one
simulation with and one without its event log (``--sim-only STEPS``, nothing else).

Each figure is printed with what gives it; the load (``uptime``) is printed first and last, since
the machine may be shared. Rates are per second of this process's CPU time (``time.process_time``:
one core, the least disturbed by other processes), wall time beside them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import replace

from isrcheck.conformance.engines.validate.events import partition_traces, read_trace
from isrcheck.conformance.engines.validate.search import validate_partitions
from isrcheck.conformance.engines.validate.validation import validate_path
from isrcheck.impl.sim.workload import Workload, run_simulation, sim_config
from isrcheck.model.collector import no_cycle_collection


def load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


TARGET = 5000  # events validated per second of one core


def timed(fn, *args):
    """(fn's result, CPU seconds, wall seconds)."""
    start, start_cpu = time.perf_counter(), time.process_time()
    out = fn(*args)
    return out, time.process_time() - start_cpu, time.perf_counter() - start


def flat(rates: list[tuple[int, float]], what: str) -> None:
    """The target and whether the cost of an event stays flat from the shortest log to the longest
    (within 1.5x: linear in the log's length)."""
    (n0, r0), (n1, r1) = rates[0], rates[-1]
    slowest = min(r for _, r in rates)
    growth = r0 / r1
    print(
        f"  cost per event, {what} of {n1:,} events against {n0:,}: {growth:.2f}x "
        f"({'flat' if growth <= 1.5 else 'NOT flat'}: linear in the log's length); slowest "
        f"{slowest:,.0f} events/s, target {TARGET:,} on one core: {'met' if slowest >= TARGET else 'NOT met'}"
    )


def throughput(protocol: str, seed: int, lengths: list[int], scratch: str) -> None:
    """Events validated per second against the log's length (one process, one core)."""
    print(
        f"validate: {protocol}, seed {seed}, isrcheck sim workloads of growing length "
        f"(the fastest of three, by CPU time)"
    )
    print(f"  {'steps':>6} {'events':>7} {'sim ms':>8} {'cpu s':>7} {'wall s':>7} {'events/s':>9} {'us per event':>12}")
    rates = []
    for steps in lengths:
        events = os.path.join(scratch, f"len-{steps}")
        summary = run_simulation(protocol, 3, seed, steps, events_dir=events)
        runs = [timed(validate_path, events) for _ in range(3)]  # the least disturbed of three
        (verdict, n, _), cpu, wall = min(runs, key=lambda r: r[1])
        assert verdict.explained, verdict.to_json()
        rates.append((n, n / cpu))
        print(f"  {steps:6d} {n:7d} {summary.sim_ms:8d} {cpu:7.2f} {wall:7.2f} {n / cpu:9,.0f} {1e6 * cpu / n:12.1f}")
    flat(rates, "the longest log")


def log_prefixes(path: str, parts: int) -> None:
    """An existing event log validated whole (``isrcheck validate PATH``), then its prefixes of
    1/parts, 2/parts, ... of the events in merged order (what the run had logged by then: a
    prefix holds every send before its receive), read once."""
    (verdict, n, _), cpu, wall = timed(validate_path, path)
    print(
        f"validate: isrcheck validate {path}: {verdict.to_json()['verdict']}, {n:,} events in {cpu:.1f} s CPU "
        f"({wall:.1f} s wall): {n / cpu:,.0f} events/s, at most {verdict.max_candidates} candidate states; "
        f"target {TARGET:,} on one core: {'met' if n / cpu >= TARGET else 'NOT met'}"
    )
    with no_cycle_collection():
        trace, read_cpu, _ = timed(read_trace, path)
        per_read = read_cpu / len(trace.events)
        print(f"  prefixes (reading the files: {1e6 * per_read:.1f} us per event, counted in below)")
        print(f"  {'events':>9} {'cpu s':>7} {'events/s':>9} {'us per event':>12}")
        rates = []
        for k in range(1, parts + 1):
            prefix = replace(trace, events=trace.events[: len(trace.events) * k // parts])
            m = len(prefix.events)
            verdict, cpu, _ = timed(lambda: validate_partitions(partition_traces(prefix), m))
            assert verdict.explained, verdict.to_json()
            cpu += per_read * m
            rates.append((m, m / cpu))
            print(f"  {m:9,d} {cpu:7.1f} {m / cpu:9,.0f} {1e6 * cpu / m:12.1f}")
    flat(rates, "the whole log")


def overhead(protocol: str, seed: int, steps: int, runs: int, scratch: str) -> None:
    """The auto-mode simulation with and without its event log, in alternating runs: deliveries
    per second of wall time and of this process's CPU time (the less disturbed by other processes),
    the median of each."""
    wall: dict[bool, list[float]] = {False: [], True: []}
    cpu: dict[bool, list[float]] = {False: [], True: []}
    for i in range(runs * 2):
        logged = i % 2 == 1
        events = os.path.join(scratch, "overhead") if logged else None
        if events:
            shutil.rmtree(events, ignore_errors=True)
        work = Workload(sim_config(protocol, 3), seed, events_dir=events)
        start, start_cpu = time.perf_counter(), time.process_time()
        for _ in range(steps):
            work.step()
        work.finish()
        if work.events is not None:
            work.events.close()
        delivered = work.cluster.network.delivered
        wall[logged].append(delivered / (time.perf_counter() - start))
        cpu[logged].append(delivered / (time.process_time() - start_cpu))
    print(f"logging cost: {protocol}, seed {seed}, {steps} steps, {runs} runs each, alternating")
    for name, rates in (("wall", wall), ("cpu", cpu)):
        med = {k: sorted(v)[len(v) // 2] for k, v in rates.items()}
        print(
            f"  {name:4s}: without the event log {med[False]:9.0f} deliveries/s (median); with it "
            f"{med[True]:9.0f}; cost {100 * (1 - med[True] / med[False]):.1f} % of the throughput"
        )


def profile_share(protocol: str, seed: int, steps: int, scratch: str) -> None:
    """The event log's share of a logged run under cProfile: the inclusive time of its hooks
    (``EventLog.broker``, ``controller``, and ``emit`` called directly) over the whole run's. It
    does not depend on what else the machine runs, as the timings above do; the profiler slows
    small functions most, so the share is if anything too high."""
    import cProfile
    import pstats

    events = os.path.join(scratch, "profiled")
    work = Workload(sim_config(protocol, 3), seed, events_dir=events)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(steps):
        work.step()
    work.finish()
    profiler.disable()
    work.events.close()
    stats = pstats.Stats(profiler)
    share = 0.0
    for (path, _line, name), (_cc, _nc, _tt, cumulative, callers) in stats.stats.items():
        if path.endswith(os.path.join("impl", "eventlog.py")):
            if name in ("broker", "controller"):
                share += cumulative
            elif name == "emit":
                share += sum(c[3] for where, c in callers.items() if not where[0].endswith("eventlog.py"))
    print(
        f"  profiled: the event log's hooks take {100 * share / stats.total_tt:.1f} % of a logged run's time "
        f"({protocol}, seed {seed}, {steps} steps, cProfile)"
    )


SPARK_TASKS = 16  # tasks of 25 seeds at 400 schedules: one slow seed holds back one core briefly


def spark_scaling(protocol: str, schedules: int, steps: int, scratch: str) -> None:
    """``isrcheck fuzz --mode auto`` on local[1] and local[2]: job seconds (Spark start-up left out).
    The first job of a process pays for warming up (the JVM's JIT, Spark's Python workers), so an
    untimed warm-up job runs first and each master runs twice, in the order 1, 2, 2, 1."""
    from isrcheck.conformance.engines.campaign import CampaignParams, run_campaign

    def job(master: str, n: int, run: str) -> float:
        params = CampaignParams(protocol, schedules=n, steps=steps, mode="auto")
        result = run_campaign(params, os.path.join(scratch, f"fuzz-{run}"), master=master, partitions=SPARK_TASKS)
        return result.summary["run"]["job_seconds"], result.summary["by_verdict"]

    job("local[2]", 16, "warm-up")
    seconds: dict[str, list[float]] = {"local[1]": [], "local[2]": []}
    for i, master in enumerate(("local[1]", "local[2]", "local[2]", "local[1]")):
        took, verdicts = job(master, schedules, f"{master[6]}-{i}")
        seconds[master].append(took)
        print(
            f"  isrcheck fuzz --mode auto --protocol {protocol} --schedules {schedules} --steps {steps} "
            f"--master {master} --partitions {SPARK_TASKS}: job {took:.1f} s, verdicts {verdicts}"
        )
    one, two = (sum(seconds[m]) / 2 for m in ("local[1]", "local[2]"))
    print(
        f"  local[2] / local[1] speed-up: {one / two:.2f}x (mean job of each: {one:.1f} s and {two:.1f} s; "
        f"target 1.8x: {'met' if one / two >= 1.8 else 'NOT met'})"
    )


def soak(duration: float, seed: int, folder: str) -> None:
    """``isrcheck soak`` of kip-966 under every fault kind in ``folder``: its run time against the
    time validating its processes' event log takes (the soak does it at the end)."""
    from isrcheck.conformance.engines.soak.driver import SoakOptions, run_soak
    from isrcheck.conformance.engines.soak.faults import FAULT_KINDS

    result = run_soak(
        SoakOptions(protocol="kip-966", duration_s=duration, faults=FAULT_KINDS, seed=seed, directory=folder)
    )
    v = result.validation.to_json()
    print(
        f"soak: isrcheck soak --protocol kip-966 --duration {duration:g} --faults all --seed {seed}: ran "
        f"{result.seconds:.0f} s, {len(result.faults)} faults played, {result.counts.get('send', {}).get('ok', 0)} "
        f"acknowledged sends, anomalies: {', '.join(result.anomalies) or 'none'}"
    )
    rate = v["events"] / v["seconds"]
    print(
        f"  its event log: {v['events']} events, {v['verdict']} in {v['seconds']:.1f} s "
        f"({rate:,.0f} events/s of wall time, target {TARGET:,}: {'met' if rate >= TARGET else 'NOT met'}; "
        f"at most {v['max_candidates']} candidate states): "
        f"validation took {v['seconds'] / result.seconds:.2f} of the time the soak ran"
    )
    for line in v["lines"][1:]:
        print("  " + line)
    print(f"  the run's folder: {folder}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--protocol", default="kip-966")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--lengths", default="2000,4000,8000,16000,32000")
    parser.add_argument("--overhead-steps", type=int, default=2000)
    parser.add_argument("--overhead-runs", type=int, default=5)
    parser.add_argument("--spark-schedules", type=int, default=400)
    parser.add_argument("--spark-steps", type=int, default=200)
    parser.add_argument("--skip-spark", action="store_true")
    parser.add_argument(
        "--soak", type=float, default=600, metavar="SECONDS", help="the soak's duration (default 600; 0 skips it)"
    )
    parser.add_argument(
        "--soak-dir",
        default=None,
        metavar="DIR",
        help="the soak's run folder, kept (default: a temporary one, removed)",
    )
    parser.add_argument(
        "--log",
        default=None,
        metavar="DIR",
        help="an existing event log to validate whole and in prefixes (default: none)",
    )
    parser.add_argument("--prefixes", type=int, default=4, help="with --log: how many growing prefixes")
    parser.add_argument(
        "--only", choices=("throughput", "log", "overhead", "spark", "soak"), default=None, help="run only this part"
    )
    parser.add_argument(
        "--sim-only",
        type=int,
        default=0,
        metavar="STEPS",
        help="run one auto-mode simulation of STEPS steps and nothing else (to time whole processes side by side)",
    )
    parser.add_argument("--logged", action="store_true", help="with --sim-only: with its event log")
    args = parser.parse_args()
    if args.sim_only:
        with tempfile.TemporaryDirectory(prefix="isrcheck-bench-validate-") as scratch:
            run_simulation(
                args.protocol,
                3,
                args.seed,
                args.sim_only,
                events_dir=os.path.join(scratch, "events") if args.logged else None,
            )
        return
    parts = {args.only} if args.only else {"throughput", "log", "overhead", "spark", "soak"}
    if args.skip_spark:
        parts.discard("spark")
    if not args.soak:
        parts.discard("soak")
    if args.log is None:
        if args.only == "log":
            parser.error("--only log needs --log DIR")
        parts.discard("log")
    elif not os.path.exists(args.log):
        parser.error(f"--log {args.log}: no such file or directory")
    print("load:", load())
    with tempfile.TemporaryDirectory(prefix="isrcheck-bench-validate-") as scratch:
        if "throughput" in parts:
            throughput(args.protocol, args.seed, [int(x) for x in args.lengths.split(",")], scratch)
        if "log" in parts:
            log_prefixes(args.log, args.prefixes)
        if "overhead" in parts:
            overhead(args.protocol, args.seed, args.overhead_steps, args.overhead_runs, scratch)
            profile_share(args.protocol, args.seed, args.overhead_steps, scratch)
        if "spark" in parts:
            print("fuzz --mode auto on Spark:")
            spark_scaling(args.protocol, args.spark_schedules, args.spark_steps, scratch)
        if "soak" in parts:
            soak(args.soak, args.seed, args.soak_dir or os.path.join(scratch, "soak"))
    print("load:", load())


if __name__ == "__main__":
    main()
