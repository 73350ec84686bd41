"""A broker's controlled shutdown (docs/steps.md, ``kraft_controlled_shutdown``) in lockstep: the
implementation's controller holds the brokers in controlled shutdown and leaves them out of elections,
AlterPartition and the metadata caches, so the scenarios of tests/controlled_shutdown.py and random walks
with the switch on pass, and a controller that still elects a broker in controlled shutdown, or forgets to
hold it ineligible in the caches, is a divergence."""

from __future__ import annotations

import pytest
from controlled_shutdown import ALL, APPLIED, CAUGHT_UP, LEADER_STOPPED, REACHED, STOPPED, SWITCH
from hw_waits import fetch
from split_switches import driver_carries, step, walk_counts

from isrcheck.conformance import Schedule, run_schedule
from isrcheck.conformance.core.schedule import ScheduleConfig
from isrcheck.impl.controller import Controller

KRAFT = ("kip-903", "kip-966")
EXPAND = [step("expand_isr", 0), step("handle_alter_partition", 0), step("handle_alter_partition_response", 0)]


def _schedule(protocol: str, steps, switches=ALL) -> Schedule:
    return Schedule(protocol, ScheduleConfig(**switches), tuple(steps), name="controlled-shutdown")


@pytest.mark.parametrize("protocol", KRAFT)
def test_the_scenarios_agree(protocol):
    for steps in (
        STOPPED + REACHED,
        LEADER_STOPPED + APPLIED,
        [*CAUGHT_UP, step("controlled_shutdown", 1), step("controlled_shutdown", 0), *APPLIED],
        [step("fence", 1), step("fence", 2), step("controlled_shutdown", 0), step("elect")],  # elect refused
        [step("fence", 1), step("fence", 0), step("controlled_shutdown", 2), step("elect", 2)],  # refused
        [*CAUGHT_UP, step("controlled_shutdown", 2), *APPLIED, *fetch(2), *EXPAND],
        [*CAUGHT_UP, step("controlled_shutdown", 2), step("fence", 2), step("controlled_shutdown", 2)],
        [*LEADER_STOPPED, step("crash", 0, kind="clean"), step("restart", 0), step("register", 0), *APPLIED],
    ):
        verdict = run_schedule(_schedule(protocol, steps))
        assert verdict.kind == "pass", (steps, verdict.diff)


@pytest.mark.parametrize("protocol", KRAFT)
def test_random_walks_with_the_switch_on_pass_in_lockstep(protocol):
    (taken,) = walk_counts(protocol, SWITCH, "controlled_shutdown")
    assert taken >= 3, taken  # the walks take the step where it is enabled


def test_a_controller_that_elects_a_broker_in_controlled_shutdown_is_caught(monkeypatch):
    """Planted: ``active`` forgets the controlled shutdown, so the shutdown of the last ISR member
    (kip-903 keeps it in the ISR) elects it again."""
    monkeypatch.setattr(Controller, "active", lambda self, b: not self.registration_fenced(b))
    steps = [step("fence", 1), step("fence", 2), step("controlled_shutdown", 0)]
    verdict = run_schedule(_schedule("kip-903", steps, SWITCH))
    assert verdict.kind == "divergence" and verdict.step == 2, verdict.diff


def test_a_controller_whose_caches_hold_a_broker_in_controlled_shutdown_eligible_is_caught(monkeypatch):
    """Planted: the registrations a cache takes leave the brokers in controlled shutdown registered."""
    real = Controller.alive_broker_epochs

    def lax(self, catching_up=None):
        kept, self.in_controlled_shutdown = self.in_controlled_shutdown, set()
        try:
            return real(self, catching_up)
        finally:
            self.in_controlled_shutdown = kept

    monkeypatch.setattr(Controller, "alive_broker_epochs", lax)
    verdict = run_schedule(_schedule("kip-966", STOPPED + REACHED))
    at = STOPPED.index(step("update_metadata_cache", 0))
    assert verdict.kind == "divergence" and verdict.step == at, verdict.diff


def test_the_switch_on_a_variant_before_kip_903_is_a_config_error():
    verdict = run_schedule(_schedule("kip-320", [], SWITCH))
    assert verdict.kind != "pass"


def test_the_driver_protocol_carries_the_switch():
    driver_carries(SWITCH, STOPPED[: len(CAUGHT_UP) + 1 + len(APPLIED)], walked="kip-966")
