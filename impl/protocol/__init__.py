"""The wire protocol: Kafka-named requests and responses, encoded by a compact versioned codec."""
from .codec import REQUEST, RESPONSE, DecodeError, Header, WireRecord
from .errors import Errors
from .messages import (
    CODEC, CONSUMER_REPLICA_ID, AllocateProducerIdsRequest, AllocateProducerIdsResponse, AlterPartitionRequest, AlterPartitionResponse, ApiKey,
    BrokerHeartbeatRequest, BrokerHeartbeatResponse, BrokerRegistrationRequest,
    BrokerRegistrationResponse, CreateTopicsRequest, CreateTopicsResponse, DeleteTopicsRequest, DeleteTopicsResponse, FetchRequest, FetchResponse, LeaderAndIsrRequest,
    OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, ProduceRequest, ProduceResponse,
)

__all__ = [
    "REQUEST", "RESPONSE", "DecodeError", "Header", "WireRecord", "Errors", "CODEC",
    "CONSUMER_REPLICA_ID", "AllocateProducerIdsRequest", "AllocateProducerIdsResponse", "AlterPartitionRequest", "AlterPartitionResponse", "ApiKey",
    "BrokerHeartbeatRequest", "BrokerHeartbeatResponse", "BrokerRegistrationRequest",
    "BrokerRegistrationResponse", "CreateTopicsRequest", "CreateTopicsResponse", "DeleteTopicsRequest", "DeleteTopicsResponse", "FetchRequest", "FetchResponse", "LeaderAndIsrRequest",
    "OffsetForLeaderEpochRequest", "OffsetForLeaderEpochResponse", "ProduceRequest", "ProduceResponse",
]
