"""The shipped Hypothesis strategies and state machine, run with small explicit settings."""

import json

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from machines import run_machine

from isrcheck.conformance import Schedule, run_schedule
from isrcheck.conformance.generators.strategies import enabled_schedules, lockstep_machine, schedules
from isrcheck.impl.sim import Cluster

FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(schedules(max_steps=40))
def test_arbitrary_steps_are_refused_alike_and_never_diverge(schedule):
    """Any schedule of the alphabet, on any protocol and config: model and implementation refuse
    the same steps and agree on the rest (violations are allowed: the configs include unclean)."""
    verdict = run_schedule(schedule)
    assert verdict.kind != "divergence", verdict.diff


@FAST
@given(enabled_schedules("kip-320", max_steps=60))
def test_enabled_schedules_within_budget_pass_on_kip320(schedule):
    assert run_schedule(schedule).kind == "pass"


TestKip320Lockstep = lockstep_machine("kip-320", faults="default").TestCase
TestKip320Lockstep.settings = settings(
    max_examples=15, stateful_step_count=50, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def test_the_machine_reports_a_divergence_with_a_replayable_schedule(monkeypatch):
    """A broken implementation (the producer writes the wrong record) fails the machine, and
    the message carries a schedule that replays to the same divergence."""
    produce = Cluster.produce
    monkeypatch.setattr(Cluster, "produce", lambda self, broker, value, acks: produce(self, broker, value + b"0", acks))
    machine = lockstep_machine("kip-320", faults="default").TestCase
    machine.settings = settings(
        max_examples=50,
        stateful_step_count=30,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],
    )
    with pytest.raises(AssertionError) as failure:
        machine().runTest()
    message = str(failure.value)
    assert message.startswith("divergence")
    schedule = Schedule.from_json(json.loads(message[message.index("schedule:\n") + len("schedule:\n") :]))
    assert run_schedule(schedule).kind == "divergence"


@pytest.mark.slow  # 75 to 150 s of generation; the machine's divergence finding and replay run by default (above)
def test_the_machine_finds_a_protocol_bug():
    """hw-truncation loses data with no fault at all (its truncation to the HW on leader changes),
    within every budget: the machine must find it (generation only here; shrinking a stateful run
    in lockstep is left to users' settings). The draws are derandomized (tests/machines.py runs
    them in a fresh interpreter, so the run is the same every time). Since a fetch's answer carries
    the HW read before its own increment (docs/steps.md, handle_fetch) the loss takes longer runs:
    found at step 40 of a run of 150 steps, in about 20 s."""
    failure = run_machine("hw-truncation", "none", 300, 150)
    assert failure is not None and "violation" in failure


def test_the_machine_fails_loudly_when_no_step_can_be_taken():
    """A profile that leaves every enabled step out cannot make progress: the test fails naming
    the profile, instead of passing having run nothing."""
    from isrcheck.conformance.generators.profiles import FAULT_PROFILES

    idle = FAULT_PROFILES["none"].with_weights(
        **{
            k: 0.0
            for k in (
                "produce",
                "consume",
                "elect",
                "tick",
                "deliver_leader_and_isr",
                "send_fetch",
                "shrink_isr",
                "flush",
                "checkpoint_hw",
                "restart",
            )
        }
    )
    machine = lockstep_machine("kip-320", faults=idle, refusals=0.0).TestCase
    machine.settings = settings(
        max_examples=5,
        stateful_step_count=10,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.generate],
    )
    with pytest.raises(AssertionError, match="no step can be taken"):
        machine().runTest()
