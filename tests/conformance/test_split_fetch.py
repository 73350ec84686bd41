"""A leader's fetch handling in two steps (docs/steps.md, ``split_fetch_handling``) in lockstep: the
implementation decides on its own whether ``read_fetch`` is enabled and reports what it holds, so
random walks with the switch on pass, and a split that answers with anything but what it read is a
divergence."""

from __future__ import annotations

import pytest
from split_switches import driver_carries, walk_counts

from isrcheck.conformance import Lockstep, Schedule, random_walk, run_schedule
from isrcheck.conformance.core.schedule import ScheduleConfig
from isrcheck.impl.replication.replica_manager import ReplicaManager

PROTOCOLS = ("hw-truncation", "kip-101", "kip-279", "kip-320", "kip-903", "kip-966")
SPLIT = {"split_fetch_handling": True}
# a produce appended between follower 1's read and its update, then follower 2 fetching both
BETWEEN = [
    {"step": "produce", "replica": 0, "acks": 1},
    {"step": "send_fetch", "replica": 1},
    {"step": "read_fetch", "replica": 1},
    {"step": "produce", "replica": 0, "acks": 1},
    {"step": "send_fetch", "replica": 2},
    {"step": "handle_fetch", "replica": 2},
    {"step": "handle_fetch", "replica": 1},
    {"step": "handle_fetch_response", "replica": 1},
    {"step": "handle_fetch_response", "replica": 2},
    {"step": "send_fetch", "replica": 1},
    {"step": "read_fetch", "replica": 1},
    {"step": "crash", "replica": 1, "kind": "process"},  # its read orphaned: updated from, never answered
    {"step": "handle_fetch", "replica": 1},
    {"step": "restart", "replica": 1},
]


def _between(protocol: str) -> Schedule:
    return Schedule(protocol, ScheduleConfig(**SPLIT), tuple(BETWEEN), name="read-then-update")


def _interleaved(schedule: Schedule) -> int:
    """How many reads of the schedule another step followed before their handling completed."""
    count = 0
    for i, st in enumerate(schedule.steps):
        if st["step"] == "read_fetch":
            nxt = schedule.steps[i + 1] if i + 1 < len(schedule.steps) else None
            count += nxt is not None and (nxt["step"], nxt.get("replica")) != ("handle_fetch", st["replica"])
    return count


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_random_walks_with_the_switch_on_pass_in_lockstep(protocol):
    reads, interleaved = walk_counts(protocol, SPLIT, "read_fetch", _interleaved)
    assert reads >= 6 and interleaved >= 3  # the walks take reads, and steps between a read and its update


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_produce_between_a_read_and_its_update_agrees(protocol):
    verdict = run_schedule(_between(protocol))
    assert verdict.kind == "pass", verdict.diff


def test_without_the_switch_both_sides_refuse_read_fetch():
    run = Lockstep("kip-966", ScheduleConfig())
    for st in BETWEEN[:3]:
        assert run.step(st) is None
    assert [st.name for _i, st, _why in run.refused] == ["read_fetch"]  # refused by both: no divergence


def test_a_split_answering_with_a_fresh_read_is_caught(monkeypatch):
    """Planted: the completion answers with the log as it is then, not with what was read."""

    def complete_fetch(self, follower):
        held = self.held_fetches[follower]
        held.read = held.partition.read_records(held.req)
        return original(self, follower)

    original = ReplicaManager.complete_fetch
    monkeypatch.setattr(ReplicaManager, "complete_fetch", complete_fetch)
    verdict = run_schedule(_between("kip-966"))
    assert (
        verdict.kind == "divergence" and verdict.step == 6
    )  # follower 1's answer holds the record appended after the read
    caught = [
        seed for seed in range(12) if random_walk(seed, "kip-966", 150, "default", config=SPLIT)[1].kind == "divergence"
    ]
    assert caught  # and random walks with the switch on find it


def test_a_split_that_updates_at_the_read_is_caught(monkeypatch):
    """Planted: the read updates the follower's state at once (the update half done early)."""

    def read_fetch(self, src, header, req, handle=None):
        reason = original(self, src, header, req, handle)
        if reason is None:
            held = self.held_fetches[req.replica_id]
            p = held.partition
            p.update_follower_fetch_state(
                held.follower, req.fetch_offset, req.replica_epoch, held.fetch_time_ms, held.read.log_end_offset
            )
        return reason

    original = ReplicaManager.read_fetch
    monkeypatch.setattr(ReplicaManager, "read_fetch", read_fetch)
    verdict = run_schedule(_between("kip-966"))
    assert verdict.kind == "divergence" and verdict.step == 2  # the leader's remote LEO of 1 moved at the read


def test_the_driver_protocol_carries_the_switch_and_the_held_reads():
    driver_carries(SPLIT, BETWEEN)
