"""The admin requests tools and client test suites make topics with (CreateTopics, DeleteTopics,
DescribeConfigs), from kafka-python's KafkaAdminClient, confluent-kafka's AdminClient and kcat,
against both implementations: what each answers, its refusals included, must agree."""

from __future__ import annotations

import re
import subprocess

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient, ResourceType
from confluent_kafka.admin import ConfigResource as ConfluentResource
from confluent_kafka.admin import NewTopic as ConfluentTopic
from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic
from kafka.protocol.admin.topics import CreateTopicsRequest, CreateTopicsResponse

from isrcheck.impl.controller import CONTROLLER_ID

# Kafka's error codes the answers carry
TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR, INVALID_CONFIG = 36, 37, 38, 40
UNKNOWN_TOPIC_OR_PARTITION, REQUEST_TIMED_OUT, INVALID_REPLICA_ASSIGNMENT = 3, 7, 39


@pytest.fixture
def admin(shared_cluster):
    client = KafkaAdminClient(bootstrap_servers=shared_cluster.bootstrap.split(","), request_timeout_ms=15_000)
    yield client
    client.close()


def created(admin, *topics: NewTopic, validate_only: bool = False) -> dict[str, tuple[int, str | None]]:
    """Each topic's (error code, message) of one CreateTopics."""
    answer = admin.create_topics(list(topics), validate_only=validate_only, raise_errors=False)
    return {t["name"]: (t["error_code"], t["error_message"]) for t in answer["topics"]}


def test_kafka_python_admin_creates_describes_and_deletes_topics(shared_cluster, admin, topic_name):
    """A topic with 2 partitions, replication factor 3 and min.insync.replicas 3 is served by every
    broker, and DescribeConfigs says its min.insync.replicas is its own (the broker's is 2); a
    validate-only request creates nothing; DeleteTopics removes it."""
    assert created(admin, NewTopic(topic_name, 2, 3, topic_configs={"min.insync.replicas": "3"})) == {
        topic_name: (0, None)
    }
    shared_cluster.wait_for_partitions(topic_name, count=2)
    topic = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic_name)], config_filter="all")
    own = topic["topic"][topic_name]["min.insync.replicas"]
    assert (own["value"], own["config_source"]) == ("3", "DYNAMIC_TOPIC_CONFIG"), own
    broker = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1")], config_filter="all")
    assert broker["broker"]["1"]["min.insync.replicas"]["value"] == "2"
    checked = f"{topic_name}-checked"
    assert created(admin, NewTopic(checked, 1, 3), validate_only=True) == {checked: (0, None)}
    deleted = admin.delete_topics([topic_name, checked], raise_errors=False)
    codes = {t["name"]: t["error_code"] for t in deleted["topics"]}
    assert codes == {topic_name: 0, checked: UNKNOWN_TOPIC_OR_PARTITION}, deleted  # never created
    shared_cluster.wait_until(
        lambda: not any(shared_cluster.partitions(topic_name, via=b) for b in range(3)), f"no broker lists {topic_name}"
    )


def test_create_topics_refuses_as_kafka_does(shared_cluster, admin, topic_name):
    """An existing topic, no partitions, more replicas than brokers, min.insync.replicas below 1:
    each refused with Kafka's error, nothing created."""
    assert created(admin, NewTopic(topic_name, 1, 3)) == {topic_name: (0, None)}
    answers = created(
        admin,
        NewTopic(topic_name, 1, 3),
        NewTopic(f"{topic_name}-p", 0, 3),
        NewTopic(f"{topic_name}-r", 1, 4),
        NewTopic(f"{topic_name}-c", 1, 3, topic_configs={"min.insync.replicas": "0"}),
    )
    assert {name: code for name, (code, _) in answers.items()} == {
        topic_name: TOPIC_ALREADY_EXISTS,
        f"{topic_name}-p": INVALID_PARTITIONS,
        f"{topic_name}-r": INVALID_REPLICATION_FACTOR,
        f"{topic_name}-c": INVALID_CONFIG,
    }, answers
    assert all(message for _, message in answers.values()), answers  # each says why
    assert [t for t in (f"{topic_name}-p", f"{topic_name}-r", f"{topic_name}-c") if shared_cluster.partitions(t)] == []


