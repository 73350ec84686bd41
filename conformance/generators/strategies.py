"""Hypothesis strategies and a stateful test machine for lockstep conformance.

Shipped in the package so users run them under their own settings and profiles::

    from hypothesis import settings
    from isrcheck.conformance.generators.strategies import lockstep_machine

    TestKip320 = lockstep_machine("kip-320", faults="default").TestCase
    TestKip320.settings = settings(max_examples=200, stateful_step_count=80, deadline=None)

``step_dicts`` draws any step of the alphabet (enabled or not: a step refused by both sides is a
no-op); ``schedules`` wraps them in a Schedule; ``enabled_schedules`` draws each step among the
model's enabled ones, which finds deep states far more often and shrinks well. Both it and the
machine also propose a share ``refusals`` of steps among those the model refuses (at least
``floor(refusals * steps)``, ``isrcheck.conformance.generators.refusals``): the implementation must refuse
them too.
"""
from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from isrcheck.conformance.core.lockstep import Lockstep
from isrcheck.model.alphabet import FIELDS, MAX_REPLICAS, STEPS, is_step

from isrcheck.conformance.generators.refusals import DEFAULT_REFUSALS, RefusalQuota, by_kind, refused_steps
from isrcheck.conformance.core.schedule import PROTOCOLS, Schedule, ScheduleConfig, load_config
from isrcheck.conformance.generators.walk import _Budget, _profile

def _field_values(name: str, replicas: int) -> st.SearchStrategy:
    """Valid values of one step field (alphabet.FIELDS): any broker id, any choice, any value in
    an integer field's bounds, a message index among the few a run keeps in flight."""
    spec = FIELDS[name]
    if spec.values is not None:
        return st.sampled_from(spec.values)
    if name == "replica":
        return st.integers(0, replicas - 1)
    if name == "index":
        return st.integers(0, 2)
    return st.integers(spec.low, spec.high)


def step_dicts(replicas: int = 3) -> st.SearchStrategy[dict]:
    """Any step of the alphabet with valid fields for ``replicas`` brokers."""
    def one(name: str) -> st.SearchStrategy[dict]:
        fields = {f: _field_values(f, replicas) for f in STEPS[name].fields}
        return st.fixed_dictionaries({"step": st.just(name), **fields}).filter(is_step)
    return st.one_of([one(name) for name in STEPS])


def configs(replicas: st.SearchStrategy[int] = st.integers(1, MAX_REPLICAS)) -> st.SearchStrategy[ScheduleConfig]:
    """Cluster configs over the whole valid range."""
    @st.composite
    def build(draw):
        n = draw(replicas)
        return ScheduleConfig(
            replicas=n, min_insync_replicas=draw(st.integers(1, n)),
            unclean_leader_election_enable=draw(st.booleans()),
            replica_lag_time_max_ticks=draw(st.integers(0, 4)),
            request_timeout_ticks=draw(st.integers(0, 8)),
            flush_messages=draw(st.none() | st.integers(1, 3)))
    return build()


def schedules(protocol: str | None = None, config: ScheduleConfig | None = None,
              max_steps: int = 60) -> st.SearchStrategy[Schedule]:
    """Schedules of arbitrary (mostly refused) steps; good for refusal conformance."""
    @st.composite
    def build(draw):
        proto = protocol or draw(st.sampled_from(PROTOCOLS))
        cfg = config or draw(configs())
        steps = draw(st.lists(step_dicts(cfg.replicas), max_size=max_steps))
        return Schedule.from_json(Schedule(proto, cfg, tuple(steps)).to_json())
    return build()


def enabled_schedules(protocol: str = "kip-320", config: ScheduleConfig | None = None,
                      max_steps: int = 60, faults="default",
                      refusals: float = DEFAULT_REFUSALS) -> st.SearchStrategy[Schedule]:
    """Schedules whose every step is enabled in the model when taken (within the profile's
    fault budget), but for a share ``refusals`` of refused ones; drawn step by step on the model
    alone."""
    profile = _profile(faults)
    RefusalQuota(refusals)  # checks the share now, not at the first draw

    @st.composite
    def build(draw):
        cfg = config or load_config(dict(profile.config))
        run = Lockstep(protocol, cfg, impl=False)
        budget = _Budget(cfg, profile.spare_known_gaps, protocol) if profile.within_budget else None
        quota = RefusalQuota(refusals)
        taken = []
        for _ in range(draw(st.integers(0, max_steps))):
            step = _draw_refused(draw, run, quota)
            if step is not None:
                taken.append(step.to_json())
                run.step(step)
                continue
            options = [s for s in run.enabled_steps() if budget is None or budget.allows(run.state, s)]
            step = _draw_step(draw, options, profile)
            before = run.state
            taken.append(step.to_json())
            if run.step(step) is not None:
                break
            if budget is not None:
                budget.took(before, step)
        return Schedule(protocol, cfg, tuple(taken))
    return build()


