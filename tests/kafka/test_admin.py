"""Admin clients make topics with CreateTopics through the controller's one topic-creation path:
confluent-kafka's AdminClient.create_topics (partitions, replication factor, min.insync.replicas,
validate_only) and its refusals (TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS,
INVALID_REPLICATION_FACTOR, INVALID_CONFIG). isrcheck's cluster only: every topic here is
replicated on every broker and min.insync.replicas is the cluster's, which Apache Kafka does not
require."""
from __future__ import annotations

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from kafka.protocol.admin.topics import CreateTopicsRequest, CreateTopicsResponse

from isrcheck.impl.controller import CONTROLLER_ID

UNKNOWN_TOPIC_OR_PARTITION, REQUEST_TIMED_OUT, TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR, INVALID_CONFIG = 3, 7, 36, 37, 38, 40
TIMEOUT_S = 30  # bounds every wait: a request never answered fails the test, never hangs it


@pytest.fixture(scope="module")
def isrcheck_cluster(kit, tmp_path_factory):
    yield from kit.start_cluster(tmp_path_factory.mktemp("kafka-admin"), "isrcheck")


def create(cluster, *topics: NewTopic, validate_only: bool = False) -> dict[str, int]:
    """Each topic's error code from AdminClient.create_topics (0: created)."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    futures = admin.create_topics(list(topics), operation_timeout=TIMEOUT_S, request_timeout=TIMEOUT_S,
                                  validate_only=validate_only)
    codes = {}
    for name, future in futures.items():
        try:
            future.result(timeout=TIMEOUT_S)
            codes[name] = 0
        except KafkaException as exc:
            codes[name] = exc.args[0].code()
    return codes


def test_create_topics_makes_the_topic(isrcheck_cluster, kit, topic_name):
    """A topic made with create_topics has its partitions, each replicated on every broker with a
    leader, and takes records; a second create_topics of it is TOPIC_ALREADY_EXISTS."""
    topic = NewTopic(topic_name, num_partitions=5, replication_factor=kit.BROKERS,
                     config={"min.insync.replicas": "2"})
    assert create(isrcheck_cluster, topic) == {topic_name: 0}
    isrcheck_cluster.wait_for_partitions(topic_name, count=5)
    states = isrcheck_cluster.partitions(topic_name)
    assert sorted(states) == list(range(5)) and all(len(s.replicas) == kit.BROKERS for s in states.values())
    sent = [(4, rec) for rec in kit.sample_records(10, tag=topic_name)]
    delivery = kit.clients["confluent-kafka"].produce(isrcheck_cluster.bootstrap, topic_name, sent)
    assert not delivery.failed and delivery.counts() == {4: 10}
    assert create(isrcheck_cluster, NewTopic(topic_name, num_partitions=1)) == {topic_name: TOPIC_ALREADY_EXISTS}


def test_validate_only_creates_nothing(isrcheck_cluster, topic_name):
    """validate_only answers as the creation would and creates nothing."""
    assert create(isrcheck_cluster, NewTopic(topic_name, num_partitions=2), validate_only=True) == {topic_name: 0}
    assert not isrcheck_cluster.metadata(0, [topic_name]).topics[0].partitions


def test_what_the_cluster_cannot_make_is_refused(isrcheck_cluster, kit, topic_name):
    """Each refusal with its own error; nothing is created."""
    wanted = {
        f"{topic_name}-p": (NewTopic(f"{topic_name}-p", num_partitions=0), INVALID_PARTITIONS),
        f"{topic_name}-rf": (NewTopic(f"{topic_name}-rf", num_partitions=1, replication_factor=kit.BROKERS + 1),
                             INVALID_REPLICATION_FACTOR),
        f"{topic_name}-isr": (NewTopic(f"{topic_name}-isr", num_partitions=1, config={"min.insync.replicas": "3"}),
                              INVALID_CONFIG),
        f"{topic_name}-cfg": (NewTopic(f"{topic_name}-cfg", num_partitions=1, config={"cleanup.policy": "compact"}),
                              INVALID_CONFIG),
    }
    assert create(isrcheck_cluster, *(t for t, _ in wanted.values())) == {n: e for n, (_, e) in wanted.items()}
    assert not any(t.partitions for t in isrcheck_cluster.metadata(0, list(wanted)).topics)


def test_describe_configs_of_a_topic_and_a_broker(isrcheck_cluster, kit, topic_name):
    """A topic's and a broker's configs are the cluster's (min.insync.replicas 2, num.partitions
    3), each read-only; an unknown topic is UNKNOWN_TOPIC_OR_PARTITION."""
    topic = isrcheck_cluster.create_topic(topic_name)
    admin = AdminClient({"bootstrap.servers": isrcheck_cluster.bootstrap})
    resources = [ConfigResource("topic", topic), ConfigResource("broker", "1"), ConfigResource("topic", "no-such")]
    futures = admin.describe_configs(resources, request_timeout=TIMEOUT_S)
    topic_configs = futures[resources[0]].result(timeout=TIMEOUT_S)
    broker_configs = futures[resources[1]].result(timeout=TIMEOUT_S)
    assert topic_configs["min.insync.replicas"].value == "2" and topic_configs["min.insync.replicas"].is_read_only
    assert broker_configs["num.partitions"].value == str(kit.PARTITIONS)
    assert broker_configs["default.replication.factor"].value == str(kit.BROKERS)
    with pytest.raises(KafkaException) as raised:
        futures[resources[2]].result(timeout=TIMEOUT_S)
    assert raised.value.args[0].code() == UNKNOWN_TOPIC_OR_PARTITION


def test_no_answer_from_the_controller_times_out(kit, tmp_path, topic_name):
    """With the controller down, CreateTopics is answered REQUEST_TIMED_OUT after its timeout_ms,
    not left waiting."""
    cluster = next(gen := kit.start_cluster(tmp_path, "isrcheck"))
    try:
        cluster.processes.crash(CONTROLLER_ID, "process")
        request = CreateTopicsRequest(version=4, timeout_ms=1000, validate_only=False, topics=[
            CreateTopicsRequest.CreatableTopic(name=topic_name, num_partitions=1, replication_factor=-1,
                                               assignments=[], configs=[])])
        with cluster.connect(0, timeout=TIMEOUT_S) as conn:
            response = conn.call(request, CreateTopicsResponse)
        assert [(t.name, t.error_code) for t in response.topics] == [(topic_name, REQUEST_TIMED_OUT)]
    finally:
        gen.close()
