"""ReplicaManager: a broker's request handling for the partition (Kafka's ReplicaManager + KafkaApis).

Produce goes to the leader's log with acks 0/1/all and ``min.insync.replicas``; acks=all waits in
the DelayedProduce purgatory. Fetch serves followers (updating their state on the leader) and
consumers (records below the HW). OffsetsForLeaderEpoch answers by the request's version: v0 as
Kafka 0.11 (KIP-101), v1+ with the epoch (KIP-279). LeaderAndIsr makes this replica leader or
follower. ISR changes go to the controller as AlterPartition (AlterPartitionManager).

In auto mode the ISR is also managed on a timer: ``maybe_shrink_isr`` every half lag time, and
``maybe_expand_isr`` after each follower fetch, as Kafka does.
"""
from __future__ import annotations

from typing import Any, Callable

from ..controller import CONTROLLER_ID
from ..network import NodeEndpoint
from ..protocol import (
    AlterPartitionRequest, AlterPartitionResponse, ApiKey, Errors, FetchRequest, FetchResponse, Header,
    LeaderAndIsrRequest, OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, ProduceRequest,
    ProduceResponse,
)
from ..runtime import Scheduler
from .config import ClusterConfig
from .delayed_produce import DelayedProducePurgatory
from .fetcher import ReplicaFetcher
from .partition import Partition
from ..storage import Log, RecordTooLargeError, StorageError


