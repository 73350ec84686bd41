"""Becoming a follower in two steps (docs/steps.md, ``split_become_follower``): ``deliver_leader_and_isr``
applies the partition state (Partition.makeFollower) and leaves the fetcher stale, ``remove_fetcher``
replaces it (removeFetcherForPartitions, addFetcherForPartitions); between them the old fetcher
handles the answer its old leader sent (Kafka 4.x's ReplicaManager.applyLocalFollowersDelta)."""

from __future__ import annotations

import pytest
import split_switches
from split_switches import step

from isrcheck.model import PROTOCOLS, ModelConfig, Scope, Step, explore, why_disabled
from isrcheck.model.explorer import reachable_states
from isrcheck.model.state import initial_state, permuted
from isrcheck.model.symmetry import all_permutations

SPLIT = ModelConfig(protocol="kip-320", split_become_follower=True)
WHOLE = ModelConfig(protocol="kip-320")
KIP279 = ModelConfig(protocol="kip-279", split_become_follower=True)


def last(steps, cfg=SPLIT):
    return split_switches.last(steps, cfg)


# follower 1's Fetch answered by leader 0 (record 1), then leader 2 elected: follower 1 applies epoch 1
ANSWERED = [step("produce", 0, acks=1), step("send_fetch", 1), step("handle_fetch", 1)]
MOVED = ANSWERED + [step("elect", 2), step("deliver_leader_and_isr", 1, index=0)]


def test_makefollower_applies_the_new_epoch_and_leaves_the_fetcher_stale():
    s = last(MOVED)
    rep = s.replicas[1]
    assert (rep.leader, rep.leader_epoch, rep.stale_fetcher) == (2, 1, (0, 0))
    assert len(s.fetch_responses[1]) == 1  # the old leader's answer is still on its way
    assert "stale_fetcher" not in repr(initial_state(SPLIT).replicas[1])  # none is left out of the repr
    assert last(MOVED, WHOLE).replicas[1].stale_fetcher == ()  # the switch off: replaced at once


def test_the_old_leaders_answer_is_appended_after_the_new_epoch_applied():
    s = last(MOVED + [step("handle_fetch_response", 1)])
    rep = s.replicas[1]
    assert [e.record for e in rep.log] == [1] and rep.leader_epoch == 1 and rep.stale_fetcher == (0, 0)
    s = last(MOVED + [step("handle_fetch_response", 1)], WHOLE)
    assert s.replicas[1].log == ()  # without the switch the answer of an earlier leadership is discarded


def test_the_old_leaders_answer_is_discarded_after_remove_fetcher():
    s = last(MOVED + [step("remove_fetcher", 1), step("handle_fetch_response", 1)])
    rep = s.replicas[1]
    assert rep.log == () and rep.stale_fetcher == () and s.fetch_responses[1] == ()


def test_a_stale_fetcher_waits_for_its_outstanding_answer_and_the_new_one_sends_at_once():
    s = last(MOVED)
    assert why_disabled(SPLIT, s, Step("send_fetch", 1)) == "follower 1 has a fetch outstanding"
    s = last(MOVED + [step("remove_fetcher", 1)])
    assert why_disabled(SPLIT, s, Step("send_fetch", 1)) is None  # the old answer is no longer its own
    assert why_disabled(SPLIT, s, Step("remove_fetcher", 1)) == "the fetcher of broker 1 is not stale"


# the old answer appended, then leader 0 (still leading epoch 0 in its own view) appends record 2
STALE_AGAIN = MOVED + [step("handle_fetch_response", 1), step("produce", 0, acks=1), step("send_fetch", 1)]


def test_a_stale_fetcher_fetches_from_its_old_leader_under_its_old_tag():
    s = last(STALE_AGAIN)
    (req,) = s.fetch_requests[1]
    assert (req.leader, req.leader_epoch, req.fetch_offset, req.last_fetched_epoch) == (0, 0, 1, 0)
    assert s.replicas[1].leader == 2 and s.replicas[1].stale_fetcher == (0, 0)  # the partition is on epoch 1
    assert why_disabled(SPLIT, s, Step("send_fetch", 1)) == "follower 1 has a fetch outstanding"
    s = last(STALE_AGAIN + [step("handle_fetch", 1), step("handle_fetch_response", 1)])
    rep = s.replicas[1]
    assert [e.record for e in rep.log] == [1, 2] and rep.stale_fetcher == (0, 0)
    assert s.replicas[0].remote_leo[1] == 1  # the old leader took it as any Fetch of its leader epoch


