"""A follower caught up as of its previous Fetch (docs/steps.md, ``handle_fetch`` with
``catch_up_at_previous_fetch``) in lockstep: the implementation keeps each follower's last Fetch on its
own, so tests/prev_fetch.py's scenarios, their held-read forms and random walks with the switch on pass,
and an implementation that ignores the switch or catches the follower up as of the Fetch at hand is a
divergence."""

from __future__ import annotations

import pytest
from prev_fetch import BEHIND, BOTH, PREVIOUS, STEADY
from split_switches import driver_carries, step

from isrcheck.conformance import Schedule, random_walk, run_schedule
from isrcheck.conformance.core import adapter
from isrcheck.conformance.core.schedule import ScheduleConfig
from isrcheck.impl.replication.partition import FollowerState
from isrcheck.model import ModelConfig, StepRefused, apply, initial_state

PROTOCOLS = ("hw-truncation", "kip-101", "kip-279", "kip-320", "kip-903", "kip-966")
FIRST = 3  # follower 2's first handle_fetch, where the leader keeps its last Fetch's state


def _schedule(protocol: str, steps, **switches) -> Schedule:
    return Schedule(protocol, ScheduleConfig(**(switches or PREVIOUS)), tuple(steps), name="previous-fetch")


def _held(steps) -> list:
    """``steps`` with each handle_fetch a held read, its HW read a tick before the rest."""
    out = []
    for st in steps:
        if st["step"] == "handle_fetch":
            out += [step("read_fetch_hw", st["replica"]), step("tick"), step("read_fetch", st["replica"])]
        out.append(st)
    return out


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_scenarios_agree(protocol):
    for steps, switches in (
        (STEADY, PREVIOUS),
        (BEHIND, BOTH),
        (_held(STEADY), {**PREVIOUS, "split_fetch_handling": True}),
    ):
        verdict = run_schedule(_schedule(protocol, steps, **switches))
        assert verdict.kind == "pass", verdict.diff


def _decided(protocol: str, schedule: Schedule) -> int:
    """How many handle_fetch steps of a schedule (its refused steps left out) leave another last
    caught-up time than without the switch: where the switch decides."""
    on, off = ModelConfig(protocol=protocol, **PREVIOUS), ModelConfig(protocol=protocol)
    s, n = initial_state(on), 0
    for st in schedule.steps:
        try:
            t = apply(on, s, st)[0]
        except StepRefused:
            continue
        if st["step"] == "handle_fetch":
            u = apply(off, s, st)[0]
            n += any(a.last_caught_up != b.last_caught_up for a, b in zip(t.replicas, u.replicas))
        s = t
    return n


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_random_walks_with_the_switch_on_pass_in_lockstep(protocol):
    """Thirty walks (the rule decides seldom: it needs an append between two Fetches of a follower
    and a tick between them)."""
    fetches = decided = 0
    for seed in range(30):
        schedule, verdict = random_walk(seed, protocol, 150, "default", config=PREVIOUS)
        assert verdict.kind in ("pass", "violation"), (seed, verdict.kind, verdict.diff)
        fetches += sum(st["step"] == "handle_fetch" for st in schedule.steps)
        decided += _decided(protocol, schedule)
    assert fetches >= 200 and decided >= 1, (fetches, decided)  # the walks reach steps the switch decides


def test_an_implementation_ignoring_the_switch_is_caught(monkeypatch):
    """Planted: the implementation's config drops the switch."""
    config = adapter._impl_config
    monkeypatch.setattr(
        adapter, "_impl_config", lambda protocol, c: config(protocol, {**c, **dict.fromkeys(PREVIOUS, False)})
    )
    verdict = run_schedule(_schedule("kip-966", STEADY))
    assert verdict.kind == "divergence" and verdict.step == FIRST, verdict.diff  # the first Fetch's state


def test_an_implementation_catching_up_as_of_this_fetch_is_caught(monkeypatch):
    """Planted: a Fetch at the LEO the previous one found catches the follower up at its own time,
    not the previous Fetch's."""

    def this_fetch(self, fetch_offset, fetch_time_ms, leader_leo, previous):
        reached = previous and fetch_offset >= self.last_fetch_leader_log_end_offset
        if fetch_offset >= leader_leo or reached:
            self.last_caught_up_ms = max(self.last_caught_up_ms, fetch_time_ms)
        if previous:
            self.last_fetch_leader_log_end_offset = max(leader_leo, self.last_fetch_leader_log_end_offset)
            self.last_fetch_time_ms = fetch_time_ms

    monkeypatch.setattr(FollowerState, "update_fetch_state", this_fetch)
    verdict = run_schedule(_schedule("kip-966", STEADY))
    # the first Fetch already: it reaches the previous Fetch's LEO, unknown (-1), caught up as of time 0
    assert verdict.kind == "divergence" and verdict.step == FIRST, verdict.diff


def test_the_driver_protocol_carries_the_switch():
    driver_carries(BOTH, BEHIND)
