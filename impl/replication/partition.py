"""Partition: one replica's view of the partition, as leader or follower (Kafka's Partition).

The leader appends produced records, tracks each follower's fetch position (Kafka's Replica:
log end offset, lastCaughtUpTimeMs, last fetch time), advances the high watermark over the maximal
ISR, and proposes ISR changes (maybe_shrink_isr / maybe_expand_isr) that the controller commits
through AlterPartition. A follower's log is written by its ReplicaFetcher. LeaderAndIsr decides
which role this replica plays (make_leader / make_follower).
"""

from __future__ import annotations

from typing import Callable, Sequence

from ..invariants import check
from ..protocol import Errors, FetchRequest, FetchResponse, LeaderAndIsrRequest
from ..runtime import Scheduler
from ..storage import Log, LogAppendInfo, Record, RecordBatch, StorageError, iter_batches
from ..storage.log import DEFAULT_FETCH_MAX_BYTES, FetchDataInfo
from .config import ClusterConfig
from .delayed_produce import DelayedProducePurgatory
from .metadata_cache import MetadataCache

ProposeIsr = Callable[[int, int, tuple, tuple], None]  # (leader epoch, partition epoch, ISR, broker epochs)


class FollowerState:
    """What the leader knows of one follower (Kafka's Replica / ReplicaState): LEO and broker epoch
    stay unknown (-1) until the follower's first Fetch to this leader (ReplicaState.Empty)."""

    __slots__ = (
        "log_end_offset",
        "last_caught_up_ms",
        "last_fetch_time_ms",
        "last_fetch_leader_log_end_offset",
        "broker_epoch",
    )

    def __init__(self, last_caught_up_ms: int) -> None:
        self.reset(last_caught_up_ms)

    def reset(self, last_caught_up_ms: int) -> None:
        """Replica.resetReplicaState: a new leader epoch knows nothing of the follower yet."""
        self.log_end_offset = -1
        self.last_caught_up_ms = last_caught_up_ms
        self.last_fetch_time_ms = 0
        self.last_fetch_leader_log_end_offset = -1  # the highest leader LEO a Fetch of the follower found
        self.broker_epoch = -1  # of the follower's last Fetch that read records (KIP-903); -1 unknown

    def update_fetch_state(self, fetch_offset: int, fetch_time_ms: int, leader_leo: int, previous: bool) -> None:
        """Replica.updateFetchStateOrThrow's times: caught up at the Fetch's time if it reached the
        leader's LEO; with ``previous`` (its second rule), else caught up as of the previous Fetch if
        it reached the LEO that one found, so a follower kept below the LEO by a steady stream of
        appends stays caught up. The later time is kept."""
        if fetch_offset >= leader_leo:
            self.last_caught_up_ms = max(self.last_caught_up_ms, fetch_time_ms)
        elif previous and fetch_offset >= self.last_fetch_leader_log_end_offset:
            self.last_caught_up_ms = max(self.last_caught_up_ms, self.last_fetch_time_ms)
        if previous:
            self.last_fetch_leader_log_end_offset = max(leader_leo, self.last_fetch_leader_log_end_offset)
            self.last_fetch_time_ms = fetch_time_ms

    def lagging(self, now_ms: int, lag_ms: int) -> bool:
        """Not caught up within replica.lag.time.max: maybe_shrink_isr's test, and ReplicaState.isCaughtUp's
        time clause negated."""
        return now_ms - self.last_caught_up_ms > lag_ms


class LogReadInfo:
    """Partition.readRecords' result for a follower Fetch (Kafka's LogReadInfo): the batches read
    and the HW and LEO as they were before the read, which the answer carries; ``info`` None and
    ``log_end_offset`` -1 while only the HW is read (``Partition.read_high_watermark``)."""

    __slots__ = ("fetch_offset", "high_watermark", "log_end_offset", "info")

    def __init__(self, fetch_offset: int, high_watermark: int, log_end_offset: int, info: FetchDataInfo | None) -> None:
        self.fetch_offset = fetch_offset
        self.high_watermark = high_watermark
        self.log_end_offset = log_end_offset
        self.info = info

    def response(self, partition_id: int) -> FetchResponse:
        return FetchResponse(
            Errors.NONE, partition_id, self.high_watermark, 0, self.log_end_offset, -1, -1, self.info.data
        )


