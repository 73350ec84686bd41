"""ReplicaFetcher: a follower's fetch loop against the leader it knows (Kafka's ReplicaFetcherThread).

Per protocol variant: before KIP-101 a new follower simply fetches (it already truncated to its
HW); KIP-101 and KIP-279 first ask OffsetsForLeaderEpoch (state *truncating*), KIP-279 walking
back epoch by epoch until leader and follower agree; KIP-320 fetches at once with its last fetched
epoch and truncates when the leader answers with a diverging epoch. At most one request is
outstanding. The fetcher fetches under its (leader, epoch), its tag: the partition's, or while it
is stale (split_become_follower: the partition became a follower in a newer leader epoch and the
fetcher is not yet replaced) the one it had before, whose leader it goes on fetching from with its
own fetch state, as Kafka's fetcher thread builds its requests from its own partitionStates
(AbstractFetcherThread.maybeFetch); a response is used only if it answers a request of its tag.

``send`` is the only way a request goes out: the simulation calls it per step in step mode, and the
fetcher's own poll timer calls it in auto mode.
"""

from __future__ import annotations

from ..network import NodeEndpoint
from ..protocol import (
    ApiKey,
    Errors,
    FetchRequest,
    FetchResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
)
from ..runtime import Scheduler, Timer
from ..storage import StorageError
from .partition import Partition

FETCHING = -1


