"""What a Kafka cluster says about itself, read as a client reads it, and topics made as a client
makes them (kafka-python's protocol classes and admin client; any Kafka-compatible cluster).

``cluster_view(addresses)`` asks the first broker that answers for Metadata v12 (every broker
registered and unfenced, and every partition's leader, leader epoch, replicas and ISR) and returns a
``ClusterView``, or None if none answers. ``describe_partitions(bootstrap, topics)`` adds what
Metadata does not carry: KIP-966's Eligible Leader Replicas and last known ELR
(DescribeTopicPartitions). ``create_topics(bootstrap, [(name, partitions)], replication)`` is
CreateTopics, topics that exist already being fine; ``topic_configs(bootstrap, topic)`` a topic's
configs (DescribeConfigs). ``replica_end_offset(address, topic, p)`` is one replica's log end
offset, a follower's too.
"""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass, field

from kafka.protocol.consumer.offsets import ListOffsetsRequest, ListOffsetsResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse

from isrcheck.conformance.vocabulary import UsageError

METADATA_VERSION = 12
LIST_OFFSETS_VERSION = 4  # the first with the current leader epoch (KIP-320)
DEBUGGING_REPLICA_ID = -2
TOPIC_ALREADY_EXISTS = 36


@dataclass(frozen=True)
class PartitionView:
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    elr: tuple[int, ...] | None = None  # DescribeTopicPartitions only
    last_known_elr: tuple[int, ...] | None = None
    error_code: int = 0


@dataclass
class ClusterView:
    """One broker's answer: which brokers it lists, each partition as it knows it."""

    via: str
    brokers: dict[int, str] = field(default_factory=dict)  # id -> host:port
    controller: int = -1
    partitions: dict[tuple[str, int], PartitionView] = field(default_factory=dict)

    def has_leaders(self, topics) -> bool:
        """Every partition of ``topics`` ([(name, partitions)]) is listed with a leader."""
        return all(
            self.partitions.get((name, p), PartitionView(-1, -1, (), ())).leader >= 0
            for name, count in topics
            for p in range(count)
        )

    def topic(self, name: str) -> dict[int, PartitionView]:
        return {p: view for (t, p), view in self.partitions.items() if t == name}


def metadata(address: str, topics: list[str] | None = None, timeout_s: float = 3.0) -> ClusterView:
    """Metadata of ``topics`` (None: all) from the broker at ``address``; OSError if it cannot be had."""
    request = MetadataRequest(
        version=METADATA_VERSION,
        topics=None
        if topics is None
        else [MetadataRequest.MetadataRequestTopic(topic_id=None, name=t) for t in topics],
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    response = _exchange(address, request, MetadataResponse, METADATA_VERSION, timeout_s)
    view = ClusterView(address, {b.node_id: f"{b.host}:{b.port}" for b in response.brokers}, response.controller_id)
    for t in response.topics:
        for p in t.partitions:
            view.partitions[(t.name, p.partition_index)] = PartitionView(
                p.leader_id, p.leader_epoch, tuple(p.replica_nodes), tuple(sorted(p.isr_nodes)), error_code=p.error_code
            )
    return view


def _exchange(address: str, request, response_class, version: int, timeout_s: float):
    """One request to the broker at ``address`` and its decoded answer; OSError or struct.error if
    none comes."""
    request.with_header(correlation_id=1, client_id="isrcheck")
    host, _, port = address.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=timeout_s) as s, s.makefile("rb") as answer:
        s.sendall(bytes(request.encode(header=True, framed=True)))
        (size,) = struct.unpack(">i", answer.read(4))  # struct.error if the broker closed early
        return response_class.decode(answer.read(size), version=version, header=True)


def replica_end_offset(address: str, topic: str, partition: int, timeout_s: float = 3.0) -> int:
    """The log end offset of the replica of ``topic``-``partition`` on the broker at ``address``,
    leader or follower: ListOffsets "latest" as a debugging tool asks it (replica id -2), which any
    replica answers from its own log, unbounded by the HW (KafkaApis.handleListOffsetRequest). -1
    if the broker answers with an error (it holds no replica); OSError if it does not answer."""
    T = ListOffsetsRequest.ListOffsetsTopic
    request = ListOffsetsRequest(
        version=LIST_OFFSETS_VERSION,
        replica_id=DEBUGGING_REPLICA_ID,
        isolation_level=0,
        topics=[
            T(
                name=topic,
                partitions=[T.ListOffsetsPartition(partition_index=partition, current_leader_epoch=-1, timestamp=-1)],
            )
        ],
    )
    response = _exchange(address, request, ListOffsetsResponse, LIST_OFFSETS_VERSION, timeout_s)
    answer = response.topics[0].partitions[0]
    return answer.offset if answer.error_code == 0 else -1


