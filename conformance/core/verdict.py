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
        }

    def summary(self) -> str:
        """One line for terminals and logs."""
        if self.kind == PASS:
            return f"pass ({self.steps_run} steps)"
        where = f" at step {self.step}" if self.step is not None else ""
        prop = f" of {self.property}" if self.property else ""
        return f"{self.kind}{prop}{where}"