class ReplicaManager:
    """Request handling for the partition on one broker."""

    def __init__(self, broker_id: int, config: ClusterConfig, log: Log, high_watermark: int,
                 scheduler: Scheduler, endpoint: NodeEndpoint, auto: bool = False,
                 on_event: Callable[..., None] | None = None) -> None:
        self.broker_id = broker_id
        self.config = config
        self.scheduler = scheduler
        self.endpoint = endpoint
        self.auto = auto
        self.broker_epoch = -1
        self.first_broker_epoch = -1  # of this process's first registration
        self.purgatory = DelayedProducePurgatory(scheduler)
        self.partition = Partition(broker_id, config, log, high_watermark, scheduler, self.purgatory,
                                   self._send_alter_partition, lambda: self.broker_epoch, on_event)
        self.fetcher = ReplicaFetcher(self.partition, endpoint, scheduler, auto,
                                      config.replica_fetch_backoff_ms)
        endpoint.handlers.update({
            ApiKey.PRODUCE: self.handle_produce,
            ApiKey.FETCH: self.handle_fetch,
            ApiKey.OFFSET_FOR_LEADER_EPOCH: self.handle_offsets_for_leader_epoch,
            ApiKey.LEADER_AND_ISR: self.handle_leader_and_isr,
        })
        self._isr_timer = scheduler.schedule(config.lag_check_interval_ms, self._isr_check) if auto else None

    def shutdown(self) -> None:
        """Stop timers; parked produces are abandoned (their connections die with the process)."""
        self.fetcher.stop()
        if self._isr_timer is not None:
            self._isr_timer.cancel()
        for op in self.purgatory.pending:
            op.timer.cancel()
        self.purgatory.pending = []

    # -- request handlers ---------------------------------------------------------------------
    def handle_produce(self, src: int, header: Header, req: ProduceRequest) -> Any:
        """appendRecords: leader check, min.insync.replicas for acks=all, append the records as one
        batch, then acks (acks=all waits for the HW to pass the whole batch)."""
        p = self.partition
        if req.acks not in (0, 1, -1):
            return ProduceResponse(Errors.INVALID_REQUIRED_ACKS, 0, -1)
        if not req.records:
            return ProduceResponse(Errors.INVALID_REQUEST, 0, -1)  # a batch has at least one record
        if not p.is_leader:
            return ProduceResponse(Errors.NOT_LEADER_OR_FOLLOWER, 0, -1)
        if req.acks == -1 and len(p.isr) < self.config.min_insync_replicas:
            return ProduceResponse(Errors.NOT_ENOUGH_REPLICAS, 0, -1)
        try:
            info = p.append_records_to_leader([(r.key, r.value) for r in req.records])
        except RecordTooLargeError:
            return ProduceResponse(Errors.MESSAGE_TOO_LARGE, 0, -1)
        except StorageError:  # the log refused the batch (InvalidRecordException and kin)
            return ProduceResponse(Errors.INVALID_RECORD, 0, -1)
        if req.acks == -1:
            endpoint = self.endpoint
            self.purgatory.park(info.first_offset, info.record_count, req.records[0].value, req.timeout_ms,
                                lambda error, off: endpoint.respond(src, header, ProduceResponse(error, 0, off)))
        p.maybe_increment_leader_hw()  # after every leader append, as Kafka does, whatever the acks
        if req.acks == 1:
            return ProduceResponse(Errors.NONE, 0, info.first_offset)
        return None  # acks=0: no response; acks=all: answered from the purgatory

    def handle_fetch(self, src: int, header: Header, req: FetchRequest) -> FetchResponse:
        p = self.partition
        if not p.is_leader:
            return FetchResponse(Errors.NOT_LEADER_OR_FOLLOWER)
        error = p.check_leader_epoch(req.current_leader_epoch)
        if error != Errors.NONE:
            return FetchResponse(error)
        if req.replica_id < 0:  # a consumer
            error, records = p.read_committed(req.fetch_offset)
            hw = p.high_watermark if error == Errors.NONE else -1
            return FetchResponse(error, 0, hw, 0, p.log.log_end_offset, -1, -1, records)
        resp = p.fetch_from_follower(req)
        if self.auto:
            p.maybe_expand_isr()
        return resp

    def handle_offsets_for_leader_epoch(self, src: int, header: Header,
                                        req: OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse:
        p = self.partition
        if not p.is_leader:
            return OffsetForLeaderEpochResponse(Errors.NOT_LEADER_OR_FOLLOWER)
        if header.api_version >= 2:
            error = p.check_leader_epoch(req.current_leader_epoch)
            if error != Errors.NONE:
                return OffsetForLeaderEpochResponse(error)
        if header.api_version == 0:  # Kafka 0.11: an end offset only
            end = p.log.leader_epoch_cache.end_offset_for_v0(req.leader_epoch, p.log.log_end_offset)
            return OffsetForLeaderEpochResponse(Errors.NONE, 0, req.leader_epoch if end >= 0 else -1, end)
        epoch, end = p.end_offset_for(req.leader_epoch)
        return OffsetForLeaderEpochResponse(Errors.NONE, 0, epoch, end)

    def registered(self, broker_epoch: int) -> None:
        """The controller gave this process a broker epoch (at start, or on coming back after it was fenced)."""
        self.broker_epoch = broker_epoch
        if self.first_broker_epoch < 0:
            self.first_broker_epoch = broker_epoch

    def handle_leader_and_isr(self, src: int, header: Header, req: LeaderAndIsrRequest) -> None:
        """becomeLeaderOrFollower: apply newer partition state; start or stop the fetcher. One sent
        to an earlier registration of this same process (before it was fenced and came back) still
        counts: whether its state is newer is judged by its epochs."""
        if src != CONTROLLER_ID or self.first_broker_epoch < 0 or req.broker_epoch < self.first_broker_epoch:
            return None  # not from the controller, or meant for an earlier process of this broker
        self.apply_leader_and_isr(req)
        return None

    def apply_leader_and_isr(self, req: LeaderAndIsrRequest) -> None:
        p = self.partition
        if p.apply_leader_and_isr(req, self.fetcher.stop) == "follower":
            self.fetcher.reset()

    # -- ISR changes --------------------------------------------------------------------------
    def _send_alter_partition(self, leader_epoch: int, partition_epoch: int, isr: tuple, epochs: tuple) -> None:
        version = self.config.variant.alter_partition_version
        req = AlterPartitionRequest(self.broker_id, self.broker_epoch, 0, leader_epoch, partition_epoch, isr,
                                    epochs if version else ())
        self.endpoint.send_request(CONTROLLER_ID, ApiKey.ALTER_PARTITION, version, req,
                                   lambda resp: self._on_alter_partition(resp, leader_epoch))

    def _on_alter_partition(self, resp: AlterPartitionResponse | None, request_leader_epoch: int) -> None:
        """AlterPartitionManager's callback, bound to the request (and the leader epoch) it answers."""
        p = self.partition
        if resp is None:  # lost: AlterPartitionManager resends until it gets an answer
            p.resend_pending_isr(request_leader_epoch)
        else:
            p.handle_alter_partition_response(resp.error, resp.leader_epoch, resp.isr, resp.partition_epoch,
                                              request_leader_epoch)

    def _isr_check(self) -> None:
        """Kafka's isr-expiration task; expansion happens only on a follower's fetch."""
        self.partition.maybe_shrink_isr()
        self._isr_timer = self.scheduler.schedule(self.config.lag_check_interval_ms, self._isr_check)
