"""The request and response types of the replication protocol, with their versioned layouts.

Api keys are Kafka's. Versions follow the protocol lineage: Fetch v0 carries only the fetch offset
(pre KIP-320), v1 adds the current leader epoch and last fetched epoch and its response the
diverging epoch (KIP-320); v2 and v3 are v0 and v1 plus ``max_batches``, Kafka's partition fetch
size (``replica.fetch.max.bytes``, KIP-74) counted in whole batches, so that a follower of either
generation can ask for a partial response without claiming epochs its wire does not carry;
OffsetsForLeaderEpoch v0 answers only an end offset (KIP-101), v1 also
the leader epoch (KIP-279), v2 carries the current leader epoch for fencing (KIP-320).
LeaderAndIsr is one-way here: brokers learn partition state as KRaft brokers learn metadata,
without acknowledging it. Its v1, for clusters of many topics (``isrcheck serve``), also names the
partition's topic and index, its replicas in assignment order and the live brokers (what Kafka's
UpdateMetadata told every broker); BrokerHeartbeat v1 carries the partition epoch the broker applied
for every partition, so that the controller resends what a broker missed, and its answer the live
brokers; its v2 adds the topic's ``min.insync.replicas`` (-1: the cluster's) and whether the topic
was deleted (KRaft brokers learn both from the metadata log: a topic's config record, its removal).
UpdateMetadata, one-way as well, tells every broker the brokers' registrations after a change (with
``metadata_cache``: what a KRaft broker's metadata cache learns from the metadata log).
CreateTopics asks the controller for a topic (v0: a broker auto-creating one a client asked Metadata
for; v1: a client's CreateTopics, with replication factor, ``min.insync.replicas`` and validate-only,
answered with an error message), DeleteTopics removes one; AllocateProducerIds gets a broker a block
of producer ids for idempotent producers.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from .codec import Codec, WireRecord


class ApiKey(IntEnum):
    """Kafka's api keys for the requests this protocol uses."""

    PRODUCE = 0
    FETCH = 1
    LEADER_AND_ISR = 4
    UPDATE_METADATA = 6
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    OFFSET_FOR_LEADER_EPOCH = 23
    ALTER_PARTITION = 56
    BROKER_REGISTRATION = 62
    BROKER_HEARTBEAT = 63
    ALLOCATE_PRODUCER_IDS = 67


CONSUMER_REPLICA_ID = -1  # Kafka's replica id of an ordinary consumer's fetch


@dataclass(slots=True)
class ProduceRequest:
    """Produce: records for the partition, with acks and a timeout."""

    acks: int = 1
    timeout_ms: int = 0
    partition: int = 0
    records: tuple[WireRecord, ...] = ()


@dataclass(slots=True)
class ProduceResponse:
    """Produce answer: error and the offset of the first record."""

    error: int = 0
    partition: int = 0
    base_offset: int = -1


@dataclass(slots=True)
class FetchRequest:
    """Fetch from a follower (replica id >= 0) or a consumer (-1); epochs from KIP-320."""

    replica_id: int = CONSUMER_REPLICA_ID
    partition: int = 0
    fetch_offset: int = 0
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1
    max_batches: int = 0  # whole batches the response may carry, at least one (KIP-74); 0 = no limit
    replica_epoch: int = -1  # the follower's broker epoch (v4: Fetch v15's ReplicaState, KIP-903)


@dataclass(slots=True)
class FetchResponse:
    """Fetch answer: HW, log start and end offsets, a diverging epoch (KIP-320), record batches."""

    error: int = 0
    partition: int = 0
    high_watermark: int = -1
    log_start_offset: int = -1
    log_end_offset: int = -1
    diverging_epoch: int = -1
    diverging_end_offset: int = -1
    records: bytes = b""  # record batches exactly as the leader's log stores them