def test_a_stale_fetch_to_a_leader_that_learned_a_newer_epoch_is_refused_as_any_such_fetch():
    s = last(STALE_AGAIN + [step("deliver_leader_and_isr", 0, index=0), step("handle_fetch", 1)])
    assert (s.fetch_responses[1][0].error, s.fetch_responses[1][0].leader_epoch) == ("NOT_LEADER_OR_FOLLOWER", 0)
    # leader 0 elected again (epoch 2) before it handles the request of epoch 0
    again = STALE_AGAIN + [step("elect", 0), step("deliver_leader_and_isr", 0, index=1), step("handle_fetch", 1)]
    s = last(again)
    assert s.replicas[0].leader_epoch == 2 and s.fetch_responses[1][0].error == "FENCED_LEADER_EPOCH"
    s = last(again + [step("handle_fetch_response", 1)], KIP279)  # no current leader epoch before KIP-320
    assert [e.record for e in s.replicas[1].log] == [1, 2] and s.replicas[1].leader_epoch == 1


def test_a_stale_fetch_is_lost_to_remove_fetcher_and_the_new_fetcher_sends_to_the_new_leader():
    s = last(STALE_AGAIN + [step("remove_fetcher", 1)])
    assert why_disabled(SPLIT, s, Step("send_fetch", 1)) is None  # the stale request is no longer its own
    s = last(STALE_AGAIN + [step("remove_fetcher", 1), step("send_fetch", 1)])
    assert [(m.leader, m.leader_epoch) for m in s.fetch_requests[1]] == [(0, 0), (2, 1)]
    s = last(STALE_AGAIN + [step("remove_fetcher", 1), step("handle_fetch", 1), step("handle_fetch_response", 1)])
    assert len(s.replicas[1].log) == 1  # the old leader's answer is discarded


def test_a_stale_fetcher_of_a_former_leader_or_of_a_restart_sends_nothing():
    led = MOVED + [step("deliver_leader_and_isr", 0, index=0)]  # leader 0 becomes follower of 2 in epoch 1
    s = last(led)
    assert s.replicas[0].stale_fetcher == (0, 0)
    assert why_disabled(SPLIT, s, Step("send_fetch", 0)).startswith("broker 0 has no fetcher until remove_fetcher")
    assert why_disabled(SPLIT, last(led + [step("remove_fetcher", 0)]), Step("send_fetch", 0)) is None
    cfg = ModelConfig(protocol="kip-966", split_become_follower=True)
    s = last([step("crash", 1, kind="process"), step("restart", 1), step("register", 1)], cfg)
    assert s.replicas[1].stale_fetcher == (-1, -1)
    assert why_disabled(cfg, s, Step("send_fetch", 1)).startswith("broker 1 has no fetcher until remove_fetcher")


def test_a_stale_truncating_kip101_fetcher_asks_its_old_leader_under_the_old_tag():
    cfg = ModelConfig(protocol="kip-101", split_become_follower=True)
    # follower 1 holds record 1; its fetcher of leader 2 (epoch 1) is truncating when epoch 2 comes
    replaced = ANSWERED + [step("handle_fetch_response", 1)] + MOVED[3:] + [step("remove_fetcher", 1)]
    s = last(replaced + [step("elect", 0), step("deliver_leader_and_isr", 1, index=0), step("send_fetch", 1)], cfg)
    assert (s.replicas[1].leader_epoch, s.replicas[1].stale_fetcher) == (2, (2, 1))
    (req,) = s.fetch_requests[1]
    assert (req.leader, req.leader_epoch, req.query_epoch) == (2, 1, 0)  # OffsetsForLeaderEpoch of epoch 0


def test_a_crash_clears_the_stale_fetcher_and_the_old_answer_is_gone():
    s = last(MOVED + [step("crash", 1, kind="process")])
    assert s.replicas[1].stale_fetcher == () and s.fetch_responses[1] == ()
    assert why_disabled(SPLIT, s, Step("remove_fetcher", 1)) == "broker 1 is down"