def test_confluent_admin_and_kcat_see_the_topic_it_creates(shared_cluster, topic_name):
    """confluent-kafka's AdminClient creates a topic that kcat -L lists with its partitions on every
    broker, reads its min.insync.replicas back, and deletes it."""
    admin = AdminClient({"bootstrap.servers": shared_cluster.bootstrap})
    new = ConfluentTopic(topic_name, 3, 3, config={"min.insync.replicas": "2"})
    assert admin.create_topics([new], request_timeout=15)[topic_name].result(timeout=30) is None
    again = admin.create_topics([ConfluentTopic(topic_name, 3, 3)], request_timeout=15)[topic_name]
    assert again.exception(timeout=30).args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS
    shared_cluster.wait_for_partitions(topic_name)
    listing = subprocess.run(
        ["kcat", "-L", "-b", shared_cluster.address(0), "-t", topic_name], capture_output=True, timeout=30, text=True
    )
    assert listing.returncode == 0 and f'topic "{topic_name}" with 3 partitions' in listing.stdout, listing
    replicas = re.findall(r"replicas: ([\d,]+?),? isrs", listing.stdout)
    assert [sorted(r.split(",")) for r in replicas] == [["0", "1", "2"]] * 3, listing.stdout
    resources = [ConfluentResource(ResourceType.TOPIC, topic_name), ConfluentResource(ResourceType.TOPIC, "no-such")]
    described = admin.describe_configs(resources, request_timeout=15)
    assert described[resources[0]].result(timeout=30)["min.insync.replicas"].value == "2"
    assert described[resources[1]].exception(timeout=30).args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART
    assert admin.delete_topics([topic_name], request_timeout=15)[topic_name].result(timeout=30) is None
    shared_cluster.wait_until(lambda: not shared_cluster.partitions(topic_name), f"{topic_name} is gone")


def test_a_topic_deleted_and_made_again_is_new_and_empty(shared_cluster, admin, topic_name, kit):
    """What was written to a deleted topic is gone: the topic made again under its name has a new
    topic id, and its first record is at offset 0."""
    assert created(admin, NewTopic(topic_name, 1, 3)) == {topic_name: (0, None)}
    shared_cluster.wait_for_partitions(topic_name, count=1)
    writer = kit.clients["confluent-kafka"]
    assert [
        s.offset
        for s in writer.produce(shared_cluster.bootstrap, topic_name, kit.spread(kit.sample_records(3, "old"), 1)).acked
    ] == [0, 1, 2]
    first_id = topic_id(shared_cluster, topic_name)
    admin.delete_topics([topic_name])
    shared_cluster.wait_until(
        lambda: not any(shared_cluster.partitions(topic_name, via=b) for b in range(3)), f"no broker lists {topic_name}"
    )
    shared_cluster.wait_until(
        lambda: created(admin, NewTopic(topic_name, 1, 3))[topic_name][0] == 0, f"{topic_name} is created again"
    )  # Kafka may still be deleting it
    shared_cluster.wait_for_partitions(topic_name, count=1)
    assert topic_id(shared_cluster, topic_name) not in (first_id, None)
    again = writer.produce(shared_cluster.bootstrap, topic_name, kit.spread(kit.sample_records(1, "new"), 1))
    assert [s.offset for s in again.acked] == [0], again.failed


def topic_id(cluster, topic: str):
    [listed] = [t for t in cluster.metadata(0, [topic]).topics if t.name == topic]
    return listed.topic_id if listed.error_code == 0 else None


@pytest.mark.parametrize("shared_cluster", ["isrcheck"], indirect=True)
def test_what_isrcheck_cannot_honour_is_refused(shared_cluster, admin, topic_name):
    """isrcheck's cluster only (Apache Kafka makes each of these): fewer replicas than brokers,
    another topic config, a min.insync.replicas above the replicas, an assignment of one's own;
    each refused saying why, nothing created."""
    answers = created(
        admin,
        NewTopic(f"{topic_name}-r", 1, 2),
        NewTopic(f"{topic_name}-c", 1, 3, topic_configs={"cleanup.policy": "compact"}),
        NewTopic(f"{topic_name}-m", 1, 3, topic_configs={"min.insync.replicas": "4"}),
        NewTopic(f"{topic_name}-a", -1, -1, replica_assignments={0: [0, 1, 2]}),
    )
    assert {name: code for name, (code, _) in answers.items()} == {
        f"{topic_name}-r": INVALID_REPLICATION_FACTOR,
        f"{topic_name}-c": INVALID_CONFIG,
        f"{topic_name}-m": INVALID_CONFIG,
        f"{topic_name}-a": INVALID_REPLICA_ASSIGNMENT,
    }, answers
    assert "replication factor must be 3" in answers[f"{topic_name}-r"][1], answers
    assert [t for t in answers if shared_cluster.partitions(t)] == []


def test_no_answer_from_the_controller_times_out(kit, tmp_path, topic_name):
    """With the controller down, CreateTopics is answered REQUEST_TIMED_OUT after its timeout_ms,
    not left waiting."""
    cluster = next(gen := kit.start_cluster(tmp_path, "isrcheck"))
    try:
        cluster.processes.crash(CONTROLLER_ID, "process")
        request = CreateTopicsRequest(
            version=4,
            timeout_ms=1000,
            validate_only=False,
            topics=[
                CreateTopicsRequest.CreatableTopic(
                    name=topic_name, num_partitions=1, replication_factor=-1, assignments=[], configs=[]
                )
            ],
        )
        with cluster.connect(0, timeout=30) as conn:
            response = conn.call(request, CreateTopicsResponse)
        assert [(t.name, t.error_code) for t in response.topics] == [(topic_name, REQUEST_TIMED_OUT)]
    finally:
        gen.close()
