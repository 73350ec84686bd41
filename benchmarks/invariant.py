"""``isrcheck prove --invariant`` figures: per variant, the candidates the grammar generates, those
left after the explorer's filter, Houdini's rounds, the conjuncts of the inductive fixpoint, the
longest one-transition query, the total time and the targets the invariant implies.

    python benchmarks/invariant.py [--protocol P ...] [--replicas N] [other options of isrcheck prove]

Each variant is the real command (``isrcheck prove --invariant --json``) in a child process, one at
a time (one core), at the default scope unless options say otherwise (the shipped invariants were
found at it); Houdini's queries do not depend on the scope's epoch and crash bounds (they are
unbounded there), only the explorer's filter and the search for a counterexample do.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

VARIANTS = ("kip-320", "kip-966", "hw-truncation", "kip-101", "kip-279")


def run(protocol: str, extra: list[str]) -> tuple[dict | None, float, int]:
    start = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "isrcheck.conformance.cli.main",
            "prove",
            "--invariant",
            "--protocol",
            protocol,
            *extra,
            "--json",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    seconds = time.perf_counter() - start
    try:
        return json.loads(proc.stdout), seconds, proc.returncode
    except json.JSONDecodeError:
        sys.stderr.write(proc.stderr)
        return None, seconds, proc.returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--protocol", action="append", default=None, choices=VARIANTS)
    args, extra = parser.parse_known_args(argv)
    print(f"isrcheck prove --invariant {' '.join(extra)} (default targets), one child process per variant")
    print(
        "| protocol | candidates | after explorer filter | Houdini rounds | conjuncts | max query s | total s "
        "| targets implied | exit |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---|---:|")
    for protocol in args.protocol or VARIANTS:
        doc, seconds, code = run(protocol, extra)
        if doc is None:
            print(f"| `{protocol}` | failed (exit {code}) | | | | | {seconds:.0f} | | {code} |")
            continue
        fig = doc["figures"]
        implied = [t for t, v in sorted(doc["targets"].items()) if v == "implied"]
        print(
            f"| `{protocol}` | {fig['candidates']:,} | {fig['after_filter']:,} | {fig['rounds']} | {fig['conjuncts']} "
            f"| {fig['max_query_seconds']:.2f} | {seconds:.0f} | {', '.join(implied) or 'none'} | {code} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
