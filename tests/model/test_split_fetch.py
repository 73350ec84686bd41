"""A leader's fetch handling in two steps (docs/steps.md, ``split_fetch_handling``): ``read_fetch``
reads and holds, ``handle_fetch`` updates the follower's state and answers with what was read, and
any step may fall between them (Kafka's Partition.fetchRecords reads, then calls
updateFollowerFetchState, request handler threads running concurrently)."""

from __future__ import annotations

import pytest
import split_switches
from split_switches import step

from isrcheck.model import ConfigError, ModelConfig, Scope, Step, apply, enabled, explore, why_disabled
from isrcheck.model.state import initial_state

SPLIT = ModelConfig(protocol="kip-966", split_fetch_handling=True)
WHOLE = ModelConfig(protocol="kip-966")


def last(steps, cfg=SPLIT):
    return split_switches.last(steps, cfg)


READ_1 = [step("produce", 0, acks=1), step("send_fetch", 1), step("read_fetch", 1)]


def test_the_read_is_held_and_the_request_leaves_the_wire():
    s = last(READ_1)
    (held,) = s.replicas[0].held_reads
    assert (held.follower, held.fetch_offset, held.hw, len(held.records)) == (1, 0, 0, 1)
    assert (held.fetch_time, held.leo_read) == (0, 1)  # read at tick 0, the leader's LEO 1
    assert s.fetch_requests[1] == () and s.fetch_responses[1] == ()
    assert s.replicas[0].remote_leo[1] == -1  # nothing updated yet
    assert why_disabled(SPLIT, s, Step("send_fetch", 1)) == "follower 1 has a fetch outstanding"
    assert "held_reads" not in repr(initial_state(SPLIT).replicas[0])  # an empty one is left out of the repr


def test_a_produce_appended_between_the_read_and_the_update_is_not_in_the_answer():
    s = last(READ_1 + [step("produce", 0, acks=1), step("handle_fetch", 1)])
    (answer,) = s.fetch_responses[1]
    assert [e.record for e in answer.records] == [1]
    assert s.replicas[0].remote_leo[1] == 0 and s.replicas[0].held_reads == ()
    s = last([step("produce", 0, acks=1), step("send_fetch", 1), step("produce", 0, acks=1), step("handle_fetch", 1)])
    assert [e.record for e in s.fetch_responses[1][0].records] == [1, 2]  # the whole handling reads both


def test_an_hw_raised_by_another_followers_update_between_them_is_not_in_the_answer():
    rounds = [step(name, r) for r in (1, 2, 1) for name in ("send_fetch", "handle_fetch", "handle_fetch_response")]
    both = [step("produce", 0, acks=1)] + rounds + [step("send_fetch", 1), step("send_fetch", 2), step("read_fetch", 1)]
    s = last(both)
    assert s.replicas[0].hw == 0 and s.replicas[0].remote_leo[1:] == (1, 0) and s.replicas[0].held_reads[0].hw == 0
    s = last(both + [step("handle_fetch", 2)])  # follower 2's update between: both at 1, HW 1
    assert s.replicas[0].hw == 1 and s.fetch_responses[2][0].leader_hw == 0  # its own raise is not in its answer
    s = last(both + [step("handle_fetch", 2), step("handle_fetch", 1)])
    assert s.replicas[0].hw == 1 and s.fetch_responses[1][0].leader_hw == 0  # what 1's handling read, before it


def test_the_leaders_crash_forgets_the_read_and_answers_nothing():
    s = last(READ_1 + [step("crash", 0, kind="process")])
    assert s.replicas[0].held_reads == ()
    assert why_disabled(SPLIT, s, Step("handle_fetch", 1)) == "no fetch request of replica 1 in flight"
    assert why_disabled(SPLIT, s, Step("send_fetch", 1)) is None  # its request is no longer outstanding


def test_the_followers_crash_orphans_the_read_updated_from_and_never_answered():
    s = last(READ_1 + [step("crash", 1, kind="process"), step("restart", 1), step("handle_fetch", 1)])
    assert s.replicas[0].remote_leo[1] == 0 and s.fetch_responses[1] == ()


