"""Refusal conformance: every generator proposes steps the model refuses, the implementation must
refuse them on its own, and one it takes instead is a divergence at that step, shrunk."""

import math

import pytest
from hypothesis import HealthCheck, given, settings
from machines import run_machine

from isrcheck.conformance import Lockstep, random_walk, run_schedule, shrink
from isrcheck.conformance.core.lockstep import taken_in_restart
from isrcheck.conformance.core.schedule import Schedule, ScheduleConfig
from isrcheck.conformance.generators.refusals import RefusalQuota, refused_steps
from isrcheck.conformance.generators.strategies import enabled_schedules
from isrcheck.impl.sim import Cluster
from isrcheck.model import ModelConfig, StepRefused, apply, enabled, initial_state
from isrcheck.model.alphabet import configured, every_step, is_disk_fault


def _lenient_fence(self, broker):
    """A wrong enabling condition: fencing a broker the controller already fenced is taken (and
    changes nothing) instead of refused."""
    self.controller.fence(broker)


def test_refused_steps_are_the_alphabet_minus_the_enabled_ones_and_all_refused():
    cfg = ModelConfig(protocol="kip-320")
    state = initial_state(cfg)
    on = enabled(cfg, state)
    off = refused_steps(cfg, state, on, disk_faults=True)
    made = {st for st in every_step(cfg.replicas, state) if taken_in_restart(cfg, state, st)}
    # the kinds the config switches off are proposed neither way (read_fetch and read_fetch_hw:
    # split_fetch_handling, remove_fetcher: split_become_follower, update_metadata_cache: metadata_cache,
    # unfence: unfence_at_heartbeat, controlled_shutdown: kraft_controlled_shutdown)
    switched_off = {st for st in every_step(cfg.replicas, state) if not configured(cfg, st.kind)}
    assert {st.name for st in switched_off} == {
        "read_fetch",
        "read_fetch_hw",
        "remove_fetcher",
        "update_metadata_cache",
        "unfence",
        "controlled_shutdown",
    }
    assert (
        made
        and set(on).isdisjoint(off)
        and set(on) | set(off) | made | switched_off == set(every_step(cfg.replicas, state))
    )
    split = ModelConfig(protocol="kip-320", split_fetch_handling=True, split_become_follower=True, metadata_cache=True)
    state = initial_state(split)  # every cache the controller's: update_metadata_cache refused
    unfence = {st for st in switched_off if st.name == "unfence"}
    shutdowns = {st for st in switched_off if st.name == "controlled_shutdown"}  # kip-903 and kip-966 only
    assert switched_off - unfence - shutdowns <= set(refused_steps(split, state, enabled(split, state)))
    unfencing = ModelConfig(protocol="kip-903", unfence_at_heartbeat=True)  # the switch needs a registration
    state = initial_state(unfencing)  # nobody fenced or awaiting unfence: unfence refused
    assert unfence <= set(refused_steps(unfencing, state, enabled(unfencing, state)))
    kraft = ModelConfig(protocol="kip-903", kraft_controlled_shutdown=True)
    assert shutdowns <= set(enabled(kraft, initial_state(kraft)))  # every broker may start one
    state = initial_state(cfg)
    # a generator without disk faults proposes none of them, refused or not
    assert set(refused_steps(cfg, state, on)) == {st for st in off if not is_disk_fault(st)}
    for st in off:
        with pytest.raises(StepRefused):
            apply(cfg, state, st)
    names = {st.name for st in off}
    # every kind of the alphabet, a message index past its FIFO's end included
    assert {"elect", "restart", "lose_disk", "handle_fetch", "drop", "deliver_leader_and_isr", "corrupt"} <= names
    assert all(st.replica in range(cfg.replicas) for st in off if st.name != "elect")


@pytest.mark.parametrize("rate", [0.1, 0.25])
def test_walks_propose_at_least_the_share_of_refused_steps_and_pass_on_kip320(rate):
    for seed in range(4):
        schedule, verdict = random_walk(seed, "kip-320", 80, "default", refusals=rate)
        run = Lockstep.run(schedule)
        refused = run.refused
        assert run.verdict.kind == verdict.kind == "pass", verdict.diff
        assert len(refused) >= math.floor(rate * len(schedule.steps))


