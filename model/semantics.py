"""Taking steps (docs/steps.md): ``why_disabled``, ``enabled`` and ``apply`` over the actions of
``model/actions.py``, in the alphabet's order."""

from __future__ import annotations

from .actions import ACTIONS, Action
from .alphabet import STEPS, Step, check_replica, configured_kinds, steps_of
from .next_state import NextState
from .state import State


class StepRefused(Exception):
    """The step is not enabled in this state; ``reason`` says why. Nothing changed."""

    def __init__(self, step: Step, reason: str):
        super().__init__(f"{step.name} refused: {reason}")
        self.step = step
        self.reason = reason


def _parse(cfg, step) -> Step:
    st = step if type(step) is Step else Step.from_json(step)
    kind = STEPS[st.name]
    if (
        "replica" in kind.fields
        and not 0 <= st.replica < cfg.replicas
        and not (st.replica == -1 and "replica" in kind.optional)
    ):
        check_replica(st.name, st.replica, cfg.replicas)
    return st


def take(cfg, s: State, st: Step, action: type[Action]) -> tuple[State, list[dict]]:
    """The successor of ``s`` by an enabled step of ``action``, and its outputs."""
    nx = NextState(cfg, s)
    nx.take(action, st)
    return nx.freeze(), nx.out


def why_disabled(cfg, s: State, step) -> str | None:
    """None if ``step`` is enabled in ``s``, else the reason it would be refused."""
    st = _parse(cfg, step)
    return ACTIONS[st.name].guard(cfg, s, st)


def apply(cfg, s: State, step) -> tuple[State, list[dict]]:
    """Take one step: the successor state and the outputs in the order they happened.
    Raises StepRefused (nothing changes) if the step is not enabled, InvalidStep if malformed."""
    st = _parse(cfg, step)
    action = ACTIONS[st.name]
    reason = action.guard(cfg, s, st)
    if reason is not None:
        raise StepRefused(st, reason)
    return take(cfg, s, st, action)


def enabled(cfg, s: State) -> list[Step]:
    """The enabled steps of ``s`` in a deterministic order: the alphabet's, then by the step's
    fields (replica id, choice value, message index)."""
    out = []
    for kind, steps in configured_kinds(cfg):
        guard = ACTIONS[kind.name].guard
        out += [
            st for st in (steps if steps is not None else steps_of(kind, cfg.replicas, s)) if guard(cfg, s, st) is None
        ]
    return out
