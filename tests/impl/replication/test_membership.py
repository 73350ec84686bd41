"""Brokers coming and going behind the controller's back: a fast bounce it never noticed, a zombie
it fenced while alive and that rejoins, a leader moved on purpose, and a leaderless LeaderAndIsr
that Kafka before 0.11 ignored."""

import pytest

from isrcheck.impl.protocol import Errors
from isrcheck.impl.sim import Cluster, ClusterConfig, ClusterError


def cluster(protocol="kip-320", min_isr=2, **kw):
    return Cluster(ClusterConfig(protocol=protocol, replicas=3, min_insync_replicas=min_isr, **kw))


def commit(c, *values):
    """Produce acks=all to broker 0 and replicate until it is answered."""
    for value in values:
        c.produce(0, value, -1)
    for _ in range(2):
        for f in (1, 2):
            c.send_fetch(f)
            c.handle_fetch(f)
            c.handle_fetch_response(f)
    return [(r.value, r.error) for r in c.take_client_responses()]


def deliver_all(c, kind):
    while any(m[0] == kind for m in c.in_flight()):
        c.deliver(kind, next(m[1] for m in c.in_flight() if m[0] == kind))


def test_a_fast_bounce_keeps_isr_membership_and_the_leader_leads_again_in_its_epoch():
    c = cluster()
    assert commit(c, b"1") == [(b"1", "NONE")]
    epoch_before = c.snapshot().brokers[0].broker_epoch
    c.crash(0, "process")
    c.restart(0)  # within the session timeout: never fenced
    snap = c.snapshot()
    ctrl = snap.controller
    assert (ctrl.leader, ctrl.leader_epoch, ctrl.isr, ctrl.partition_epoch, ctrl.fenced) == (0, 0, (0, 1, 2), 0, ())
    assert snap.brokers[0].broker_epoch > epoch_before and snap.brokers[0].leader == -1
    assert [(m[0], m[1], m[3].leader, m[3].leader_epoch) for m in c.in_flight()] == [("leader_and_isr", 0, 0, 0)]
    c.deliver_leader_and_isr(0)
    leader = c.snapshot().brokers[0]
    assert (leader.leader, leader.leader_epoch, leader.epoch_start_offset, leader.hw) == (0, 0, 1, 0)
    assert commit(c, b"2") == [(b"2", "NONE")]


def test_a_zombie_leader_serves_clients_until_it_rejoins_and_its_writes_are_truncated():
    c = cluster(replica_lag_time_max_ms=2)
    commit(c, b"1")
    c.fence(0)  # alive: a zombie on leader epoch 0
    assert not any(m[0] == "leader_and_isr" and m[1] == 0 for m in c.in_flight())
    c.produce(0, b"z", 1)  # appended on its last LeaderAndIsr
    [(error, offset)] = [(r.error, r.offset) for r in c.take_client_responses()]
    assert (error, offset) == ("NONE", 1)
    c.send_fetch(2)
    c.handle_fetch(2)  # it answers a fetch with the zombie write
    [response] = [m[3] for m in c.in_flight() if m[0] == "fetch_response"]
    assert response.error == Errors.NONE and response.records and response.high_watermark == 1
    c.drop("fetch_response", 2)
    c.consume(0)
    assert c.take_client_responses()[0].records == ((0, b"1"),)
    c.advance(3)
    c.shrink_isr(0)
    c.handle_alter_partition(0)  # the controller rejects the zombie's AlterPartition
    [alter] = [m[3] for m in c.in_flight() if m[0] == "alter_partition_response"]
    assert alter.error == Errors.FENCED_LEADER_EPOCH
    c.handle_alter_partition_response(0)
    assert c.snapshot().brokers[0].isr == (0, 1, 2)

    c.elect()
    deliver_all(c, "leader_and_isr")
    assert c.snapshot().brokers[0].leader == 0  # still leads in its own view
    c.produce(1, b"n", 1)
    c.rejoin(0)
    assert 0 not in c.snapshot().controller.fenced
    deliver_all(c, "leader_and_isr")
    for _ in range(2):  # diverging epoch, then the new leader's record
        c.send_fetch(0)
        c.handle_fetch(0)
        c.handle_fetch_response(0)
    snap = c.snapshot()
    assert [e.value for e in snap.brokers[0].log] == [e.value for e in snap.brokers[1].log] == [b"1", b"n"]


def test_a_targeted_election_moves_leadership_from_a_live_leader():
    c = cluster()
    commit(c, b"1")
    c.produce(0, b"2", -1)
    c.elect(2)
    ctrl = c.snapshot().controller
    assert (ctrl.leader, ctrl.leader_epoch, ctrl.isr, ctrl.partition_epoch) == (2, 1, (0, 1, 2), 1)
    assert [(m[1], m[3].leader) for m in c.in_flight() if m[0] == "leader_and_isr"] == [(0, 2), (1, 2), (2, 2)]
    c.deliver_leader_and_isr(0)  # the old leader follows: its parked produce fails
    [result] = c.take_client_responses()
    assert (result.value, result.error) == (b"2", "NOT_LEADER_OR_FOLLOWER")
    deliver_all(c, "leader_and_isr")
    assert c.snapshot().brokers[2].leader == 2
    with pytest.raises(ClusterError, match="already the leader"):
        c.elect(2)
    c.fence(1)
    with pytest.raises(ClusterError, match="is fenced"):
        c.elect(1)


@pytest.mark.parametrize("protocol,follows", [("hw-truncation", False), ("kip-101", True)])
def test_a_leaderless_leader_and_isr_changes_nothing_before_kafka_0_11(protocol, follows):
    c = cluster(protocol, min_isr=1)
    c.produce(0, b"1", 1)
    c.send_fetch(1)
    c.handle_fetch(1)
    c.handle_fetch_response(1)  # follower 1 has the record above its HW
    c.crash(0, "process")
    c.fence(0)  # LeaderAndIsr: no leader, leader epoch 1
    before = c.snapshot().brokers[1]
    c.deliver_leader_and_isr(1)
    after = c.snapshot().brokers[1]
    if follows:
        assert (after.leader, after.leader_epoch, after.isr) == (-1, 1, (1, 2))
    else:
        assert after == before and after.log[0].value == b"1"
