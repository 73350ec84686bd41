"""Delta debugging of failing schedules: fewer steps, then simpler step parameters.

A candidate is kept only if it gives the same verdict kind and property as the original. The
passes, repeated until nothing shrinks or the time budget is spent: cut after the first bad step;
Zeller's ddmin over the step list; removal of related steps together (a broker's crash, fencing
and restart; every step of one kind); removal of pairs of distant steps; one-parameter-at-a-time
simplification. The runner is a parameter, so the shrinker works for the lockstep runner, the
model alone, or a monkeypatched implementation in a test.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Callable

from isrcheck.conformance.core.lockstep import run_schedule
from isrcheck.conformance.core.schedule import Schedule
from isrcheck.conformance.core.verdict import Verdict
from isrcheck.model.alphabet import CRASH_KINDS, STEPS, is_step

Runner = Callable[[Schedule], Verdict]

# Simpler values first; a parameter is only ever replaced by a value earlier in its list.
_SIMPLER = {
    "acks": (-1, 1, 0),
    "kind": CRASH_KINDS,  # clean < process < power: the less destructive crash first
}

# Steps that make up a broker's failure and recovery, removed together by ``remove_groups``.
_LIFECYCLE = tuple(name for name, kind in STEPS.items() if kind.lifecycle)


class _Budget:
    def __init__(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds

    def left(self) -> bool:
        return time.monotonic() < self.deadline


class _Search:
    """Runs candidates, remembering the best (shortest, then simplest) that keeps the failure."""

    def __init__(
        self,
        schedule: Schedule,
        verdict: Verdict,
        run: Runner,
        budget: _Budget,
        accept: Callable[[Schedule], bool] | None,
    ) -> None:
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
                candidate = steps[:start] + steps[start + chunk :]
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

    def remove_groups(self, steps: list[dict]) -> list[dict]:
        """Remove related steps together: a broker's crash/fence/restart story, everything about
        one broker, every step of one kind (all ticks), every step of one kind for one broker."""

        def groups(steps):
            keys: dict[tuple, list[int]] = {}
            for i, st in enumerate(steps):
                r = st.get("replica")
                keys.setdefault(("kind", st["step"]), []).append(i)
                if r is not None:
                    keys.setdefault(("broker", r), []).append(i)
                    keys.setdefault(("kind-broker", st["step"], r), []).append(i)
                    if st["step"] in _LIFECYCLE:
                        keys.setdefault(("lifecycle", r), []).append(i)
            return [set(v) for _, v in sorted(keys.items(), key=lambda kv: (-len(kv[1]), repr(kv[0])))]

        progress = True
        while progress and self.budget.left():
            progress = False
            for group in groups(steps):
                if len(group) < 2 or len(group) == len(steps):
                    continue
                if not self.budget.left():
                    return steps
                candidate = [st for i, st in enumerate(steps) if i not in group]
                if self.test(candidate) is not None:
                    steps, progress = candidate, True
                    break
        return steps

    def remove_pairs(self, steps: list[dict], limit: int = 40) -> list[dict]:
        """Remove two distant steps at once (a crash and its restart, a send and its delivery):
        what one-at-a-time deletion cannot do when each step alone is needed by the other."""
        if len(steps) > limit:
            return steps
        j = len(steps) - 1
        while j > 0:
            for i in range(j - 1, -1, -1):
                if not self.budget.left():
                    return steps
                candidate = steps[:i] + steps[i + 1 : j] + steps[j + 1 :]
                if self.test(candidate) is not None:
                    steps = candidate
                    j = min(j - 1, len(steps))  # j-1 is the old j's successor shifted by two
                    break
            else:
                j -= 1
        return steps

    def simplify(self, steps: list[dict]) -> list[dict]:
        """Replace each parameter by a simpler value (lower replica id, oldest message, milder crash)."""
        for i in range(len(steps)):
            for key in [k for k in steps[i] if k != "step"]:
                for value in self._simpler_values(key, steps[i][key]):
                    if not self.budget.left():
                        return steps
                    simpler = {**steps[i], key: value}
                    if not is_step(simpler):  # e.g. a milder crash that keeps a power loss's fields
                        continue
                    candidate = steps[:i] + [simpler] + steps[i + 1 :]
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


def shrink(
    schedule: Schedule,
    verdict: Verdict,
    time_budget_s: float = 10.0,
    run: Runner | None = None,
    accept: Callable[[Schedule], bool] | None = None,
    sut=None,
) -> tuple[Schedule, Verdict]:
    """The smallest schedule found within the time budget that fails like ``verdict``; a passing
    or invalid verdict is returned unchanged (there is nothing to preserve). ``accept`` rejects
    candidates before they run (e.g. ``walk.within_budget``, to stay inside a fault budget).
    Candidates run in lockstep on ``sut`` (see ``Lockstep``), unless ``run`` runs them."""
    if not verdict.failed:
        return schedule, verdict
    original = schedule
    budget = _Budget(time_budget_s)
    if run is None:
        run = partial(run_schedule, sut=sut)
        if verdict.kind == "violation":
            # A violation fails on both sides: shrink on the model alone (several times faster),
            # then confirm in lockstep and finish there; start over in lockstep if it does not hold.
            model_budget = _Budget(time_budget_s * 0.7)
            small, _ = _shrink(schedule, verdict, lambda s: run(s, impl=False), model_budget, accept)
            confirmed = run(small)
            if confirmed.same_failure(verdict):
                schedule, verdict = small, confirmed
    return _shrink(schedule, verdict, run, budget, accept, original)


def _shrink(schedule, verdict, run, budget, accept, original=None):
    original = original or schedule
    search = _Search(schedule, verdict, run, budget, accept)
    steps = list(schedule.steps)
    if verdict.step is not None and verdict.step + 1 < len(steps):
        # Nothing after the first bad step can matter; check it anyway, the runner decides.
        if search.test(steps[: verdict.step + 1]) is not None:
            steps = steps[: verdict.step + 1]
    while search.budget.left():
        before = list(steps)
        steps = search.ddmin(steps)
        steps = search.remove_groups(steps)
        steps = search.remove_pairs(steps)
        steps = search.simplify(steps)
        if steps == before:
            break
    final = search.schedule
    note = f"shrunk from {len(original.steps)} to {len(final.steps)} steps"
    base = original.description.split("; shrunk from")[0] if original.description else None
    described = Schedule(
        final.protocol, final.config, final.steps, final.expected, final.name, f"{base}; {note}" if base else note
    )
    return described, search.verdict
