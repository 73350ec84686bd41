"""``isrcheck check SCHEDULE.json``: replay a schedule in lockstep on the model and the implementation.

Exit 0 pass, 1 violation or divergence, 2 an invalid schedule (the message names the field).
A violation or divergence is told in one sentence after the verdict (``--json``: ``explanation``):
which broker, which offset, what a client was told and what removed it, or what each side did.
With ``expected`` verdicts in the file, a verdict that differs from the expectation is reported;
with ``--expected`` the exit code says whether the verdict is the expected one. Steps refused by
both sides are listed (``--json``: ``refused``; ``--trace``: ``refused: <reason>``); with
``--strict`` any refused step makes the schedule invalid.
"""

from __future__ import annotations

import json

from isrcheck.conformance.core import sut_spec
from isrcheck.conformance.core.lockstep import Lockstep, invalid
from isrcheck.conformance.core.render import render_state
from isrcheck.conformance.core.run import Run
from isrcheck.conformance.core.schedule import PROTOCOLS, ScheduleError, load_schedule
from isrcheck.conformance.reports.explain import explain
from isrcheck.conformance.vocabulary import UsageError


def add_arguments(parser) -> None:
    parser.add_argument("schedule", help="schedule file (JSON, see README: Schedules and conformance)")
    parser.add_argument("--protocol", choices=PROTOCOLS, help="run under this protocol instead of the file's")
    parser.add_argument(
        "--model-only", action="store_true", help="run the reference model alone (no implementation, no divergences)"
    )
    parser.add_argument(
        "--expected",
        action="store_true",
        help="exit 0 when the verdict is the file's expected one for the protocol, else 1 "
        "(for CI: a known violation that still shows passes)",
    )
    parser.add_argument(
        "--trace", action="store_true", help="print every step with its outputs and the abstract state after it"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    parser.add_argument(
        "--strict",
        action="store_true",
        help="a step refused by model and implementation makes the schedule invalid (exit 2)",
    )
    sut_spec.add_arguments(parser)


def load_schedule_arg(path: str, protocol: str | None):
    """The schedule named on the command line, under ``protocol`` if given; bad input exits 2."""
    try:
        schedule = load_schedule(path)
        return schedule.with_protocol(protocol) if protocol else schedule
    except ScheduleError as exc:
        raise UsageError(str(exc)) from None


def run(args) -> int:
    schedule = load_schedule_arg(args.schedule, args.protocol)
    if args.expected and schedule.protocol not in schedule.expected:
        raise UsageError(f"{args.schedule}: --expected, but the file expects nothing for {schedule.protocol}")
    if args.sut is not None and args.model_only:
        raise UsageError("--sut and --model-only: a model-only run has no implementation")
    sut = sut_spec.from_arguments(args)
    # recorded, so a failure is explained from this run: frames are references to its states
    result = Lockstep.run(schedule, impl=not args.model_only, sut=sut, record=True)
    verdict, refused = result.verdict, result.refused
    if args.trace:
        _print_trace(result)
    if args.strict and refused:
        i, step, reason = refused[0]
        verdict = invalid(f"steps[{i}] {step.to_json()}: refused: {reason} (--strict)")
    sentence = _explained(result) if verdict is result.verdict else None
    expected = schedule.expected.get(schedule.protocol)
    as_expected = None if expected is None else expected.matches(verdict)
    if args.json:
        doc = {
            "schedule": schedule.name or str(args.schedule),
            "protocol": schedule.protocol,
            **verdict.to_json(),
            "refused": [{"index": i, "step": step.to_json(), "reason": reason} for i, step, reason in refused],
        }
        if sentence is not None:
            doc["explanation"] = sentence
        if expected is not None:
            doc["expected"] = expected.to_json()
            doc["as_expected"] = as_expected
        print(json.dumps(doc, indent=2))
    else:
        print(
            f"{schedule.name or args.schedule} [{schedule.protocol}]: {verdict.summary()}"
            + (f": {sentence}" if sentence is not None else "")
        )
        if refused and not args.trace:
            print(f"{len(refused)} step(s) refused by both sides: " + ", ".join(str(i) for i, _s, _r in refused))
        if verdict.diff:
            print(verdict.diff)
        for prop, step, why in verdict.beyond_budget:
            print(
                f"{prop} fails at step {step} outside its fault budget ({why}): Kafka does not promise it "
                "there, so this is no violation"
            )
        if expected is not None:
            print(f"expected: {expected.summary()} -> {'as expected' if as_expected else 'NOT as expected'}")
    if verdict.kind == "invalid-schedule":
        return 2
    if args.expected:
        return 0 if as_expected else 1
    return 1 if verdict.failed else 0


def _print_trace(run: Run) -> None:
    """Every step of a recorded run: its outputs or refusal and the model's state after it."""
    if run.initial is None:  # an invalid schedule: no step was run
        return
    print(f"initial state:\n{render_state(run.initial)}")
    for frame in run.frames:
        step = frame.step
        if frame.refused is not None:
            print(f"step {frame.index}: {step}\n  refused: {frame.refused}")
            continue
        print(f"step {frame.index}: {step}" + "".join(f"\n  -> {out}" for out in frame.outputs))
        print(render_state(frame.state))


def _explained(run: Run) -> str | None:
    """The sentence for a violation or divergence, or for a property broken only outside its fault
    budget, from the run's frames."""
    why = explain(run)
    return why.sentence if why is not None else None
