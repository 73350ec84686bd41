"""What isrcheck's brokers do not support fails fast, with an error the client reports: a consumer
group (FindCoordinator for a group: GROUP_AUTHORIZATION_FAILED) and transactions (for a
transactional id: TRANSACTIONAL_ID_AUTHORIZATION_FAILED), where COORDINATOR_NOT_AVAILABLE would
have the clients retry in silence for ever. Each broker logs one line naming what is unsupported
and what to use instead. isrcheck's cluster only: Apache Kafka has both."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from kafka import KafkaConsumer
from kafka.errors import GroupAuthorizationFailedError
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest, FindCoordinatorResponse

GROUP_AUTHORIZATION_FAILED, TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 30, 53
DEADLINE_S = 30  # bounds every wait: a client that retries in silence fails the test, never hangs it


@pytest.fixture(scope="module")
def isrcheck_cluster(kit, tmp_path_factory):
    yield from kit.start_cluster(tmp_path_factory.mktemp("kafka-unsupported"), "isrcheck")


def first_consumer_error(consumer: Consumer) -> KafkaError | None:
    """The first error the consumer reports within DEADLINE_S, or None."""
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        for m in consumer.consume(num_messages=100, timeout=0.5):
            if m.error() is not None:
                return m.error()
    return None


@pytest.mark.parametrize("how", ["subscribe", "assign-without-offset"])
def test_a_consumer_group_fails_fast(isrcheck_cluster, topic_name, how):
    """A consumer with a group.id that subscribes, or that is assigned a partition without an
    offset (which asks the group for its committed offset), gets GROUP_AUTHORIZATION_FAILED."""
    topic = isrcheck_cluster.create_topic(topic_name)
    consumer = Consumer({"bootstrap.servers": isrcheck_cluster.bootstrap, "group.id": f"g-{topic}",
                         "enable.auto.commit": False, "session.timeout.ms": 6000})
    try:
        if how == "subscribe":
            consumer.subscribe([topic])
        else:
            consumer.assign([TopicPartition(topic, 0)])
        error = first_consumer_error(consumer)
    finally:
        consumer.close()
    assert error is not None and error.code() == GROUP_AUTHORIZATION_FAILED, error


def test_a_kafka_python_group_consumer_fails_fast(isrcheck_cluster, topic_name):
    """kafka-python's group consumer raises GroupAuthorizationFailedError on its first poll."""
    topic = isrcheck_cluster.create_topic(topic_name)
    consumer = KafkaConsumer(bootstrap_servers=isrcheck_cluster.bootstrap.split(","), group_id=f"g-{topic}",
                             request_timeout_ms=10000, enable_auto_commit=False)
    try:
        consumer.subscribe([topic])
        with pytest.raises(GroupAuthorizationFailedError):
            consumer.poll(timeout_ms=DEADLINE_S * 1000)
    finally:
        consumer.close()


def test_a_transactional_producer_fails_fast(isrcheck_cluster):
    """librdkafka's init_transactions() raises a fatal TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    instead of waiting out its timeout."""
    producer = Producer({"bootstrap.servers": isrcheck_cluster.bootstrap, "transactional.id": "t-unsupported"})
    with pytest.raises(KafkaException) as raised:
        producer.init_transactions(DEADLINE_S)
    error = raised.value.args[0]
    assert error.code() == TRANSACTIONAL_ID_AUTHORIZATION_FAILED and error.fatal(), error


@pytest.mark.parametrize("version", [0, 3, 4])
def test_find_coordinator_answers_and_logs_once(isrcheck_cluster, version):
    """Every version of FindCoordinator answers the authorization error of its key type, with a
    message naming what to use instead; the broker logs the refusal of each kind once."""
    broker = 2
    for key_type, error in ((0, GROUP_AUTHORIZATION_FAILED), (1, TRANSACTIONAL_ID_AUTHORIZATION_FAILED)):
        if version == 0 and key_type == 1:
            continue  # v0 knows only groups
        fields = dict(coordinator_keys=["a", "b"]) if version >= 4 else dict(key="a")
        if version >= 1:
            fields["key_type"] = key_type
        with isrcheck_cluster.connect(broker) as conn:
            for _ in range(2):
                resp = conn.call(FindCoordinatorRequest(version=version, **fields), FindCoordinatorResponse)
        answers = resp.coordinators if version >= 4 else [resp]
        assert [a.error_code for a in answers] == [error] * len(answers)
        assert version == 0 or all("instead" in a.error_message for a in answers)  # v0 has no message
    lines = isrcheck_cluster.log_lines_since(broker, 0)
    for what in ("consumer groups", "transactions") if version >= 1 else ("consumer groups",):
        refusals = [line for line in lines if f"{what} not supported by isrcheck" in line]
        assert len(refusals) == 1 and "instead" in refusals[0], lines
