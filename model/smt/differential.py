"""The encoding held against the executable model, one (state, step) at a time: the solver must
admit exactly the model's successor when the model takes the step, and nothing when it refuses it."""

from __future__ import annotations

from dataclasses import dataclass

import z3

from ..semantics import StepRefused, apply
from ..state import State
from .actions import successor
from .protocols import rules_for
from .state import Bounds, OutOfBounds, constant, decode, embed, fresh, values_of


@dataclass
class Outcome:
    """``kind``: "agree" (taken by both, same successor), "refused" (refused by both),
    "out-of-bounds" (the model's successor does not fit the encoding's bounds) or "mismatch"
    (``detail`` says how)."""

    kind: str
    detail: str = ""


def check_transition(cfg, b: Bounds, state: State, step, timeout_ms: int = 10_000) -> Outcome:
    rules = rules_for(cfg.protocol)
    pre = constant(b, embed(b, state))
    guard, post, fits, room = successor(cfg, rules, b, pre, step)
    fits = z3.And(fits, room)
    solver = z3.Solver()
    solver.set("timeout", timeout_ms)
    try:
        expected, _out = apply(cfg, state, step)
    except StepRefused:
        solver.add(guard)
        verdict = solver.check()
        return Outcome("refused") if verdict == z3.unsat else Outcome("mismatch", f"model refuses, solver: {verdict}")
    try:
        want = embed(b, expected)
    except OutOfBounds as exc:
        solver.add(guard, z3.Not(fits))
        if solver.check() != z3.sat:
            return Outcome("mismatch", f"successor out of bounds ({exc}) but the encoding says it fits")
        return Outcome("out-of-bounds", str(exc))
    var = fresh(b, "post.")
    solver.add(guard, fits, *(var[k] == post[k] for k in var))
    verdict = solver.check()
    if verdict != z3.sat:
        return Outcome("mismatch", f"model takes the step, solver: {verdict}")
    got = decode(b, values_of(solver.model(), var))
    if got != expected:
        return Outcome("mismatch", _diff(expected, got))
    solver.add(z3.Or([var[k] != v for k, v in constant(b, want).items()]))
    verdict = solver.check()
    if verdict != z3.unsat:
        return Outcome("mismatch", f"solver admits another successor too ({verdict})")
    return Outcome("agree")


def _diff(expected: State, got: State) -> str:
    for name, a, c in zip(State._fields, expected, got):
        if a != c:
            if name == "replicas":
                for r, (x, y) in enumerate(zip(a, c)):
                    for field, u, v in zip(x._fields, x, y):
                        if u != v:
                            return f"replicas[{r}].{field}: model {u!r}, encoding {v!r}"
            return f"{name}: model {a!r}, encoding {c!r}"
    return "states differ"
