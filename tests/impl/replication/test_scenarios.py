"""Replication scenarios on the implementation alone (step mode), including the KIP-101/KIP-279
problem cases: what each protocol generation loses or keeps, seen through clients and logs."""

import pytest

from isrcheck.impl.sim import Cluster, ClusterConfig, ClusterError, ConsumeResult, ProduceResult

LATER = ("kip-101", "kip-279", "kip-320")


def cluster(protocol="kip-320", replicas=3, min_isr=2, unclean=False, lag=2):
    return Cluster(
        ClusterConfig(
            protocol=protocol,
            replicas=replicas,
            min_insync_replicas=min_isr,
            unclean_leader_election_enable=unclean,
            replica_lag_time_max_ms=lag,
            request_timeout_ms=1000,
        )
    )


def fetch_round(c, *followers):
    """Each follower sends one fetch, the leader handles it, the follower handles the answer."""
    for f in followers:
        c.send_fetch(f)
        c.handle_fetch(f)
        c.handle_fetch_response(f)


def produced(c):
    return [(r.value, r.error, r.offset) for r in c.take_client_responses() if isinstance(r, ProduceResult)]


def consumed(c, broker):
    c.take_client_responses()
    c.consume(broker)
    (result,) = c.take_client_responses()
    assert isinstance(result, ConsumeResult)
    return result


def values(snapshot_broker, upto=None):
    log = snapshot_broker.log if upto is None else snapshot_broker.log[:upto]
    return [e.value for e in log]


def deliver_all_leader_and_isr(c, *brokers):
    for b in brokers:
        while any(k == "leader_and_isr" and r == b for k, r, _, _ in c.in_flight()):
            c.deliver_leader_and_isr(b)


def commit_isr_change(c, leader):
    c.handle_alter_partition(leader)
    c.handle_alter_partition_response(leader)


def test_high_watermark_reaches_the_follower_a_fetch_after_the_one_that_moved_it():
    c = cluster(replicas=2, min_isr=1)
    c.produce(0, b"1", 1)
    fetch_round(c, 1)
    leader, follower = c.snapshot().brokers
    assert values(follower) == [b"1"] and leader.hw == 0 and follower.hw == 0
    c.send_fetch(1)
    c.handle_fetch(1)  # the second fetch (offset 1) tells the leader the follower has the record
    leader, follower = c.snapshot().brokers
    assert leader.hw == 1 and follower.hw == 0
    c.handle_fetch_response(1)  # its answer carries the HW read before it moved (Partition.fetchRecords)
    assert c.snapshot().brokers[1].hw == 0
    fetch_round(c, 1)  # ... and the next fetch's answer the new one
    assert c.snapshot().brokers[1].hw == 1


def test_acks_all_waits_in_purgatory_until_the_high_watermark_passes_it():
    c = cluster()
    c.produce(0, b"1", -1)
    assert produced(c) == []
    assert [p.offset for p in c.snapshot().brokers[0].pending_produces] == [0]
    fetch_round(c, 1, 2)
    assert produced(c) == []  # replicated, but the leader does not know it yet
    fetch_round(c, 1)
    assert produced(c) == []  # follower 2 still holds the HW back
    c.send_fetch(2)
    c.handle_fetch(2)
    assert produced(c) == [(b"1", "NONE", 0)]
    assert c.snapshot().brokers[0].pending_produces == ()


def test_acks_all_times_out_after_the_request_timeout():
    c = cluster()
    c.produce(0, b"1", -1)
    c.advance(1000)  # deadline = 1000: still waiting at exactly the deadline
    assert produced(c) == []
    c.advance(1)
    assert produced(c) == [(b"1", "REQUEST_TIMED_OUT", -1)]


def test_not_enough_replicas_when_the_isr_is_below_min_insync_replicas():
    c = cluster()
    c.advance(3)
    c.shrink_isr(0)
    commit_isr_change(c, 0)
    assert c.snapshot().brokers[0].isr == (0,) and c.snapshot().controller.isr == (0,)
    c.produce(0, b"1", -1)
    assert produced(c) == [(b"1", "NOT_ENOUGH_REPLICAS", -1)]
    assert c.snapshot().brokers[0].log == ()  # nothing appended
    c.produce(0, b"2", 1)
    assert produced(c) == [(b"2", "NONE", 0)]


def test_not_enough_replicas_after_append_when_the_isr_shrinks_meanwhile():
    c = cluster()
    c.produce(0, b"1", -1)
    c.advance(3)
    c.shrink_isr(0)
    commit_isr_change(c, 0)  # ISR {0}: the HW reaches the record, but too few replicas have it
    assert produced(c) == [(b"1", "NOT_ENOUGH_REPLICAS_AFTER_APPEND", -1)]


