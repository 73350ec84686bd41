"""KafkaApis: the Kafka requests a broker answers, each from its ReplicaManager.

Supported (each handler registered with its versions: ``registry``): ApiVersions, Metadata (leader epochs from v7,
offline replicas,
topics auto-created as ``auto.create.topics.enable`` does), Produce (record batches v2 stored as the
client wrote them, acks 0/1/all with ``min.insync.replicas``, the idempotent producer's sequence
checks), Fetch (below the HW, KIP-320's current leader epoch, long poll by ``max_wait_ms`` /
``min_bytes``, no fetch sessions: KIP-227 lets a broker decline one), ListOffsets, OffsetForLeaderEpoch
(a consumer's truncation check, KIP-320), InitProducerId (idempotence; transactional ids are
refused), FindCoordinator and the group coordinator's requests (consumer groups and transactions
refused so that clients fail at once: ``unsupported``) and the admin requests CreateTopics,
DeleteTopics and DescribeConfigs (``admin``).

A handler returns its response, or ``None`` when it answers later through ``respond`` (a produce
waiting for acks=all, a fetch waiting for data), or ``NO_RESPONSE`` (a produce with acks=0).
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.consumer.offsets import (
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
)
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse
from kafka.protocol.producer.transaction import InitProducerIdRequest, InitProducerIdResponse

from ..controller import CONTROLLER_ID, valid_topic_name
from ..protocol import ApiKey as InternalApiKey
from ..protocol import CreateTopicsRequest, Errors
from ..replication.replica_manager import ReplicaManager
from ..storage import CorruptRecordError, iter_batches
from .admin import ZERO_UUID, AdminApis
from .producer_ids import ProducerIdManager
from .registry import APIS, bind, serves
from .settings import KafkaSettings
from .unsupported import TRANSACTION, CoordinatorApis

log = logging.getLogger(__name__)

NO_RESPONSE = object()
EARLIEST_TIMESTAMP, LATEST_TIMESTAMP = -2, -1
CONSUMER_REPLICA_ID, DEBUGGING_REPLICA_ID = -1, -2  # ListOffsetsRequest's replica ids


API_VERSIONS = 18

Respond = Callable[[Any], None]


class KafkaApis:
    """Kafka's KafkaApis for one broker."""

    def __init__(self, broker_id: int, replica_manager: ReplicaManager, settings: KafkaSettings) -> None:
        self.broker_id = broker_id
        self.rm = replica_manager
        self.settings = settings
        self.producer_ids = ProducerIdManager(broker_id, replica_manager.endpoint, lambda: replica_manager.broker_epoch)
        self.coordinator = CoordinatorApis(broker_id, settings.listeners.get(broker_id, ("", -1)))
        self.admin = AdminApis(broker_id, replica_manager, settings)
        self.handlers = bind(self, self.coordinator, self.admin)

    def handle(self, api_key: int, version: int, request: Any, respond: Respond) -> Any:
        try:
            return self.handlers[api_key](request, version, respond)
        except OSError as exc:  # the broker's log directory went offline: no answer, it halts
            if self.rm.endpoint.on_io_error is None:
                raise
            self.rm.endpoint.on_io_error(exc)
            return NO_RESPONSE

    # -- ApiVersions, Metadata ------------------------------------------------------------------
    @staticmethod
    def api_versions_response(version: int, error: int = Errors.NONE) -> ApiVersionsResponse:
        """Every API served with its versions; with UNSUPPORTED_VERSION (an ApiVersions request too
        new for this broker, KIP-511) only ApiVersions' own, as Kafka's
        ``ApiVersionsRequest.getErrorResponse`` answers: the client retries with a version from it."""
        keys = [
            ApiVersionsResponse.ApiVersion(api_key=k, min_version=api.advertised_lowest, max_version=api.highest)
            for k, api in sorted(APIS.items())
            if error != Errors.UNSUPPORTED_VERSION or k == API_VERSIONS
        ]
        return ApiVersionsResponse(version=version, error_code=error, api_keys=keys, throttle_time_ms=0)

    @serves(18, ApiVersionsRequest, ApiVersionsResponse, (0, 3))
    def handle_api_versions(self, req: ApiVersionsRequest, version: int, respond: Respond) -> Any:
        return self.api_versions_response(version)

    @serves(3, MetadataRequest, MetadataResponse, (1, 12))
    def handle_metadata(self, req: MetadataRequest, version: int, respond: Respond) -> MetadataResponse:
        names = self.rm.names
        topics = sorted({t for t, _ in names}) if req.topics is None else [t.name for t in req.topics]
        allow_create = req.allow_auto_topic_creation if version >= 4 else True
        live = self.rm.live_brokers or (self.broker_id,)  # before the controller first said: itself
        Topic = MetadataResponse.MetadataResponseTopic
        out = []
        for name in topics:
            indexes = sorted(i for t, i in names if t == name)
            if name is None or not indexes:
                out.append(
                    Topic(
                        error_code=self._unknown_topic(name, allow_create),
                        name=name,
                        topic_id=ZERO_UUID,
                        is_internal=False,
                        partitions=[],
                    )
                )
                continue
            partitions = [self._partition_metadata(names[(name, i)], i, live) for i in indexes]
            out.append(
                Topic(
                    error_code=Errors.NONE,
                    name=name,
                    topic_id=self.admin.topic_id_of(name),
                    is_internal=False,
                    partitions=partitions,
                )
            )
        brokers = [
            MetadataResponse.MetadataResponseBroker(
                node_id=b, host=self.settings.listeners[b][0], port=self.settings.listeners[b][1], rack=None
            )
            for b in sorted(live)
            if b in self.settings.listeners
        ]
        # KRaft clusters name a live broker as the controller: clients send it admin requests
        return MetadataResponse(
            version=version,
            throttle_time_ms=0,
            brokers=brokers,
            cluster_id=self.settings.cluster_id,
            controller_id=min(live),
            topics=out,
            error_code=Errors.NONE,
        )

    def _unknown_topic(self, name: str | None, allow_create: bool) -> int:
        """auto.create.topics.enable: ask the controller for it and answer LEADER_NOT_AVAILABLE (the
        client asks again), as Kafka does."""
        if name is None:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION
        if not valid_topic_name(name):
            return Errors.INVALID_TOPIC_EXCEPTION
        if not (allow_create and self.settings.auto_create_topics):
            return Errors.UNKNOWN_TOPIC_OR_PARTITION
        self.rm.endpoint.send_request(
            CONTROLLER_ID,
            InternalApiKey.CREATE_TOPICS,
            0,
            CreateTopicsRequest(name, self.settings.num_partitions),
            lambda resp: None,
        )
        return Errors.LEADER_NOT_AVAILABLE

    def _partition_metadata(self, partition_id: int, index: int, live: tuple[int, ...]):
        p = self.rm.partitions[partition_id]
        return MetadataResponse.MetadataResponseTopic.MetadataResponsePartition(
            error_code=Errors.NONE if p.leader >= 0 else Errors.LEADER_NOT_AVAILABLE,
            partition_index=index,
            leader_id=p.leader,
            leader_epoch=p.leader_epoch,
            replica_nodes=list(p.replicas),
            isr_nodes=list(p.isr),
            offline_replicas=[r for r in p.replicas if r not in live],
        )

    # -- Produce ----------------------------------------------------------------------------------
    # advertised from v0 as Kafka 4 does (KAFKA-18659): older librdkafka turns compression off when a
    # broker's Produce range does not reach v2, and v0-v2 requests are refused all the same
    @serves(0, ProduceRequest, ProduceResponse, (3, 9), advertised_lowest=0)
    def handle_produce(self, req: ProduceRequest, version: int, respond: Respond) -> Any:
        """Each partition's one batch to its leader's log (ReplicaManager.append_records); the
        response waits for every partition's acks, as one DelayedProduce covers them all."""
        parts = [(t.name, p.index, p.records) for t in req.topic_data for p in t.partition_data]
        results: dict[tuple[str, int], tuple[int, int]] = {}
        acks = req.acks

        def response() -> ProduceResponse:
            Topic = ProduceResponse.TopicProduceResponse
            by_topic: dict[str, list] = {}
            for (name, index), (error, offset) in results.items():
                by_topic.setdefault(name, []).append(
                    Topic.PartitionProduceResponse(
                        index=index,
                        error_code=error,
                        base_offset=offset,
                        log_append_time_ms=-1,
                        log_start_offset=self._log_start(name, index),
                        record_errors=[],
                        error_message=None,
                    )
                )
            return ProduceResponse(
                version=version,
                throttle_time_ms=0,
                responses=[Topic(name=name, partition_responses=ps) for name, ps in by_topic.items()],
            )

        def done(key: tuple[str, int], error: int, offset: int) -> None:
            results[key] = (error, offset)
            if len(results) == len(parts) and acks != 0 and waiting:
                respond(response())

        waiting = False
        for name, index, records in parts:
            key = (name, index)
            if req.transactional_id is not None:
                results[key] = (Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1)
                continue
            result = self._append(key, acks, req.timeout_ms, records, lambda e, o, k=key: done(k, e, o))
            if result is not None:
                results[key] = result
        if acks == 0:
            return NO_RESPONSE
        if len(results) == len(parts):
            return response()
        waiting = True
        return None

    def _append(
        self,
        key: tuple[str, int],
        acks: int,
        timeout_ms: int,
        records: bytes | None,
        respond: Callable[[int, int], None],
    ) -> tuple[int, int] | None:
        partition_id = self.rm.names.get(key)
        if partition_id is None:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION, -1
        try:
            batches = list(iter_batches(records or b""))
        except CorruptRecordError:
            return Errors.CORRUPT_MESSAGE, -1
        if len(batches) != 1:  # v3+: exactly one record batch per partition
            return Errors.INVALID_RECORD, -1
        batch = batches[0]
        if batch.is_transactional:
            return Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1
        return self.rm.append_records(
            partition_id,
            acks,
            timeout_ms,
            b"",
            respond,
            lambda p: p.append_batch_to_leader(batch),
            records=batch.record_count,
        )

    def _log_start(self, name: str, index: int) -> int:
        partition_id = self.rm.names.get((name, index))
        return -1 if partition_id is None else self.rm.partitions[partition_id].log.log_start_offset

    # -- Fetch ------------------------------------------------------------------------------------
    @serves(1, FetchRequest, FetchResponse, (4, 12))
    def handle_fetch(self, req: FetchRequest, version: int, respond: Respond) -> Any:
        """Records below the HW of each partition; with nothing to return yet, the fetch waits in
        the DelayedFetch purgatory up to ``max_wait_ms`` for ``min_bytes``."""
        if version >= 7 and req.session_id != 0:  # never handed out (KIP-227: sessions are optional)
            return FetchResponse(
                version=version,
                throttle_time_ms=0,
                error_code=Errors.FETCH_SESSION_ID_NOT_FOUND,
                session_id=0,
                responses=[],
            )
        wanted = [
            (
                t.topic,
                p.partition,
                p.fetch_offset,
                p.current_leader_epoch if version >= 9 else -1,
                p.partition_max_bytes,
            )
            for t in req.topics
            for p in t.partitions
        ]

        def read() -> tuple[FetchResponse, int, bool]:
            budget, size, failed = max(req.max_bytes, 1), 0, False
            by_topic: dict[str, list] = {}
            for name, index, offset, epoch, max_bytes in wanted:
                data = self._read(name, index, offset, epoch, max(1, min(max_bytes, budget)))
                records = data["records"] if size == 0 or len(data["records"]) <= budget else b""
                size += len(records)
                budget = max(0, budget - len(records))
                failed = failed or data["error_code"] != Errors.NONE
                by_topic.setdefault(name, []).append(
                    FetchResponse.FetchableTopicResponse.PartitionData(
                        partition_index=index,
                        aborted_transactions=None,
                        preferred_read_replica=-1,
                        **{**data, "records": records},
                    )
                )
            resp = FetchResponse(
                version=version,
                throttle_time_ms=0,
                error_code=Errors.NONE,
                session_id=0,
                responses=[
                    FetchResponse.FetchableTopicResponse(topic=name, partitions=ps) for name, ps in by_topic.items()
                ],
            )
            return resp, size, failed

        resp, size, failed = read()
        if failed or size >= req.min_bytes or req.max_wait_ms <= 0 or not wanted:
            return resp

        def try_complete(expired: bool) -> bool:
            again, size, failed = read()
            if not (expired or failed or size >= req.min_bytes):
                return False
            respond(again)
            return True

        self.rm.fetch_purgatory.park(req.max_wait_ms, try_complete)
        return None

    def _read(self, name: str, index: int, offset: int, epoch: int, max_bytes: int) -> dict:
        partition_id = self.rm.names.get((name, index))
        if partition_id is None:
            return dict(
                error_code=Errors.UNKNOWN_TOPIC_OR_PARTITION,
                high_watermark=-1,
                last_stable_offset=-1,
                log_start_offset=-1,
                records=b"",
            )
        r = self.rm.read_committed(partition_id, offset, epoch, max_bytes)
        # no transactions: the last stable offset is the HW
        return dict(
            error_code=r.error,
            high_watermark=r.high_watermark,
            last_stable_offset=r.high_watermark,
            log_start_offset=r.log_start_offset,
            records=r.records,
        )

    # -- ListOffsets, OffsetForLeaderEpoch --------------------------------------------------------
    @serves(2, ListOffsetsRequest, ListOffsetsResponse, (1, 6))
    def handle_list_offsets(self, req: ListOffsetsRequest, version: int, respond: Respond) -> Any:
        """Earliest (the log start offset), latest (the HW, with the current leader epoch, as a
        consumer may read no further) or the first offset at or after a timestamp, below the HW."""
        Topic = ListOffsetsResponse.ListOffsetsTopicResponse
        topics = []
        for t in req.topics:
            parts = []
            for q in t.partitions:
                error, timestamp, offset, epoch = self._list_offset(
                    t.name,
                    q.partition_index,
                    q.timestamp,
                    q.current_leader_epoch if version >= 4 else -1,
                    req.replica_id,
                )
                parts.append(
                    Topic.ListOffsetsPartitionResponse(
                        partition_index=q.partition_index,
                        error_code=error,
                        timestamp=timestamp,
                        offset=offset,
                        leader_epoch=epoch,
                    )
                )
            topics.append(Topic(name=t.name, partitions=parts))
        return ListOffsetsResponse(version=version, throttle_time_ms=0, topics=topics)

    def _list_offset(
        self, name: str, index: int, timestamp: int, current_epoch: int, replica_id: int = CONSUMER_REPLICA_ID
    ) -> tuple[int, int, int, int]:
        # KafkaApis.handleListOffsetRequest: a debugging tool (replica -2) may ask any replica, not only the
        # leader; only a consumer (replica -1) is bounded by the HW, any other reads to the log end
        p, error = self._leader(name, index, current_epoch, only_leader=replica_id != DEBUGGING_REPLICA_ID)
        if p is None:
            return error, -1, -1, -1
        log = p.log
        if timestamp == EARLIEST_TIMESTAMP:
            start = log.log_start_offset
            return Errors.NONE, -1, start, log.leader_epoch_cache.epoch_for_offset(start)
        if timestamp == LATEST_TIMESTAMP:
            end = p.high_watermark if replica_id == CONSUMER_REPLICA_ID else log.log_end_offset
            return Errors.NONE, -1, end, p.leader_epoch
        if timestamp < 0:
            return Errors.INVALID_REQUEST, -1, -1, -1
        offset = log.offset_for_timestamp(timestamp)
        if offset is None or offset >= p.high_watermark:
            return Errors.NONE, -1, -1, -1
        batch = log.read(offset, 1).batches[0]
        found = next(r for r in batch.records() if r.offset >= offset)
        return Errors.NONE, found.timestamp_ms, found.offset, batch.partition_leader_epoch

    @serves(23, OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, (2, 4))
    def handle_offset_for_leader_epoch(self, req: OffsetForLeaderEpochRequest, version: int, respond: Respond) -> Any:
        """Where an epoch ends on the leader (KIP-279's answer), so a consumer finds out whether the
        log it read from was truncated (KIP-320)."""
        Result = OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult
        topics = []
        for t in req.topics:
            parts = []
            for q in t.partitions:
                p, error = self._leader(t.topic, q.partition, q.current_leader_epoch)
                epoch, end = p.end_offset_for(q.leader_epoch) if p is not None else (-1, -1)
                parts.append(
                    Result.EpochEndOffset(error_code=error, partition=q.partition, leader_epoch=epoch, end_offset=end)
                )
            topics.append(Result(topic=t.topic, partitions=parts))
        return OffsetForLeaderEpochResponse(version=version, throttle_time_ms=0, topics=topics)

    def _leader(self, name: str, index: int, current_epoch: int, only_leader: bool = True):
        """(the partition, NONE) if this broker leads it (or, not ``only_leader``, holds it) in
        ``current_epoch`` (-1: any), else (None, error)."""
        partition_id = self.rm.names.get((name, index))
        if partition_id is None:
            return None, Errors.UNKNOWN_TOPIC_OR_PARTITION
        p = self.rm.partitions[partition_id]
        if only_leader and not p.is_leader:
            return None, Errors.NOT_LEADER_OR_FOLLOWER
        error = p.check_leader_epoch(current_epoch)
        return (p, Errors.NONE) if error == Errors.NONE else (None, error)

    # -- InitProducerId ---------------------------------------------------------------------------
    @serves(22, InitProducerIdRequest, InitProducerIdResponse, (0, 4))
    def handle_init_producer_id(self, req: InitProducerIdRequest, version: int, respond: Respond) -> Any:
        """A new producer id, epoch 0, for an idempotent producer (COORDINATOR_LOAD_IN_PROGRESS while
        the broker waits for a block of ids: ProducerIdManager); no transactions here."""

        def answer(error: int, producer_id: int) -> InitProducerIdResponse:
            return InitProducerIdResponse(
                version=version,
                throttle_time_ms=0,
                error_code=error,
                producer_id=producer_id,
                producer_epoch=0 if producer_id >= 0 else -1,
            )

        if req.transactional_id is not None:
            return answer(self.coordinator.refuse(TRANSACTION, req.transactional_id, req)[0], -1)
        return answer(*self.producer_ids.generate())
