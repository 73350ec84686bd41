"""Record batches as the unit of replication: a multi-record produce is one batch, appended,
fetched, committed and truncated whole; a fetch limited to whole batches leaves the follower's HW
capped by its own LEO."""

from isrcheck.impl.replication.delayed_produce import DelayedProducePurgatory
from isrcheck.impl.sim import Cluster, ClusterConfig
from isrcheck.impl.sim.clock import SimClock


def cluster(protocol="kip-320", replicas=3, min_isr=2):
    return Cluster(ClusterConfig(protocol=protocol, replicas=replicas, min_insync_replicas=min_isr))


def fetch(c, follower, rounds=1, max_batches=0):
    for _ in range(rounds):
        c.send_fetch(follower, max_batches)
        c.handle_fetch(follower)
        c.handle_fetch_response(follower)


def entries(c, broker):
    return [(e.offset, e.epoch, e.value, e.base_offset) for e in c.snapshot().brokers[broker].log]


def test_a_three_record_batch_is_replicated_and_committed_as_one_unit():
    c = cluster()
    c.produce(0, [b"1", b"2", b"3"], -1)
    (pending,) = c.snapshot().brokers[0].pending_produces
    assert (pending.value, pending.offset, pending.count) == (b"1", 0, 3)
    assert entries(c, 0) == [(0, 0, b"1", 0), (1, 0, b"2", 0), (2, 0, b"3", 0)]
    fetch(c, 1, max_batches=1)
    fetch(c, 2)
    assert entries(c, 1) == entries(c, 2) == entries(c, 0)
    fetch(c, 1)
    assert c.take_client_responses() == []  # follower 2 has not told the leader yet
    fetch(c, 2)
    (result,) = c.take_client_responses()
    assert (result.value, result.count, result.error, result.offset) == (b"1", 3, "NONE", 0)


def test_delayed_produce_waits_for_the_hw_to_pass_the_last_record_of_its_batch():
    purgatory, done = DelayedProducePurgatory(SimClock()), []
    purgatory.park(4, 3, b"5", 100, lambda error, offset: done.append((error, offset)))
    purgatory.try_complete(6, 3, 2)  # Kafka's requiredOffset is 4 + 3 = 7
    assert done == []
    purgatory.try_complete(7, 3, 2)
    assert done == [(0, 4)]


def test_a_divergent_batch_is_truncated_whole():
    c = cluster(min_isr=1)
    c.produce(0, b"1", -1)
    fetch(c, 1, rounds=2)
    fetch(c, 2, rounds=2)
    c.produce(0, [b"2", b"3", b"4"], 1)  # epoch 0, offsets 1..3, only follower 1 gets it
    fetch(c, 1)
    c.elect(2)  # leadership moves to follower 2, which lacks the batch
    for b in (0, 1, 2):
        c.deliver_leader_and_isr(b)
    c.produce(2, [b"5", b"6"], 1)  # epoch 1, offsets 1..2
    c.send_fetch(1)
    c.handle_fetch(1)
    c.handle_fetch_response(1)  # diverging epoch: the epoch-0 batch goes in one cut
    assert entries(c, 1) == [(0, 0, b"1", 0)]
    fetch(c, 1)
    assert entries(c, 1) == entries(c, 2) == [(0, 0, b"1", 0), (1, 1, b"5", 1), (2, 1, b"6", 1)]


def test_truncating_into_a_batch_removes_the_whole_batch():
    c = cluster(replicas=1, min_isr=1)
    c.produce(0, b"1", 1)
    c.produce(0, [b"2", b"3", b"4"], 1)
    c.brokers[0].partition.truncate_to(2)
    assert [e.offset for e in c.snapshot().brokers[0].log] == [0]  # the LEO ends below the target


def test_a_partial_fetch_caps_the_follower_hw_by_its_own_leo():
    c = Cluster(ClusterConfig(protocol="kip-320", replicas=3, min_insync_replicas=1, replica_lag_time_max_ms=2))
    c.advance(3)
    c.shrink_isr(0)  # both followers leave the ISR: the leader commits alone
    c.handle_alter_partition(0)
    c.handle_alter_partition_response(0)
    for values in ([b"1"], [b"2", b"3"], [b"4"]):
        c.produce(0, values, 1)
    assert c.snapshot().brokers[0].hw == 4
    c.send_fetch(1, 1)
    [(_, _, _, request)] = [m for m in c.in_flight() if m[0] == "fetch_request"]
    assert request.max_batches == 1  # on the wire
    c.handle_fetch(1)
    c.handle_fetch_response(1)
    follower = c.snapshot().brokers[1]
    assert [e.offset for e in follower.log] == [0] and follower.hw == 1
    fetch(c, 1, max_batches=1)  # the next whole batch: two records
    follower = c.snapshot().brokers[1]
    assert [e.base_offset for e in follower.log] == [0, 1, 1] and follower.hw == 3
    fetch(c, 1)
    assert c.snapshot().brokers[1].hw == 4
