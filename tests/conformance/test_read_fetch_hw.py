"""A leader's fetch read in two (docs/steps.md, ``read_fetch_hw``) in lockstep: the implementation
decides on its own whether each read is enabled and reports its HW-only reads, so schedules and
random walks through them pass, and a batches' read that takes the HW anew is a divergence."""

from __future__ import annotations

import pytest
from split_switches import driver_carries, walk_counts

from isrcheck.conformance import Lockstep, Schedule, run_schedule
from isrcheck.conformance.core.schedule import ScheduleConfig
from isrcheck.impl.replication.partition import Partition

PROTOCOLS = ("hw-truncation", "kip-101", "kip-279", "kip-320", "kip-903", "kip-966")
SPLIT = {"split_fetch_handling": True}
# follower 1's HW read before follower 2's update raises the HW and a produce appends; the
# batches read after both; then an HW read held while a LeaderAndIsr waits for it, and its
# follower's crash
HW_FIRST = [
    {"step": "produce", "replica": 0, "acks": 1},
    *[
        {"step": name, "replica": r}
        for r in (1, 2, 1)
        for name in ("send_fetch", "handle_fetch", "handle_fetch_response")
    ],
    {"step": "send_fetch", "replica": 1},
    {"step": "send_fetch", "replica": 2},
    {"step": "read_fetch_hw", "replica": 1},
    {"step": "handle_fetch", "replica": 2},
    {"step": "produce", "replica": 0, "acks": 1},
    {"step": "read_fetch", "replica": 1},
    {"step": "handle_fetch", "replica": 1},
    {"step": "handle_fetch_response", "replica": 1},
    {"step": "send_fetch", "replica": 1, "max_batches": 1},
    {"step": "read_fetch_hw", "replica": 1},
    {"step": "elect", "replica": 2},
    {"step": "deliver_leader_and_isr", "replica": 0},  # refused by both: the write lock waits
    {"step": "crash", "replica": 1, "kind": "process"},
    {"step": "read_fetch", "replica": 1},
    {"step": "deliver_leader_and_isr", "replica": 0},
    {"step": "handle_fetch", "replica": 1},
]
AT_THE_BATCHES_READ = 15  # the index of the first read_fetch of HW_FIRST


def _hw_first(protocol: str) -> Schedule:
    return Schedule(protocol, ScheduleConfig(**SPLIT), tuple(HW_FIRST), name="hw-then-batches")


def _interleaved(schedule: Schedule) -> int:
    """How many HW reads of the schedule another step followed before their batches' read."""
    count = 0
    for i, st in enumerate(schedule.steps):
        if st["step"] == "read_fetch_hw":
            nxt = schedule.steps[i + 1] if i + 1 < len(schedule.steps) else None
            count += nxt is not None and (nxt["step"], nxt.get("replica")) != ("read_fetch", st["replica"])
    return count


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_raise_and_an_append_between_the_reads_agree(protocol):
    verdict = run_schedule(_hw_first(protocol))
    assert verdict.kind == "pass", verdict.diff


def test_the_leader_and_isr_waiting_for_the_reader_is_refused_by_both():
    run = Lockstep("kip-966", ScheduleConfig(**SPLIT))
    for st in HW_FIRST:
        assert run.step(st) is None, run.verdict().diff
    assert [(st.name, st.replica) for _i, st, _why in run.refused] == [("deliver_leader_and_isr", 0)]
    assert run.verdict().kind == "pass"


@pytest.mark.parametrize("protocol", ["kip-320", "kip-966"])
def test_random_walks_through_the_hw_reads_pass_in_lockstep(protocol):
    reads, interleaved = walk_counts(protocol, SPLIT, "read_fetch_hw", _interleaved)
    assert reads >= 6 and interleaved >= 3  # the walks take them, and steps between them and their batches


def test_a_batches_read_taking_the_hw_anew_is_caught(monkeypatch):
    """Planted: the batches' read takes the HW as it is then, not the one read with the LEO."""

    def read_log(self, offsets, max_batches):
        offsets.high_watermark = self.high_watermark
        return original(self, offsets, max_batches)

    original = Partition.read_log
    monkeypatch.setattr(Partition, "read_log", read_log)
    verdict = run_schedule(_hw_first("kip-966"))
    assert verdict.kind == "divergence" and verdict.step == AT_THE_BATCHES_READ, verdict


def test_the_driver_protocol_carries_the_hw_only_reads():
    driver_carries(SPLIT, HW_FIRST[:14])
