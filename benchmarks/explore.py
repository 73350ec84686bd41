"""Exhaustive exploration figures: states, transitions, depth, seconds and states/s per variant.

    python benchmarks/explore.py [--protocol P ...] [--max-records K] [--max-crashes C] ...

Runs each protocol variant over the default scope (or the one given) to completion, or to its
first violation of every property, and prints one line per variant.
"""
from __future__ import annotations

import argparse
import resource
import time

from isrcheck.model import PROTOCOLS, ModelConfig, Scope, explore


def main() -> None:
    default = Scope()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--protocol", action="append", choices=sorted(PROTOCOLS), help="default: all variants")
    for name in ("max_records", "max_epoch", "max_crashes", "max_power_losses", "max_clock", "max_drops"):
        parser.add_argument("--" + name.replace("_", "-"), type=int, default=getattr(default, name))
    parser.add_argument("--unclean-election", action="store_true")
    args = parser.parse_args()
    scope = Scope(**{**default.to_json(), **{k: getattr(args, k) for k in (
        "max_records", "max_epoch", "max_crashes", "max_power_losses", "max_clock", "max_drops")},
        "acks": default.acks, "crash_kinds": default.crash_kinds})
    print(f"scope: {scope.to_json()}")
    print(f"{'protocol':<14}{'states':>10}{'transitions':>13}{'depth':>7}{'complete':>10}{'wall s':>9}"
          f"{'cpu s':>8}{'states/s':>10}  violations (property@steps)")
    for name in args.protocol or list(PROTOCOLS):
        config = ModelConfig(protocol=name, unclean_leader_election_enable=args.unclean_election)
        cpu = time.process_time()
        result = explore(config, scope)
        cpu = time.process_time() - cpu
        found = ", ".join(f"{v.property}@{v.depth}" for v in result.violations) or "-"
        print(f"{name:<14}{result.states:>10,}{result.transitions:>13,}{result.depth:>7}{str(result.complete):>10}"
              f"{result.seconds:>9.1f}{cpu:>8.1f}{result.states / max(cpu, 1e-9):>10,.0f}  {found}", flush=True)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory: {peak_mb:,.0f} MiB")


if __name__ == "__main__":
    main()
