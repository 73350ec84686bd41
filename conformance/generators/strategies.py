"""Hypothesis strategies and a stateful test machine for lockstep conformance.

Shipped in the package so users run them under their own settings and profiles::

    from hypothesis import settings
    from isrcheck.conformance.generators.strategies import lockstep_machine

    TestKip320 = lockstep_machine("kip-320", faults="default").TestCase
    TestKip320.settings = settings(max_examples=200, stateful_step_count=80, deadline=None)

``step_dicts`` draws any step of the alphabet (enabled or not: a step refused by both sides is a
no-op); ``schedules`` wraps them in a Schedule; ``enabled_schedules`` draws each step among the
model's enabled ones, which finds deep states far more often and shrinks well. Both it and the
machine take their steps from the generator loop (``loop.StepGenerator``) that random walks use,
with Hypothesis's draws: a share ``refusals`` of the steps are among those the model refuses (at
least ``floor(refusals * steps)``): the implementation must refuse them too.
"""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from isrcheck.conformance.core.lockstep import Lockstep
from isrcheck.conformance.core.schedule import PROTOCOLS, Schedule, ScheduleConfig, load_config
from isrcheck.conformance.generators.choices import DrawnChoices
from isrcheck.conformance.generators.loop import StepGenerator
from isrcheck.conformance.generators.profiles import profile_of
from isrcheck.conformance.generators.refusals import DEFAULT_REFUSALS, RefusalQuota
from isrcheck.conformance.generators.swarm import draw_swarm
from isrcheck.model.alphabet import FIELDS, MAX_REPLICAS, STEPS, is_step


def _field_values(name: str, replicas: int) -> st.SearchStrategy:
    """Valid values of one step field (alphabet.FIELDS): any broker id, any choice, any value in
    an integer field's bounds, a message index among the few a run keeps in flight."""
    spec = FIELDS[name]
    if spec.values is not None:
        return st.sampled_from(spec.values)
    if name == "replica":
        return st.integers(0, replicas - 1)
    if name == "follower":  # a broker id (left out: every follower in sync)
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
            replicas=n,
            min_insync_replicas=draw(st.integers(1, n)),
            unclean_leader_election_enable=draw(st.booleans()),
            replica_lag_time_max_ticks=draw(st.integers(0, 4)),
            request_timeout_ticks=draw(st.integers(0, 8)),
            flush_messages=draw(st.none() | st.integers(1, 3)),
        )

    return build()


def schedules(
    protocol: str | None = None, config: ScheduleConfig | None = None, max_steps: int = 60
) -> st.SearchStrategy[Schedule]:
    """Schedules of arbitrary (mostly refused) steps; good for refusal conformance."""

    @st.composite
    def build(draw):
        proto = protocol or draw(st.sampled_from(PROTOCOLS))
        cfg = config or draw(configs())
        steps = draw(st.lists(step_dicts(cfg.replicas), max_size=max_steps))
        return Schedule.from_json(Schedule(proto, cfg, tuple(steps)).to_json())

    return build()


def enabled_schedules(
    protocol: str = "kip-320",
    config: ScheduleConfig | None = None,
    max_steps: int = 60,
    faults="default",
    refusals: float = DEFAULT_REFUSALS,
) -> st.SearchStrategy[Schedule]:
    """Schedules whose every step is enabled in the model when taken (within the profile's
    fault budget), but for a share ``refusals`` of refused ones; drawn step by step on the model
    alone."""
    profile = profile_of(faults)
    RefusalQuota(refusals)  # checks the share now, not at the first draw

    @st.composite
    def build(draw):
        cfg = config or load_config(dict(profile.config))
        generator = StepGenerator(Lockstep(protocol, cfg, impl=False), profile, DrawnChoices(draw), refusals)
        generator.walk(draw(st.integers(0, max_steps)))
        return Schedule(protocol, cfg, tuple(generator.taken))

    return build()