def test_a_second_deliver_keeps_the_old_tag_and_becoming_leader_clears_it():
    twice = MOVED + [step("elect", 0), step("deliver_leader_and_isr", 1, index=0)]
    s = last(twice)
    assert (s.replicas[1].leader, s.replicas[1].leader_epoch, s.replicas[1].stale_fetcher) == (0, 2, (0, 0))
    s = last(twice + [step("handle_fetch_response", 1)])
    assert len(s.replicas[1].log) == 1  # still the old fetcher's answer
    led = MOVED + [step("elect", 1), step("deliver_leader_and_isr", 1, index=0)]
    s = last(led)
    assert s.replicas[1].leader == 1 and s.replicas[1].stale_fetcher == ()
    s = last(led + [step("handle_fetch_response", 1)])
    assert s.replicas[1].log == ()  # makeLeader forgot the outstanding fetch


def test_a_stale_kip101_fetcher_asks_about_its_epoch_only_once_replaced():
    cfg = ModelConfig(protocol="kip-101", split_become_follower=True)
    s = last(ANSWERED + [step("handle_fetch_response", 1)] + MOVED[3:], cfg)
    assert s.replicas[1].truncating_epoch == -1  # the old fetcher's state: fetching
    s = last(ANSWERED + [step("handle_fetch_response", 1)] + MOVED[3:] + [step("remove_fetcher", 1)], cfg)
    assert s.replicas[1].truncating_epoch == 0  # the new fetcher asks about its latest epoch first


def test_hw_truncation_truncates_with_the_replacement():
    cfg = ModelConfig(protocol="hw-truncation", split_become_follower=True)
    s = last(MOVED + [step("handle_fetch_response", 1)], cfg)
    assert len(s.replicas[1].log) == 1 and s.replicas[1].hw == 0  # appended at the LEO it fetched from
    s = last(MOVED + [step("handle_fetch_response", 1), step("remove_fetcher", 1)], cfg)
    assert s.replicas[1].log == ()  # Kafka 0.10's makeFollowers: truncated to the HW once the fetcher is gone


def test_remove_fetcher_is_refused_while_the_switch_is_off():
    assert why_disabled(WHOLE, last(MOVED, WHOLE), Step("remove_fetcher", 1)).startswith("split_become_follower is off")


def test_a_kraft_restart_leaves_a_stale_fetcher_to_replace():
    cfg = ModelConfig(protocol="kip-966", split_become_follower=True)
    s = last([step("crash", 1, kind="process"), step("restart", 1)], cfg)
    assert s.replicas[1].stale_fetcher == (-1, -1) and s.replicas[1].unregistered


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_renaming_brokers_renames_the_stale_tag(protocol):
    cfg = ModelConfig(protocol=protocol, split_become_follower=True)
    s = last(MOVED, cfg)
    for perm in all_permutations(3):
        t = permuted(s, perm)
        assert t.replicas[perm[1]].stale_fetcher == (perm[0], 0)


def test_the_explorer_reaches_the_stale_append_with_the_switch_and_not_without():
    scope = Scope(max_records=1, max_epoch=1, max_crashes=0, max_leader_moves=1, fetch_rounds=False)
    two = {"replicas": 2, "min_insync_replicas": 1}
    split = ModelConfig(protocol="kip-320", split_become_follower=True, **two)
    whole = ModelConfig(protocol="kip-320", **two)
    assert any(r.stale_fetcher and r.log for s in reachable_states(split, scope) for r in s.replicas)
    assert not any(r.stale_fetcher for s in reachable_states(whole, scope) for r in s.replicas)
    assert explore(split, scope).complete


def test_the_explorer_takes_stale_fetch_rounds_with_three_brokers():
    # with two brokers a leader move leaves only the deposed leader stale, which has no fetcher
    scope = Scope(max_records=1, max_epoch=1, max_crashes=0, max_leader_moves=1)
    cfg = ModelConfig(protocol="kip-320", split_become_follower=True, replicas=3, min_insync_replicas=2)
    stale_sends = [
        s
        for s in reachable_states(cfg, scope)
        for r, rep in enumerate(s.replicas)
        if rep.stale_fetcher and why_disabled(cfg, s, Step("send_fetch", r)) is None
    ]
    assert len(stale_sends) >= 100
