"""``isrcheck shrink SCHEDULE.json -o OUT.json``: the smallest schedule that fails the same way."""

from __future__ import annotations

import json

from isrcheck.conformance.cli.check import load_schedule_arg
from isrcheck.conformance.core import sut_spec
from isrcheck.conformance.core.lockstep import run_schedule
from isrcheck.conformance.core.schedule import PROTOCOLS
from isrcheck.conformance.generators.shrink import shrink
from isrcheck.conformance.vocabulary import SECONDS, UsageError, output_path


def add_arguments(parser) -> None:
    parser.add_argument("schedule", help="a failing schedule file (JSON)")
    parser.add_argument("-o", "--output", required=True, help="where to write the shrunk schedule")
    parser.add_argument("--protocol", choices=PROTOCOLS, help="run under this protocol instead of the file's")
    parser.add_argument(
        "--time-budget",
        type=SECONDS,
        default=10.0,
        metavar="SECONDS",
        help=f"stop shrinking after this long (default 10; {SECONDS.describe()})",
    )
    parser.add_argument(
        "--keep-budget",
        metavar="PROFILE",
        default=None,
        help="only keep smaller schedules that stay within this fault profile's budget "
        "(e.g. default), so the shrunk failure is still one the budget promises against",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    sut_spec.add_arguments(parser)


def run(args) -> int:
    out = output_path(args.output, "-o", directory=False)
    schedule = load_schedule_arg(args.schedule, args.protocol)

    accept = None
    if args.keep_budget is not None:
        # hypothesis: loaded only to check a fault budget
        from isrcheck.conformance.generators.walk import FAULT_PROFILES, within_budget

        if args.keep_budget not in FAULT_PROFILES:
            raise UsageError(
                f"--keep-budget: unknown fault profile {args.keep_budget!r} (known: {', '.join(FAULT_PROFILES)})"
            )
        if not within_budget(schedule, args.keep_budget):
            raise UsageError(f"{args.schedule}: the schedule itself leaves the budget of {args.keep_budget!r}")
        accept = lambda candidate: within_budget(candidate, args.keep_budget)  # noqa: E731
    sut = sut_spec.from_arguments(args)
    verdict = run_schedule(schedule, sut=sut)
    if verdict.kind == "invalid-schedule":
        raise UsageError(f"{args.schedule}: {verdict.diff}")
    if not verdict.failed:
        print(f"{args.schedule}: passes; nothing to shrink (not written to {args.output})")
        return 0
    small, small_verdict = shrink(schedule, verdict, time_budget_s=args.time_budget, accept=accept, sut=sut)
    try:
        out.write_text(small.dumps(), encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{out}: cannot write: {exc.strerror or exc}") from None
    if args.json:
        print(
            json.dumps(
                {
                    "steps_before": len(schedule.steps),
                    "steps_after": len(small.steps),
                    "output": str(out),
                    **small_verdict.to_json(),
                },
                indent=2,
            )
        )
    else:
        print(f"{verdict.summary()}: {len(schedule.steps)} -> {len(small.steps)} steps, written to {out}")
        if small_verdict.diff:
            print(small_verdict.diff)
    return 1