class ReplicaFetcher:
    """The follower's fetch loop for the partition."""

    def __init__(
        self,
        partition: Partition,
        endpoint: NodeEndpoint,
        scheduler: Scheduler,
        auto: bool = False,
        backoff_ms: int = 5,
        socket_timeout_ms: int = 30_000,
    ) -> None:
        self.partition = partition
        self.endpoint = endpoint
        self.scheduler = scheduler
        self.auto = auto
        self.backoff_ms = backoff_ms
        self.socket_timeout_ms = socket_timeout_ms
        self.truncating_epoch = FETCHING  # KIP-101/KIP-279: the epoch to ask the leader about next
        self.outstanding: int | None = None  # correlation id of the request in flight
        self.sent_under: tuple[int, int] = (-1, -1)  # (leader, leader epoch) it was sent under
        # split_become_follower: the (leader, leader epoch) it kept when the partition became a
        # follower in a newer leader epoch, until ``reset`` replaces it (removeFetcherForPartitions)
        self.stale: tuple[int, int] | None = None
        self._poll: Timer | None = None
        self._timeout: Timer | None = None  # auto mode: the outstanding request's socket timeout
        self.events = None  # an EventLog when the run logs its events

    @property
    def can_send(self) -> bool:
        leader = self.tag[0]  # a stale tag of no leader, or of its own leadership: no fetcher yet
        return leader >= 0 and leader != self.partition.broker_id and self.outstanding is None

    @property
    def tag(self) -> tuple[int, int]:
        """The (leader, leader epoch) it fetches under."""
        return self.stale or (self.partition.leader, self.partition.leader_epoch)

    def keep_stale(self, tag: tuple[int, int]) -> None:
        """The partition became a follower in a newer leader epoch and this fetcher stays as it was,
        under ``tag``, until ``reset`` (Kafka's applyLocalFollowersDelta replaces fetchers after
        makeFollower); one stale already keeps its own."""
        if self.stale is None:
            self.stale = tag

    def reset(self) -> None:
        """A new leader epoch (makeFollower), or the stale fetcher replaced: pre-0.11 truncates to
        the HW (ReplicaManager.makeFollowers, after removeFetcherForPartitions), the old request is
        forgotten, and the fetch state chosen (addFetcherForPartitions)."""
        p = self.partition
        if p.variant.truncate_to_hw:
            p.truncate_to(p.high_watermark)
        self.stale = None
        if self.outstanding is not None:
            self.endpoint.forget(self.outstanding)
            self.outstanding = None
        if p.variant.offsets_for_leader_epoch and p.log.log_end_offset > 0:
            self.truncating_epoch = p.log.latest_epoch
        else:
            self.truncating_epoch = FETCHING
        if self.auto and not p.is_leader:
            self._schedule(0)

    def stop(self) -> None:
        """Became leader: no more fetching (a stale fetcher too)."""
        self.stale = None
        if self.outstanding is not None:
            self.endpoint.forget(self.outstanding)
            self.outstanding = None
        self.truncating_epoch = FETCHING
        if self._poll is not None:
            self._poll.cancel()
            self._poll = None

    def send(self, max_batches: int = 0) -> bool:
        """Send one Fetch (for at most ``max_batches`` whole batches if > 0, Kafka's
        replica.fetch.max.bytes) or OffsetsForLeaderEpoch to the leader; False if not possible now."""
        if not self.can_send:
            return False
        p = self.partition
        leader, leader_epoch = self.sent_under = self.tag
        v = p.variant
        # recorded first: a request to a dead leader fails (and clears it) inside send_request
        self.outstanding = correlation_id = self.endpoint.next_correlation_id()
        events = self.events
        if events is not None:  # the event precedes the send: a send to a dead leader fails inside it
            fields = {"replica": p.broker_id, "max_batches": max_batches}
            if self.stale is not None:  # not the partition's (leader, leader epoch): the log names it
                fields["stale_fetcher"] = [leader, leader_epoch]
            events.broker(p, "send_fetch", fields, corr=correlation_id)
        if self.truncating_epoch != FETCHING and p.log.log_end_offset > 0:
            req = OffsetForLeaderEpochRequest(p.broker_id, p.partition_id, self.truncating_epoch, leader_epoch)
            self.endpoint.send_request(
                leader,
                ApiKey.OFFSET_FOR_LEADER_EPOCH,
                v.offsets_for_leader_epoch_version,
                req,
                self._on_epoch_end if events is None else self._logged(self._on_epoch_end, leader, correlation_id),
                correlation_id,
            )
        else:
            req = FetchRequest(
                p.broker_id,
                p.partition_id,
                p.log.log_end_offset,
                leader_epoch,
                p.log.latest_epoch,
                max_batches,
                p.local_broker_epoch() if v.broker_epochs else -1,
            )
            self.endpoint.send_request(
                leader,
                ApiKey.FETCH,
                v.fetch_version,
                req,
                self._on_fetch if events is None else self._logged(self._on_fetch, leader, correlation_id),
                correlation_id,
            )
        if self.auto:
            self._arm_timeout(leader, correlation_id)
        return True

    def _arm_timeout(self, leader: int, correlation_id: int) -> None:
        """Auto mode: the request counts as lost if no answer came within the socket timeout (Kafka's
        NetworkClient disconnects it): the handler sees no response and the loop sends again."""
        if self._timeout is not None:
            self._timeout.cancel()

        def expire() -> None:
            self._timeout = None
            if self.outstanding == correlation_id:
                self.endpoint.connection_lost(leader, correlation_id)

        self._timeout = self.scheduler.schedule(self.socket_timeout_ms, expire)

    def _logged(self, handler, leader: int, correlation_id: int):
        """``handler`` of a response, followed by its event (a lost request has none: the log
        shows the next request instead)."""

        def handle(resp) -> None:
            handler(resp)
            if resp is not None and self.events is not None:
                self.events.broker(
                    self.partition,
                    "handle_fetch_response",
                    {"replica": self.partition.broker_id},
                    (leader, correlation_id),
                )

        return handle

    # -- responses ----------------------------------------------------------------------------
    def _current(self) -> bool:
        """An answer to this fetcher's request (AbstractFetcherThread.processFetchRequest checks it
        against the fetcher's own partitionStates, not the Partition)."""
        self.outstanding = None
        return self.sent_under == self.tag and not self.partition.is_leader

    def _on_epoch_end(self, resp: OffsetForLeaderEpochResponse | None) -> None:
        """OffsetsForLeaderEpoch answer: truncate to where the logs agree (KIP-101 / KIP-279)."""
        if not self._current() or resp is None or resp.error != Errors.NONE:
            self._after(progress=False)
            return
        p = self.partition
        if not p.variant.walk_back_epochs:  # KIP-101: one question, an end offset or undefined
            p.truncate_to(p.high_watermark if resp.end_offset < 0 else min(resp.end_offset, p.log.log_end_offset))
            self.truncating_epoch = FETCHING
        elif resp.leader_epoch < 0:  # KIP-279: the leader has nothing at or below our epoch
            p.truncate_to(p.high_watermark)
            self.truncating_epoch = FETCHING
        else:
            epoch, end = p.end_offset_for(resp.leader_epoch)
            if epoch == resp.leader_epoch:
                p.truncate_to(min(resp.end_offset, end))
                self.truncating_epoch = FETCHING
            elif epoch >= 0:
                p.truncate_to(end)
                self.truncating_epoch = epoch  # ask again about our own earlier epoch
            else:
                p.truncate_to(0)
                self.truncating_epoch = FETCHING
        self._after(progress=True)

    def _on_fetch(self, resp: FetchResponse | None) -> None:
        if not self._current() or resp is None:
            self._after(progress=False)
            return
        p = self.partition
        if resp.error == Errors.OFFSET_OUT_OF_RANGE:
            if p.log.log_end_offset > resp.log_end_offset:
                p.truncate_to(resp.log_end_offset)
        elif resp.error != Errors.NONE:
            pass
        elif resp.diverging_end_offset >= 0:  # KIP-320 diverging epoch
            epoch, end = p.end_offset_for(resp.diverging_epoch)
            p.truncate_to(min(resp.diverging_end_offset, end) if epoch == resp.diverging_epoch else end)
        else:
            try:
                p.append_as_follower(resp.records, resp.high_watermark)
            except StorageError:  # a batch failed its CRC or offset check: nothing was appended
                self._after(progress=False)
                return
            # an empty answer after the leader's long poll is no reason to back off
            self._after(progress=bool(resp.records) or p.config.replica_fetch_wait_max_ms > 0)
            return
        self._after(progress=resp.error == Errors.NONE)

    # -- auto mode polling --------------------------------------------------------------------
    def _after(self, progress: bool) -> None:
        if self.auto:
            self._schedule(0 if progress else self.backoff_ms)

    def _schedule(self, delay_ms: int) -> None:
        if self._poll is not None:
            self._poll.cancel()
        self._poll = self.scheduler.schedule(delay_ms, self._poll_once)

    def _poll_once(self) -> None:
        self._poll = None
        self.send()