class Partition:
    """The partition as this broker sees it, with the leader's and the follower's duties."""

    def __init__(
        self,
        broker_id: int,
        config: ClusterConfig,
        log: Log,
        high_watermark: int,
        scheduler: Scheduler,
        purgatory: DelayedProducePurgatory,
        propose_isr: ProposeIsr,
        local_broker_epoch: Callable[[], int] = lambda: -1,
        on_event: Callable[..., None] | None = None,
        partition_id: int = 0,
        name: str | None = None,
        isr_request_unanswered: Callable[[], bool] = lambda: False,
        metadata_cache: MetadataCache | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.partition_id = partition_id
        self.name = name  # "topic-index", added to events where a broker hosts many partitions
        self.cut_batches = 0  # the whole batches of the last follower fetch response cut by bytes
        self.config = config
        self.variant = config.variant
        self.replicas = tuple(range(config.replicas))  # in assignment order once LeaderAndIsr names them
        self.log = log
        self.scheduler = scheduler
        self.purgatory = purgatory
        self.propose_isr = propose_isr
        self.local_broker_epoch = local_broker_epoch  # Kafka's localBrokerEpochSupplier
        # the AlterPartitionManager holds an AlterPartition of this partition until it is answered
        self.isr_request_unanswered = isr_request_unanswered
        self.metadata_cache = metadata_cache if metadata_cache is not None else MetadataCache()  # the broker's
        self.on_event = on_event
        self.high_watermark = -1
        self._set_hw(min(high_watermark, log.log_end_offset))
        self.truncations = 0  # between two truncations the log only grows (lets readers cache it)
        self.leader = -1
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.isr: tuple[int, ...] = ()
        self.epoch_start_offset = -1
        self.leader_since_ms = 0
        self.followers: dict[int, FollowerState] = {}
        self.pending_isr: tuple[int, ...] | None = None
        self.pending_isr_epochs: tuple[int, ...] = ()  # the broker epochs it was proposed with
        self.last_isr_request = -1  # correlation id of the last AlterPartition sent (for the event log)

    @property
    def is_leader(self) -> bool:
        return self.leader == self.broker_id

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        """ISR plus the members of an in-flight expansion (a shrink takes effect only once committed)."""
        if self.pending_isr is None:
            return self.isr
        return tuple(sorted(set(self.isr) | set(self.pending_isr)))

    # -- LeaderAndIsr -------------------------------------------------------------------------
    def apply_leader_and_isr(self, req: LeaderAndIsrRequest, stop_fetcher: Callable[[], None]) -> str | None:
        """Apply newer partition state; returns "leader"/"follower" on a leader epoch change."""
        if self.is_stale(req):
            return None
        if req.leader < 0 and not self.variant.leaderless_makes_follower:
            return None  # pre-0.11: nothing changes until a live leader is named
        new_epoch = req.leader_epoch != self.leader_epoch
        if req.replicas:
            self.replicas = req.replicas
        self.isr = tuple(sorted(req.isr))
        self.partition_epoch = req.partition_epoch
        if not new_epoch:
            self._event("isr", self.isr, self.partition_epoch)
            if self.is_leader and self.variant.committed_partition_state:
                # updateAssignmentAndIsr's CommittedPartitionState: the proposal is forgotten, its
                # answer ignored; makeLeader raises the HW on every change ("ISR could be down to 1")
                self.pending_isr, self.pending_isr_epochs = None, ()
                self.maybe_increment_leader_hw()
            return None
        check(
            req.leader_epoch > self.leader_epoch,
            "broker %d partition %s: leader epoch %d after %d",
            self.broker_id,
            self.name,
            req.leader_epoch,
            self.leader_epoch,
        )
        self.leader = req.leader
        self.leader_epoch = req.leader_epoch
        if self.is_leader:
            self.make_leader(stop_fetcher)
            return "leader"
        self.make_follower()
        return "follower"

    def is_stale(self, req: LeaderAndIsrRequest) -> bool:
        """An older leader epoch, or the same with no newer partition epoch: stale or a duplicate.
        KRaft's partition state takes the same partition epoch (makeLeader skips only older ones)."""
        got, known = (req.leader_epoch, req.partition_epoch), (self.leader_epoch, self.partition_epoch)
        return got < known or (got == known and not self.variant.committed_partition_state)

    def make_leader(self, stop_fetcher: Callable[[], None]) -> None:
        """Partition.makeLeader: fresh follower states, the epoch starts at the current LEO. A new
        partition's leader too knows no follower's LEO until it fetches (ReplicaState.Empty)."""
        now = self.scheduler.now_ms()
        self.epoch_start_offset = self.log.log_end_offset
        self.leader_since_ms = now
        # updateAssignmentAndIsr keeps a follower's Replica while this broker leads (computeIfAbsent),
        # and makeLeader resets it: a fetch handling begun before updates the new leadership's state
        kept, self.followers = self.followers, {}
        for r in self.replicas:
            if r != self.broker_id:
                follower = self.followers[r] = kept.get(r) or FollowerState(0)
                follower.reset(now if r in self.isr else 0)
        self.pending_isr, self.pending_isr_epochs = None, ()
        stop_fetcher()
        self._event("leader", self.leader_epoch, self.epoch_start_offset)
        self.maybe_increment_leader_hw()

    def make_follower(self) -> None:
        """Partition.makeFollower: parked produces fail (pre-0.11's truncation to the HW comes with the
        new fetcher: ReplicaFetcher.reset)."""
        self.epoch_start_offset = -1
        self.followers = {}
        self.pending_isr, self.pending_isr_epochs = None, ()
        self.purgatory.fail_all(Errors.NOT_LEADER_OR_FOLLOWER)
        self._event("follower", self.leader, self.leader_epoch)

    # -- leader -------------------------------------------------------------------------------
    def append_records_to_leader(self, records: Sequence[tuple[bytes | None, bytes]]) -> LogAppendInfo:
        """UnifiedLog.appendAsLeader: the (key, value) records as one batch stamped with this leader's
        epoch; the flush policy applies."""
        now = self.scheduler.now_ms()
        info = self.log.append_as_leader([Record(key, value, now) for key, value in records], self.leader_epoch)
        self._event("append", info.first_offset, self.leader_epoch)
        return info

    def append_batch_to_leader(self, batch: RecordBatch) -> LogAppendInfo:
        """A producer's own batch (the Kafka protocol): its producer's sequence checked against the
        log's producer state (DuplicateBatch, SequenceError), then appended stamped with this
        leader's epoch."""
        self.log.producer_state.check(batch)
        info = self.log.append_batch_as_leader(batch, self.leader_epoch)
        self._event("append", info.first_offset, self.leader_epoch)
        return info

    def end_offset_for(self, epoch: int) -> tuple[int, int]:
        """LeaderEpochFileCache.endOffsetFor (KIP-279): (largest epoch <= ``epoch``, its end offset)."""
        return self.log.leader_epoch_cache.end_offset_for(epoch, self.log.log_end_offset)

    def maybe_increment_leader_hw(self) -> bool:
        """Partition.maybeIncrementLeaderHW: HW = min LEO over the maximal ISR; it never moves back.
        KIP-966's strict min ISR: nothing moves while the ISR is below min.insync.replicas.
        hw_waits_for_caught_up: the minimum also takes each follower outside the maximal ISR that
        shouldWaitForReplicaToJoinIsr (KAFKA-15021): caught up within the lag time and eligible
        (``is_replica_isr_eligible``, as maybe_expand_isr asks)."""
        if not self.is_leader:
            return False
        if self.variant.eligible_leader_replicas and len(self.isr) < self.config.min_insync_replicas:
            return False
        new_hw = self.log.log_end_offset
        maximal = self.maximal_isr
        for r in maximal:
            if r != self.broker_id:
                leo = self.followers[r].log_end_offset
                if leo < new_hw:
                    new_hw = leo
        if self.config.hw_waits_for_caught_up:
            now, lag = self.scheduler.now_ms(), self.config.replica_lag_time_max_ms
            for r, follower in self.followers.items():
                # a LEO equal to the leader's (isCaughtUp's other clause) is never below the minimum
                if (
                    r not in maximal
                    and follower.log_end_offset < new_hw
                    and not follower.lagging(now, lag)
                    and self.is_replica_isr_eligible(r)
                ):
                    new_hw = follower.log_end_offset
        incremented = new_hw > self.high_watermark
        if incremented:
            counted = set(self.isr) | set(self.pending_isr or ())  # derived again, not maximal_isr's answer
            check(
                all(self.followers[r].log_end_offset >= new_hw for r in counted if r != self.broker_id),
                "leader %d partition %s: HW %d above the LEO of a member of the maximal ISR %s",
                self.broker_id,
                self.name,
                new_hw,
                sorted(counted),
            )
            self._set_hw(new_hw)
        self.purgatory.try_complete(self.high_watermark, len(self.isr), self.config.min_insync_replicas)
        return incremented

    def check_leader_epoch(self, current_leader_epoch: int) -> int:
        """KIP-320 fencing of a request by the sender's current leader epoch."""
        if not self.variant.fetch_epochs or current_leader_epoch < 0:
            return Errors.NONE
        if current_leader_epoch < self.leader_epoch:
            return Errors.FENCED_LEADER_EPOCH
        if current_leader_epoch > self.leader_epoch:
            return Errors.UNKNOWN_LEADER_EPOCH
        return Errors.NONE

    def fetch_from_follower(self, req: FetchRequest) -> FetchResponse:
        """The leader's side of a replica Fetch (Partition.fetchRecords): the checks, the read, then
        the follower's state and the HW; the answer carries what was read, the HW from before this
        fetch moved it."""
        self.cut_batches = 0
        answer = self.check_follower_fetch(req)
        if answer is not None:
            return answer
        read = self.read_records(req)
        self.update_follower_fetch_state(
            self.followers.get(req.replica_id),
            req.fetch_offset,
            req.replica_epoch,
            self.scheduler.now_ms(),
            read.log_end_offset,
        )
        # cut by bytes (replica.fetch.max.bytes): how many whole batches it holds, for the event log
        self.cut_batches = len(read.info.batches) if read.info.cut else 0
        return read.response(self.partition_id)

    def check_follower_fetch(self, req: FetchRequest) -> FetchResponse | None:
        """The answer to a follower Fetch that reads nothing (a diverging epoch, KIP-320, or an offset
        out of range), or None when it reads."""
        leo = self.log.log_end_offset
        if self.variant.fetch_epochs and req.last_fetched_epoch >= 0:
            epoch, end = self.end_offset_for(req.last_fetched_epoch)
            if epoch != req.last_fetched_epoch or end < req.fetch_offset:
                return FetchResponse(Errors.NONE, self.partition_id, self.high_watermark, 0, leo, epoch, end)
        if req.fetch_offset > leo or req.fetch_offset < self.log.log_start_offset:
            return FetchResponse(Errors.OFFSET_OUT_OF_RANGE, self.partition_id, self.high_watermark, 0, leo)
        return None

    def read_records(self, req: FetchRequest) -> LogReadInfo:
        """Partition.readRecords: whole batches from the fetch offset, with the HW and LEO from
        before the read (initialHighWatermark, initialLogEndOffset)."""
        return self.read_log(self.read_high_watermark(req), req.max_batches)

    def read_high_watermark(self, req: FetchRequest) -> LogReadInfo:
        """Partition.readRecords' first read, initialHighWatermark: no LEO nor batches yet."""
        return LogReadInfo(req.fetch_offset, self.high_watermark, -1, None)

    def read_log(self, first: LogReadInfo, max_batches: int) -> LogReadInfo:
        """The rest of readRecords after its HW read ``first``: the LEO (initialLogEndOffset), then
        localLog.read's whole batches from the fetch offset to it, at most ``max_batches`` (0: no
        limit); the HW read before stays (an append or an HW raise may come between: the read lock
        stops neither)."""
        leo = self.log.log_end_offset
        info = self.log.read(first.fetch_offset, max_batches=max_batches)
        return LogReadInfo(first.fetch_offset, first.high_watermark, leo, info)

    def update_follower_fetch_state(
        self, follower: FollowerState | None, fetch_offset: int, broker_epoch: int, fetch_time_ms: int, leader_leo: int
    ) -> None:
        """Partition.updateFollowerFetchState: the follower's fetch position, broker epoch and lag
        (Replica.updateFetchStateOrThrow), then maybeIncrementLeaderHW. ``follower`` is the state the
        handling found when it read: once this broker became a follower it is no longer this
        partition's (make_follower), and the update reaches nothing."""
        if follower is not None:
            follower.log_end_offset = fetch_offset
            follower.broker_epoch = broker_epoch
            # the second rule with catch_up_at_previous_fetch, and always with long polls (real time:
            # docs/steps.md, "Outside the contract"), where steady appends keep fetches below the LEO
            previous = self.config.catch_up_at_previous_fetch or self.config.replica_fetch_wait_max_ms > 0
            follower.update_fetch_state(fetch_offset, fetch_time_ms, leader_leo, previous)
        self.maybe_increment_leader_hw()

    def read_committed(self, fetch_offset: int, max_bytes: int = DEFAULT_FETCH_MAX_BYTES) -> tuple[int, bytes]:
        """A consumer fetch: (error, record batches below the HW, up to ``max_bytes`` but at least
        one batch); KIP-207's rule under KIP-320."""
        if self.variant.fetch_epochs and self.high_watermark < self.epoch_start_offset:
            return Errors.OFFSET_NOT_AVAILABLE, b""
        if fetch_offset > self.high_watermark or fetch_offset < self.log.log_start_offset:
            return Errors.OFFSET_OUT_OF_RANGE, b""
        return Errors.NONE, self.log.read(fetch_offset, max_bytes, max_offset=self.high_watermark).data

    def maybe_shrink_isr(self) -> bool:
        """Partition.maybeShrinkIsr: propose dropping followers not caught up within the lag time."""
        if not self.may_propose():
            return False
        now = self.scheduler.now_ms()
        lag = self.config.replica_lag_time_max_ms
        out = [r for r in self.isr if r != self.broker_id and self.followers[r].lagging(now, lag)]
        if not out:
            return False
        self._propose(tuple(r for r in self.isr if r not in out))
        return True

    def maybe_expand_isr(self, fetched_by: int | None = None, only: int | None = None) -> bool:
        """Partition.maybeExpandIsr: propose adding followers caught up to the HW (KIP-320: in this
        epoch). ``fetched_by``: the follower whose Fetch calls it (a run that drives itself); then
        only if that follower is out of the ISR and among them (docs/steps.md, ``expand_isr``).
        ``only``: add that follower alone, if it is among them."""
        if not self.may_propose():
            return False
        hw = self.high_watermark
        if self.variant.hw_reached_epoch_to_expand and hw < self.epoch_start_offset:
            return False
        start = self.epoch_start_offset if self.variant.follower_reached_epoch_to_expand else 0
        new = [
            r
            for r in self.replicas
            if r not in self.isr
            and r != self.broker_id
            and self.followers[r].log_end_offset >= max(hw, start)
            and self.is_replica_isr_eligible(r)
        ]
        if only is not None:
            new = [r for r in new if r == only]
        if not new or (fetched_by is not None and fetched_by not in new):
            return False
        self._propose(tuple(sorted(self.isr + tuple(new))))
        self.maybe_increment_leader_hw()
        return True

    def is_replica_isr_eligible(self, r: int) -> bool:
        """Partition.isReplicaIsrEligible: follower ``r``'s LEO is known (a Fetch in this leader epoch
        stored its broker epoch); with metadata_cache also the broker's metadata cache holds it
        unfenced and, unless its Fetch carried broker epoch -1, registered with that broker epoch
        (isBrokerEpochIsrEligible against getAliveBrokerEpoch)."""
        follower = self.followers[r]
        if follower.log_end_offset < 0:
            return False
        if not self.config.metadata_cache:
            return True
        cache = self.metadata_cache
        cached = cache.get_alive_broker_epoch(r)
        return not cache.is_broker_fenced(r) and cached is not None and follower.broker_epoch in (-1, cached)

    def may_propose(self) -> bool:
        """A leader with no ISR change pending; KRaft's partition state: nor an AlterPartition the
        manager holds unanswered (its submit fails with OPERATION_NOT_ATTEMPTED, and Partition puts
        back its committed state: no proposal)."""
        if not self.is_leader or self.pending_isr is not None:
            return False
        return not (self.variant.committed_partition_state and self.isr_request_unanswered())

    def _propose(self, isr: tuple[int, ...], epochs: tuple[int, ...] | None = None) -> None:
        """Send an AlterPartition for ``isr`` naming each member's broker epoch as this leader knows
        it (KIP-903: its own, and each follower's from its last reading Fetch)."""
        if epochs is None:
            own = self.local_broker_epoch() if self.variant.broker_epochs else -1
            epochs = tuple(own if r == self.broker_id else self.followers[r].broker_epoch for r in isr)
        check(
            self.broker_id in isr,
            "leader %d partition %s: proposes the ISR %s without itself",
            self.broker_id,
            self.name,
            isr,
        )
        self.pending_isr, self.pending_isr_epochs = isr, epochs
        self._event("propose_isr", isr)
        self.propose_isr(self.leader_epoch, self.partition_epoch, isr, epochs)

    def resend_pending_isr(self, request_leader_epoch: int) -> None:
        """The AlterPartition or its answer was lost: the same change is sent again (AlterPartitionManager),
        if the request was this leadership's; one of an earlier leadership carried no pending change
        of this one (makeLeader starts with none), so nothing is resent for it."""
        if self.pending_isr is not None and request_leader_epoch == self.leader_epoch:
            self._propose(self.pending_isr, self.pending_isr_epochs)

    def handle_alter_partition_response(
        self, error: int, leader_epoch: int, isr: tuple[int, ...], partition_epoch: int, request_leader_epoch: int
    ) -> None:
        """The controller answered: the change is no longer pending, unless the answer is to a
        proposal of an earlier leadership (Kafka acts only on the answer to the pending proposal)."""
        if request_leader_epoch != self.leader_epoch:
            return
        if self.pending_isr is None and self.variant.committed_partition_state:
            return  # its proposal was forgotten (partitionState != proposedIsrState)
        self.pending_isr, self.pending_isr_epochs = None, ()
        if leader_epoch != self.leader_epoch or partition_epoch < self.partition_epoch:
            return  # another leader epoch, or older than what this leader already knows
        self.isr = tuple(sorted(isr))
        self.partition_epoch = partition_epoch
        self._event("isr", self.isr, partition_epoch)
        self.maybe_increment_leader_hw()

    # -- follower -----------------------------------------------------------------------------
    def truncate_to(self, offset: int) -> None:
        """Truncate the log (never below 0 or above LEO); the HW follows it down."""
        offset = max(0, offset)
        check(
            offset >= self.log.log_start_offset,
            "broker %d partition %s: truncation to %d below the log start offset %d",
            self.broker_id,
            self.name,
            offset,
            self.log.log_start_offset,
        )
        if offset < self.log.log_end_offset:
            self.log.truncate_to(offset)
            self.truncations += 1
            self._event("truncate", offset)
        if self.high_watermark > self.log.log_end_offset:
            self._set_hw(self.log.log_end_offset)

    def append_as_follower(self, batches: bytes, leader_hw: int) -> None:
        """Append the fetched batches (CRC-checked by the log), then HW := min(leader HW, own LEO),
        which a partial response leaves below the leader's. The leader sends whole batches from the
        one holding the fetch offset; one that starts below the LEO means the logs diverged at other
        batch boundaries: StorageError, nothing appended (Kafka's UnexpectedAppendOffsetException)."""
        parsed = list(iter_batches(batches))
        if parsed:
            if parsed[0].base_offset < self.log.log_end_offset:
                # the logs diverged at other batch boundaries (no epoch-based truncation)
                raise StorageError(
                    f"out of order offsets: batch at {parsed[0].base_offset} below the log end "
                    f"offset {self.log.log_end_offset}"
                )
            before = self.log.log_end_offset
            self.log.append_as_follower(parsed)
            self._event("replicate", before, self.log.log_end_offset)
        hw = min(leader_hw, self.log.log_end_offset)
        if hw != self.high_watermark:
            self._set_hw(hw)

    def _set_hw(self, hw: int) -> None:
        check(
            hw <= self.log.log_end_offset,
            "broker %d partition %s: HW %d above its own LEO %d",
            self.broker_id,
            self.name,
            hw,
            self.log.log_end_offset,
        )
        self.high_watermark = hw
        self.log.high_watermark = hw
        self._event("hw", hw)

    def _event(self, *fields) -> None:
        if self.on_event is not None:
            if self.name is None:
                self.on_event(self.broker_id, *fields)
            else:
                self.on_event(self.broker_id, self.name, *fields)
