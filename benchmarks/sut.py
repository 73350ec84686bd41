"""Lockstep steps per second with the implementation in process and behind the driver protocol
(docs/sut-protocol.md): ``python -m isrcheck.impl.sut`` on stdin/stdout and on TCP (localhost).

    python benchmarks/sut.py [--schedules N] [--steps K] [--protocol P] [--faults F]

Schedules come from seeded random walks on the model alone (outside the timed part); each is
replayed in lockstep against each system under test, and every verdict must be the same (the
script exits 1 otherwise). Figures: steps/s (all steps, refused ones included), and the
implementation's share of the time (the step, the answer, the state report and its conversion).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

from isrcheck.conformance import random_walk
from isrcheck.conformance.core.adapter import ImplSide
from isrcheck.conformance.core.lockstep import Lockstep
from isrcheck.conformance.core.sut_driver import DriverSut


def _replay(schedules, make_sut) -> tuple[float, float, int, list]:
    steps, verdicts, impl_s = 0, [], 0.0
    start = time.perf_counter()
    for schedule in schedules:
        run = Lockstep(schedule.protocol, schedule.config, sut=make_sut())
        for raw in schedule.steps:
            steps += 1
            if run.step(raw) is not None:
                break
        verdicts.append(run.verdict())
        impl_s += run.impl_seconds
    return time.perf_counter() - start, impl_s, steps, verdicts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, default=100)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--protocol", default="kip-320")
    parser.add_argument("--faults", default="default")
    args = parser.parse_args()
    schedules = [
        random_walk(seed, args.protocol, args.steps, faults=args.faults, impl=False)[0]
        for seed in range(args.schedules)
    ]
    server = subprocess.Popen(
        [sys.executable, "-m", "isrcheck.impl.sut", "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE, text=True
    )
    stdio = DriverSut(f"{sys.executable} -m isrcheck.impl.sut")
    tcp = DriverSut(f"tcp://{server.stdout.readline().split()[1]}")
    print(f"{args.schedules} schedules of up to {args.steps} steps, {args.protocol}, faults {args.faults}")
    baseline = None
    try:
        for name, make in (("in-process", ImplSide), ("stdio", lambda: stdio), ("tcp", lambda: tcp)):
            seconds, impl_s, steps, verdicts = _replay(schedules, make)
            baseline = baseline or (steps / seconds, verdicts)
            print(
                f"  {name:10s} {steps / seconds:8.0f} steps/s  ({seconds:6.2f} s for {steps} steps; "
                f"implementation {impl_s / seconds:5.1%} of it; {steps / seconds / baseline[0]:.2f}x in-process)"
            )
            if verdicts != baseline[1]:
                print(f"  {name}: verdicts differ from in-process", file=sys.stderr)
                return 1
    finally:
        stdio.close()
        tcp.close()
        server.kill()
        server.wait()
    kinds = sorted({v.kind for v in baseline[1]})
    print(f"  verdicts identical on every system ({', '.join(kinds)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
