"""Seeded random walks over the model's enabled steps, run in lockstep as they go.

Each step comes from the generator loop (``loop.StepGenerator``) with seeded choices: the same
seed gives the same schedule on any machine. A ``FaultProfile`` (``profiles.py``) weighs the step
kinds; profiles marked ``within_budget`` keep to the fault budget (``isrcheck.model.budget``).
The walk keeps every step it took, so the returned Schedule replays without the seed.
"""

from __future__ import annotations

import json

from isrcheck.conformance.core.lockstep import Lockstep
from isrcheck.conformance.core.schedule import Schedule, ScheduleError, load_config
from isrcheck.conformance.core.verdict import Verdict
from isrcheck.conformance.generators.choices import SeededChoices
from isrcheck.conformance.generators.loop import StepGenerator
from isrcheck.conformance.generators.profiles import FAULT_PROFILES, FaultProfile, profile_of
from isrcheck.conformance.generators.refusals import DEFAULT_REFUSALS
from isrcheck.conformance.generators.swarm import seeded_swarm
from isrcheck.model import Step, StepRefused, apply
from isrcheck.model.budget import FaultBudget

__all__ = ["FAULT_PROFILES", "FaultProfile", "random_walk", "within_budget"]


def random_walk(
    seed: int,
    protocol: str,
    steps: int,
    faults: str | FaultProfile = "default",
    config: dict | None = None,
    impl: bool = True,
    refusals: float = DEFAULT_REFUSALS,
    sut=None,
    swarm: bool = False,
) -> tuple[Schedule, Verdict]:
    """Walk ``steps`` steps from the initial state, each chosen (seeded) among the model's enabled
    steps and run in lockstep at once; stops at the first failure. A share ``refusals`` of the
    steps (at least ``floor(refusals * steps)``) are steps the model refuses instead, drawn from
    the whole alphabet (``isrcheck.conformance.generators.refusals``): the implementation must refuse them
    too. The implementation is ``sut`` (see ``Lockstep``: None is the in-process simulation).
    With ``swarm``, the walk keeps to the seed's swarm (``swarm.seeded_swarm``): a share of the
    profile's step and fault kinds with weights of its own. Returns the schedule taken and its
    verdict; ``run_schedule`` on that schedule gives the same verdict."""
    profile = profile_of(faults)
    if not isinstance(steps, int) or steps < 0:
        raise ScheduleError(f"steps: expected an integer >= 0, got {steps!r}")
    cfg = load_config({**profile.config, **(config or {})})
    if profile.within_budget and cfg.unclean_leader_election_enable:
        raise ScheduleError(
            f"config.unclean_leader_election_enable: fault profile {profile.name!r} keeps to "
            "the fault budget, which has unclean election off (use 'heavy' or a "
            "FaultProfile with within_budget=False)"
        )
    kept = seeded_swarm(seed, profile, cfg.replicas) if swarm else None
    schedule = Schedule(
        protocol,
        cfg,
        (),
        name=f"walk-{protocol}-{profile.name}{'-swarm' * swarm}-{seed}",
        description=f"random walk, seed {seed}, fault profile {profile.name!r}"
        + (f", swarm {json.dumps(kept.to_json(), sort_keys=True)}" if kept else ""),
    )
    schedule = schedule.with_protocol(protocol)  # validates the protocol name
    generator = StepGenerator(Lockstep(protocol, cfg, impl=impl, sut=sut), profile, SeededChoices(seed), refusals, kept)
    generator.walk(steps)
    return schedule.with_steps(generator.taken), generator.run.verdict()


def within_budget(schedule: Schedule, faults: str | FaultProfile = "default") -> bool:
    """Whether every step of ``schedule`` keeps to the profile's fault budget (checked on the
    model alone); lets the shrinker keep a counterexample inside the budget it was found in."""
    profile = profile_of(faults)
    if not profile.within_budget:
        return True
    run = Lockstep(schedule.protocol, schedule.config, impl=False)
    budget = FaultBudget(schedule.config, schedule.protocol, profile.spare_known_gaps)
    state = run.state
    for raw in schedule.steps:
        st = Step.from_json(raw)
        if not budget.allows(state, st):
            return False
        try:
            after, _ = apply(run.cfg, state, st)
        except StepRefused:
            continue
        budget.took(state, st)
        state = after
    return True
