"""Registrations awaiting unfence (docs/steps.md, ``unfence_at_heartbeat``) in lockstep: the implementation's
controller holds a registration fenced until the step unfence and elects, and takes into the ISR, only active
brokers, so the scenarios of tests/unfence.py and random walks with the switch on pass on kip-903 and kip-966,
and an implementation whose controller takes a broker awaiting unfence as active is a divergence."""

from __future__ import annotations

import pytest
from split_switches import driver_carries, step, walk_counts
from unfence import FENCE_0, FOLLOWER_BACK, KILL_SOAK, LAST_MEMBER, PROTOCOLS, UNFENCE, UNFENCE_1

from isrcheck.conformance import Schedule, run_schedule
from isrcheck.conformance.core.schedule import ScheduleConfig, ScheduleError
from isrcheck.impl.controller import Controller

ELECTIONS = [step("elect"), step("elect", 0), step("unfence", 0), step("elect", 0), step("elect")]
BACK_IN = [
    step("unfence", 2),
    step("handle_alter_partition_response", 0),
    step("expand_isr", 0),
    step("handle_alter_partition", 0),
]
CACHED = [step("update_metadata_cache", 2)]


def _schedule(protocol: str, steps, switches=UNFENCE) -> Schedule:
    return Schedule(protocol, ScheduleConfig(**switches), tuple(steps), name="unfence-at-heartbeat")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_scenarios_agree(protocol):
    for steps, switches in (
        (KILL_SOAK + FENCE_0 + UNFENCE_1 + [step("elect")], UNFENCE),
        (KILL_SOAK + FENCE_0 + CACHED + UNFENCE_1 + CACHED, {**UNFENCE, "metadata_cache": True}),
        (KILL_SOAK + [step("fence", 1), step("crash", 1, kind="process"), step("fence", 1)], UNFENCE),
        (LAST_MEMBER + ELECTIONS, UNFENCE),
        (FOLLOWER_BACK + BACK_IN, UNFENCE),
        ([step("fence", 2), step("unfence", 2), step("deliver_leader_and_isr", 2)], UNFENCE),
    ):
        verdict = run_schedule(_schedule(protocol, steps, switches))
        assert verdict.kind == "pass", (steps, verdict.diff)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_random_walks_with_the_switch_on_pass_in_lockstep(protocol):
    def registered(schedule) -> int:
        return sum(st["step"] == "register" for st in schedule.steps)

    taken, registrations = walk_counts(protocol, UNFENCE, "unfence", registered)
    assert taken >= 3 and registrations >= 1, (taken, registrations)  # the walks take the step where enabled


def test_an_implementation_that_takes_a_broker_awaiting_unfence_as_active_is_caught(monkeypatch):
    """Planted: the controller's elections and AlterPartition see only the fenced brokers, as without the switch."""
    monkeypatch.setattr(Controller, "active", lambda self, broker: broker not in self.fenced)
    verdict = run_schedule(_schedule("kip-903", LAST_MEMBER + ELECTIONS))
    assert verdict.kind == "divergence" and verdict.step == len(LAST_MEMBER), verdict.diff
    verdict = run_schedule(_schedule("kip-966", FOLLOWER_BACK))
    assert verdict.kind == "divergence" and verdict.step == len(FOLLOWER_BACK) - 1, verdict.diff


def test_a_schedule_setting_the_switch_with_another_variant_is_invalid():
    doc = _schedule("kip-966", KILL_SOAK).to_json()
    assert Schedule.from_json(doc).config.unfence_at_heartbeat
    with pytest.raises(ScheduleError, match=r"config\.unfence_at_heartbeat: valid only with kip-903 and kip-966"):
        Schedule.from_json({**doc, "protocol": "kip-320"})
    with pytest.raises(ScheduleError, match="unfence_at_heartbeat"):
        _schedule("kip-966", KILL_SOAK).with_protocol("kip-101")


def test_the_driver_protocol_carries_the_switch():
    driver_carries(UNFENCE, KILL_SOAK + FENCE_0 + UNFENCE_1, walked="kip-903")
