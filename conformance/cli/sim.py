"""``isrcheck sim``: the implementation alone under a seeded workload with faults
(``isrcheck.impl.sim.cli``), its nodes' event log then validated against the model
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
import sys
import tempfile

from isrcheck.conformance.engines.validate import timeliness
from isrcheck.conformance.engines.validate.budgets import failed_checks, judge, judgement_lines
from isrcheck.conformance.engines.validate.command import summary_lines, validate_path
from isrcheck.conformance.vocabulary import UsageError, output_path
from isrcheck.impl.sim import cli as impl_cli


def add_arguments(parser: argparse.ArgumentParser) -> None:
    impl_cli.add_arguments(parser)
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
    problem = impl_cli.check_arguments(args)
    if problem:
        print(f"isrcheck sim: error: {problem}", file=sys.stderr)
        return 2
    if args.no_validate:
        return impl_cli.run(args)
    with tempfile.TemporaryDirectory(prefix="isrcheck-events-") as scratch:
        events = _events_dir(args.events) if args.events else scratch
        summary = impl_cli.simulate(args, events)
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
    impl_cli.print_summary(
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
