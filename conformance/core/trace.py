"""A schedule run step by step, keeping what each step did: the frames a trace printout or an
HTML timeline is drawn from. The lockstep runner decides; this only records its way there."""
from __future__ import annotations

from dataclasses import dataclass, field

from isrcheck.conformance.core.schedule import Schedule
from isrcheck.conformance.core.verdict import Verdict


@dataclass(frozen=True)
class Frame:
    """One step taken (or refused by both sides): ``state`` is the model's abstract state after
    it (which the implementation's equals up to the first divergence)."""

    index: int
    step: dict
    refused: str | None
    outputs: tuple
    state: object


@dataclass
class Trace:
    schedule: Schedule
    initial: object
    frames: list[Frame] = field(default_factory=list)
    verdict: Verdict | None = None
    impl_outputs: list | None = None  # at a divergence of outputs, what the implementation answered
    impl_state: object = None         # at a divergence of states, the implementation's abstract state

    @property
    def refused(self) -> list[tuple[int, dict, str]]:
        return [(f.index, f.step, f.refused) for f in self.frames if f.refused is not None]


def trace_run(schedule: Schedule, impl: bool = True, sut=None) -> Trace:
    """Replay ``schedule`` in lockstep on ``sut`` (see ``Lockstep``) and keep a frame per step up
    to the verdict."""
    from isrcheck.model import Step

    from isrcheck.conformance.core.lockstep import Lockstep, expected_property

    run = Lockstep(schedule.protocol, schedule.config, impl=impl, sut=sut, prefer=expected_property(schedule))
    trace = Trace(schedule, run.state)
    for i, raw in enumerate(schedule.steps):
        failed = run.step(Step.from_json(raw))
        refused = run.refused[-1][2] if run.refused and run.refused[-1][0] == i else None
        trace.frames.append(Frame(i, dict(raw), refused, tuple(run.last_outputs) if refused is None else (),
                                  run.state))
        run.last_outputs = []
        if failed is not None:
            break
    trace.verdict = run.verdict()
    trace.impl_outputs, trace.impl_state = run.impl_outputs, run.impl_state
    return trace
