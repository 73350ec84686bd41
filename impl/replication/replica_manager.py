"""ReplicaManager: a broker's request handling for the partition (Kafka's ReplicaManager + KafkaApis).

Produce goes to the leader's log with acks 0/1/all and ``min.insync.replicas``; acks=all waits in
the DelayedProduce purgatory. Fetch serves followers (updating their state on the leader) and
consumers (records below the HW). OffsetsForLeaderEpoch answers by the request's version: v0 as
Kafka 0.11 (KIP-101), v1+ with the epoch (KIP-279). LeaderAndIsr makes this replica leader or
follower. ISR changes go to the controller as AlterPartition (AlterPartitionManager).

In auto mode the ISR is also managed on a timer: ``maybe_shrink_isr`` every half lag time, and
``maybe_expand_isr`` after each follower fetch, as Kafka does.

A broker hosts any number of partitions, each its own Partition, log, DelayedProduce purgatory and
ReplicaFetcher, replicated independently; requests name the partition by its id. A partition is
created when LeaderAndIsr first names it (ReplicaManager.getOrCreatePartition), its log opened by
``open_log``, with its topic's ``min.insync.replicas`` (LeaderAndIsr v2); one whose topic was
deleted is stopped and its log deleted by ``delete_log`` (ReplicaManager.stopPartitions with
deleteLocalLog, as a KRaft broker applies a topic's removal). Single-partition runs drive the first
one, ``partition`` and ``fetcher``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

from ..controller import CONTROLLER_ID
from ..network import NodeEndpoint
from ..protocol import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    ApiKey,
    Errors,
    FetchRequest,
    FetchResponse,
    Header,
    LeaderAndIsrRequest,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    ProduceRequest,
    ProduceResponse,
    UpdateMetadataRequest,
)
from ..runtime import Scheduler
from ..storage import CorruptRecordError, Log, LogAppendInfo, RecordTooLargeError, StorageError
from ..storage.log import DEFAULT_FETCH_MAX_BYTES
from ..storage.producer_state import DuplicateBatch, SequenceError
from .config import ClusterConfig
from .delayed_fetch import DelayedFetchPurgatory
from .delayed_produce import DelayedProducePurgatory
from .fetcher import ReplicaFetcher
from .metadata_cache import MetadataCache
from .partition import Partition


class HeldFetch:
    """A follower's Fetch read and not yet completed (``split_fetch_handling``): the request, the
    partition and follower state the read found, what it read and when; ``handle`` is the caller's
    (the simulation's envelope of the request)."""

    __slots__ = ("src", "header", "req", "partition", "follower", "read", "fetch_time_ms", "handle")

    def __init__(self, src, header, req, partition, follower, read, fetch_time_ms, handle) -> None:
        self.src, self.header, self.req, self.partition = src, header, req, partition
        self.follower, self.read, self.fetch_time_ms, self.handle = follower, read, fetch_time_ms, handle

    @property
    def hw_only(self) -> bool:
        """Only the HW is read yet (``read_fetch_hw``): the LEO and the batches are read next."""
        return self.read.info is None

    @property
    def detached(self) -> bool:
        """The partition no longer holds the follower state the read found (this broker became a
        follower since): the update reaches nothing."""
        return self.partition.followers.get(self.req.replica_id) is not self.follower


# (partition id, topic, index) -> the partition's log and its checkpointed HW
OpenLog = Callable[[int, str, int], tuple[Log, int]]
# (partition id, topic, index, its open log or None): the partition's log and checkpointed HW deleted
DeleteLog = Callable[[int, str, int, Log | None], None]


class ReplicaManager:
    """Request handling for the partitions of one broker."""

    def __init__(
        self,
        broker_id: int,
        config: ClusterConfig,
        open_log: OpenLog,
        scheduler: Scheduler,
        endpoint: NodeEndpoint,
        auto: bool = False,
        on_event: Callable[..., None] | None = None,
        kafka: bool = False,
        events=None,
        delete_log: DeleteLog | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.events = events  # an EventLog (isrcheck.impl.eventlog) when the run logs its events
        self.kafka = kafka  # hosting many topics' partitions for Kafka clients (events name the partition)
        self.config = config
        self.open_log = open_log
        self.delete_log = delete_log
        self.scheduler = scheduler
        self.endpoint = endpoint
        self.auto = auto
        self.on_event = on_event
        self.broker_epoch = -1
        self.first_broker_epoch = -1  # of this process's first registration
        # KRaft's restart (start_before_registration): up on the replayed metadata log, it serves no
        # request (BrokerServer enables request processing only once caught up after registration)
        # and proposes no ISR change until the controller's state after its registration is applied
        self.starting = False
        self.partitions: dict[int, Partition] = {}
        # DefaultAlterPartitionManager: the partitions with an AlterPartition sent and not yet answered
        self.unanswered_alter_partitions: set[int] = set()
        self.fetchers: dict[int, ReplicaFetcher] = {}
        self.names: dict[tuple[str, int], int] = {}  # (topic, index) -> partition id
        self.deleted: dict[int, int] = {}  # partition id of a deleted topic -> the partition epoch of its removal
        self.topic_min_insync_replicas: dict[str, int] = {}  # a hosted topic's own min.insync.replicas, if set
        self.live_brokers: tuple[int, ...] = ()  # as of the last LeaderAndIsr v1 or heartbeat answer
        self.metadata_cache = MetadataCache()  # the brokers' registrations its leaders read (metadata_cache)
        self.fetch_purgatory = DelayedFetchPurgatory(scheduler)
        # split_fetch_handling: per follower, its Fetch read and not yet completed (read_fetch)
        self.held_fetches: dict[int, HeldFetch] = {}
        # the first partition's (partition id 0), which single-partition runs drive
        self.partition: Partition | None = None
        self.fetcher: ReplicaFetcher | None = None
        self.purgatory: DelayedProducePurgatory | None = None
        endpoint.handlers.update(
            {
                ApiKey.PRODUCE: self.handle_produce,
                ApiKey.FETCH: self.handle_fetch,
                ApiKey.OFFSET_FOR_LEADER_EPOCH: self.handle_offsets_for_leader_epoch,
                ApiKey.LEADER_AND_ISR: self.handle_leader_and_isr,
                ApiKey.UPDATE_METADATA: self.handle_update_metadata,
            }
        )
        # the isr-expiration task's next run, on a fixed-rate lattice (Kafka's scheduleAtFixedRate)
        self._isr_due = scheduler.now_ms() + config.lag_check_interval_ms
        self._isr_timer = scheduler.schedule(config.lag_check_interval_ms, self._isr_check) if auto else None

    def get_or_create_partition(
        self, partition_id: int, topic: str, index: int, min_insync_replicas: int = -1
    ) -> Partition:
        """The hosted partition ``partition_id``, its log opened (and recovered) on first use;
        ``min_insync_replicas`` its topic's (-1: the cluster's)."""
        p = self.partitions.get(partition_id)
        if p is not None:
            return p
        log, high_watermark = self.open_log(partition_id, topic, index)
        purgatory = DelayedProducePurgatory(self.scheduler)
        config = self.config
        if min_insync_replicas > 0:
            config = replace(self.config, min_insync_replicas=min_insync_replicas)
            self.topic_min_insync_replicas[topic] = min_insync_replicas

        def propose_isr(leader_epoch: int, partition_epoch: int, isr: tuple, epochs: tuple) -> None:
            self._send_alter_partition(partition_id, leader_epoch, partition_epoch, isr, epochs)

        p = Partition(
            self.broker_id,
            config,
            log,
            high_watermark,
            self.scheduler,
            purgatory,
            propose_isr,
            lambda: self.broker_epoch,
            self.on_event,
            partition_id,
            f"{topic}-{index}" if self.kafka else None,
            lambda: partition_id in self.unanswered_alter_partitions,
            self.metadata_cache,
        )
        fetcher = ReplicaFetcher(
            p,
            self.endpoint,
            self.scheduler,
            self.auto,
            self.config.replica_fetch_backoff_ms,
            self.config.replica_socket_timeout_ms,
        )
        fetcher.events = self.events
        if self.events is not None:  # an expiry is logged: timeliness' DelayedProduceExpiry reads it
            events = self.events
            purgatory.on_expire = lambda op: events.produce_expired(p, op.required_offset)
        self.partitions[partition_id], self.fetchers[partition_id] = p, fetcher
        self.names[(topic, index)] = partition_id
        if partition_id == 0:
            self.partition, self.fetcher, self.purgatory = p, fetcher, purgatory
        return p

    def shutdown(self) -> None:
        """Stop timers; parked produces and fetches are abandoned (their connections die with the process)."""
        for fetcher in self.fetchers.values():
            fetcher.stop()
        if self._isr_timer is not None:
            self._isr_timer.cancel()
        for p in self.partitions.values():
            for op in p.purgatory.pending:
                op.timer.cancel()
            p.purgatory.pending = []
        self.fetch_purgatory.cancel_all()

    # -- request handlers ---------------------------------------------------------------------
    def handle_produce(self, src: int, header: Header, req: ProduceRequest) -> Any:
        """Produce of the replication protocol: the records as one batch (see ``append_records``)."""
        if self.starting:
            return None  # not serving yet: no answer, as a listener that accepts no connection
        if req.acks not in (0, 1, -1):
            return ProduceResponse(Errors.INVALID_REQUIRED_ACKS, req.partition, -1)
        if not req.records:
            return ProduceResponse(Errors.INVALID_REQUEST, req.partition, -1)  # a batch has at least one record
        endpoint = self.endpoint

        def respond(error: int, offset: int) -> None:
            endpoint.respond(src, header, ProduceResponse(error, req.partition, offset))

        result = self.append_records(
            req.partition,
            req.acks,
            req.timeout_ms,
            req.records[0].value,
            respond,
            lambda p: p.append_records_to_leader([(r.key, r.value) for r in req.records]),
            (src, header.correlation_id),
            len(req.records),
        )
        if result is None or (req.acks == 0 and result[0] == Errors.NONE):
            return None  # acks=0 written: no response; acks=all: answered from the purgatory
        return ProduceResponse(result[0], req.partition, result[1])

    def append_records(
        self,
        partition_id: int,
        acks: int,
        timeout_ms: int,
        first_value: bytes,
        respond: Callable[[int, int], None],
        append: Callable[[Partition], LogAppendInfo],
        msg: tuple[int, int] | None = None,
        records: int = 1,
    ) -> tuple[int, int] | None:
        """ReplicaManager.appendRecords for one partition: leader check, min.insync.replicas for
        acks=all, ``append`` to the leader's log, then acks. Returns (error, base offset), or None
        when acks=all parks the batch in the DelayedProduce purgatory until the HW passes it (or it
        expires), which then calls ``respond(error, base offset)``. A retried batch of an idempotent
        producer is acknowledged with the offset it was first written at. The event log has the
        ``produce`` of ``records`` records (``msg``: the request) when the batch was written or
        refused as docs/steps.md's produce refuses it; a duplicate or a batch the log refuses
        changes nothing there."""
        p = self.partitions.get(partition_id)
        if p is None:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION, -1
        if acks not in (0, 1, -1):
            return Errors.INVALID_REQUIRED_ACKS, -1
        events = self.events
        fields = {"replica": self.broker_id, "acks": acks, "records": records} if events is not None else None
        if not p.is_leader:
            if events is not None:
                events.broker(p, "produce", fields, msg)
            return Errors.NOT_LEADER_OR_FOLLOWER, -1
        if acks == -1 and len(p.isr) < p.config.min_insync_replicas:
            if events is not None:
                events.broker(p, "produce", fields, msg)
            return Errors.NOT_ENOUGH_REPLICAS, -1
        written = True
        try:
            info = append(p)
            offset, count = info.first_offset, info.record_count
        except DuplicateBatch as dup:  # acks=all waits for the HW to pass the original batch
            offset, count, written = dup.base_offset, dup.record_count, False
        except SequenceError as exc:
            return Errors[exc.error], -1
        except RecordTooLargeError:
            return Errors.MESSAGE_TOO_LARGE, -1
        except CorruptRecordError:
            return Errors.CORRUPT_MESSAGE, -1
        except StorageError:  # the log refused the batch (InvalidRecordException and kin)
            return Errors.INVALID_RECORD, -1
        if acks == -1:
            p.purgatory.park(offset, count, first_value, timeout_ms, respond)
        p.maybe_increment_leader_hw()  # after every leader append, as Kafka does, whatever the acks
        if written and events is not None:  # before the fetches this append completes
            # a parked batch names its request's timeout: when DelayedProduce must answer it
            events.broker(p, "produce", {**fields, "timeout": timeout_ms} if acks == -1 else fields, msg)
        self.fetch_purgatory.check()
        return None if acks == -1 else (Errors.NONE, offset)

    def handle_fetch(self, src: int, header: Header, req: FetchRequest) -> FetchResponse | None:
        """A Fetch; with ``replica.fetch.wait.max.ms`` set, a follower's that finds nothing new
        waits in the DelayedFetch purgatory for the leader's next append."""
        if self.starting:
            return None  # not serving yet (see ``starting``)
        read_at = self.scheduler.now_ms()  # the wait counts from the read (before its event is logged)
        resp = self.fetch(req, (src, header.correlation_id) if self.events is not None else None)
        wait_ms = self.config.replica_fetch_wait_max_ms
        if not wait_ms or req.replica_id < 0 or resp.records or resp.error or resp.diverging_end_offset >= 0:
            return resp
        endpoint = self.endpoint

        def try_complete(expired: bool) -> bool:
            # DelayedFetch.tryComplete looks at offsets and leadership without reading; only the
            # completion reads (and moves the follower's state), as the request handled again
            if not (expired or self._fetch_ready(req)):
                return False
            endpoint.respond(
                src, header, self.fetch(req, (src, header.correlation_id) if self.events is not None else None)
            )
            return True

        self.fetch_purgatory.park(read_at + wait_ms - self.scheduler.now_ms(), try_complete)
        return None

    def _fetch_ready(self, req: FetchRequest) -> bool:
        """A parked follower fetch has something to answer: the partition gone or led elsewhere, its
        leader epoch fenced (KIP-320), or records past the fetch offset."""
        p = self.partitions.get(req.partition)
        return (
            p is None
            or not p.is_leader
            or p.check_leader_epoch(req.current_leader_epoch) != Errors.NONE
            or p.log.log_end_offset > req.fetch_offset
        )

    def fetch(self, req: FetchRequest, msg: tuple[int, int] | None = None) -> FetchResponse:
        """readFromLocalLog for one partition: a follower's fetch (its state updated, the HW moved,
        the ISR maybe expanded) or a consumer's (records below the HW). ``msg``: the request's
        (sender, correlation id), for the event log."""
        events = self.events if msg is not None else None
        if req.replica_id < 0:
            resp = self.read_committed(req.partition, req.fetch_offset, req.current_leader_epoch)
            if events is not None and req.partition in self.partitions:
                events.broker(self.partitions[req.partition], "consume", {"replica": self.broker_id}, msg)
            return resp
        p = self.partitions.get(req.partition)
        if p is None:
            return FetchResponse(Errors.UNKNOWN_TOPIC_OR_PARTITION, req.partition)
        error = Errors.NONE if p.is_leader else Errors.NOT_LEADER_OR_FOLLOWER
        if error == Errors.NONE:
            error = p.check_leader_epoch(req.current_leader_epoch)
        if error != Errors.NONE:
            if events is not None:
                events.broker(p, "handle_fetch", {"replica": req.replica_id}, msg)
            return FetchResponse(error, req.partition)
        hw = p.high_watermark
        resp = p.fetch_from_follower(req)
        if events is not None:
            cut = p.cut_batches  # the whole batches of a response cut by bytes
            events.broker(
                p,
                "handle_fetch",
                {"replica": req.replica_id, "batches": cut} if cut else {"replica": req.replica_id},
                msg,
            )
        if self.auto and p.maybe_expand_isr(fetched_by=req.replica_id) and events is not None:
            events.broker(p, "expand_isr", {"replica": self.broker_id}, corr=p.last_isr_request)
        if p.high_watermark != hw:
            self.fetch_purgatory.check()  # consumers waiting for the HW
        return resp

    def read_fetch(self, src: int, header: Header, req: FetchRequest, handle=None) -> str | None:
        """The read of a follower Fetch's handling, held for ``complete_fetch`` (split_fetch_handling:
        Partition.fetchRecords' checks and readRecords, its update left for later). Returns why it
        cannot read (nothing changed then): not leader, a fenced epoch, an answer that reads no
        records (a diverging epoch, an offset out of range), or a read of this follower held already."""
        return self._read_fetch(src, header, req, handle, Partition.read_records)

    def read_fetch_hw(self, src: int, header: Header, req: FetchRequest, handle=None) -> str | None:
        """As ``read_fetch``, reading the HW alone (Partition.readRecords' initialHighWatermark);
        ``read_fetch_batches`` reads the LEO and the batches later."""
        return self._read_fetch(src, header, req, handle, Partition.read_high_watermark)

    def read_fetch_batches(self, follower: int) -> None:
        """The LEO and batches of ``follower``'s held Fetch whose HW alone was read (the rest of
        readRecords): up to the LEO now, the HW read before kept."""
        held = self.held_fetches[follower]
        held.read = held.partition.read_log(held.read, held.req.max_batches)

    def holds_hw_only_read(self) -> bool:
        """A held Fetch's batches are still to read: its reader holds the partition's read lock, for
        which makeLeader and makeFollower (the write lock) wait."""
        return any(h.hw_only for h in self.held_fetches.values())

    def _read_fetch(self, src: int, header: Header, req: FetchRequest, handle, read) -> str | None:
        if self.starting:
            return f"broker {self.broker_id} is not registered yet"
        p = self.partitions.get(req.partition)
        if p is None:
            return f"broker {self.broker_id} hosts no partition {req.partition}"
        if req.replica_id in self.held_fetches:
            return f"broker {self.broker_id} holds a read of follower {req.replica_id}"
        answer = None
        error = Errors.NONE if p.is_leader else Errors.NOT_LEADER_OR_FOLLOWER
        if error == Errors.NONE:
            error = p.check_leader_epoch(req.current_leader_epoch)
        if error == Errors.NONE:
            answer = p.check_follower_fetch(req)
            if answer is not None:
                error = answer.error
        if error != Errors.NONE or answer is not None:
            what = "diverging" if error == Errors.NONE else Errors(error).name
            return f"the fetch request of follower {req.replica_id} reads no records (its answer: {what})"
        self.held_fetches[req.replica_id] = HeldFetch(
            src, header, req, p, p.followers.get(req.replica_id), read(p, req), self.scheduler.now_ms(), handle
        )
        return None

    def complete_fetch(self, follower: int) -> None:
        """The rest of a held Fetch's handling: Partition.updateFollowerFetchState with what was read
        and when, then the answer with what was read (ReplicaManager.fetchMessages)."""
        held = self.held_fetches.pop(follower)
        p, req, read = held.partition, held.req, held.read
        hw = p.high_watermark
        p.update_follower_fetch_state(
            held.follower, req.fetch_offset, req.replica_epoch, held.fetch_time_ms, read.log_end_offset
        )
        self.endpoint.respond(held.src, held.header, read.response(p.partition_id))
        if p.high_watermark != hw:
            self.fetch_purgatory.check()

    def read_committed(
        self,
        partition_id: int,
        fetch_offset: int,
        current_leader_epoch: int = -1,
        max_bytes: int = DEFAULT_FETCH_MAX_BYTES,
    ) -> FetchResponse:
        """A consumer's read of one partition: leader and KIP-320 epoch checks, records below the HW."""
        p = self.partitions.get(partition_id)
        if p is None:
            return FetchResponse(Errors.UNKNOWN_TOPIC_OR_PARTITION, partition_id)
        if not p.is_leader:
            return FetchResponse(Errors.NOT_LEADER_OR_FOLLOWER, partition_id)
        error = p.check_leader_epoch(current_leader_epoch)
        if error != Errors.NONE:
            return FetchResponse(error, partition_id)
        error, records = p.read_committed(fetch_offset, max_bytes)
        hw = p.high_watermark if error == Errors.NONE else -1
        return FetchResponse(error, partition_id, hw, p.log.log_start_offset, p.log.log_end_offset, -1, -1, records)

    def handle_offsets_for_leader_epoch(
        self, src: int, header: Header, req: OffsetForLeaderEpochRequest
    ) -> OffsetForLeaderEpochResponse | None:
        if self.starting:
            return None  # not serving yet (see ``starting``)
        p = self.partitions.get(req.partition)
        if p is None:
            return OffsetForLeaderEpochResponse(Errors.UNKNOWN_TOPIC_OR_PARTITION, req.partition)
        resp = self._offsets_for_leader_epoch(p, header, req)
        if self.events is not None:
            self.events.broker(p, "handle_fetch", {"replica": req.replica_id}, (src, header.correlation_id))
        return resp

    @staticmethod
    def _offsets_for_leader_epoch(
        p: Partition, header: Header, req: OffsetForLeaderEpochRequest
    ) -> OffsetForLeaderEpochResponse:
        if not p.is_leader:
            return OffsetForLeaderEpochResponse(Errors.NOT_LEADER_OR_FOLLOWER)
        if header.api_version >= 2:
            error = p.check_leader_epoch(req.current_leader_epoch)
            if error != Errors.NONE:
                return OffsetForLeaderEpochResponse(error)
        if header.api_version == 0:  # Kafka 0.11: an end offset only
            end = p.log.leader_epoch_cache.end_offset_for_v0(req.leader_epoch, p.log.log_end_offset)
            return OffsetForLeaderEpochResponse(Errors.NONE, req.partition, req.leader_epoch if end >= 0 else -1, end)
        epoch, end = p.end_offset_for(req.leader_epoch)
        return OffsetForLeaderEpochResponse(Errors.NONE, req.partition, epoch, end)

    def registered(self, broker_epoch: int) -> None:
        """The controller gave this process a broker epoch (at start, or on coming back after it was fenced)."""
        self.broker_epoch = broker_epoch
        if self.first_broker_epoch < 0:
            self.first_broker_epoch = broker_epoch

    def handle_update_metadata(self, src: int, header: Header, req: UpdateMetadataRequest) -> None:
        """KRaftMetadataCachePublisher.onMetadataUpdate: the controller's registrations into the
        metadata cache (metadata_cache; an older one, overtaken on the way, is ignored)."""
        if src == CONTROLLER_ID and self.config.metadata_cache:
            self.update_metadata_cache(req.alive_broker_epochs, req.metadata_version)
        return None

    def update_metadata_cache(self, alive_broker_epochs, metadata_version: int = -1, logged: bool = True) -> None:
        """KRaftMetadataCache.setImage with the brokers' registrations (per broker id its broker epoch,
        -1 fenced); a change is logged as ``update_metadata_cache`` unless not ``logged`` (a restart's
        replayed image is the restart's)."""
        if self.metadata_cache.set_image(alive_broker_epochs, metadata_version) and logged and self.events is not None:
            epochs = ",".join(map(str, self.metadata_cache.broker_epochs))
            self.events.emit(
                self.broker_id,
                "update_metadata_cache",
                f'{{"cached_broker_epochs":[{epochs}]}}',
                {"replica": self.broker_id},
            )

    def handle_leader_and_isr(self, src: int, header: Header, req: LeaderAndIsrRequest) -> None:
        """becomeLeaderOrFollower: apply newer partition state; start or stop the fetcher. One sent
        to an earlier registration of this same process (before it was fenced and came back) still
        counts: whether its state is newer is judged by its epochs. A starting broker applies every
        one (the metadata log it replays; those meant for its previous process went with it)."""
        earlier = self.first_broker_epoch < 0 or req.broker_epoch < self.first_broker_epoch
        if src != CONTROLLER_ID or (earlier and not self.starting):
            return None  # not from the controller, or meant for an earlier process of this broker
        if header.api_version >= 1:
            self.live_brokers = req.live_brokers
        elif req.partition not in self.partitions:
            return None  # v0 names only partitions this broker was created with
        if req.deleted:
            self.stop_partition(req)
            return None
        self.apply_leader_and_isr(req, check_fetches=False)
        if self.starting and 0 <= self.first_broker_epoch <= req.broker_epoch:
            self.starting = False  # caught up with the state of its registration: it serves now
        if self.events is not None and req.partition in self.partitions:
            self.events.broker(
                self.partitions[req.partition],
                "deliver_leader_and_isr",
                {
                    "replica": self.broker_id,
                    "message": {
                        "leader": req.leader,
                        "leader_epoch": req.leader_epoch,
                        "isr": list(req.isr),
                        "partition_epoch": req.partition_epoch,
                    },
                },
                (src, header.correlation_id),
            )
        self.fetch_purgatory.check()  # after the event: the fetches it answers come after it
        return None

    def apply_leader_and_isr(self, req: LeaderAndIsrRequest, check_fetches: bool = True, split: bool = True) -> None:
        """Apply a partition state (makeLeader or makeFollower, then the fetcher). With
        split_become_follower and ``split`` (not a new cluster's bootstrap) a new follower's fetcher
        is left stale for ``remove_fetcher``: Kafka's applyLocalFollowersDelta runs makeFollower,
        then replaces the fetcher."""
        if req.partition in self.deleted:
            return  # a late state of a partition whose topic is gone
        p = self.get_or_create_partition(req.partition, req.topic, req.index, req.min_insync_replicas)
        fetcher = self.fetchers[req.partition]
        tag = fetcher.tag
        if p.apply_leader_and_isr(req, fetcher.stop) == "follower":
            if split and self.config.split_become_follower:
                fetcher.keep_stale(tag)
                if self.auto:  # the rest of applyLocalFollowersDelta, after what is queued now
                    self.scheduler.schedule(0, lambda: self.remove_fetcher(req.partition))
            else:
                fetcher.reset()
        if check_fetches:
            self.fetch_purgatory.check()  # parked fetches of a partition no longer led answer at once

    def remove_fetcher(self, partition: int) -> str | None:
        """ReplicaFetcherManager.removeFetcherForPartitions then addFetcherForPartitions for a new
        follower's stale fetcher (split_become_follower); the reason when it has none."""
        fetcher = self.fetchers.get(partition)
        if fetcher is None or fetcher.stale is None:
            return f"the fetcher of broker {self.broker_id} is not stale"
        fetcher.reset()
        if self.events is not None:
            self.events.broker(self.partitions[partition], "remove_fetcher", {"replica": self.broker_id})
        return None

    def stop_partition(self, req: LeaderAndIsrRequest) -> None:
        """The partition's topic was deleted: its fetcher stops, parked produces and fetches are
        answered (NOT_LEADER_OR_FOLLOWER), it is no longer hosted, and its log is deleted, or the
        log a restarted broker still has of it (unless a partition of the same name, a topic made
        again, is hosted there now)."""
        self.deleted[req.partition] = req.partition_epoch
        p = self.partitions.pop(req.partition, None)
        if p is None:
            if (req.topic, req.index) not in self.names and self.delete_log is not None:
                self.delete_log(req.partition, req.topic, req.index, None)
            return
        self.fetchers.pop(req.partition).stop()
        p.purgatory.fail_all(Errors.NOT_LEADER_OR_FOLLOWER)
        del self.names[(req.topic, req.index)]
        self.topic_min_insync_replicas.pop(req.topic, None)
        self.fetch_purgatory.check()  # parked fetches of it answer at once (UNKNOWN_TOPIC_OR_PARTITION)
        if self.delete_log is not None:
            self.delete_log(req.partition, req.topic, req.index, p.log)

    @property
    def applied_partition_epochs(self) -> tuple[int, ...]:
        """Per partition id, the partition epoch this broker applied (-1 for a partition it lacks)."""
        size = max(max(self.partitions, default=-1), max(self.deleted, default=-1)) + 1
        return tuple(
            self.partitions[i].partition_epoch if i in self.partitions else self.deleted.get(i, -1) for i in range(size)
        )

    # -- ISR changes --------------------------------------------------------------------------
    def _send_alter_partition(
        self, partition_id: int, leader_epoch: int, partition_epoch: int, isr: tuple, epochs: tuple
    ) -> None:
        version = self.config.variant.alter_partition_version
        req = AlterPartitionRequest(
            self.broker_id,
            self.broker_epoch,
            partition_id,
            leader_epoch,
            partition_epoch,
            isr,
            epochs if version else (),
        )
        corr = self.endpoint.next_correlation_id()
        self.partitions[partition_id].last_isr_request = corr
        self.unanswered_alter_partitions.add(partition_id)
        self.endpoint.send_request(
            CONTROLLER_ID,
            ApiKey.ALTER_PARTITION,
            version,
            req,
            lambda resp: self._on_alter_partition(partition_id, resp, leader_epoch, corr),
            corr,
        )

    def _on_alter_partition(
        self, partition_id: int, resp: AlterPartitionResponse | None, request_leader_epoch: int, corr: int = -1
    ) -> None:
        """AlterPartitionManager's callback, bound to the request (and the leader epoch) it answers."""
        self.unanswered_alter_partitions.discard(partition_id)  # a resend below holds it again
        p = self.partitions.get(partition_id)
        if p is None:
            return  # its topic was deleted meanwhile
        if resp is None:  # lost: AlterPartitionManager resends until it gets an answer
            p.resend_pending_isr(request_leader_epoch)
            if self.events is not None:
                self.events.broker(
                    p,
                    "lost_alter_partition",
                    {"replica": self.broker_id, "leader_epoch": request_leader_epoch},
                    corr=p.last_isr_request,
                )
        else:
            hw = p.high_watermark
            p.handle_alter_partition_response(
                resp.error, resp.leader_epoch, resp.isr, resp.partition_epoch, request_leader_epoch
            )
            if self.events is not None:
                self.events.broker(
                    p, "handle_alter_partition_response", {"replica": self.broker_id}, (CONTROLLER_ID, corr)
                )
            if p.high_watermark != hw:
                self.fetch_purgatory.check()

    def _isr_check(self) -> None:
        """Kafka's isr-expiration task; expansion happens only on a follower's fetch. At a fixed rate
        (``scheduleAtFixedRate``): the next run is the next lattice point after this run's start,
        not an interval after its end, so that a run late by load delays no later run (lattice
        points it passed are not run again: each would find what this run found). A starting broker
        proposes nothing: its AlterPartition would carry broker epoch -1 (STALE_BROKER_EPOCH)."""
        started = self.scheduler.now_ms()  # at or before every partition's own reading
        for p in self.partitions.values() if not self.starting else ():
            if p.maybe_shrink_isr() and self.events is not None:
                self.events.broker(p, "shrink_isr", {"replica": self.broker_id}, corr=p.last_isr_request)
        interval = self.config.lag_check_interval_ms
        self._isr_due += interval * ((started - self._isr_due) // interval + 1)
        self._isr_timer = self.scheduler.schedule(self._isr_due - self.scheduler.now_ms(), self._isr_check)
