"""``isrcheck sim``: the implementation alone under a seeded workload with faults
(``isrcheck.impl.sim.workload``), its nodes' event log then validated against the model
(``engines/validate``): a run that drives itself, checked step by step after the fact.

Exit codes: 0 the model explains its events and no check failed within its fault budget; 1 an
event no behaviour of the model explains, or a check that failed within its budget (the logs
disagree, an acknowledged write was lost, an offset read two ways: the run's own checks, and the
model's history properties along the behaviour that explains it, judged by the fault budgets as
lockstep judges them: ``engines/validate/budgets.py``), or a deadline Kafka keeps that the run
missed (``engines/validate/timeliness.py``); 2 bad arguments. A check that failed only
once the run had left its budget is printed as broken outside it, with why.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile

from isrcheck.conformance.engines.validate import timeliness
from isrcheck.conformance.engines.validate.budgets import failed_checks, judge, judgement_lines
from isrcheck.conformance.engines.validate.validation import summary_lines, validate_path
from isrcheck.conformance.vocabulary import UsageError, output_path
from isrcheck.impl.replication import CRASH_KINDS, MAX_REPLICAS, VARIANTS
from isrcheck.impl.sim.workload import SimSummary, run_simulation


def add_arguments(parser: argparse.ArgumentParser) -> None:
    _simulation_arguments(parser)
    parser.add_argument(
        "--events",
        metavar="DIR",
        default=None,
        help="keep the nodes' event logs in DIR (default: a temporary directory)",
    )
    parser.add_argument(
        "--no-validate", action="store_true", help="do not log events nor validate them against the model"
    )


def _events_dir(path: str) -> str:
    """``--events DIR``: a directory that can be written and holds no event log yet (one run's
    files, never mixed with another's)."""
    where = output_path(path, "--events", directory=True)
    if where.is_dir() and any(where.glob("*.jsonl")):
        raise UsageError(f"--events {path}: holds an event log already; give an empty or new directory")
    return str(where)


def run(args: argparse.Namespace) -> int:
    problem = _check_arguments(args)
    if problem:
        print(f"isrcheck sim: error: {problem}", file=sys.stderr)
        return 2
    if args.no_validate:
        return _run_alone(args)
    with tempfile.TemporaryDirectory(prefix="isrcheck-events-") as scratch:
        events = _events_dir(args.events) if args.events else scratch
        summary = _simulate(args, events)
        verdict, n, seconds = validate_path(events, judge=True)
        late = timeliness.check_path(events) if verdict.explained else []
    judgement = judge(failed_checks(summary), verdict.judged) if verdict.explained else None
    lines = (
        summary_lines(verdict, n, seconds) + (judgement_lines(judgement) if judgement else []) + timeliness.lines(late)
    )
    budget = (
        {
            "violation": judgement.violation,
            "outside_budget": list(judgement.outside_budget),
            "beyond_budget": [
                {"property": p, "left": where, "reason": why} for p, where, why in judgement.beyond_budget
            ],
        }
        if judgement
        else None
    )
    _print_summary(
        args,
        summary,
        {
            "validation": verdict.to_json() | {"steps": len(verdict.steps)},
            "budget": budget,
            "late": [x.to_json() for x in late],
        },
        tuple("  " + line for line in lines),
    )
    return 0 if judgement is not None and judgement.violation is None and not late else 1


def _simulation_arguments(parser: argparse.ArgumentParser) -> None:
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


def _check_arguments(args: argparse.Namespace) -> str | None:
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


def _simulate(args: argparse.Namespace, events_dir: str | None = None) -> SimSummary:
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


def _print_summary(
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


def _summary_ok(summary: SimSummary) -> bool:
    """The logs agree, no acknowledged acks=all write was lost, no offset read two ways."""
    return summary.logs_agree and summary.lost_acked == 0 and summary.divergent_reads == 0


def _run_alone(args: argparse.Namespace) -> int:
    """``--no-validate``: the run and its own checks."""
    problem = _check_arguments(args)
    if problem:
        print(f"isrcheck sim: error: {problem}", file=sys.stderr)
        return 2
    summary = _simulate(args)
    _print_summary(args, summary)
    return 0 if _summary_ok(summary) else 1
