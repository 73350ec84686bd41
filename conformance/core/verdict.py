"""Verdicts: what one run of a schedule concluded, in a form both humans and Parquet rows take."""

from __future__ import annotations

import builtins
from dataclasses import dataclass

PASS, VIOLATION, DIVERGENCE, INVALID = "pass", "violation", "divergence", "invalid-schedule"
SUT_FAILURE = "sut-failure"  # the external system under test crashed, hung or answered out of protocol


@dataclass(frozen=True)
class Verdict:
    """``kind`` is pass, violation (a property fails on both sides), divergence (impl and model
    disagree), sut-failure (the system under test crashed, hung or broke the driver protocol, so
    there was nothing to compare) or invalid-schedule; ``step`` is the index of the first bad step."""

    kind: str
    property: str | None = None
    step: int | None = None
    diff: str | None = None
    trace_hash: str = ""
    coverage: tuple[str, ...] = ()
    steps_run: int = 0
    # properties that failed only outside their fault budget: (property, first step it failed, why
    # the run was outside the budget there), in the order they failed
    beyond_budget: tuple[tuple[str, int, str], ...] = ()
    # every property whose fault budget the run had left by its end (checked only up to there)
    outside_budget: tuple[str, ...] = ()
    # the other properties that failed at the same step within their budget (``property`` is the
    # one the verdict names: the schedule's expected one, else the first in specs' order)
    also: tuple[str, ...] = ()

    @builtins.property  # the field ``property`` shadows the builtin in the class body
    def failed(self) -> bool:
        return self.kind in (VIOLATION, DIVERGENCE, SUT_FAILURE)

    def same_failure(self, other: "Verdict") -> bool:
        """Same kind and same property: what shrinking must preserve."""
        return self.kind == other.kind and self.property == other.property

    def to_json(self) -> dict:
        return {
            "verdict": self.kind,
            "property": self.property,
            "step": self.step,
            "diff": self.diff,
            "trace_hash": self.trace_hash,
            "coverage": list(self.coverage),
            "steps_run": self.steps_run,
            "beyond_budget": [{"property": p, "step": i, "reason": why} for p, i, why in self.beyond_budget],
            "outside_budget": list(self.outside_budget),
            "also": list(self.also),
        }

    def summary(self) -> str:
        """One line for terminals and logs."""
        beyond = "".join(f"; {p} broken outside its fault budget at step {i}" for p, i, _ in self.beyond_budget)
        if self.kind == PASS:
            return f"pass ({self.steps_run} steps{beyond})"
        where = f" at step {self.step}" if self.step is not None else ""
        prop = f" of {self.property}" if self.property else ""
        return f"{self.kind}{prop}{where}" + (f" ({beyond[2:]})" if beyond else "")
