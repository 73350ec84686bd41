"""Consumer groups and transactions, which isrcheck's brokers do not serve, fail at once in both
clients with the error they report to the application (never a wait without end), and the broker
says in one log line what was refused and what to use instead; a consumer assigned partitions at
explicit offsets is told of no error. Only isrcheck's cluster: Apache Kafka serves all of it.

Every client call is bounded by its own short timeout; where the feature used to wait forever the
call returns empty-handed and the test fails."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as ConfluentPartition
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import GroupAuthorizationFailedError, TransactionalIdAuthorizationFailedError
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse

pytestmark = pytest.mark.parametrize("shared_cluster", ["isrcheck"], indirect=True)

WAIT_S = 10  # each client's own bound: a poll, a transactional init


def confluent_errors(consumer: Consumer) -> list[KafkaError]:
    """The errors the consumer delivers within WAIT_S (polling stops at the first)."""
    deadline, errors = time.monotonic() + WAIT_S, []
    while time.monotonic() < deadline and not errors:
        errors = [m.error() for m in consumer.consume(num_messages=100, timeout=0.5) if m.error()]
    return errors


def refusal_logged(cluster, feature: str, key: str) -> list[str]:
    """The brokers' log lines refusing ``feature`` for ``key``."""
    return [
        line
        for b in range(3)
        for line in cluster.log_lines_since(b, 0)
        if f"{feature} are not supported" in line and repr(key) in line
    ]


def assert_group_refused(client, bootstrap: str, group: str, use) -> None:
    """A consumer of ``group`` that ``use(consumer, TopicPartition)`` set to read is told
    GROUP_AUTHORIZATION_FAILED within WAIT_S: kafka-python raises it from ``poll``, confluent-kafka
    delivers it as a consumer error."""
    if client.name == "kafka-python":
        consumer = KafkaConsumer(bootstrap_servers=bootstrap.split(","), group_id=group)
        use(consumer, TopicPartition)
        try:
            with pytest.raises(GroupAuthorizationFailedError):
                consumer.poll(timeout_ms=WAIT_S * 1000)
        finally:
            consumer.close(autocommit=False)
        return
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    use(consumer, ConfluentPartition)
    try:
        assert [e.code() for e in confluent_errors(consumer)][:1] == [KafkaError.GROUP_AUTHORIZATION_FAILED]
    finally:
        consumer.close()


def test_a_consumer_that_subscribes_with_a_group_fails_at_once(shared_cluster, topic_name, client):
    topic = shared_cluster.create_topic(topic_name)
    group = f"{topic}-group"
    assert_group_refused(client, shared_cluster.bootstrap, group, lambda consumer, _: consumer.subscribe([topic]))
    [line] = refusal_logged(shared_cluster, "consumer groups", group)[:1]
    assert "WARNING" in line and "instead, assign partitions with an explicit offset" in line, line


def test_an_assignment_without_an_offset_fails_at_once(shared_cluster, topic_name, client):
    """Without an explicit offset a consumer with a group asks for the group's committed offset
    (OffsetFetch): refused, reported at once."""
    topic = shared_cluster.create_topic(topic_name)
    group = f"{topic}-group"
    assert_group_refused(
        client, shared_cluster.bootstrap, group, lambda consumer, partition: consumer.assign([partition(topic, 0)])
    )
    assert refusal_logged(shared_cluster, "consumer groups", group)


def test_a_transactional_producer_fails_at_once(shared_cluster, client):
    transactional_id = f"isrcheck-tests-{client.name}"
    if client.name == "kafka-python":
        producer = KafkaProducer(
            bootstrap_servers=shared_cluster.bootstrap.split(","),
            transactional_id=transactional_id,
            max_block_ms=WAIT_S * 1000,
        )
        try:
            with pytest.raises(TransactionalIdAuthorizationFailedError):
                producer.init_transactions()
        finally:
            producer.close(timeout=5)
    else:
        producer = Producer({"bootstrap.servers": shared_cluster.bootstrap, "transactional.id": transactional_id})
        with pytest.raises(KafkaException) as refused:
            producer.init_transactions(WAIT_S)
        error = refused.value.args[0]
        assert error.code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED and error.fatal(), error
    [line] = refusal_logged(shared_cluster, "transactions", transactional_id)[:1]
    assert "instead, use an idempotent producer without a transactional id" in line, line


def test_a_consumer_assigned_explicit_offsets_reads_with_no_error(shared_cluster, topic_name, kit):
    """librdkafka's consumer must name a group: assigned at offset 0 (auto-commit left on), it reads
    every record and is told of no error (its commits are refused, and logged, on the broker)."""
    topic = shared_cluster.create_topic(topic_name)
    records = kit.spread(kit.sample_records(6, "assigned"))
    kit.clients["kafka-python"].produce(shared_cluster.bootstrap, topic, records)
    consumer = Consumer({"bootstrap.servers": shared_cluster.bootstrap, "group.id": f"{topic}-group"})
    consumer.assign([ConfluentPartition(topic, p, 0) for p in range(kit.PARTITIONS)])
    got, errors, deadline = [], [], time.monotonic() + 20
    try:
        while len(got) < len(records) and time.monotonic() < deadline:
            for m in consumer.consume(num_messages=100, timeout=0.5):
                (errors.append(m.error()) if m.error() else got.append(m.value()))
    finally:
        consumer.close()
    assert errors == [] and sorted(got, key=repr) == sorted((r.value for _, r in records), key=repr)


@pytest.mark.parametrize("version", [0, 3, 4])
def test_find_coordinator_names_the_broker_for_a_group_and_refuses_a_transactional_id(shared_cluster, version):
    """Every version of FindCoordinator: a group's coordinator is the broker asked (its group
    requests are refused there), a transactional id TRANSACTIONAL_ID_AUTHORIZATION_FAILED with a
    message naming what to use instead, logged once however often it is asked."""
    broker, host, port = 2, *shared_cluster.address(2).rsplit(":", 1)
    transactional_id = f"raw-v{version}"
    for key_type in (0, 1) if version >= 1 else (0,):  # v0 knows only groups
        key = "a-group" if key_type == 0 else transactional_id
        fields = dict(coordinator_keys=[key, key]) if version >= 4 else dict(key=key)
        if version >= 1:
            fields["key_type"] = key_type
        with shared_cluster.connect(broker) as conn:
            for _ in range(2):
                resp = conn.call(FindCoordinatorRequest(version=version, **fields), FindCoordinatorResponse)
        answers = resp.coordinators if version >= 4 else [resp]
        if key_type == 0:
            assert [(a.error_code, a.node_id, a.host, a.port) for a in answers] == [(0, broker, host, int(port))] * len(
                answers
            ), answers
        else:
            assert [a.error_code for a in answers] == [53] * len(answers)
            assert all("instead, use an idempotent producer" in a.error_message for a in answers), answers
    if version >= 1:
        assert len(refusal_logged(shared_cluster, "transactions", transactional_id)) == 1
