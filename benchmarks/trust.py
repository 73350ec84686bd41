"""No violation on the correct protocol under every fault class, and only the documented losses on
the variants before it: the runs behind README's trust figures, each an ``isrcheck`` command.

    python benchmarks/trust.py [--parts explore,cover,fuzz] [--schedules 10000] [--master local[2]]
                               [--protocols kip-966,kip-320,kip-903]

- ``explore``: the explorer, complete, at a scope that holds every fault class at least once (a
  crash of each kind, a power loss that keeps or tears unflushed batches, a lost disk, a fast
  bounce, a zombie, a leader move, a lost message, partial fetches, HW checkpoints);
- ``cover``: ``isrcheck cover`` (every edge and refusal of the state graph, run on the
  implementation) at a scope with the same fault classes but lost messages;
- ``fuzz``: ``isrcheck fuzz --faults all`` (every fault class, no guard, each property judged by its
  own fault budget).

For each run: its size and time, its violations and divergences (zero expected on kip-966), and
per property how it fared against its fault budget (broken only outside it, with the reasons: on
kip-320 and kip-903 these must be their documented losses). Exit 1 if kip-966 shows a violation or
divergence, or if a variant before it shows a violation within a budget.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Every fault class at least once, two brokers with min ISR 2 (so one broker may lose data within
# the budget of acknowledged writes).
FAULTS = [
    "--replicas",
    "2",
    "--min-isr",
    "2",
    "--max-records",
    "1",
    "--max-epoch",
    "2",
    "--max-crashes",
    "1",
    "--max-power-losses",
    "1",
    "--crash-kinds",
    "clean,process",
    "--bounces",
    "1",
    "--zombies",
    "1",
    "--leader-moves",
    "1",
    "--disk-losses",
    "1",
    "--max-drops",
    "1",
]
EXPLORE_SCOPE = FAULTS + ["--partial-fetches", "--torn-writes", "--hw-checkpoints"]
# cover runs every edge and refusal on the implementation: the same faults but lost messages
# (which multiply the graph by four), so that it runs in minutes on two cores
COVER_SCOPE = FAULTS[:-1] + ["0"]


def isrcheck(*args: str) -> tuple[int, dict, float]:
    """Run ``isrcheck ARGS --json``: exit code, the JSON it printed, wall seconds."""
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "isrcheck.conformance.cli.main", *args, "--json"], capture_output=True, text=True
    )
    seconds = time.perf_counter() - t0
    try:
        doc = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"isrcheck {' '.join(args)} exited {proc.returncode}:\n{proc.stderr[-2000:]}") from None
    return proc.returncode, doc, seconds


def explore(protocol: str) -> bool:
    code, doc, seconds = isrcheck("explore", "--protocol", protocol, *EXPLORE_SCOPE)
    print(
        f"explore {protocol}: {doc['states']:,} states, {doc['transitions']:,} transitions, depth {doc['depth']}, "
        f"{'complete' if doc['complete'] else 'NOT complete'}, {seconds:.0f} s; violations: "
        + (", ".join(f"{v['property']} at depth {v['depth']}" for v in doc["violations"]) or "none")
    )
    for b in doc["beyond_budget"]:
        print(f"  {b['property']} broken only outside its budget (after {b['depth']} steps): {b['reason']}")
    return doc["complete"] and not doc["violations"]


def _budgets(summary: dict) -> None:
    for prop, b in (summary.get("budgets") or {}).items():
        print(
            f"  {prop}: within its budget to the end in {b['checked_within']:,} schedules, "
            f"broken outside it in {b['broken_outside']:,}"
        )


def cover(protocol: str, master: str, work: Path) -> bool:
    code, doc, seconds = isrcheck(
        "cover", "--protocol", protocol, *COVER_SCOPE, "--master", master, "--out", str(work / f"cover-{protocol}")
    )
    verdicts = ", ".join(f"{k} {v}" for k, v in doc["by_verdict"].items())
    print(
        f"cover {protocol}: {doc['states']:,} states, {doc['edges']:,} edges ({doc['edges_covered']:,} covered), "
        f"{doc['refusals']:,} refusals, in {doc['schedules']:,} schedules ({doc['steps_run']:,} steps), "
        f"{seconds:.0f} s; verdicts {verdicts}"
    )
    _budgets(doc)
    return code == 0


def fuzz(protocol: str, schedules: int, master: str, work: Path) -> bool:
    out = work / f"fuzz-{protocol}"
    code, doc, seconds = isrcheck(
        "fuzz",
        "--protocol",
        protocol,
        "--faults",
        "all",
        "--schedules",
        str(schedules),
        "--master",
        master,
        "--out",
        str(out),
    )
    verdicts = ", ".join(f"{k} {v}" for k, v in doc["by_verdict"].items())
    print(
        f"fuzz --faults all {protocol}: {schedules:,} schedules of {doc['steps']} steps, {seconds:.0f} s "
        f"({doc['run']['schedules_per_s']} schedules/s); verdicts {verdicts}"
    )
    _budgets(doc)
    return code == 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parts", default="explore,cover,fuzz")
    parser.add_argument("--protocols", default="kip-966,kip-320,kip-903")
    parser.add_argument("--schedules", type=int, default=10_000)
    parser.add_argument("--master", default="local[2]")
    args = parser.parse_args()
    parts, ok = args.parts.split(","), True
    with tempfile.TemporaryDirectory() as tmp:
        for protocol in args.protocols.split(","):
            if "explore" in parts:
                ok &= explore(protocol)
            if "cover" in parts:
                ok &= cover(protocol, args.master, Path(tmp))
            if "fuzz" in parts:
                ok &= fuzz(protocol, args.schedules, args.master, Path(tmp))
    print("no violation within a fault budget, no divergence" if ok else "VIOLATION or divergence: see above")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