@dataclass(slots=True)
class OffsetForLeaderEpochRequest:
    """OffsetsForLeaderEpoch (KIP-101): where does ``leader_epoch`` end on the leader?"""

    replica_id: int = 0
    partition: int = 0
    leader_epoch: int = -1
    current_leader_epoch: int = -1


@dataclass(slots=True)
class OffsetForLeaderEpochResponse:
    """OffsetsForLeaderEpoch answer: the end offset, and from v1 the epoch it belongs to (KIP-279)."""

    error: int = 0
    partition: int = 0
    leader_epoch: int = -1
    end_offset: int = -1


@dataclass(slots=True)
class LeaderAndIsrRequest:
    """Controller to broker: the partition's leader, epochs and ISR."""

    broker_epoch: int = -1
    partition: int = 0
    leader: int = -1
    leader_epoch: int = -1
    partition_epoch: int = -1
    isr: tuple[int, ...] = ()
    replicas: tuple[int, ...] = ()
    topic: str = "isr"  # v1: the topic and the partition's index in it
    index: int = 0
    live_brokers: tuple[int, ...] = ()  # v1: the brokers the controller has not fenced
    min_insync_replicas: int = -1  # v2: the topic's min.insync.replicas (-1: the cluster's)
    deleted: bool = False  # v2: the topic was deleted: the broker drops the partition and its log


@dataclass(slots=True)
class UpdateMetadataRequest:
    """Controller to every broker, one-way (metadata_cache): the brokers' registrations after a change,
    what a KRaft broker's metadata cache takes from the metadata log (KRaftMetadataCache.setImage)."""

    metadata_version: int = 0  # grows with every change: a broker ignores an older one (reordered)
    alive_broker_epochs: tuple[int, ...] = ()  # per broker id its broker epoch, -1 fenced


@dataclass(slots=True)
class CreateTopicsRequest:
    """Broker to controller: create ``topic`` with ``partitions`` partitions unless it exists."""

    topic: str = ""
    partitions: int = 1
    replication_factor: int = -1  # v1: -1 the default (every broker)
    min_insync_replicas: int = -1  # v1: the topic's config, -1 the cluster's
    validate_only: bool = False  # v1: check, create nothing


@dataclass(slots=True)
class CreateTopicsResponse:
    """The controller's answer: NONE, TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS, INVALID_TOPIC_EXCEPTION,
    INVALID_REPLICATION_FACTOR or INVALID_CONFIG; from v1 with a message saying why and the id of the
    topic's first partition (what its topic id is made from)."""

    error: int = 0
    message: str = ""
    partition_id: int = -1


@dataclass(slots=True)
class DeleteTopicsRequest:
    """Broker to controller: delete ``topic``."""

    topic: str = ""


@dataclass(slots=True)
class DeleteTopicsResponse:
    """The controller's answer: NONE or UNKNOWN_TOPIC_OR_PARTITION."""

    error: int = 0


@dataclass(slots=True)
class AllocateProducerIdsRequest:
    """Broker to controller: a block of producer ids to hand out in InitProducerId (KIP-730)."""

    broker_id: int = -1
    broker_epoch: int = -1


@dataclass(slots=True)
class AllocateProducerIdsResponse:
    """The block: ``producer_id_len`` ids from ``producer_id_start``, never given out before."""

    error: int = 0
    producer_id_start: int = -1
    producer_id_len: int = 0


@dataclass(slots=True)
class AlterPartitionRequest:
    """Leader to controller: a proposed ISR, fenced by leader and partition epochs (KIP-497)."""

    broker_id: int = -1
    broker_epoch: int = -1
    partition: int = 0
    leader_epoch: int = -1
    partition_epoch: int = -1
    new_isr: tuple[int, ...] = ()
    new_isr_epochs: tuple[int, ...] = ()  # v1: each member's broker epoch, -1 unknown (NewIsrWithEpochs, KIP-903)


@dataclass(slots=True)
class AlterPartitionResponse:
    """Controller to leader: error and the controller's current partition state."""

    error: int = 0
    partition: int = 0
    leader: int = -1
    leader_epoch: int = -1
    partition_epoch: int = -1
    isr: tuple[int, ...] = ()