def cluster_view(addresses: list[str], topics: list[str] | None = None) -> ClusterView | None:
    """The first answer of the brokers at ``addresses``, in order; None if none answers."""
    for address in addresses:
        try:
            return metadata(address, topics)
        except (OSError, struct.error, ValueError):
            continue
    return None


def _admin(bootstrap: str):
    # kafka-python: only when an admin client is made (the views' readers import this module)
    from kafka.admin import KafkaAdminClient

    return KafkaAdminClient(bootstrap_servers=bootstrap.split(","), client_id="isrcheck", request_timeout_ms=15_000)


def create_topics(
    bootstrap: str, topics, replication: int, configs: dict | None = None, timeout_s: float = 60.0
) -> None:
    """CreateTopics for each (name, partitions) with ``replication`` replicas; an existing topic is
    left as it is. A cluster still coming up (the admin client's own errors: a broker it does not
    know yet, one not ready) is asked again until ``timeout_s``. UsageError naming the topic if the
    cluster refuses one."""

    # kafka-python: only when an admin client is made
    from kafka.admin import NewTopic
    from kafka.errors import KafkaError

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            admin = _admin(bootstrap)
            try:
                result = admin.create_topics(
                    [
                        NewTopic(name, partitions, replication, topic_configs=configs or {})
                        for name, partitions in topics
                    ],
                    raise_errors=False,
                )
            finally:
                admin.close()
            break
        except (KafkaError, OSError) as exc:
            if type(exc).__name__ == "IncompatibleBrokerVersion" or time.monotonic() > deadline:  # or never
                raise UsageError(
                    f"the cluster at {bootstrap} did not create topics {[t for t, _ in topics]} within "
                    f"{timeout_s:.0f} s: {exc!r}"
                ) from None
            time.sleep(0.5)
    for topic in _topic_errors(result):
        name, code, message = topic
        if code not in (0, TOPIC_ALREADY_EXISTS):
            raise UsageError(f"the cluster refused to create topic {name!r}: error {code} {message or ''}".strip())


def _topic_errors(result) -> list[tuple[str, int, str | None]]:
    """(name, error code, message) of each topic of a CreateTopics answer, whatever its shape."""
    out = []
    for topic in getattr(result, "topics", None) or getattr(result, "topic_errors", None) or []:
        if isinstance(topic, dict):
            out.append((topic.get("name"), topic.get("error_code", 0), topic.get("error_message")))
        elif isinstance(topic, tuple):
            out.append((topic[0], topic[1], topic[2] if len(topic) > 2 else None))
        else:
            out.append((topic.name, topic.error_code, getattr(topic, "error_message", None)))
    return out


def topic_configs(bootstrap: str, topic: str) -> dict[str, str | None]:
    """Every config of ``topic`` by name (DescribeConfigs); UsageError naming the topic if the
    cluster does not answer them."""
    # kafka-python: only when an admin client is made
    from kafka.admin import ConfigResource, ConfigResourceType
    from kafka.errors import KafkaError

    try:
        admin = _admin(bootstrap)
        try:
            answer = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all")
        finally:
            admin.close()
    except (KafkaError, OSError) as exc:
        raise UsageError(
            f"the cluster at {bootstrap} did not describe the configs of topic {topic!r}: {exc!r}"
        ) from None
    return {name: entry["value"] for name, entry in answer.get("topic", {}).get(topic, {}).items()}


def describe_partitions(bootstrap: str, topics: list[str]) -> dict[tuple[str, int], PartitionView]:
    """Every partition of ``topics`` with its ELR and last known ELR (KIP-966's DescribeTopicPartitions)."""
    admin = _admin(bootstrap)
    try:
        answer = admin.describe_topic_partitions(topics)
    finally:
        admin.close()
    out = {}
    for t in answer["topics"]:
        for p in t["partitions"]:
            out[(t["name"], p["partition_index"])] = PartitionView(
                p["leader_id"],
                p["leader_epoch"],
                tuple(p["replica_nodes"]),
                tuple(sorted(p["isr_nodes"])),
                tuple(sorted(p.get("eligible_leader_replicas") or ())),
                tuple(sorted(p.get("last_known_elr") or ())),
                p.get("error_code", 0),
            )
    return out


__all__ = [
    "ClusterView",
    "PartitionView",
    "cluster_view",
    "create_topics",
    "describe_partitions",
    "metadata",
    "topic_configs",
]
