"""The generator loop, written once: every generator of schedules takes its steps here.

Each step is a refused one when the refusal quota is due (any step of the alphabet the model
refuses: the implementation must refuse it too), else one of the model's enabled steps within the
fault budget, its kind weighed by the fault profile (uniform kinds would crash and fence far more
often than they replicate), then which step of that kind. Random walks choose with a seeded
``random.Random`` (``choices.SeededChoices``); the Hypothesis strategies and state machine with
Hypothesis's ``draw`` (``choices.DrawnChoices``), so Hypothesis shrinks what they drew.
"""

from __future__ import annotations

from isrcheck.conformance.core.lockstep import Lockstep
from isrcheck.conformance.generators.choices import Choices
from isrcheck.conformance.generators.profiles import FaultProfile
from isrcheck.conformance.generators.refusals import RefusalQuota, by_kind, lineage_refused, refused_steps
from isrcheck.conformance.generators.swarm import LINEAGE, Swarm
from isrcheck.model.alphabet import CRASH, Step, is_disk_fault
from isrcheck.model.budget import FaultBudget


class StepGenerator:
    """One generated run: proposes each next step (``propose``) and takes it in lockstep
    (``take``), keeping the refusal quota and the fault budget's accounting."""

    def __init__(
        self, run: Lockstep, profile: FaultProfile, choices: Choices, refusals: float, swarm: Swarm | None = None
    ) -> None:
        self.run, self.profile, self.choices, self.swarm = run, profile, choices, swarm
        self.quota = RefusalQuota(refusals)
        self.budget = FaultBudget(run.cfg, run.protocol, profile.spare_known_gaps) if profile.within_budget else None
        self.taken: list[dict] = []

    def options(self, kind: str | None = None) -> dict[str, list[Step]]:
        """The enabled steps the profile may take now (within its budget, weighed above 0), by
        kind in the model's order; only those of ``kind`` when given. Under a swarm, those the
        swarm keeps, or the profile's when the swarm keeps none."""
        by_name = self._options(kind, self.profile.weights, self.profile.crash_kinds)
        swarm = self.swarm
        if swarm is None:
            return by_name
        narrowed: dict[str, list[Step]] = {}
        for name, steps in by_name.items():
            if swarm.weights.get(name, 0.0) > 0:
                kept = [st for st in steps if swarm.weight(st, self.run.state) > 0]
                if kept:
                    narrowed[name] = kept
        return narrowed or by_name

    def _options(self, kind, weights, kinds) -> dict[str, list[Step]]:
        state, budget = self.run.state, self.budget
        by_name: dict[str, list[Step]] = {}
        for step in self.run.enabled_steps():
            if kind is not None and step.name != kind:
                continue
            if budget is not None and not budget.allows(state, step):
                continue
            if not self.profile.disk_faults and is_disk_fault(step):
                continue
            if weights.get(step.name, 0.0) > 0 and (step.name != CRASH or kinds.get(step.arg, 0.0) > 0):
                by_name.setdefault(step.name, []).append(step)
        return by_name

    def propose(self, kind: str | None = None) -> tuple[Step, bool] | None:
        """(the next step, whether the model refuses it), or None when the profile can take no
        step (of ``kind``, when given)."""
        quota, choices = self.quota, self.choices
        if self.swarm is not None and self.swarm.refusal_focus == LINEAGE:
            # a step only the variant's own rules refuse, proposed as soon as there is one: such
            # states are rare and brief (a new leader's HW below its epoch's start), and a missing
            # guard shows at once there
            lineage = lineage_refused(self.run.cfg, self.run.state, self.run.enabled_steps())
            if lineage:
                quota.count(True)
                return choices.one_of(lineage, "refused by the variant's own rules"), True
        if quota.rate and choices.refusal_due(quota):
            refused = by_kind(
                refused_steps(self.run.cfg, self.run.state, self.run.enabled_steps(), self.profile.disk_faults)
            )
            if refused:
                quota.count(True)
                if self.swarm is not None:
                    return self.swarm.refused(choices, refused, self.run.state), True
                name = choices.one_of(list(refused), "refused kind")
                return choices.one_of(refused[name], "refused step"), True
        quota.count(False)
        by_name = self.options(kind)
        if not by_name:
            return None
        names = list(by_name)
        swarm = self.swarm
        if swarm is not None and all(swarm.weights.get(n, 0.0) > 0 for n in names):
            # a kind weighs as much as its steps on average: a slow broker's only pending
            # delivery is as rare as it is among others'
            weights = {n: [swarm.weight(o, self.run.state) for o in by_name[n]] for n in names}
            name = choices.weighted(
                names, [swarm.weights[n] * sum(weights[n]) / len(weights[n]) for n in names], "step kind"
            )
            return choices.weighted(by_name[name], weights[name], "step"), False
        name = choices.weighted(names, [self.profile.weights[n] for n in names], "step kind")
        options = by_name[name]
        if name == CRASH:
            return choices.weighted(options, [self.profile.crash_kinds[o.arg] for o in options], CRASH), False
        return choices.one_of(options, "step"), False

    def take(self, step: Step, refused: bool):
        """Take ``step`` on both sides; the failed verdict if the run failed here, else None."""
        before = self.run.state
        self.taken.append(step.to_json())
        outcome = self.run.step(step)
        if outcome is None and not refused and self.budget is not None:
            self.budget.took(before, step)
        return outcome

    def walk(self, steps: int) -> None:
        """Up to ``steps`` steps, stopping at the first failure or when no step can be taken."""
        for _ in range(steps):
            proposed = self.propose()
            if proposed is None or self.take(*proposed) is not None:
                return