@dataclass(slots=True)
class BrokerRegistrationRequest:
    """A starting broker asks the controller for a broker epoch."""

    broker_id: int = -1
    incarnation: int = 0
    previous_broker_epoch: int = -1  # v1: from the clean shutdown file, -1 after an unclean one (KIP-966)


@dataclass(slots=True)
class BrokerRegistrationResponse:
    """The new broker epoch, or why registration failed."""

    error: int = 0
    broker_epoch: int = -1


@dataclass(slots=True)
class BrokerHeartbeatRequest:
    """Keeps a broker's session alive and says which partition state it applied."""

    broker_id: int = -1
    broker_epoch: int = -1
    leader_epoch: int = -1  # the partition state the broker has applied (KRaft's metadata offset)
    partition_epoch: int = -1
    partition_epochs: tuple[int, ...] = ()  # v1: per partition id, the partition epoch applied (-1 none)


@dataclass(slots=True)
class BrokerHeartbeatResponse:
    """Heartbeat answer: whether the broker is fenced."""

    error: int = 0
    is_fenced: bool = False
    live_brokers: tuple[int, ...] = ()  # v1: the brokers not fenced (what clients' Metadata lists)
    is_caught_up: bool = False  # v1: the broker applied every partition state of its registration


CODEC = Codec()
CODEC.register(
    ApiKey.PRODUCE,
    ProduceRequest,
    ProduceResponse,
    {0: (("acks", "i16"), ("timeout_ms", "i32"), ("partition", "i32"), ("records", "records"))},
    {0: (("error", "i16"), ("partition", "i32"), ("base_offset", "i64"))},
)
_FETCH_V0 = (("replica_id", "i32"), ("partition", "i32"), ("fetch_offset", "i64"))
_FETCH_V1 = _FETCH_V0 + (("current_leader_epoch", "i32"), ("last_fetched_epoch", "i32"))
_FETCH_RESP_V0 = (
    ("error", "i16"),
    ("partition", "i32"),
    ("high_watermark", "i64"),
    ("log_start_offset", "i64"),
    ("log_end_offset", "i64"),
    ("records", "bytes"),
)
_FETCH_RESP_V1 = _FETCH_RESP_V0[:-1] + (
    ("diverging_epoch", "i32"),
    ("diverging_end_offset", "i64"),
    ("records", "bytes"),
)
_MAX_BATCHES = (("max_batches", "i32"),)
CODEC.register(
    ApiKey.FETCH,
    FetchRequest,
    FetchResponse,
    {
        0: _FETCH_V0,
        1: _FETCH_V1,
        2: _FETCH_V0 + _MAX_BATCHES,
        3: _FETCH_V1 + _MAX_BATCHES,
        4: _FETCH_V1 + _MAX_BATCHES + (("replica_epoch", "i64"),),
    },
    {0: _FETCH_RESP_V0, 1: _FETCH_RESP_V1, 2: _FETCH_RESP_V0, 3: _FETCH_RESP_V1, 4: _FETCH_RESP_V1},
)
_OLE_V0 = (("replica_id", "i32"), ("partition", "i32"), ("leader_epoch", "i32"))
CODEC.register(
    ApiKey.OFFSET_FOR_LEADER_EPOCH,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    {0: _OLE_V0, 1: _OLE_V0, 2: _OLE_V0 + (("current_leader_epoch", "i32"),)},
    {
        0: (("error", "i16"), ("partition", "i32"), ("end_offset", "i64")),
        1: (("error", "i16"), ("partition", "i32"), ("leader_epoch", "i32"), ("end_offset", "i64")),
        2: (("error", "i16"), ("partition", "i32"), ("leader_epoch", "i32"), ("end_offset", "i64")),
    },
)
_LEADER_AND_ISR_V0 = (
    ("broker_epoch", "i64"),
    ("partition", "i32"),
    ("leader", "i32"),
    ("leader_epoch", "i32"),
    ("partition_epoch", "i32"),
    ("isr", "[i32]"),
    ("replicas", "[i32]"),
)
_LEADER_AND_ISR_V1 = _LEADER_AND_ISR_V0 + (("topic", "str"), ("index", "i32"), ("live_brokers", "[i32]"))
CODEC.register(
    ApiKey.LEADER_AND_ISR,
    LeaderAndIsrRequest,
    None,
    {
        0: _LEADER_AND_ISR_V0,
        1: _LEADER_AND_ISR_V1,
        2: _LEADER_AND_ISR_V1 + (("min_insync_replicas", "i32"), ("deleted", "bool")),
    },
    {},
)
CODEC.register(
    ApiKey.UPDATE_METADATA,
    UpdateMetadataRequest,
    None,
    {0: (("metadata_version", "i64"), ("alive_broker_epochs", "[i64]"))},
    {},
)
CODEC.register(
    ApiKey.CREATE_TOPICS,
    CreateTopicsRequest,
    CreateTopicsResponse,
    {
        0: (("topic", "str"), ("partitions", "i32")),
        1: (
            ("topic", "str"),
            ("partitions", "i32"),
            ("replication_factor", "i32"),
            ("min_insync_replicas", "i32"),
            ("validate_only", "bool"),
        ),
    },
    {0: (("error", "i16"),), 1: (("error", "i16"), ("message", "str"), ("partition_id", "i32"))},
)
CODEC.register(
    ApiKey.DELETE_TOPICS, DeleteTopicsRequest, DeleteTopicsResponse, {0: (("topic", "str"),)}, {0: (("error", "i16"),)}
)
_ALTER_V0 = (
    ("broker_id", "i32"),
    ("broker_epoch", "i64"),
    ("partition", "i32"),
    ("leader_epoch", "i32"),
    ("partition_epoch", "i32"),
    ("new_isr", "[i32]"),
)
_ALTER_RESP_V0 = (
    ("error", "i16"),
    ("partition", "i32"),
    ("leader", "i32"),
    ("leader_epoch", "i32"),
    ("partition_epoch", "i32"),
    ("isr", "[i32]"),
)
CODEC.register(
    ApiKey.ALTER_PARTITION,
    AlterPartitionRequest,
    AlterPartitionResponse,
    {0: _ALTER_V0, 1: _ALTER_V0 + (("new_isr_epochs", "[i64]"),)},
    {0: _ALTER_RESP_V0, 1: _ALTER_RESP_V0},
)
CODEC.register(
    ApiKey.BROKER_REGISTRATION,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    {
        0: (("broker_id", "i32"), ("incarnation", "i64")),
        1: (("broker_id", "i32"), ("incarnation", "i64"), ("previous_broker_epoch", "i64")),
    },
    {0: (("error", "i16"), ("broker_epoch", "i64")), 1: (("error", "i16"), ("broker_epoch", "i64"))},
)
CODEC.register(
    ApiKey.ALLOCATE_PRODUCER_IDS,
    AllocateProducerIdsRequest,
    AllocateProducerIdsResponse,
    {0: (("broker_id", "i32"), ("broker_epoch", "i64"))},
    {0: (("error", "i16"), ("producer_id_start", "i64"), ("producer_id_len", "i32"))},
)
_HEARTBEAT_V0 = (("broker_id", "i32"), ("broker_epoch", "i64"), ("leader_epoch", "i32"), ("partition_epoch", "i32"))
CODEC.register(
    ApiKey.BROKER_HEARTBEAT,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    {0: _HEARTBEAT_V0, 1: _HEARTBEAT_V0 + (("partition_epochs", "[i32]"),)},
    {
        0: (("error", "i16"), ("is_fenced", "bool")),
        1: (("error", "i16"), ("is_fenced", "bool"), ("live_brokers", "[i32]"), ("is_caught_up", "bool")),
    },
)
