"""Soak throughput: acknowledged acks=all writes per second of the implementation as real
processes (controller and brokers each their own process, localhost TCP, real directories), with
no faults, with process crashes and clean shutdowns, and with power losses too.

    python benchmarks/soak.py [--duration SECONDS] [--protocol P] [--producers N] [--seed S]

Each run is ``isrcheck soak``'s: its anomalies are printed too (a run with power losses may show
genuine losses: the fault loop does not keep to the properties' fault budget).
"""
from __future__ import annotations

import argparse
import asyncio
import os
import tempfile

from isrcheck.conformance.engines.soak.driver import FAULTS, run_soak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--protocol", default="kip-320")
    parser.add_argument("--producers", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(f"{args.protocol}, 3 brokers, min.insync.replicas 2, {args.producers} producers, "
          f"{args.duration:g} s per run, load average {os.getloadavg()[0]:.1f}")
    for faults in FAULTS:
        with tempfile.TemporaryDirectory() as directory:
            r = asyncio.run(run_soak(args.protocol, directory, args.duration, faults, args.seed,
                                     producers=args.producers))
        kinds = {}
        for _t, kind, _b in r.faults:
            kinds[kind] = kinds.get(kind, 0) + 1
        print(f"  faults {faults:5s}: {r.acked_per_s:7.1f} acked writes/s ({r.acked} of {r.produced} in "
              f"{r.seconds:.1f} s); faults {dict(sorted(kinds.items())) or '-'}; errors "
              f"{dict(sorted(r.errors.items())) or '-'}; anomalies {r.anomalies or 'none'}")


if __name__ == "__main__":
    main()
