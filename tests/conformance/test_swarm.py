"""Swarm testing: each seed's own share of the fault profile, reproducible, recorded, and kept to."""

import json
from collections import Counter

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from isrcheck.conformance import random_walk
from isrcheck.conformance.core.lockstep import Lockstep
from isrcheck.conformance.generators.profiles import FAULT_PROFILES
from isrcheck.conformance.generators.strategies import lockstep_machine
from isrcheck.conformance.generators.swarm import CORE, seeded_swarm
from isrcheck.model.alphabet import Step
from isrcheck.model.budget import FaultBudget

DEFAULT = FAULT_PROFILES["default"]


def test_a_seed_draws_the_same_swarm_every_time_and_seeds_differ():
    swarms = [seeded_swarm(seed, DEFAULT, 3) for seed in range(40)]
    assert [s.to_json() for s in swarms] == [seeded_swarm(seed, DEFAULT, 3).to_json() for seed in range(40)]
    assert len({json.dumps(s.to_json(), sort_keys=True) for s in swarms}) == 40
    # every core kind always in; every other kind of the profile left out by some seeds, kept by others
    kept = Counter(k for s in swarms for k, w in s.weights.items() if w > 0)
    assert all(kept[k] == 40 for k in CORE)
    optional = [k for k, w in DEFAULT.weights.items() if w > 0 and k not in CORE]
    assert optional and all(0 < kept[k] < 40 for k in optional)
    assert any(not s.weights["crash"] for s in swarms) and any(s.slow for s in swarms)
    assert any(s.partial_fetches for s in swarms) and any(not s.partial_fetches for s in swarms)


def test_a_swarm_walk_takes_only_what_its_swarm_kept():
    # classic: a profile whose guards leave a swarm's steps out at times (every-fault default does not)
    classic, left_out = FAULT_PROFILES["classic"], 0
    for seed in range(20):
        swarm = seeded_swarm(seed, classic, 3)
        schedule, _ = random_walk(seed, "kip-320", 60, swarm=True, impl=False, refusals=0.0, faults="classic")
        run = Lockstep("kip-320", schedule.config, impl=False)
        budget = FaultBudget(run.cfg, run.protocol, classic.spare_known_gaps)
        for raw in schedule.steps:
            step = Step.from_json(raw)
            if swarm.weights[step.name] == 0 or swarm.weight(step) == 0:
                # left out by the swarm: taken only where it keeps nothing the profile may take
                left_out += 1
                kept = [
                    s
                    for s in run.enabled_steps()
                    if budget.allows(run.state, s) and swarm.weights.get(s.name, 0) > 0 and swarm.weight(s) > 0
                ]
                assert kept == [], (seed, raw, kept)
            before = run.state
            assert run.step(step) is None
            budget.took(before, step)
    assert left_out  # the fallback was exercised


def test_without_swarm_the_walk_is_the_uniform_one():
    uniform = random_walk(5, "kip-320", 60, impl=False)
    assert random_walk(5, "kip-320", 60, swarm=False, impl=False) == uniform
    swarmed = random_walk(5, "kip-320", 60, swarm=True, impl=False)
    assert swarmed[0].steps != uniform[0].steps and "swarm" in swarmed[0].description


def test_a_swarm_never_ends_a_run_the_profile_would_go_on_with():
    # steps the swarm leaves no room for are taken under the profile: every walk runs its length
    for seed in range(20):
        schedule, verdict = random_walk(seed, "kip-279", 80, swarm=True, impl=False)
        assert len(schedule.steps) == 80 or verdict.kind != "pass"


@pytest.mark.parametrize("swarm", [True, False])
def test_the_hypothesis_machine_runs_with_and_without_swarm(swarm):
    machine = lockstep_machine("kip-320", faults="default", swarm=swarm)
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=5,
            stateful_step_count=30,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        ),
    )


def test_the_steered_features_are_drawn_after_the_others(monkeypatch):
    """The steered features (``STEERED``) come last: without them a seed draws the swarm it drew
    before they existed; with them, each value turns up among 400 seeds."""
    from isrcheck.conformance.generators import swarm as swarm_module

    profile = FAULT_PROFILES["all"]
    steered = [seeded_swarm(seed, profile, 3) for seed in range(400)]
    monkeypatch.setattr(swarm_module, "STEERED", ())
    legacy = [seeded_swarm(seed, profile, 3) for seed in range(400)]
    for new, old in zip(steered, legacy):
        assert (new.weights, new.crash_kinds, new.partial_fetches, new.slow) == (
            old.weights,
            old.crash_kinds,
            old.partial_fetches,
            old.slow,
        )
        assert (old.leader_faults, old.refusal_focus) == (None, None)
    assert {s.leader_faults for s in steered} == {None, "spare", "target"}
    assert {s.refusal_focus for s in steered} == {None, "lineage", *swarm_module.GUARDED}
    assert "leader_faults:spare" in next(s for s in steered if s.leader_faults == "spare").features()


def test_leader_faults_spare_or_target_the_broker_the_controller_names_leader():
    from isrcheck.conformance.generators.swarm import FOCUS, Swarm
    from isrcheck.model import ModelConfig
    from isrcheck.model.state import initial_state

    state = initial_state(ModelConfig(protocol="kip-320"))
    leader = state.controller.leader
    other = next(b for b in range(3) if b != leader)
    kept = seeded_swarm(0, FAULT_PROFILES["all"], 3)
    crash = {b: Step("crash", replica=b, arg="process") for b in (leader, other)}

    def weights(mode):
        swarm = Swarm(kept.weights, {"clean": 1.0, "process": 1.0, "power": 1.0}, True, (), leader_faults=mode)
        return swarm.weight(crash[leader], state), swarm.weight(crash[other], state)

    assert weights(None) == (1.0, 1.0)
    assert weights("spare") == (0.0, 1.0)
    assert weights("target") == (FOCUS, 1.0)


def test_lineage_refused_are_the_steps_only_the_variants_own_rules_refuse():
    """A kip-320 leader whose HW (3) is below its epoch's start (5), a follower outside the ISR
    that fetched to 4: KIP-279 would expand the ISR, KIP-320 refuses, and that expansion is the
    lineage's refused step; the first variant of the lineage has none."""
    from isrcheck.conformance.generators.refusals import lineage_refused
    from isrcheck.model import ModelConfig, enabled
    from isrcheck.model.state import initial_state

    cfg = ModelConfig(protocol="kip-320")
    state = initial_state(cfg)
    leader = state.replicas[0]._replace(isr=(0, 1), hw=3, epoch_start_offset=5, remote_leo=(-1, 5, 4))
    state = state._replace(replicas=(leader, *state.replicas[1:]))
    assert lineage_refused(cfg, state, enabled(cfg, state)) == [Step("expand_isr", replica=0)]
    first = ModelConfig(protocol="hw-truncation")
    assert lineage_refused(first, state, enabled(first, state)) == []
