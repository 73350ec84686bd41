"""Schedules to the first find of two bugs random walks rarely reach, planted one at a time in the
implementation (in-process monkeypatches of impl/replication), old and new generator side by side:

    python benchmarks/rare_reach.py [--schedules 2000] [--target 2000] [--steps 100] [--faults all]
                                    [--protocol kip-320] [--bugs expand-before-epoch-hw,remote-leo-only-grows]
                                    [--generators old,new]

- ``expand-before-epoch-hw``: ``Partition.maybe_expand_isr`` without KIP-320's guard that the HW
  reached the leader's epoch (a follower rejoins the ISR while the HW is still below the epoch's
  start offset);
- ``remote-leo-only-grows``: the leader's record of a follower's LEO (``FollowerState``) never moves
  back, so a follower that truncated still counts with its old LEO.

A generator runs swarm random walks as ``isrcheck fuzz --faults all`` does (seeds 0, 1, ...,
``--steps`` each) until one is not ``pass`` (the implementation diverged from the model, or broke
a property) or ``--schedules`` ran: ``old`` with the swarm of ``swarm.LEGACY_FEATURES`` (what fuzz
drew before the steered features), ``new`` with today's. Each line: the bug, the generator, the
schedules to the first find (or none), how many of the schedules found it (not with ``--first``,
which stops at the first), the seconds, and ``met`` (the first find within ``--target``) or ``NOT met``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import sys
import time

from isrcheck.conformance import random_walk
from isrcheck.conformance.generators import swarm
from isrcheck.impl.replication import partition as partition_module

BUGS = ("expand-before-epoch-hw", "remote-leo-only-grows")


@contextlib.contextmanager
def planted(bug: str):
    """The implementation with ``bug`` (module docstring) while the block runs."""
    saved = {name: getattr(partition_module.Partition, name) for name in ("maybe_expand_isr",)}
    saved_state = partition_module.FollowerState
    if bug == "expand-before-epoch-hw":
        original = partition_module.Partition.maybe_expand_isr

        def maybe_expand_isr(self, fetched_by=None):
            variant = self.variant
            self.variant = dataclasses.replace(variant, hw_reached_epoch_to_expand=False)
            try:
                return original(self, fetched_by)
            finally:
                self.variant = variant

        partition_module.Partition.maybe_expand_isr = maybe_expand_isr
    elif bug == "remote-leo-only-grows":

        class OnlyGrows(saved_state):
            @property
            def log_end_offset(self):
                return self._leo

            @log_end_offset.setter
            def log_end_offset(self, value):
                self._leo = max(value, getattr(self, "_leo", value))

        partition_module.FollowerState = OnlyGrows
    else:
        raise ValueError(f"unknown bug {bug!r} (known: {', '.join(BUGS)})")
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(partition_module.Partition, name, value)
        partition_module.FollowerState = saved_state


@contextlib.contextmanager
def generator(name: str):
    """``new``: swarm as it is; ``old``: the swarm drawn with the legacy features only."""
    if name == "new":
        yield
        return
    steered = swarm.STEERED
    swarm.STEERED = ()
    try:
        yield
    finally:
        swarm.STEERED = steered


def finds(bug: str, gen: str, args) -> tuple[int | None, int, float, str]:
    """(schedules to the first failed verdict or None, how many of the ``--schedules`` failed,
    seconds, the first failure's kind and property)."""
    start, first, count, what = time.perf_counter(), None, 0, ""
    with planted(bug), generator(gen):
        for seed in range(args.schedules):
            _, verdict = random_walk(seed, args.protocol, args.steps, args.faults, swarm=True)
            if verdict.failed:
                count += 1
                if first is None:
                    first, what = seed + 1, f"{verdict.kind} {verdict.property or ''}".strip()
                    if args.first:
                        break
    return first, count, time.perf_counter() - start, what


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, default=2000)
    parser.add_argument("--target", type=int, default=2000)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--faults", default="all")
    parser.add_argument("--protocol", default="kip-320")
    parser.add_argument("--bugs", default=",".join(BUGS))
    parser.add_argument("--generators", default="old,new")
    parser.add_argument("--first", action="store_true", help="stop at the first find (no count)")
    args = parser.parse_args(argv)
    missed = 0
    for bug in args.bugs.split(","):
        for gen in args.generators.split(","):
            found, count, seconds, what = finds(bug, gen, args)
            met = found is not None and found <= args.target
            missed += not met
            shown = f"first at schedule {found} ({what})" if found else f"none in {args.schedules}"
            counted = "" if args.first else f", {count} of {args.schedules}"
            print(f"{bug:24} {gen:4} {shown + counted:60} {seconds:7.1f} s  {'met' if met else 'NOT met'}", flush=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
