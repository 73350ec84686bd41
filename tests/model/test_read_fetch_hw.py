"""A leader's fetch read in two (docs/steps.md, ``read_fetch_hw``): the HW first, the LEO and the
batches later by ``read_fetch`` (Kafka's Partition.readRecords reads initialHighWatermark before
initialLogEndOffset and localLog.read, and the read lock it holds stops no append nor HW raise)."""

from __future__ import annotations

import split_switches
from split_switches import step

from isrcheck.model import ModelConfig, Step, enabled, why_disabled

SPLIT = ModelConfig(protocol="kip-966", split_fetch_handling=True)
WHOLE = ModelConfig(protocol="kip-966")

HW_READ_1 = [step("produce", 0, acks=1), step("send_fetch", 1), step("read_fetch_hw", 1)]
# followers 1 and 2 fetched record 1, follower 1's fetch at 1 read by 0 as the HW only, HW 0
ROUNDS = [step(name, r) for r in (1, 2, 1) for name in ("send_fetch", "handle_fetch", "handle_fetch_response")]
RAISE_PENDING = [step("produce", 0, acks=1), *ROUNDS, step("send_fetch", 1), step("send_fetch", 2)]


def last(steps, cfg=SPLIT):
    return split_switches.last(steps, cfg)


def test_the_hw_is_held_without_batches_and_the_request_leaves_the_wire():
    s = last(HW_READ_1)
    (held,) = s.replicas[0].held_reads
    assert held.hw_only and (held.fetch_offset, held.hw, held.records, held.bad_batch) == (0, 0, (), -1)
    assert s.fetch_requests[1] == () and (held.fetch_time, held.leo_read) == (0, -1)  # its time; no LEO read yet
    assert "hw_only=True" in repr(held)
    done = last(HW_READ_1 + [step("read_fetch", 1)]).replicas[0].held_reads[0]
    assert not done.hw_only and [e.record for e in done.records] == [1] and done.leo_read == 1  # the LEO now
    assert "hw_only" not in repr(done) and "max_batches" not in repr(done)  # left out at their defaults


def test_an_append_between_the_reads_is_in_the_answer_with_the_hw_read_before():
    s = last(HW_READ_1 + [step("produce", 0, acks=1), step("read_fetch", 1), step("handle_fetch", 1)])
    (answer,) = s.fetch_responses[1]
    assert [e.record for e in answer.records] == [1, 2] and answer.leader_hw == 0
    whole = last([step("produce", 0, acks=1), step("send_fetch", 1), step("read_fetch", 1), step("produce", 0, acks=1)])
    assert [e.record for e in whole.replicas[0].held_reads[0].records] == [1]  # read_fetch reads at once


def test_a_raise_between_the_reads_leaves_the_answer_the_hw_read_before():
    """Kafka 4.4.0's answer of HW 1,439 and records up to 1,443: the raise to 1,440 by another
    follower's update, then an append, both between the HW's read and the records'."""
    between = [step("handle_fetch", 2), step("produce", 0, acks=1)]
    s = last(RAISE_PENDING + [step("read_fetch_hw", 1), *between, step("read_fetch", 1)])
    assert s.replicas[0].hw == 1 and s.replicas[0].held_reads[0].hw == 0
    s = last(RAISE_PENDING + [step("read_fetch_hw", 1), *between, step("read_fetch", 1), step("handle_fetch", 1)])
    (answer,) = s.fetch_responses[1]
    assert answer.leader_hw == 0 and [e.record for e in answer.records] == [2]
    s = last(RAISE_PENDING + between + [step("read_fetch", 1), step("handle_fetch", 1)])
    assert s.fetch_responses[1][0].leader_hw == 1  # read whole after them: the raised HW


def test_caught_up_is_judged_by_the_leo_read_with_the_batches_as_of_the_hws_read():
    steps = [step("send_fetch", 1), step("tick"), step("read_fetch_hw", 1), step("tick")]
    s = last(steps + [step("read_fetch", 1), step("handle_fetch", 1)])
    assert s.replicas[0].last_caught_up[1] == 1  # LEO 0 reached: caught up at the HW's read, tick 1
    s = last(steps + [step("produce", 0, acks=1), step("read_fetch", 1)])
    (held,) = s.replicas[0].held_reads
    assert (held.fetch_time, held.leo_read) == (1, 1) and [e.record for e in held.records] == [1]  # LEO after it
    s = last(steps + [step("produce", 0, acks=1), step("read_fetch", 1), step("handle_fetch", 1)])
    assert s.replicas[0].last_caught_up[1] == 0  # offset 0 below the LEO read: not caught up


def test_the_batches_read_later_keep_the_requests_limit():
    two = [step("produce", 0, acks=1), step("produce", 0, acks=1), step("send_fetch", 1, max_batches=1)]
    s = last(two + [step("read_fetch_hw", 1)])
    assert s.replicas[0].held_reads[0].max_batches == 1
    s = last(two + [step("read_fetch_hw", 1), step("read_fetch", 1)])
    (held,) = s.replicas[0].held_reads
    assert [e.record for e in held.records] == [1] and held.max_batches == 0


def test_handle_fetch_waits_for_the_batches():
    s = last(HW_READ_1)
    assert why_disabled(SPLIT, s, Step("handle_fetch", 1)).startswith("broker 0 has read only the HW")
    assert why_disabled(SPLIT, s, Step("read_fetch", 1)) is None
    assert why_disabled(SPLIT, s, Step("read_fetch_hw", 1)) == (
        "no fetch request of replica 1 in flight"  # its request is held
    )
    assert why_disabled(SPLIT, last(HW_READ_1 + [step("read_fetch", 1)]), Step("handle_fetch", 1)) is None


def test_a_leader_and_isr_waits_for_the_reader():
    moved = HW_READ_1 + [step("elect", 1)]
    s = last(moved)
    reason = why_disabled(SPLIT, s, Step("deliver_leader_and_isr", 0))
    assert reason == "broker 0 holds a fetch read of the HW only (its batches' read holds the lock)"
    assert why_disabled(SPLIT, s, Step("deliver_leader_and_isr", 1)) is None  # another broker's
    s = last(moved + [step("read_fetch", 1), step("deliver_leader_and_isr", 0, index=0)])
    assert s.replicas[0].leader == 1 and s.replicas[0].held_reads[0].detached


def test_the_leaders_crash_forgets_the_hw_read():
    s = last(HW_READ_1 + [step("crash", 0, kind="process")])
    assert s.replicas[0].held_reads == ()
    for name in ("read_fetch", "handle_fetch"):
        assert why_disabled(SPLIT, s, Step(name, 1)) is not None


def test_the_followers_crash_orphans_the_hw_read():
    s = last(HW_READ_1 + [step("crash", 1, kind="process")])
    assert s.replicas[0].held_reads[0].orphan and s.replicas[0].held_reads[0].hw_only
    s = last(HW_READ_1 + [step("crash", 1, kind="process"), step("read_fetch", 1), step("handle_fetch", 1)])
    assert s.replicas[0].remote_leo[1] == 0 and s.fetch_responses[1] == ()  # updated from, never answered


def test_without_the_switch_it_is_refused_and_never_enabled():
    s = last([step("send_fetch", 1)], WHOLE)
    assert why_disabled(WHOLE, s, Step("read_fetch_hw", 1)).startswith("split_fetch_handling is off")
    assert not any(st.name == "read_fetch_hw" for st in enabled(WHOLE, s))
    assert Step("read_fetch_hw", 1) in enabled(SPLIT, last([step("send_fetch", 1)]))
