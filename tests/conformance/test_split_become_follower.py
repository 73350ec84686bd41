"""Becoming a follower in two steps (docs/steps.md, ``split_become_follower``) in lockstep: the
implementation decides on its own whether ``remove_fetcher`` is enabled and reports its stale fetcher,
so random walks with the switch on pass, and a split whose stale fetcher drops its old leader's
answer (or replaces itself at once) is a divergence."""

from __future__ import annotations

import pytest
from split_switches import driver_carries, walk_counts

from isrcheck.conformance import Lockstep, Schedule, random_walk, run_schedule
from isrcheck.conformance.core.schedule import ScheduleConfig
from isrcheck.impl.replication.fetcher import ReplicaFetcher

PROTOCOLS = ("hw-truncation", "kip-101", "kip-279", "kip-320", "kip-903", "kip-966")
SPLIT = {"split_become_follower": True}
# follower 1's Fetch answered by leader 0, then leader 2 elected: follower 1 applies leader epoch 1,
# appends leader 0's answer with its stale fetcher, then replaces the fetcher and fetches from 2
STALE_APPEND = [
    {"step": "produce", "replica": 0, "acks": 1},
    {"step": "send_fetch", "replica": 1},
    {"step": "handle_fetch", "replica": 1},
    {"step": "elect", "replica": 2},
    {"step": "deliver_leader_and_isr", "replica": 1, "index": 0},
    {"step": "send_fetch", "replica": 1},  # refused: the fetcher is stale
    {"step": "handle_fetch_response", "replica": 1},  # the old leader's answer appended
    {"step": "remove_fetcher", "replica": 1},
    {"step": "deliver_leader_and_isr", "replica": 2, "index": 0},
    {"step": "remove_fetcher", "replica": 2},  # refused: it became the leader
    {"step": "send_fetch", "replica": 1},
    {"step": "handle_fetch", "replica": 1},
    {"step": "handle_fetch_response", "replica": 1},
]


def _schedule(protocol: str) -> Schedule:
    return Schedule(protocol, ScheduleConfig(**SPLIT), tuple(STALE_APPEND), name="stale-append")


def _between(schedule: Schedule) -> int:
    """How many answers a stale fetcher handled: handle_fetch_response between a broker's
    deliver_leader_and_isr and its remove_fetcher."""
    stale, count = set(), 0
    for st in schedule.steps:
        if st["step"] == "deliver_leader_and_isr":
            stale.add(st["replica"])
        elif st["step"] in ("remove_fetcher", "crash"):
            stale.discard(st["replica"])
        elif st["step"] == "handle_fetch_response":
            count += st["replica"] in stale
    return count


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_random_walks_with_the_switch_on_pass_in_lockstep(protocol):
    removals, between = walk_counts(protocol, SPLIT, "remove_fetcher", _between)
    assert removals >= 6 and between >= 1  # the walks replace fetchers, and handle answers before that


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_an_old_leaders_answer_appended_before_remove_fetcher_agrees(protocol):
    verdict = run_schedule(_schedule(protocol))
    assert verdict.kind == "pass", verdict.diff
    run = Lockstep(protocol, ScheduleConfig(**SPLIT))
    for st in STALE_APPEND:
        run.step(st)
    assert [(st.name, st.replica) for _i, st, _why in run.refused] == [("send_fetch", 1), ("remove_fetcher", 2)]


def test_without_the_switch_both_sides_refuse_remove_fetcher():
    run = Lockstep("kip-966", ScheduleConfig())
    for st in STALE_APPEND[:5] + [{"step": "remove_fetcher", "replica": 1}]:
        assert run.step(st) is None
    assert [st.name for _i, st, _why in run.refused] == ["remove_fetcher"]  # refused by both: no divergence


def test_a_stale_fetcher_that_drops_its_old_leaders_answer_is_caught(monkeypatch):
    """Planted: the stale fetcher judges an answer by the partition's leader epoch, as before the split."""

    def current(self):
        p = self.partition
        self.outstanding = None
        return self.sent_under == (p.leader, p.leader_epoch) and not p.is_leader

    monkeypatch.setattr(ReplicaFetcher, "_current", current)
    verdict = run_schedule(_schedule("kip-320"))
    assert verdict.kind == "divergence" and verdict.step == 6, verdict.diff  # the append the model makes
    caught = [
        seed for seed in range(12) if random_walk(seed, "kip-320", 150, "default", config=SPLIT)[1].kind == "divergence"
    ]
    assert caught  # and random walks with the switch on find it


def test_a_split_that_replaces_the_fetcher_at_once_is_caught(monkeypatch):
    """Planted: makeFollower's fetcher is marked stale and replaced in the same step."""

    def keep_stale(self, tag):
        self.reset()

    monkeypatch.setattr(ReplicaFetcher, "keep_stale", keep_stale)
    verdict = run_schedule(_schedule("kip-320"))
    assert verdict.kind == "divergence" and verdict.step == 4, verdict.diff  # no stale fetcher reported


def test_the_driver_protocol_carries_the_switch_and_the_stale_fetcher():
    driver_carries(SPLIT, STALE_APPEND)
