"""How ``isrcheck check`` scales with the length of one schedule: steps/s and peak memory.

    python benchmarks/long_schedule.py [--steps 10000,100000] [--kind walk|cycle] [--protocol P]

``walk``: one seeded random walk with the ``default`` fault profile (crashes of each kind, lost
messages, fences, rejoins, elections, lost disks), generated on the model alone. ``cycle``: a
healthy cycle repeated (an acks=all produce, two fetch rounds of both followers, a consume, a
tick), so the logs and the consumed records grow all along. Each schedule is written to a file and
checked in a fresh process, as ``isrcheck check FILE`` would; generating it is not timed. For
linear work the steps/s stay about the same from one length to the next and the peak memory grows
with the logs only.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from isrcheck.model.alphabet import CONSUME, HANDLE_FETCH, HANDLE_FETCH_RESPONSE, PRODUCE, SEND_FETCH, TICK

CHECK = """
import json, resource, sys, time
from isrcheck.conformance import load_schedule, run_schedule
schedule = load_schedule(sys.argv[1])
start = time.perf_counter()
verdict = run_schedule(schedule)
seconds = time.perf_counter() - start
peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"verdict": verdict.kind, "steps": verdict.steps_run, "seconds": seconds, "peak_mb": peak_mb}))
"""


def cycle(steps: int, protocol: str):
    from isrcheck.conformance import Schedule

    one = [{"step": PRODUCE, "replica": 0, "acks": -1}]
    one += [
        {"step": name, "replica": f}
        for _ in range(2)
        for f in (1, 2)
        for name in (SEND_FETCH, HANDLE_FETCH, HANDLE_FETCH_RESPONSE)
    ]
    one += [{"step": CONSUME, "replica": 0}, {"step": TICK}]
    return Schedule.from_json(
        {"version": 1, "protocol": protocol, "name": f"cycle-{steps}", "steps": (one * (steps // len(one) + 1))[:steps]}
    )


def walk(steps: int, protocol: str):
    from isrcheck.conformance import random_walk

    return random_walk(1, protocol, steps, faults="default", impl=False)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", default="10000,100000", help="schedule lengths, comma-separated")
    parser.add_argument("--kind", choices=("walk", "cycle"), default="walk")
    parser.add_argument("--protocol", default="kip-320")
    args = parser.parse_args()
    make = walk if args.kind == "walk" else cycle
    with tempfile.TemporaryDirectory() as tmp:
        for steps in (int(n) for n in args.steps.split(",")):
            path = Path(tmp) / f"{args.kind}-{steps}.json"
            path.write_text(make(steps, args.protocol).dumps())
            proc = subprocess.run([sys.executable, "-c", CHECK, str(path)], capture_output=True, text=True)
            if proc.returncode:
                sys.exit(proc.stderr)
            r = json.loads(proc.stdout)
            print(
                f"{args.kind} {r['steps']:>7,} steps ({args.protocol}): {r['verdict']}, {r['seconds']:6.1f} s, "
                f"{r['steps'] / r['seconds']:6,.0f} steps/s, peak {r['peak_mb']:5.0f} MB",
                flush=True,
            )


if __name__ == "__main__":
    main()
