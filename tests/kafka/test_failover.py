"""Brokers SIGKILLed under real clients (each test on a cluster of its own): a leader's crash is
ridden through without losing or duplicating an acknowledged record, a batch resent to the new
leader is not stored twice; with too few in-sync replicas, acks=all is refused with
NOT_ENOUGH_REPLICAS and acks=1 still served."""

from __future__ import annotations

from collections import Counter

import pytest

N = 1500  # records per run, a third of them sent before the leader is killed


def test_leader_sigkill_mid_stream_loses_and_duplicates_nothing(cluster, kit, topic_name, client):
    """An idempotent acks=all producer keeps sending while the leader of partition 0 is SIGKILLed:
    the client refreshes its metadata, goes on with the new leader, and every record is acked
    exactly once. A consumer reading all along, across the leader change, gets every acknowledged
    record once, in order. The killed broker restarts, catches up and rejoins the ISR; with the
    other two then killed it leads every partition, and its log holds every acknowledged record."""
    topic = cluster.create_topic(topic_name)
    victim = cluster.leader(topic, 0)
    sent = kit.spread(kit.sample_records(N, tag=topic))
    live_reader = client.consumer(cluster.bootstrap, topic, range(kit.PARTITIONS))
    read = []

    def between(i: int) -> None:
        if i == N // 3:
            cluster.kill(victim)
        if i % 50 == 0:
            read.extend(live_reader.poll(0))

    try:
        delivery = client.produce(cluster.bootstrap, topic, sent, between=between)
        assert not delivery.failed, f"{len(delivery.failed)} records not acknowledged, e.g. {delivery.failed[0]}"
        assert Counter(s.rec for s in delivery.acked) == Counter(rec for _, rec in sent)
        acked = delivery.by_partition()
        assert cluster.leader(topic, 0) != victim, "partition 0's leadership did not move"
        cluster.wait_until(
            lambda: read.extend(live_reader.poll(0.2)) or len(read) >= N,
            "the consumer reading through the crash has every record",
        )
    finally:
        live_reader.close()
    kit.assert_same_records(acked, kit.by_partition(read))

    cluster.restart(victim)
    cluster.wait_for_partitions(topic)  # the restarted broker is back in every ISR
    for other in set(range(kit.BROKERS)) - {victim}:
        cluster.kill(other)
    cluster.wait_for_partitions(topic, isr=[victim], leader=victim)
    kit.assert_same_records(acked, kit.read_all(client, cluster.address(victim), topic, delivery.counts()))


def test_isr_below_min_insync_refuses_acks_all(cluster, kit, topic_name, client):
    """With two of the three brokers SIGKILLed and fenced (Metadata lists them as offline replicas,
    no longer as brokers; the ISR shrinks to the leader alone, below min.insync.replicas=2), an
    acks=all produce is refused: the client reports
    NOT_ENOUGH_REPLICAS once its retries are spent, and the record is not stored. acks=1 is still
    accepted. Once a broker is back in the ISR, acks=all is accepted again."""
    topic = cluster.create_topic(topic_name)
    leader = cluster.leader(topic, 0)
    down = sorted(set(range(kit.BROKERS)) - {leader})
    for b in down:
        cluster.kill(b)
    cluster.wait_for_partitions(topic, isr=[leader], leader=leader)
    seen = cluster.metadata(leader, [topic])
    assert [b.node_id for b in seen.brokers] == [leader]
    assert [sorted(p.offline_replicas) for p in seen.topics[0].partitions] == [down] * kit.PARTITIONS

    refused = kit.Rec(b"refused", b"acks=all with an ISR of 1")
    # kafka-python as it comes (idempotent); librdkafka's idempotent producer would retry the refusal
    # until message.timeout.ms and report _MSG_TIMED_OUT instead, so it goes without retries
    delivery = client.produce(
        cluster.bootstrap, topic, [(0, refused)], fail_fast=True, idempotence=client.name == "kafka-python"
    )
    assert [(rec, code) for rec, code, _ in delivery.failed] == [(refused, kit.NOT_ENOUGH_REPLICAS)], delivery.failed

    leader_only = kit.Rec(b"acks=1", b"the leader alone may acknowledge")
    assert not client.produce(cluster.bootstrap, topic, [(0, leader_only)], acks=1, idempotence=False).failed

    cluster.restart(down[0])
    cluster.wait_for_partitions(topic, isr=[leader, down[0]])
    accepted = kit.Rec(b"accepted", b"acks=all with an ISR of 2")
    assert not client.produce(cluster.bootstrap, topic, [(0, accepted)]).failed

    got = kit.read_all(client, cluster.bootstrap, topic, {0: 2})
    assert [(s.offset, s.rec) for s in got[0]] == [(0, leader_only), (1, accepted)]


@pytest.mark.slow  # a cluster of its own; test_protocol resends on the shared one
def test_a_batch_resent_to_the_new_leader_is_not_stored_twice(cluster, kit, topic_name):
    """The case an idempotent producer meets when the leader dies before its acks=all response
    arrives: it sends the batch again, now to the new leader, which knows the producer's sequences
    from the replicated batches and answers with the offset the batch already has, storing it once."""
    topic = cluster.create_topic(topic_name)
    old_leader = cluster.leader(topic, 0)
    with cluster.connect(old_leader) as conn:
        _, pid, epoch = conn.init_producer_id()
        once = kit.record_batch(b"once", producer_id=pid, producer_epoch=epoch, base_sequence=0)
        assert conn.produce(topic, 0, once) == (kit.NONE, 0)  # acks=all: on every replica of the ISR
    cluster.kill(old_leader)
    cluster.wait_for_partitions(topic, isr=set(range(kit.BROKERS)) - {old_leader})
    with cluster.connect(cluster.leader(topic, 0)) as conn:
        assert conn.produce(topic, 0, once) == (kit.NONE, 0)
        after = kit.record_batch(b"after", producer_id=pid, producer_epoch=epoch, base_sequence=1)
        assert conn.produce(topic, 0, after) == (kit.NONE, 1)
    got = kit.read_all(kit.clients["confluent-kafka"], cluster.bootstrap, topic, {0: 2})
    assert [(s.offset, s.rec.value) for s in got[0]] == [(0, b"once"), (1, b"after")]
