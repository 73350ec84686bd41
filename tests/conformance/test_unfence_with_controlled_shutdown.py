"""``unfence_at_heartbeat`` and ``kraft_controlled_shutdown`` together in lockstep (docs/steps.md): the
implementation's controller refuses a controlled shutdown to a broker awaiting unfence, fences (and never
unfences) one in controlled shutdown, and a registration ends it; random walks with both switches pass,
and a controller that takes a broker in controlled shutdown for a fenced registration is a divergence."""

from __future__ import annotations

import pytest
from controlled_shutdown import APPLIED
from split_switches import driver_carries, step, walk_counts
from unfence import KILL_SOAK, PROTOCOLS, UNFENCE_1
from unfence_with_shutdown import BOTH, FENCED, REGISTERED, REJOINED, SHUT_DOWN

from isrcheck.conformance import Schedule, run_schedule
from isrcheck.conformance.core.schedule import ScheduleConfig
from isrcheck.impl.controller import Controller


def _schedule(protocol: str, steps) -> Schedule:
    return Schedule(protocol, ScheduleConfig(**BOTH), tuple(steps), name="unfence-with-controlled-shutdown")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_scenarios_agree(protocol):
    for steps in (
        KILL_SOAK + [step("controlled_shutdown", 1)] + UNFENCE_1,  # refused while it awaits unfence
        SHUT_DOWN + [step("unfence", 1), step("elect", 1)] + APPLIED,  # both refused
        FENCED + [step("unfence", 1), step("deliver_leader_and_isr", 1)],
        REJOINED + [step("controlled_shutdown", 1), step("deliver_leader_and_isr", 1), step("unfence", 1)],
        REGISTERED + APPLIED + [step("controlled_shutdown", 1)],
    ):
        verdict = run_schedule(_schedule(protocol, steps))
        assert verdict.kind == "pass", (steps, verdict.diff)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_random_walks_with_both_switches_pass_in_lockstep(protocol):
    def unfenced(schedule) -> int:
        return sum(st["step"] == "unfence" for st in schedule.steps)

    taken, unfencings = walk_counts(protocol, BOTH, "controlled_shutdown", unfenced)
    assert taken >= 3 and unfencings >= 1, (taken, unfencings)


def test_a_controller_that_holds_a_broker_in_controlled_shutdown_fenced_is_caught(monkeypatch):
    """Planted: the registration of a broker in controlled shutdown counts as fenced, so its session's end
    is refused (and a heartbeat would unfence it)."""

    def fenced(self, b: int) -> bool:
        return b in self.fenced | self.awaiting_unfence | self.in_controlled_shutdown

    monkeypatch.setattr(Controller, "registration_fenced", fenced)
    verdict = run_schedule(_schedule("kip-966", FENCED))
    assert verdict.kind == "divergence" and verdict.step == len(SHUT_DOWN), verdict.diff


def test_the_driver_protocol_carries_both_switches():
    driver_carries(BOTH, REJOINED, walked="kip-903")