def test_isr_shrinks_after_the_lag_time_and_expands_on_catch_up():
    c = cluster(lag=2)
    c.produce(0, b"1", 1)
    with pytest.raises(ClusterError):
        c.shrink_isr(0)  # nobody has lagged for longer than replica.lag.time.max.ms yet
    c.advance(3)
    fetch_round(c, 1)
    fetch_round(c, 1)  # follower 1 reached the leader's LEO at t=3; follower 2 never fetched
    c.shrink_isr(0)
    assert c.snapshot().brokers[0].pending_isr == (0, 1)
    commit_isr_change(c, 0)
    assert c.snapshot().controller.isr == (0, 1)
    with pytest.raises(ClusterError):
        c.expand_isr(0)  # follower 2 has not caught up to the HW
    fetch_round(c, 2)
    c.send_fetch(2)
    c.handle_fetch(2)  # remote LEO 1 >= HW 1
    c.expand_isr(0)
    assert c.snapshot().brokers[0].pending_isr == (0, 1, 2)
    commit_isr_change(c, 0)
    snap = c.snapshot()
    assert snap.controller.isr == (0, 1, 2) and snap.brokers[0].isr == (0, 1, 2)
    assert snap.controller.partition_epoch == 2


def _committed_record_with_lagging_follower_hws(protocol):
    """m2 is committed (acks=all answered NONE) while both followers' HWs still lag behind it."""
    c = cluster(protocol)
    c.produce(0, b"m1", -1)
    fetch_round(c, 1, 2)
    c.produce(0, b"m2", -1)
    fetch_round(c, 2, 1)  # both get m2; the leader's HW reaches 1 at follower 1's fetch
    fetch_round(c, 1)  # its next answer carries that HW 1
    c.send_fetch(2)
    c.handle_fetch(2)  # the fetch that commits m2; its answer is lost
    c.drop("fetch_response", 2)
    assert produced(c) == [(b"m1", "NONE", 0), (b"m2", "NONE", 1)]
    assert [b.hw for b in c.snapshot().brokers] == [2, 1, 0]
    return c


def _leader_fails(c):
    """The leader loses power and a follower takes over."""
    c.crash(0, "power")
    c.fence(0)
    c.elect()
    deliver_all_leader_and_isr(c, 1, 2)
    return c


def _committed_record_then_leader_change(protocol):
    return _leader_fails(_committed_record_with_lagging_follower_hws(protocol))


def test_kip101_scenario_1_committed_record_lost_under_hw_truncation():
    """KIP-101 scenario 1: follower 1 restarts and truncates to its lagging (checkpointed) HW as it
    follows again; the leader fails before it refetches m2, and it takes over without m2."""
    c = _committed_record_with_lagging_follower_hws("hw-truncation")
    c.checkpoint_hw(1)
    c.crash(1, "process")
    c.restart(1)  # a fast bounce: the controller sends it its state, leader 0 in epoch 0
    deliver_all_leader_and_isr(c, 1)
    assert values(c.snapshot().brokers[1]) == [b"m1"]
    _leader_fails(c)
    snap = c.snapshot()
    assert snap.controller.leader == 1
    assert values(snap.brokers[1]) == [b"m1"] and values(snap.brokers[2]) == []  # each cut to its HW
    c.produce(1, b"m3", 1)
    assert values(c.snapshot().brokers[1]) == [b"m1", b"m3"]  # offset 1 reused: m2 is gone


@pytest.mark.parametrize("protocol", LATER)
def test_kip101_scenario_1_committed_record_kept_from_kip101_on(protocol):
    c = _committed_record_then_leader_change(protocol)
    assert values(c.snapshot().brokers[1]) == [b"m1", b"m2"]
    for _ in range(3):
        fetch_round(c, 2)
    assert consumed(c, 1).records == ((0, b"m1"), (1, b"m2"))


def _power_failure_with_divergent_tails(protocol):
    """KIP-101 scenario 2: both replicas lose power; B comes back first without m2 and leads, takes
    m3 at offset 1; A comes back with m2 at offset 1 and a HW checkpoint of 2."""
    c = cluster(protocol, replicas=2, min_isr=1)
    c.produce(0, b"m1", 1)
    fetch_round(c, 1)
    fetch_round(c, 1)
    c.flush(1)  # B: m1 and HW 1 durable
    c.produce(0, b"m2", 1)
    fetch_round(c, 1)
    fetch_round(c, 1)  # B has m2 (page cache only) and HW 2
    c.flush(0)  # A: m1, m2 and HW 2 durable
    c.crash(1, "power")
    c.crash(0, "power")
    c.fence(0)
    c.fence(1)
    c.restart(1)
    c.elect()
    deliver_all_leader_and_isr(c, 1)
    assert c.snapshot().controller.leader == 1
    c.produce(1, b"m3", -1)
    assert produced(c)[-1] == (b"m3", "NONE", 1)
    c.restart(0)
    deliver_all_leader_and_isr(c, 0)
    for _ in range(3):
        fetch_round(c, 0)
    return c.snapshot()


