"""The implementation's previous-fetch rule with ``catch_up_at_previous_fetch`` (docs/steps.md,
``handle_fetch``; Kafka's Replica.updateFetchStateOrThrow) on Kafka's example and tests/prev_fetch.py's
scenarios, taken as schedule steps by the step-mode simulation alone."""

from __future__ import annotations

import pytest
from hw_waits import WAITS
from prev_fetch import BEHIND, BOTH, PREVIOUS, STEADY

from isrcheck.impl.replication.partition import FollowerState
from isrcheck.impl.sut.driver import SimDriver, cluster_config
from isrcheck.impl.sut.steps import parse_step


def leader_after(steps, protocol="kip-966", **switches):
    """Leader 0's snapshot after ``steps``, every one of them taken."""
    driver = SimDriver(cluster_config(protocol, {"replica_lag_time_max_ticks": 2, **switches}))
    for doc in steps:
        refused, _outputs = driver.step(*parse_step(doc, 3))
        assert refused is None, (doc, refused)
    return driver.cluster.snapshot().brokers[0]


@pytest.mark.parametrize("previous", [False, True])
def test_kafkas_example(previous):
    """Leader LEO 307 at the follower's first Fetch (10 ms), 310 at its second from 307 (20 ms)."""
    follower = FollowerState(0)
    follower.update_fetch_state(300, 10, 307, previous)
    follower.update_fetch_state(307, 20, 310, previous)
    assert follower.last_caught_up_ms == (10 if previous else 0)
    if previous:
        assert (follower.last_fetch_leader_log_end_offset, follower.last_fetch_time_ms) == (310, 20)
        follower.update_fetch_state(305, 30, 309, previous)  # a lower LEO found does not lower it
        assert (follower.last_fetch_leader_log_end_offset, follower.last_caught_up_ms) == (310, 10)
    follower.reset(5)  # resetReplicaState for a new leader
    assert (follower.last_fetch_leader_log_end_offset, follower.last_fetch_time_ms) == (-1, 0)


@pytest.mark.parametrize("protocol", ["hw-truncation", "kip-101", "kip-320", "kip-903", "kip-966"])
def test_a_follower_short_of_the_leo_is_caught_up_as_of_its_previous_fetch(protocol):
    lead = leader_after(STEADY, protocol, **PREVIOUS)
    assert lead.remote_leo[2] == 1 and lead.last_caught_up_ms[2] == 1
    assert (lead.last_fetch_leader_leo[2], lead.last_fetch_ms[2]) == (2, 2)
    lead = leader_after(STEADY, protocol)
    assert lead.remote_leo[2] == 1 and lead.last_caught_up_ms[2] == 0
    assert lead.last_fetch_leader_leo == (-1, -1, -1) and lead.last_fetch_ms == (0, 0, 0)  # not kept without it


def test_with_hw_waits_the_follower_caught_up_by_the_rule_holds_the_hw():
    lead = leader_after(BEHIND, **BOTH)
    assert (lead.isr, lead.remote_leo, lead.last_caught_up_ms[2], lead.hw) == ((0, 1), (-1, 2, 1), 5, 1)
    for switches in ({}, WAITS, PREVIOUS):
        assert leader_after(BEHIND, **switches).hw == 2


def test_the_config_takes_only_a_bool():
    with pytest.raises(ValueError, match="catch_up_at_previous_fetch"):
        cluster_config("kip-966", {"catch_up_at_previous_fetch": 1})
