"""Delta debugging of failing schedules: fewer steps, then simpler step parameters.

A candidate is kept only if it gives the same verdict kind and property as the original
(Zeller's ddmin over the step list, then one-parameter-at-a-time simplification, repeated until
nothing shrinks or the time budget is spent). The runner is a parameter, so the shrinker works
for the lockstep runner, the model alone, or a monkeypatched implementation in a test.
"""
from __future__ import annotations

import time
from typing import Callable

from .schedule import CRASH_KINDS, Schedule
from .verdict import Verdict

Runner = Callable[[Schedule], Verdict]

# Simpler values first; a parameter is only ever replaced by a value earlier in its list.
_SIMPLER = {
    "acks": (-1, 1, 0),
    "kind": CRASH_KINDS,  # clean < process < power: the less destructive crash first
}


class _Budget:
    def __init__(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds

    def left(self) -> bool:
        return time.monotonic() < self.deadline


class _Search:
    """Runs candidates, remembering the best (shortest, then simplest) that keeps the failure."""

    def __init__(self, schedule: Schedule, verdict: Verdict, run: Runner, budget: _Budget,
                 accept: Callable[[Schedule], bool] | None) -> None:
        self.schedule, self.verdict, self.run, self.budget = schedule, verdict, run, budget
        self.accept = accept
        self.seen: dict[tuple, Verdict | None] = {}
        self.runs = 0

    def test(self, steps: list[dict]) -> Verdict | None:
        key = tuple(tuple(sorted(s.items())) for s in steps)
        if key in self.seen:
            kept = self.seen[key]
        else:
            candidate = self.schedule.with_steps(steps)
            kept = None
            if self.accept is None or self.accept(candidate):
                self.runs += 1
                verdict = self.run(candidate)
                kept = verdict if verdict.same_failure(self.verdict) else None
            self.seen[key] = kept
        if kept is not None:
            self.schedule, self.verdict = self.schedule.with_steps(steps), kept
        return kept

    def ddmin(self, steps: list[dict]) -> list[dict]:
        """Remove chunks of steps, halving the chunk size when no chunk can go (ddmin complements)."""
        n = 2
        while len(steps) >= 2 and self.budget.left():
            chunk = max(1, len(steps) // n)
            removed = False
            for start in range(len(steps) - chunk, -1, -chunk):
                # Back to front: late steps usually depend on early ones, not the other way round.
                candidate = steps[:start] + steps[start + chunk:]
                if self.test(candidate) is not None:
                    steps, removed = candidate, True
                    n = max(n - 1, 2)
                    break
                if not self.budget.left():
                    return steps
            if not removed:
                if chunk == 1:
                    break
                n = min(n * 2, len(steps))
        return steps

    def simplify(self, steps: list[dict]) -> list[dict]:
        """Replace each parameter by a simpler value (lower replica id, oldest message, milder crash)."""
        for i in range(len(steps)):
            for key in [k for k in steps[i] if k != "step"]:
                for value in self._simpler_values(key, steps[i][key]):
                    if not self.budget.left():
                        return steps
                    candidate = steps[:i] + [{**steps[i], key: value}] + steps[i + 1:]
                    if self.test(candidate) is not None:
                        steps = candidate
                        break
        return steps

    @staticmethod
    def _simpler_values(key: str, value) -> list:
        if key in ("replica", "index"):
            return list(range(0, value))
        order = _SIMPLER.get(key)
        if order is None or value not in order:
            return []
        return list(order[: order.index(value)])


def shrink(schedule: Schedule, verdict: Verdict, time_budget_s: float = 10.0,
           run: Runner | None = None, accept: Callable[[Schedule], bool] | None = None,
           ) -> tuple[Schedule, Verdict]:
    """The smallest schedule found within the time budget that fails like ``verdict``; a passing
    or invalid verdict is returned unchanged (there is nothing to preserve). ``accept`` rejects
    candidates before they run (e.g. ``walk.within_budget``, to stay inside a fault budget)."""
    if not verdict.failed:
        return schedule, verdict
    if run is None:
        from .lockstep import run_schedule as run
    search = _Search(schedule, verdict, run, _Budget(time_budget_s), accept)
    steps = list(schedule.steps)
    if verdict.step is not None and verdict.step + 1 < len(steps):
        # Nothing after the first bad step can matter; check it anyway, the runner decides.
        if search.test(steps[: verdict.step + 1]) is not None:
            steps = steps[: verdict.step + 1]
    while search.budget.left():
        before = list(steps)
        steps = search.ddmin(steps)
        steps = search.simplify(steps)
        if steps == before:
            break
    final = search.schedule
    note = f"shrunk from {len(schedule.steps)} to {len(final.steps)} steps"
    described = Schedule(final.protocol, final.config, final.steps, final.expected, final.name,
                         f"{schedule.description}; {note}" if schedule.description else note)
    return described, search.verdict