def test_kip101_scenario_2_replicas_diverge_under_hw_truncation():
    snap = _power_failure_with_divergent_tails("hw-truncation")
    a, b = snap.brokers
    assert a.hw == 2 and b.hw == 2
    assert values(a) == [b"m1", b"m2"] and values(b) == [b"m1", b"m3"]  # same offsets, different records


@pytest.mark.parametrize("protocol", LATER)
def test_kip101_scenario_2_replicas_agree_from_kip101_on(protocol):
    snap = _power_failure_with_divergent_tails(protocol)
    a, b = snap.brokers
    assert values(a) == values(b) == [b"m1", b"m3"]


def _fast_leader_changes(protocol):
    """A leads epoch 0 with m1, m2; B has only m1, C both. B leads next and writes m3 that nobody
    fetches; then C leads and writes m4. B, back as C's follower, holds an epoch C never saw."""
    c = cluster(protocol, min_isr=1)
    c.produce(0, b"m1", 1)
    fetch_round(c, 1)
    c.produce(0, b"m2", 1)
    fetch_round(c, 2)
    fetch_round(c, 2)
    c.crash(0, "process")
    c.fence(0)
    c.elect()
    deliver_all_leader_and_isr(c, 1, 2)
    assert c.snapshot().controller.leader == 1
    c.produce(1, b"m3", 1)
    c.crash(1, "process")
    c.fence(1)
    c.elect()
    deliver_all_leader_and_isr(c, 2)
    assert c.snapshot().controller.leader == 2
    c.produce(2, b"m4", -1)
    c.restart(1)
    deliver_all_leader_and_isr(c, 1)
    for _ in range(4):
        fetch_round(c, 1)
    return c.snapshot()


def test_fast_leader_change_leaves_divergent_replicas_under_kip101():
    snap = _fast_leader_changes("kip-101")
    b, c = snap.brokers[1], snap.brokers[2]
    assert values(c) == [b"m1", b"m2", b"m4"]
    assert values(b) == [b"m1", b"m3", b"m4"] and b.hw == 3  # offset 1 differs below both HWs


@pytest.mark.parametrize("protocol", ("kip-279", "kip-320"))
def test_fast_leader_change_is_resolved_from_kip279_on(protocol):
    snap = _fast_leader_changes(protocol)
    assert values(snap.brokers[1]) == values(snap.brokers[2]) == [b"m1", b"m2", b"m4"]


def _acked_write_then_isr_fails(unclean):
    c = cluster(unclean=unclean)
    c.advance(3)
    fetch_round(c, 1)
    c.shrink_isr(0)  # follower 2 never fetched: out of the ISR
    commit_isr_change(c, 0)
    c.produce(0, b"m1", -1)
    fetch_round(c, 1)
    fetch_round(c, 1)
    assert produced(c) == [(b"m1", "NONE", 0)]
    for b in (0, 1):
        c.crash(b, "process")
        c.fence(b)
    return c


def test_acks_all_write_lost_through_unclean_election():
    c = _acked_write_then_isr_fails(unclean=True)
    c.elect()
    deliver_all_leader_and_isr(c, 2)
    snap = c.snapshot()
    assert snap.controller.leader == 2 and snap.controller.isr == (2,)
    c.produce(2, b"m2", 1)
    c.restart(1)
    deliver_all_leader_and_isr(c, 1)
    for _ in range(3):
        fetch_round(c, 1)  # the old ISR member follows the new leader and truncates m1 away
    assert values(c.snapshot().brokers[1]) == [b"m2"]
    assert consumed(c, 2).records == ((0, b"m2"),)  # m1 was acknowledged, and is gone


def test_acks_all_write_kept_with_clean_election():
    c = _acked_write_then_isr_fails(unclean=False)
    with pytest.raises(ClusterError, match="eligible"):
        c.elect()  # the only in-sync replica is down: wait for it
    c.restart(1)
    c.elect()
    deliver_all_leader_and_isr(c, 1, 2)
    assert c.snapshot().controller.leader == 1
    assert consumed(c, 1).records == ((0, b"m1"),)