def _draw_refused(draw, run: Lockstep, quota: RefusalQuota):
    """A step the model refuses, when ``quota`` says one is due or a draw asks for one (the
    draw shrinks towards enabled steps); else None."""
    if not quota.rate:
        return None
    due = quota.behind() or draw(st.integers(0, 999), label="refused?") >= 1000 * (1 - quota.rate)
    refused = by_kind(refused_steps(run.cfg.replicas, run.state, run.enabled_steps())) if due else {}
    quota.count(bool(refused))
    if not refused:
        return None
    kind = draw(st.sampled_from(list(refused)), label="refused kind")
    return draw(st.sampled_from(refused[kind]), label="refused step")


def _draw_step(draw, options: list, profile):
    """Kind first, weighted by the fault profile as the random walk weighs it (uniform kinds
    would crash and fence far more often than they replicate), then which one of that kind."""
    weights = profile.weights
    kinds = [(name, round(10 * weights.get(name, 0.0))) for name in dict.fromkeys(s.name for s in options)]
    kinds = [(name, w) for name, w in kinds if w > 0] or [(options[0].name, 1)]
    ticket = draw(st.integers(0, sum(w for _, w in kinds) - 1), label="step kind")
    for name, w in kinds:
        if ticket < w:
            break
        ticket -= w
    same = [s for s in options if s.name == name]
    if name == "crash":
        same = [s for s in same if profile.crash_kinds.get(s.arg, 0.0) > 0] or same
    return draw(st.sampled_from(same), label="step")


class LockstepMachine(RuleBasedStateMachine):
    """Each rule application takes one step, chosen among the model's enabled steps (within the
    fault budget of ``faults``), on the model and the implementation at once; the invariant is
    that the lockstep run has neither diverged nor violated a property."""

    protocol = "kip-320"
    config = ScheduleConfig()
    faults = "default"
    impl = True
    refusals = DEFAULT_REFUSALS

    def __init__(self) -> None:
        super().__init__()
        self.profile = _profile(self.faults)
        self.run = Lockstep(self.protocol, self.config, impl=self.impl)
        self.budget = _Budget(self.config, self.profile.spare_known_gaps, self.protocol) if self.profile.within_budget else None
        self.taken: list[dict] = []
        self.quota = RefusalQuota(self.refusals)

    def _options(self):
        return [s for s in self.run.enabled_steps()
                if self.budget is None or self.budget.allows(self.run.state, s)]

    @precondition(lambda self: self.run.outcome is None)
    @rule(data=st.data())
    def take_step(self, data) -> None:
        """One step of the shared alphabet, in lockstep: enabled in the model, or a refused one."""
        step = _draw_refused(data.draw, self.run, self.quota)
        if step is not None:
            self.taken.append(step.to_json())
            self.run.step(step)
            return
        step = _draw_step(data.draw, self._options(), self.profile)
        before = self.run.state
        self.taken.append(step.to_json())
        self.run.step(step)
        if self.budget is not None:
            self.budget.took(before, step)

    @invariant()
    def agrees_and_holds(self) -> None:
        """No divergence, no violated invariant so far (the failing schedule is in the message)."""
        self._check(self.run.outcome)

    def teardown(self) -> None:
        """History properties over what clients saw, at the end of the run."""
        if self.run.outcome is None:
            self._check(self.run.verdict())

    def _check(self, verdict) -> None:
        if verdict is not None and verdict.failed:
            schedule = Schedule(self.protocol, self.config, tuple(self.taken))
            raise AssertionError(f"{verdict.summary()}\n{verdict.diff}\nschedule:\n{schedule.dumps()}")


def lockstep_machine(protocol: str = "kip-320", config: dict | ScheduleConfig | None = None,
                     faults="default", impl: bool = True,
                     refusals: float = DEFAULT_REFUSALS) -> type[LockstepMachine]:
    """A LockstepMachine subclass for one protocol, config, fault profile and share of refused steps."""
    RefusalQuota(refusals)  # checks the share
    profile = _profile(faults)
    if not isinstance(config, ScheduleConfig):
        config = load_config({**profile.config, **(config or {})})
    Schedule(protocol, config).with_protocol(protocol)  # validates the protocol name
    name = f"Lockstep_{protocol.replace('-', '_')}_{profile.name}"
    return type(name, (LockstepMachine,), {"protocol": protocol, "config": config, "faults": profile,
                                           "impl": impl, "refusals": refusals})