def test_leaving_leadership_detaches_the_update_and_the_answer_still_goes():
    moved = READ_1 + [step("elect", 1), step("deliver_leader_and_isr", 0, index=0)]
    s = last(moved)
    assert s.replicas[0].leader == 1 and s.replicas[0].held_reads[0].detached
    s = last(moved + [step("handle_fetch", 1)])
    assert s.replicas[0].remote_leo == (-1, -1, -1)  # the update reached a Replica no longer the partition's
    assert len(s.fetch_responses[1]) == 1  # answered; follower 1, leader now, discards it
    s = last(moved + [step("handle_fetch", 1), step("deliver_leader_and_isr", 1, index=0)])
    assert s.replicas[1].leader == 1
    s = last(
        moved + [step("deliver_leader_and_isr", 1, index=0), step("handle_fetch", 1), step("handle_fetch_response", 1)]
    )
    assert s.replicas[1].log == ()  # an answer of an earlier leadership: discarded


def test_a_newer_leader_epoch_the_holder_leads_too_takes_the_late_update():
    """Leadership moved to 1 and back to 0, broker 0 applying the second LeaderAndIsr first: it leads
    on from leader epoch 0 to 2 (makeLeader while it led), and the update lands in the new
    leadership's state (Kafka's makeLeader keeps the follower's Replica and resets it)."""
    moved = READ_1 + [step("elect", 1), step("elect", 0), step("deliver_leader_and_isr", 0, index=1)]
    s = last(moved)
    assert (s.replicas[0].leader, s.replicas[0].leader_epoch) == (0, 2) and s.replicas[0].remote_leo[1] == -1
    assert not s.replicas[0].held_reads[0].detached
    s = last(moved + [step("handle_fetch", 1)])
    assert s.replicas[0].remote_leo[1] == 0 and s.replicas[0].remote_broker_epoch[1] == 0


def test_at_most_one_read_per_follower_and_only_of_a_fetch_that_reads():
    s = last([step("send_fetch", 1), step("read_fetch", 1), step("elect", 2)])
    s = last(
        [step("send_fetch", 1), step("read_fetch", 1), step("elect", 2), step("deliver_leader_and_isr", 1, index=0)]
    )
    assert s.replicas[1].leader == 2
    s = apply(SPLIT, apply(SPLIT, s, Step("deliver_leader_and_isr", 2))[0], Step("send_fetch", 1))[0]
    assert (
        why_disabled(SPLIT, s, Step("read_fetch", 1)) == "broker 0 holds a read of follower 1 (its next request waits)"
    )
    assert why_disabled(SPLIT, s, Step("handle_fetch", 1)) is None  # completes the held read, the request waits
    s = last([step("send_fetch", 1), step("elect", 1), step("deliver_leader_and_isr", 0, index=0)])
    assert why_disabled(SPLIT, s, Step("read_fetch", 1)).endswith("(its answer: NOT_LEADER_OR_FOLLOWER)")
    assert why_disabled(SPLIT, s, Step("handle_fetch", 1)) is None  # answered whole


def test_without_the_switch_read_fetch_is_refused_and_never_enabled():
    s = last([step("send_fetch", 1)], WHOLE)
    assert why_disabled(WHOLE, s, Step("read_fetch", 1)).startswith("split_fetch_handling is off")
    assert not any(st.name == "read_fetch" for st in enabled(WHOLE, s))
    assert any(st.name == "read_fetch" for st in enabled(SPLIT, last([step("send_fetch", 1)])))
    assert "split_fetch_handling" not in WHOLE.to_schedule() and SPLIT.to_schedule()["split_fetch_handling"]


def test_fetch_rounds_are_refused_with_the_switch():
    with pytest.raises(ConfigError, match="fetch rounds"):
        explore(SPLIT, Scope(max_records=1, max_epoch=1, max_crashes=0))


def test_the_split_reaches_more_states_and_keeps_every_property():
    scope = Scope(max_records=1, max_epoch=1, max_crashes=0, fetch_rounds=False)
    whole, split = explore(WHOLE, scope), explore(SPLIT, scope)
    assert whole.complete and split.complete and not whole.violations and not split.violations
    assert split.states > whole.states


def test_renaming_brokers_commutes_with_the_split_steps():
    """``state.permuted`` renames the followers of held reads."""
    scope = Scope(max_records=1, max_epoch=2, max_crashes=1, max_drops=1, fetch_rounds=False)
    assert split_switches.renamings_commute(SPLIT, scope, lambda s: any(r.held_reads for r in s.replicas)) > 50
