"""Kafka's own clients produce to and consume from the cluster with every broker up: records come
back byte for byte and in order, whichever client wrote them, compressed or not; offsets can be
looked up; topics are created on first use."""

from __future__ import annotations

import time

import pytest


def test_records_round_trip_byte_exact_and_in_order(shared_cluster, kit, topic_name, writer, reader):
    """Records produced (idempotent, acks=all) to the 3 partitions of a topic are read back by a
    consumer assigned the partitions from the beginning, whichever client wrote them: the same keys
    (null and empty kept apart), values and headers, each partition in the order sent, at the
    offsets the producer was given, dense from 0."""
    topic = shared_cluster.create_topic(topic_name)
    sent = kit.spread(kit.sample_records(60, tag=topic))
    delivery = writer.produce(shared_cluster.bootstrap, topic, sent)
    assert not delivery.failed
    acked = delivery.by_partition()
    for p, stored in acked.items():
        assert [s.rec for s in stored] == [rec for q, rec in sent if q == p], f"partition {p}: not in send order"
        assert [s.offset for s in stored] == list(range(len(stored))), f"partition {p}: offsets not dense from 0"
    kit.assert_same_records(acked, kit.read_all(reader, shared_cluster.bootstrap, topic, delivery.counts()))


@pytest.mark.parametrize("compression", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_batches_round_trip(shared_cluster, kit, topic_name, client, compression):
    """A producer's compressed batches (many records each) are stored as they came, compressed,
    and every record is read back, by the other client too, at consecutive offsets."""
    topic = shared_cluster.create_topic(topic_name)
    sent = [(0, rec) for rec in kit.sample_records(200, tag=topic)]
    delivery = client.produce(shared_cluster.bootstrap, topic, sent, compression=compression)
    assert not delivery.failed
    acked = delivery.by_partition()
    assert [s.offset for s in acked[0]] == list(range(200))
    with shared_cluster.connect(shared_cluster.leader(topic, 0)) as leader:
        assert compression in kit.batch_codecs(leader.fetch(topic, 0))
    for reader in kit.clients.values():
        kit.assert_same_records(acked, kit.read_all(reader, shared_cluster.bootstrap, topic, {0: 200}))


def test_acks_0_and_1_producers_are_stored(shared_cluster, kit, topic_name, client):
    """Producers that do not wait for the ISR (acks=1) or for any answer (acks=0) get their
    records stored too, in order."""
    topic = shared_cluster.create_topic(topic_name)
    first = [(0, rec) for rec in kit.sample_records(20, tag=f"{topic}-acks1")]
    then = [(0, rec) for rec in kit.sample_records(20, tag=f"{topic}-acks0", seed=1)]
    acked = client.produce(shared_cluster.bootstrap, topic, first, acks=1, idempotence=False)
    assert not acked.failed
    fired = client.produce(shared_cluster.bootstrap, topic, then, acks=0, idempotence=False)
    assert not fired.failed
    got = kit.read_all(client, shared_cluster.bootstrap, topic, {0: 40})
    assert [s.rec for s in got[0]] == [rec for _, rec in first + then]
    assert [s.offset for s in got[0]] == list(range(40))


def test_producing_to_an_unknown_topic_creates_it(shared_cluster, kit, topic_name, client):
    """auto.create.topics.enable: a producer's first record to a topic nobody created is stored
    once the broker created the topic (num.partitions=3), which the producer waits for."""
    rec = kit.Rec(b"k", topic_name.encode())
    delivery = client.produce(shared_cluster.bootstrap, topic_name, [(2, rec)])
    assert not delivery.failed
    assert [(s.partition, s.offset) for s in delivery.acked] == [(2, 0)]
    assert sorted(shared_cluster.partitions(topic_name)) == [0, 1, 2]
    kit.assert_same_records(delivery.by_partition(), kit.read_all(client, shared_cluster.bootstrap, topic_name, {2: 1}))


def test_offsets_are_looked_up_by_position_and_timestamp(shared_cluster, kit, topic_name):
    """ListOffsets as consumers use it: the beginning (0), the end (the high watermark: the next
    offset to be written) and, for a timestamp, the first record at or after it, with kafka-python
    (beginning_offsets, end_offsets, offsets_for_times) and confluent-kafka
    (get_watermark_offsets, offsets_for_times)."""
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as CTP
    from kafka import KafkaConsumer, TopicPartition

    topic = shared_cluster.create_topic(topic_name)
    base = int(time.time() * 1000) - 60_000
    stamps = [base + 10 * i for i in range(30)]
    _produce_with_timestamps(shared_cluster.bootstrap, topic, stamps)
    # a timestamp before, on, between and after the records' -> the offset expected (None: none)
    queries = {base - 1: 0, base: 0, base + 55: 6, stamps[-1]: 29, stamps[-1] + 1: None}

    kp = KafkaConsumer(bootstrap_servers=shared_cluster.bootstrap.split(","), group_id=None, enable_auto_commit=False)
    try:
        tp = TopicPartition(topic, 1)
        assert kp.beginning_offsets([tp]) == {tp: 0}
        assert kp.end_offsets([tp]) == {tp: 30}
        for ts, want in queries.items():
            found = kp.offsets_for_times({tp: ts})[tp]
            got = None if found is None else (found.offset, found.timestamp)
            assert got == (None if want is None else (want, stamps[want])), f"timestamp {ts}"
    finally:
        kp.close()

    ck = Consumer({"bootstrap.servers": shared_cluster.bootstrap, "group.id": "isrcheck-tests"})
    try:
        assert ck.get_watermark_offsets(CTP(topic, 1), timeout=10) == (0, 30)
        for ts, want in queries.items():
            [found] = ck.offsets_for_times([CTP(topic, 1, ts)], timeout=10)
            assert found.error is None
            assert found.offset == (-1 if want is None else want), f"timestamp {ts}"  # -1: none found
    finally:
        ck.close()


def _produce_with_timestamps(bootstrap: str, topic: str, stamps: list[int]) -> None:
    """One record per timestamp to partition 1, in batches of a few records (kafka-python)."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap.split(","), acks="all", linger_ms=50)
    try:
        futures = []
        for i, ts in enumerate(stamps):
            futures.append(producer.send(topic, value=b"t%d" % i, partition=1, timestamp_ms=ts))
            if i % 7 == 6:
                producer.flush()
        producer.flush()
        assert [f.get(10).offset for f in futures] == list(range(len(stamps)))
    finally:
        producer.close()


def test_large_record_is_delivered_past_the_fetch_size_limits(shared_cluster, kit, topic_name, client):
    """A record larger than the consumer's max.partition.fetch.bytes and fetch.max.bytes is still
    delivered (KIP-74: a fetch returns at least the first batch), and the smaller ones around it."""
    topic = shared_cluster.create_topic(topic_name)
    recs = [kit.Rec(b"before", b"small"), kit.Rec(b"big", bytes(range(256)) * 2800), kit.Rec(b"after", b"small")]
    delivery = client.produce(shared_cluster.bootstrap, topic, [(0, rec) for rec in recs])
    assert not delivery.failed
    limits = (
        {"max_partition_fetch_bytes": 65536, "fetch_max_bytes": 100_000}
        if client.name == "kafka-python"
        else {"max.partition.fetch.bytes": 65536, "fetch.max.bytes": 100_000, "message.max.bytes": 100_000}
    )
    kit.assert_same_records(
        delivery.by_partition(), kit.read_all(client, shared_cluster.bootstrap, topic, {0: 3}, **limits)
    )


def test_a_debugging_tool_reads_any_replicas_log_end(shared_cluster, kit, topic_name):
    """ListOffsets "latest" with replica id -2 (a debugging tool's, as KafkaApis allows) is answered by
    every replica from its own log, a follower's too, unbounded by the HW: what the experiments wait on
    to know a follower caught up. A partition the broker does not know: -1."""
    from isrcheck.conformance.engines.apache.admin import replica_end_offset

    topic = shared_cluster.create_topic(topic_name)
    delivery = kit.clients["confluent-kafka"].produce(
        shared_cluster.bootstrap, topic, [(0, rec) for rec in kit.sample_records(5)]
    )
    assert not delivery.failed
    ends = {}

    def caught_up() -> bool:
        ends.update({b: replica_end_offset(shared_cluster.address(b), topic, 0) for b in range(3)})
        return set(ends.values()) == {5}

    shared_cluster.wait_until(caught_up, f"every replica's log end at 5 (now {ends})")
    assert replica_end_offset(shared_cluster.address(0), topic + "-none", 0) == -1