def test_a_registration_made_by_its_restart_is_never_proposed_as_refused():
    """Before kip-903 the harness takes a live broker's ``register`` as made by its restart: it is
    not refused there, so a generator that proposed it as refused would miss its quota."""
    cfg = ModelConfig(protocol="kip-320")
    state = initial_state(cfg)
    assert not [st for st in refused_steps(cfg, state, enabled(cfg, state)) if st.name == "register"]
    run = Lockstep.run(
        Schedule(protocol="kip-320", config=ScheduleConfig(), steps=({"step": "register", "replica": 0},))
    )
    assert run.verdict.kind == "pass" and run.refused == ()


def test_a_second_registration_before_the_first_is_applied_is_refused_by_both():
    """kip-903: registered, the LeaderAndIsr of the registration lost, the broker still starting; the
    controller accepted it already (broker epoch set), so another register is refused on both sides."""
    steps = [
        {"step": "crash", "replica": 1, "kind": "process"},
        {"step": "restart", "replica": 1},
        {"step": "register", "replica": 1},
        {"step": "drop", "message": "leader_and_isr", "replica": 1, "index": 0},
        {"step": "register", "replica": 1},
    ]
    assert run_schedule(Schedule("kip-903", ScheduleConfig(), tuple(steps), name="register-twice")).kind == "pass"


def test_no_refused_step_with_a_share_of_zero():
    schedule, _ = random_walk(3, "kip-320", 60, "default", refusals=0.0)
    assert Lockstep.run(schedule).refused == ()


def test_a_bad_share_is_named():
    with pytest.raises(ValueError, match="refusals: expected a number"):
        random_walk(1, "kip-320", 10, refusals=1.5)


def test_quota_keeps_the_floor_whatever_the_draws():
    quota = RefusalQuota(0.1)
    for _ in range(95):
        quota.count(quota.behind())  # refuse only when forced
    assert quota.refused == 9


def test_a_step_taken_where_the_model_refuses_it_is_a_shrunk_divergence(monkeypatch):
    """Only refused steps reach the wrong guard: walks without them pass, walks with them find it
    at that very step, and the shrinker keeps it a divergence at a fence of a fenced broker."""
    monkeypatch.setattr(Cluster, "fence", _lenient_fence)
    for seed in range(3):
        assert random_walk(seed, "kip-320", 60, "default", refusals=0.0)[1].kind == "pass"
    found = None
    for seed in range(20):
        schedule, verdict = random_walk(seed, "kip-320", 60, "default", refusals=0.2)
        if verdict.kind == "divergence":
            found = schedule, verdict
            break
    assert found is not None
    schedule, verdict = found
    assert "refused by the model" in verdict.diff and "taken by the implementation" in verdict.diff
    assert schedule.steps[verdict.step]["step"] == "fence"
    small, small_verdict = shrink(schedule, verdict, time_budget_s=30)
    assert small_verdict.kind == "divergence" and len(small.steps) <= 3
    assert small.steps[small_verdict.step]["step"] == "fence"
    assert run_schedule(small).kind == "divergence"


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(enabled_schedules("kip-320", max_steps=40, refusals=0.2))
def test_enabled_schedules_carry_refused_steps_and_pass(schedule):
    run = Lockstep.run(schedule)
    refused = run.refused
    assert run.verdict.kind == "pass"
    assert len(refused) >= math.floor(0.2 * len(schedule.steps))


def plant_lenient_fence(monkeypatch):
    monkeypatch.setattr(Cluster, "fence", _lenient_fence)


def test_the_machine_finds_a_wrong_enabling_condition():
    failure = run_machine("kip-320", "default", 60, 30, plant="test_refusals:plant_lenient_fence", refusals=0.3)
    assert failure is not None and "taken by the implementation" in failure
