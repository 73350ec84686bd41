"""What one schedule's lockstep run leaves: its verdict, the steps both sides refused, the
implementation's side at a divergence and, when recorded, a frame per step (what a trace
printout, an explanation or an HTML timeline is drawn from). ``Lockstep.run`` makes one; the
reports read it and never run the schedule again."""

from __future__ import annotations

from dataclasses import dataclass

from isrcheck.conformance.core.schedule import Schedule
from isrcheck.conformance.core.verdict import Verdict
from isrcheck.model import State, Step


@dataclass(frozen=True)
class Frame:
    """One step taken (or refused by both sides): ``step`` as the schedule writes it, ``state`` the
    model's abstract state after it (which the implementation's equals up to the first divergence):
    a reference to the immutable state the run held, not a copy."""

    index: int
    step: dict
    refused: str | None
    outputs: tuple
    state: State


@dataclass(frozen=True)
class Run:
    """``refused``: ``(index, step, the model's reason)`` of every step both sides refused.
    ``impl_outputs`` / ``impl_state``: at a divergence of outputs / of abstract states, what the
    implementation had. ``initial`` and ``frames``: the state before the first step and a frame
    per step up to the verdict, when the run was recorded (else None; an invalid schedule's
    recorded run has no initial state and no frames)."""

    schedule: Schedule
    verdict: Verdict
    refused: tuple[tuple[int, Step, str], ...] = ()
    impl_outputs: tuple | None = None
    impl_state: State | None = None
    initial: State | None = None
    frames: tuple[Frame, ...] | None = None
    model_seconds: float = 0.0  # time in the model's steps, and in the implementation's (adapter, abstraction)
    impl_seconds: float = 0.0
