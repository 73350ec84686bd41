"""``isrcheck prove`` figures: time to the StrongIsr counterexamples, kip-320 to its explored
graph's depth, and the largest scope explore and prove each finish within a budget.

    python benchmarks/prove.py [--budget S] [--part cex|cex-smallest|kip320|scopes|growth ...] [--preprocess]

Every run is the real command (``isrcheck explore``/``isrcheck prove --json``) in a child
process, one at a time (one core), limited to the budget in CPU seconds (RLIMIT_CPU; prove also
reports each depth it finished on stderr, so a stopped run still says how deep it got).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys

from isrcheck.model.alphabet import HANDLE_FETCH, HANDLE_FETCH_RESPONSE

CEX = ("hw-truncation", "kip-101", "kip-279")
# the smallest scope the explorer finds each variant's StrongIsr counterexample in (two brokers)
SMALLEST = {
    "hw-truncation": [
        "--replicas",
        "2",
        "--min-isr",
        "1",
        "--max-records",
        "1",
        "--max-epoch",
        "3",
        "--max-crashes",
        "1",
    ],
    "kip-101": [
        "--replicas",
        "2",
        "--min-isr",
        "1",
        "--max-records",
        "1",
        "--max-epoch",
        "3",
        "--max-crashes",
        "2",
        "--max-power-losses",
        "1",
    ],
}
SMALLEST["kip-279"] = SMALLEST["kip-101"]
# (replicas, records, epochs, crashes), smallest first
SCOPES = ((1, 1, 1, 1), (2, 1, 2, 1), (2, 2, 2, 1), (3, 1, 2, 1), (2, 1, 3, 2), (3, 2, 2, 1), (3, 2, 4, 2))


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def command(args: list[str], cpu_limit: float) -> tuple[dict | None, float, int | None, list[tuple[int, float]]]:
    """(JSON output or None, CPU seconds, exit code or None when stopped at ``cpu_limit`` CPU
    seconds, (depth, CPU seconds so far) of each depth prove reported done). CPU time, not wall
    time: on a shared machine the wall clock counts the other jobs (and z3's own timeouts are wall time)."""
    cpu = _children_cpu()
    limit = int(cpu_limit) + 1

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (limit, limit + 5))

    proc = subprocess.run(
        [sys.executable, "-m", "isrcheck.conformance.cli.main", *args, "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
        preexec_fn=limited,
    )
    depths = [
        (int(m[1]), float(m[2])) for m in re.finditer(r"^depth (\d+): .*?cpu seconds ([\d.]+)", proc.stderr, re.M)
    ]
    if proc.returncode < 0:  # SIGXCPU / SIGKILL at the limit
        return None, _children_cpu() - cpu, None, depths
    doc = json.loads(proc.stdout) if proc.stdout.strip() else None
    return doc, _children_cpu() - cpu, proc.returncode, depths


def last_depth(depths: list[tuple[int, float]]) -> int:
    return depths[-1][0] if depths else -1


def scope_args(replicas: int, records: int, epochs: int, crashes: int) -> list[str]:
    return [
        "--replicas",
        str(replicas),
        "--min-isr",
        str(min(2, replicas)),
        "--max-records",
        str(records),
        "--max-epoch",
        str(epochs),
        "--max-crashes",
        str(crashes),
    ]


def transitions(trace: list[dict]) -> int:
    return sum(1 for st in trace if st["step"] not in (HANDLE_FETCH, HANDLE_FETCH_RESPONSE))


def part_cex(budget: float, extra: list[str], smallest: bool = False) -> None:
    where = "the smallest scope holding it" if smallest else "the default scope"
    print(f"StrongIsr counterexample at {where} (budget {budget:.0f} s each)")
    for protocol in CEX:
        scope = SMALLEST[protocol] if smallest else []
        if smallest:
            print(f"  {protocol}: {' '.join(scope)}")
        doc, cpu, _code, depths = command(
            ["prove", "--protocol", protocol, "--property", "StrongIsr", "--depth", "40", *scope, *extra], budget
        )
        if doc and doc["violations"]:
            v = doc["violations"][0]
            print(f"  {protocol:<14} found at {v['transitions']} transitions ({v['depth']} steps) in {cpu:.1f} s")
        else:
            print(f"  {protocol:<14} not found within {cpu:.0f} s: none up to depth {last_depth(depths)}", flush=True)


def part_kip320(budget: float, extra: list[str]) -> None:
    doc, cpu, _code, _depth = command(["explore", "--protocol", "kip-320"], budget)
    depth = doc["depth"] if doc else 31
    print(
        f"kip-320 at the default scope: explored graph depth {depth}"
        + (f" ({doc['states']:,} states, {cpu:.1f} s)" if doc else " (explore did not finish)")
    )
    doc, cpu, _code, depths = command(["prove", "--protocol", "kip-320", "--depth", str(depth), *extra], budget)
    print(f"  prove: no violation of any property up to depth {last_depth(depths)} of {depth} ({cpu:.0f} s)")


def part_scopes(budget: float, extra: list[str]) -> None:
    print(
        f"largest scope finished within {budget:.0f} s, kip-101, every property (prove: to the explored graph's depth)"
    )
    print(f"  {'replicas':>8}{'records':>8}{'epochs':>7}{'crashes':>8}{'explore s':>11}{'depth':>7}{'prove s':>9}")
    proving = True  # a scope prove does not finish stops it for the larger ones (they hold it)
    for scope in SCOPES:
        doc, cpu, _code, _depth = command(["explore", "--protocol", "kip-101", *scope_args(*scope)], budget)
        if doc is None:
            print(f"  {scope[0]:>8}{scope[1]:>8}{scope[2]:>7}{scope[3]:>8}{'> budget':>11}")
            break
        depth = doc["depth"]
        if not proving:
            print(
                f"  {scope[0]:>8}{scope[1]:>8}{scope[2]:>7}{scope[3]:>8}{cpu:>11.1f}{depth:>7}{'not run':>9}",
                flush=True,
            )
            continue
        pdoc, pcpu, code, depths = command(
            ["prove", "--protocol", "kip-101", *scope_args(*scope), "--depth", str(depth), *extra], budget
        )
        proving = pdoc is not None
        shown = f"{pcpu:.1f}" if pdoc is not None else f"> budget (depth {last_depth(depths)})"
        print(f"  {scope[0]:>8}{scope[1]:>8}{scope[2]:>7}{scope[3]:>8}{cpu:>11.1f}{depth:>7}{shown:>9}", flush=True)


def part_growth(budget: float, extra: list[str]) -> None:
    """Why the default scope's counterexamples take prove so long: each depth's query costs a
    multiple of the one before, while the explorer's breadth-first search reaches them at once."""
    print(
        f"StrongIsr at the default scope: explore to the counterexample, prove's CPU seconds per depth "
        f"(budget {budget:.0f} s each)"
    )
    for protocol in CEX:
        doc, cpu, _code, _depths = command(
            ["explore", "--protocol", protocol, "--property", "StrongIsr", "--stop-at-first"], budget
        )
        needed = transitions(doc["violations"][0]["trace"]) if doc and doc["violations"] else None
        print(f"  {protocol}: explore finds it at {needed} transitions in {cpu:.1f} s")
        _doc, _cpu, _code, depths = command(
            ["prove", "--protocol", protocol, "--property", "StrongIsr", "--depth", "40", *extra], budget
        )
        costs = [b - a for (_d, a), (_e, b) in zip([(0, 0.0)] + depths, depths)]
        print(f"    prove per depth: {', '.join(f'{d}: {c:.1f}' for (d, _t), c in zip(depths, costs))}")
        if needed is not None and len(costs) >= 3 and last_depth(depths) < needed and costs[-2] > 0:
            ratio = costs[-1] / costs[-2]
            rest = sum(costs[-1] * ratio**i for i in range(1, needed - last_depth(depths) + 1))
            print(
                f"    last ratio {ratio:.1f}: depths {last_depth(depths) + 1}..{needed} would take about "
                f"{rest / 3600:.1f} h more at that ratio",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", type=float, default=600.0, help="seconds per run (default 600)")
    parser.add_argument("--part", action="append", choices=("cex", "cex-smallest", "kip320", "scopes", "growth"))
    parser.add_argument("--preprocess", action="store_true", help="pass --preprocess to prove")
    args = parser.parse_args()
    extra = ["--preprocess"] if args.preprocess else []
    print(
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; times are CPU seconds of the child process",
        flush=True,
    )
    parts = {
        "cex": part_cex,
        "cex-smallest": lambda budget, extra: part_cex(budget, extra, smallest=True),
        "kip320": part_kip320,
        "scopes": part_scopes,
        "growth": part_growth,
    }
    for part in args.part or list(parts):
        parts[part](args.budget, extra)


if __name__ == "__main__":
    main()
