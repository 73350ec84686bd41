"""Guarantees at the protocol level, with raw requests where a client cannot be made to send them
(a retry after a lost response): producer ids are never shared, a batch sent again is acknowledged
at its first offset without being stored twice, an acks=0 produce gets no response."""

from __future__ import annotations

from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer.produce import ProduceRequest


def test_every_broker_hands_out_distinct_producer_ids(shared_cluster, kit):
    """InitProducerId, answered by any broker, gives each producer an id no other producer has
    (two producers with one id would have each other's batches taken for duplicates): two from
    each of the three brokers are six different ids, each at epoch 0."""
    answers = []
    for b in range(kit.BROKERS):
        for _ in range(2):
            with shared_cluster.connect(b) as conn:
                answers.append(conn.init_producer_id())
    assert [(error, epoch) for error, _, epoch in answers] == [(kit.NONE, 0)] * 6
    ids = [pid for _, pid, _ in answers]
    assert len(set(ids)) == 6 and min(ids) >= 0, ids


def test_a_resent_batch_is_acknowledged_at_its_first_offset_and_stored_once(shared_cluster, kit, topic_name):
    """A batch sent again with the same producer id, epoch and sequence, whether it is the last
    batch or an earlier one the broker still remembers, is answered with the offset it was first
    stored at and not stored again; a batch that skips sequence numbers is refused with
    OUT_OF_ORDER_SEQUENCE_NUMBER. Consumers read each record once."""
    topic = shared_cluster.create_topic(topic_name)
    with shared_cluster.connect(shared_cluster.leader(topic, 0)) as leader:
        _, pid, epoch = leader.init_producer_id()

        def batch(sequence: int, *values: bytes) -> bytes:
            return kit.record_batch(*values, producer_id=pid, producer_epoch=epoch, base_sequence=sequence)

        first, second = batch(0, b"a", b"b"), batch(2, b"c")
        assert leader.produce(topic, 0, first) == (kit.NONE, 0)
        assert leader.produce(topic, 0, first) == (kit.NONE, 0)
        assert leader.produce(topic, 0, second) == (kit.NONE, 2)
        assert leader.produce(topic, 0, first) == (kit.NONE, 0)
        assert leader.produce(topic, 0, batch(9, b"gap"))[0] == kit.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert leader.produce(topic, 0, batch(3, b"d")) == (kit.NONE, 3)
    for client in kit.clients.values():
        got = kit.read_all(client, shared_cluster.bootstrap, topic, {0: 4})
        assert [(s.offset, s.rec.value) for s in got[0]] == [(0, b"a"), (1, b"b"), (2, b"c"), (3, b"d")]


def test_acks_0_produce_is_stored_without_a_response(shared_cluster, kit, topic_name):
    """Produce with acks=0 gets no response at all: the next response on the connection is that
    of the request after it; the records are stored nonetheless."""
    topic = shared_cluster.create_topic(topic_name)
    with shared_cluster.connect(shared_cluster.leader(topic, 0)) as conn:
        Topic = ProduceRequest.TopicProduceData
        conn.send_request(
            ProduceRequest(
                version=9,
                transactional_id=None,
                acks=0,
                timeout_ms=5000,
                topic_data=[
                    Topic(
                        name=topic,
                        partition_data=[Topic.PartitionProduceData(index=0, records=kit.record_batch(b"fire"))],
                    )
                ],
            )
        )
        metadata = conn.call(
            MetadataRequest(
                version=12, topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
            ),
            MetadataResponse,
        )
        assert metadata.brokers  # call() checked the correlation id: the Metadata's, not the Produce's
    got = kit.read_all(kit.clients["kafka-python"], shared_cluster.bootstrap, topic, {0: 1})
    assert [(s.offset, s.rec.value) for s in got[0]] == [(0, b"fire")]
