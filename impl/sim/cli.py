"""``isrcheck sim``: run the implementation alone under a seeded random workload with faults.

Exit codes: 0 the logs agree, no acknowledged acks=all write was lost and no offset was read with
two different records; 1 one of those failed (expected for the older protocol variants under some
seeds, and for any variant when several replicas lose their page cache); 2 bad arguments.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..replication import CRASH_KINDS, MAX_REPLICAS, VARIANTS
from .workload import SimSummary, run_simulation


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--protocol", default="kip-320", help=f"one of {', '.join(VARIANTS)} (default kip-320)")
    parser.add_argument("--replicas", type=int, default=3, help=f"brokers, 1..{MAX_REPLICAS} (default 3)")
    parser.add_argument("--seed", type=int, default=0, help="seed of every random choice (default 0)")
    parser.add_argument("--steps", type=int, default=200, help="workload steps before healing (default 200)")
    every_kind = ",".join(CRASH_KINDS)
    parser.add_argument(
        "--crash-kinds",
        default=every_kind,
        help=f"comma-separated crash kinds the workload may use (default {every_kind}; '' for none)",
    )
    parser.add_argument("--no-faults", action="store_true", help="no crashes, partitions or message loss")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def check_arguments(args: argparse.Namespace) -> str | None:
    """What is wrong with the arguments, or None."""
    problem = None
    if args.protocol not in VARIANTS:
        problem = f"--protocol: unknown variant {args.protocol!r} (known: {', '.join(VARIANTS)})"
    elif not 1 <= args.replicas <= MAX_REPLICAS:
        problem = f"--replicas: expected 1..{MAX_REPLICAS}, got {args.replicas}"
    elif args.steps < 0:
        problem = f"--steps: expected >= 0, got {args.steps}"
    elif args.seed < 0:
        problem = f"--seed: expected >= 0, got {args.seed}"
    unknown = [k for k in _crash_kinds(args) if k not in CRASH_KINDS]
    if problem is None and unknown:
        problem = f"--crash-kinds: unknown kind {unknown[0]!r} (known: {', '.join(CRASH_KINDS)})"
    return problem


def _crash_kinds(args: argparse.Namespace) -> tuple[str, ...]:
    return tuple(k for k in args.crash_kinds.split(",") if k)


def simulate(args: argparse.Namespace, events_dir: str | None = None) -> SimSummary:
    """The run the arguments ask for; with ``events_dir`` every node's protocol events go there."""
    return run_simulation(
        args.protocol,
        args.replicas,
        args.seed,
        args.steps,
        faults=not args.no_faults,
        crash_kinds=_crash_kinds(args),
        events_dir=events_dir,
    )


def print_summary(
    args: argparse.Namespace, summary: SimSummary, extra: dict | None = None, extra_lines: tuple[str, ...] = ()
) -> None:
    """The summary as text (then ``extra_lines``) or, with ``--json``, one object (with ``extra``)."""
    if args.json:
        print(json.dumps({**summary.to_json(), **(extra or {})}, sort_keys=True))
        return
    s = summary
    print(f"isrcheck sim: {s.protocol}, {s.replicas} replicas, seed {s.seed}, {s.steps} steps, {s.sim_ms} ms simulated")
    print(
        f"  produced {s.produced}, acked {s.acked} (acks=all {s.acked_all}), committed {s.committed}, "
        f"lost acked acks=all writes {s.lost_acked}, divergent reads {s.divergent_reads}"
    )
    print(
        f"  leader changes {s.leader_changes}, ISR changes {s.isr_changes}, crashes {s.crashes} "
        f"({s.power_losses} power losses), restarts {s.restarts}, partitions {s.partitions}"
    )
    print(
        f"  messages delivered {s.messages_delivered}, lost {s.messages_lost}; "
        f"quiescent {'yes' if s.quiescent else 'NO'}; logs agree {'yes' if s.logs_agree else 'NO'}"
    )
    print(f"  trace hash {s.trace_hash}")
    for line in extra_lines:
        print(line)


def summary_ok(summary: SimSummary) -> bool:
    """The logs agree, no acknowledged acks=all write was lost, no offset read two ways."""
    return summary.logs_agree and summary.lost_acked == 0 and summary.divergent_reads == 0


def run(args: argparse.Namespace) -> int:
    problem = check_arguments(args)
    if problem:
        print(f"isrcheck sim: error: {problem}", file=sys.stderr)
        return 2
    summary = simulate(args)
    print_summary(args, summary)
    return 0 if summary_ok(summary) else 1
