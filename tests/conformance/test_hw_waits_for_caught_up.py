"""The leader's HW waiting for caught-up followers outside the ISR (docs/steps.md,
``maybe_increment_leader_hw`` with ``hw_waits_for_caught_up``) in lockstep: the implementation decides
on its own which followers hold its HW, so Kafka 4.4.0's scenario (tests/hw_waits.py) and random walks
with the switch on pass, and an implementation that ignores the switch or counts a follower at the
lag time's end as lagging is a divergence."""

from __future__ import annotations

import pytest
from hw_waits import CAUGHT_UP, OUT, WAITS, lagged
from split_switches import driver_carries, walk_counts

from isrcheck.conformance import Schedule, run_schedule
from isrcheck.conformance.core import adapter
from isrcheck.conformance.core.schedule import ScheduleConfig
from isrcheck.impl.replication.partition import FollowerState
from isrcheck.model import ModelConfig, StepRefused, apply, initial_state
from isrcheck.model.next_state import lagging

PROTOCOLS = ("hw-truncation", "kip-101", "kip-279", "kip-320", "kip-903", "kip-966")
LAG = ScheduleConfig().replica_lag_time_max_ticks
HELD = len(OUT) + 1  # the handle_fetch of follower 1's LEO 1, where the switch keeps leader 0's HW at 0


def _schedule(protocol: str, steps) -> Schedule:
    return Schedule(protocol, ScheduleConfig(**WAITS), tuple(steps), name="hw-waits")


def _held(protocol: str):
    """How many states of a schedule (its refused steps left out) have a leader whose HW a follower
    outside its maximal ISR holds back (caught up, known LEO below the leader's LEO): where the switch
    has a say."""
    cfg = ModelConfig(protocol=protocol, **WAITS)

    def holds(s) -> bool:
        for r, rep in enumerate(s.replicas):
            members = rep.isr + (rep.pending_isr or ())
            if rep.leader == r and any(
                f not in members and 0 <= leo < len(rep.log) and not lagging(cfg, s.now, rep, f)
                for f, leo in enumerate(rep.remote_leo)
            ):
                return True
        return False

    def count(schedule: Schedule) -> int:
        s, n = initial_state(cfg), 0
        for st in schedule.steps:
            try:
                s = apply(cfg, s, st)[0]
            except StepRefused:
                continue
            n += holds(s)
        return n

    return count


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_scenario_and_its_lagged_form_agree(protocol):
    for steps in (CAUGHT_UP, lagged(LAG), lagged(LAG + 1)):
        verdict = run_schedule(_schedule(protocol, steps))
        assert verdict.kind == "pass", verdict.diff


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_random_walks_with_the_switch_on_pass_in_lockstep(protocol):
    fetches, held = walk_counts(protocol, WAITS, "handle_fetch", _held(protocol))
    assert fetches >= 30 and held >= 10, (fetches, held)  # the walks reach states where the switch decides


def test_an_implementation_ignoring_the_switch_is_caught(monkeypatch):
    """Planted: the implementation's config drops the switch."""
    config = adapter._impl_config
    monkeypatch.setattr(
        adapter, "_impl_config", lambda protocol, c: config(protocol, {**c, **dict.fromkeys(WAITS, False)})
    )
    verdict = run_schedule(_schedule("kip-966", CAUGHT_UP))
    assert verdict.kind == "divergence" and verdict.step == HELD, verdict.diff


def test_a_follower_lagging_at_the_lag_times_end_is_caught(monkeypatch):
    """Planted: the implementation counts a follower caught up exactly the lag time ago as lagging."""
    monkeypatch.setattr(FollowerState, "lagging", lambda self, now, lag: now - self.last_caught_up_ms >= lag)
    assert run_schedule(_schedule("kip-966", lagged(LAG + 1))).kind == "pass"
    verdict = run_schedule(_schedule("kip-966", lagged(LAG)))
    assert verdict.kind == "divergence" and verdict.step == HELD + LAG, verdict.diff


def test_the_driver_protocol_carries_the_switch():
    driver_carries(WAITS, CAUGHT_UP)
