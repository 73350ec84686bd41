"""What a gate run costs, part by part: the corpus replay, the HTML timelines, the explorer at
this repository's gate scope, and (with --spark) the whole gate as configured in pyproject.toml.

    python benchmarks/gate.py [--spark]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from isrcheck.conformance.engines.gate.config import load_gate_config
from isrcheck.conformance.engines.gate.corpus import collect, replay
from isrcheck.conformance.engines.gate.engines import NAMES
from isrcheck.conformance.reports.timeline import write_timeline

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spark", action="store_true", help="also time the whole gate (starts Spark)")
    args = parser.parse_args()
    config = load_gate_config(ROOT / "pyproject.toml", NAMES)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")

    cases, _ = collect(config.folders, config.protocols)
    start = time.perf_counter()
    for case in cases:
        replay(case)
    seconds = time.perf_counter() - start
    steps = sum(len(c.schedule.steps) for c in cases)
    print(
        f"corpus replay: {len(cases)} schedule runs, {steps} steps in {seconds:.2f} s "
        f"({len(cases) / seconds:.0f} runs/s, {steps / seconds:.0f} steps/s)"
    )

    with tempfile.TemporaryDirectory() as tmp:
        start, size = time.perf_counter(), 0
        for i, case in enumerate(cases):
            path = Path(tmp) / f"{i}.html"
            write_timeline(case.schedule, path)
            size += path.stat().st_size
        seconds = time.perf_counter() - start
        print(
            f"timelines: {len(cases)} pages in {seconds:.2f} s ({seconds / len(cases) * 1000:.0f} ms each, "
            f"mean {size / len(cases) / 1024:.0f} KiB, self-contained)"
        )

        from isrcheck.conformance.engines.gate.explore_engine import run as explore
        from isrcheck.conformance.engines.gate.job import EngineJob

        for protocol in config.engine_protocols("explore"):
            job = EngineJob(protocol, config.engine_options("explore"), None, 1.0, Path(tmp), lambda: None, None)
            run = explore(job)
            print(f"explore {protocol}: {run.summary}; {run.seconds:.2f} s")

        if args.spark:
            start = time.perf_counter()
            proc = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "isrcheck.conformance.cli.main",
                    "gate",
                    "--out",
                    str(Path(tmp) / "out"),
                    "--no-save",
                ],
                cwd=ROOT,
                capture_output=True,
                text=True,
            )
            print(
                f"isrcheck gate (pyproject.toml's budget, Spark included): exit {proc.returncode}, "
                f"{time.perf_counter() - start:.1f} s wall"
            )
            for line in proc.stdout.splitlines():
                print("  " + line)


if __name__ == "__main__":
    main()