class LockstepMachine(RuleBasedStateMachine):
    """Each rule application takes one step through the generator loop (``loop.StepGenerator``),
    on the model and the implementation at once: a due refused step, else one of the model's
    enabled steps within the fault budget, its kind drawn with the fault profile's weights, then
    which one of that kind. The invariant is that the lockstep run has neither diverged nor
    violated a property. A state where no step can be taken fails the test, naming why, rather
    than ending the run in silence.

    One rule draws the kind rather than one rule per kind: Hypothesis picks uniformly among the
    rules whose preconditions hold (and its swarm testing turns whole rules off per example), so
    rules per kind ignore the profile's weights. Measured on hw-truncation's loss under the
    default profile (300 examples of 150 steps, seeds 1 to 3): a rule per kind, offered as many
    times as its weight, found it in none of the three; the weighted draw in all three, after 17,
    62 and 123 examples.

    With ``swarm`` (the default), each example first draws its swarm (``generators.swarm``): the
    share of the profile's step and fault kinds it keeps, and their weights. Hypothesis shrinks
    the swarm too, towards keeping every kind at its profile weight."""

    protocol = "kip-320"
    config = ScheduleConfig()
    faults = "default"
    impl = True
    refusals = DEFAULT_REFUSALS
    sut = None  # the system under test (see Lockstep: None is the in-process simulation)
    swarm = True

    def __init__(self) -> None:
        super().__init__()
        self.profile = profile_of(self.faults)
        self.run = Lockstep(self.protocol, self.config, impl=self.impl, sut=self.sut)
        self.generator = StepGenerator(self.run, self.profile, DrawnChoices(None), self.refusals)
        self._runnable: dict | None = None

    def runnable(self) -> dict:
        """The steps the profile may take now, by kind (``StepGenerator.options``), once per state."""
        if self._runnable is None:
            self._runnable = self.generator.options() if self.run.outcome is None else {}
        return self._runnable

    @initialize(data=st.data())
    def choose_swarm(self, data) -> None:
        """The example's swarm, drawn before its first step (none when ``swarm`` is off)."""
        if self.swarm:
            self.generator.swarm = draw_swarm(DrawnChoices(data.draw), self.profile, self.config.replicas)
            self._runnable = None

    @precondition(lambda self: bool(self.runnable()))
    @rule(data=st.data())
    def take_step(self, data) -> None:
        """One step of the shared alphabet, in lockstep: enabled in the model, or a refused one."""
        self.generator.choices = DrawnChoices(data.draw)
        proposed = self.generator.propose()
        assert proposed is not None, "take_step ran without a step to take"
        self._runnable = None
        self.generator.take(*proposed)

    @invariant()
    def some_rule_can_run(self) -> None:
        """A run that can go on has a step to take: else the profile or its budget left none."""
        if self.run.outcome is None and not self.runnable():
            enabled = ", ".join(dict.fromkeys(s.name for s in self.run.enabled_steps())) or "none"
            raise AssertionError(
                f"no step can be taken: the model enables {enabled}, and fault profile "
                f"{self.profile.name!r} weighs every one of them 0 or keeps it out of its "
                f"budget\nschedule:\n{self._schedule().dumps()}"
            )

    @invariant()
    def agrees_and_holds(self) -> None:
        """No divergence, no violated invariant so far (the failing schedule is in the message)."""
        self._check(self.run.outcome)

    def teardown(self) -> None:
        """History properties over what clients saw, at the end of the run."""
        if self.run.outcome is None:
            self._check(self.run.verdict())

    def _schedule(self) -> Schedule:
        return Schedule(self.protocol, self.config, tuple(self.generator.taken))

    def _check(self, verdict) -> None:
        if verdict is not None and verdict.failed:
            raise AssertionError(f"{verdict.summary()}\n{verdict.diff}\nschedule:\n{self._schedule().dumps()}")


def lockstep_machine(
    protocol: str = "kip-320",
    config: dict | ScheduleConfig | None = None,
    faults="default",
    impl: bool = True,
    refusals: float = DEFAULT_REFUSALS,
    sut=None,
    swarm: bool = True,
) -> type[LockstepMachine]:
    """A LockstepMachine subclass for one protocol, config, fault profile and share of refused steps,
    run on ``sut`` (see ``Lockstep``), with swarm testing unless ``swarm`` is False."""
    RefusalQuota(refusals)  # checks the share
    profile = profile_of(faults)
    if not isinstance(config, ScheduleConfig):
        config = load_config({**profile.config, **(config or {})})
    Schedule(protocol, config).with_protocol(protocol)  # validates the protocol name
    name = f"Lockstep_{protocol.replace('-', '_')}_{profile.name}"
    return type(
        name,
        (LockstepMachine,),
        {
            "protocol": protocol,
            "config": config,
            "faults": profile,
            "impl": impl,
            "refusals": refusals,
            "sut": sut,
            "swarm": swarm,
        },
    )
