"""Soak figures: ``isrcheck soak`` runs of isrcheck's 3-broker cluster through librdkafka, their
throughput with and without faults, and the issue's targets.

    python benchmarks/soak.py [--duration SECONDS] [--long SECONDS] [--seed S]

Runs, each ``--duration`` seconds: kip-966 with no faults, with kill/stop/pause, and with every
fault kind (expected: no anomaly); kip-320 with power losses of up to every broker at once
(expected: lost writes, Kafka does not fsync); kip-320 with unclean election, the scenario
``UNCLEAN`` played for 30 s (expected: lost writes, an out-of-sync replica elected: random plans of
kills and partitions rarely leave the only live broker out of the ISR). ``--long`` adds the 10-minute
target run of kip-966 under every fault kind (0 to skip). Each run's folder is kept under a
temporary directory printed at the start.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

from isrcheck.conformance.engines.soak.driver import SoakOptions, run_soak
from isrcheck.conformance.engines.soak.faults import FAULT_KINDS, Fault
from isrcheck.impl.controller import CONTROLLER_ID

# unclean election's loss as Kafka documents it: broker 2 cut off falls out of every ISR, writes are
# acknowledged by brokers 0 and 1 alone, both die, the partition heals and broker 2, the only one
# left, is elected though out of sync; 0 and 1 come back and truncate to its log
UNCLEAN = (Fault("partition", (2,), 3.0, 12.0, ((2,), (0, 1, CONTROLLER_ID))), Fault("kill", (0, 1), 8.0, 16.0))

RUNS = [  # (name, protocol, fault kinds or a scenario, max down, unclean election, what Kafka promises)
    ("kip-966, no faults", "kip-966", (), 1, False, "no anomaly"),
    ("kip-966, kill/stop/pause", "kip-966", ("kill", "stop", "pause"), 1, False, "no anomaly"),
    ("kip-966, every fault kind", "kip-966", FAULT_KINDS, 1, False, "no anomaly"),
    ("kip-320, power losses of all brokers", "kip-320", ("power",), 3, False, "lost writes"),
    ("kip-320, unclean election", "kip-320", UNCLEAN, 2, True, "lost writes"),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--long", type=float, default=600.0, help="the long kip-966 run (0: skip)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="isrcheck-soak-bench-")
    print(f"$ python benchmarks/soak.py --duration {args.duration:g} --long {args.long:g} --seed {args.seed}")
    print(
        f"3 brokers, min.insync.replicas 2, 4 producers, 2 consumers, 3 partitions; folders in {root}; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    runs = list(RUNS)
    if args.long:
        runs.append(("kip-966, every fault kind (long)", "kip-966", FAULT_KINDS, 1, False, "no anomaly"))
    print(f"{'run':40} {'s':>6} {'faults':>6} {'sends ok/s':>10} {'fail':>5} {'info':>5}  anomalies (expected)")
    for i, (name, protocol, kinds, max_down, unclean, expected) in enumerate(runs):
        duration = args.long if name.endswith("(long)") else args.duration
        scripted = bool(kinds) and isinstance(kinds[0], Fault)
        options = SoakOptions(
            protocol=protocol,
            duration_s=min(duration, 30) if scripted else duration,
            faults=() if scripted else kinds,
            script=kinds if scripted else (),
            seed=args.seed + i,
            max_down=max_down,
            unclean_election=unclean,
            directory=os.path.join(root, f"run-{i}"),
        )
        started = time.monotonic()
        result = run_soak(options)
        sends = result.counts.get("send", {})
        print(
            f"{name:40} {result.seconds:6.0f} {len(result.faults):6} {result.throughput()['sends_ok_per_s']:10} "
            f"{sends.get('fail', 0):5} {sends.get('info', 0):5}  {', '.join(result.anomalies) or 'none'} "
            f"({expected}; {time.monotonic() - started:.0f} s wall)",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
