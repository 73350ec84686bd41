"""Plain frozen views of the cluster's state, read by tests and by the conformance adapter."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..controller import ControllerState
from ..storage import Log, iter_batches

if TYPE_CHECKING:
    from ..replication import Broker


@dataclass(frozen=True)
class LogEntry:
    """One record of a log: offset, leader epoch of its batch, value, and the batch's first offset
    (records are appended, replicated and truncated by whole batches)."""

    offset: int
    epoch: int
    value: bytes
    base_offset: int


@dataclass(frozen=True)
class PendingProduce:
    """An acks=all produce waiting in DelayedProduce: its batch's first value, base offset and
    record count."""

    value: bytes
    offset: int
    deadline_ms: int
    count: int


@dataclass(frozen=True)
class HeldFetchView:
    """A follower's Fetch its leader read and has not completed (split_fetch_handling): ``seq`` and
    ``correlation_id`` name the request (the (leader, leader epoch) it was sent under is the
    harness's to know), ``records`` the batches read as (offset, epoch, value, base offset)."""

    follower: int
    seq: int
    correlation_id: int
    fetch_offset: int
    broker_epoch: int
    fetch_time_ms: int  # the read's time (of its HW's read while hw_only): Kafka's fetchTimeMs
    leo_read: int  # the leader's LEO the read found, -1 while hw_only
    hw: int
    records: tuple
    bad_batch: int  # base offset of a batch among them failing its CRC check, -1 none
    orphan: bool
    detached: bool
    hw_only: bool = False  # only the HW read yet (read_fetch_hw): no LEO, no records
    max_batches: int = 0  # the request's, while hw_only: what the batches' read takes


@dataclass(frozen=True)
class BrokerSnapshot:
    """One broker's view (docs/steps.md "Per-replica state"); a dead broker keeps its last view.

    Leader-only fields hold neutral values on a follower (-1, -1s, 0s, None), like the model's.
    ``remote_leo`` and ``last_caught_up_ms`` are indexed by replica id.
    """

    broker_id: int
    alive: bool
    log: tuple[LogEntry, ...]
    durable: int  # length of the fsynced prefix (the recovery point)
    hw: int
    hw_checkpoint: int  # replication-offset-checkpoint
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int
    epoch_start_offset: int
    remote_leo: tuple[int, ...]
    last_caught_up_ms: tuple[int, ...]
    pending_isr: tuple[int, ...] | None
    pending_produces: tuple[PendingProduce, ...]
    truncating_epoch: int  # KIP-101/KIP-279: epoch to ask about next; -1 fetching
    fetch_outstanding: bool
    power_lost: bool  # down after a power loss or a lost disk: unflushed data goes at restart
    broker_epoch: int
    last_fetch_ms: tuple[int, ...] = ()  # leader: when each follower last fetched (0 none; the previous-fetch rule's)
    remote_broker_epoch: tuple[int, ...] = ()  # leader: each follower's broker epoch (KIP-903), -1 unknown
    pending_isr_epochs: tuple[int, ...] = ()  # leader: the broker epochs of the pending proposal
    unclean_shutdown: bool = False  # down without the clean shutdown file, or up and its registration will say so
    # base offset of the first batch of its log failing its CRC check on disk, -1 none (left out of
    # the repr, which the simulation's trace hash reads, so runs without damage hash as before)
    bad_batch: int = field(default=-1, repr=False)
    # up on the replayed metadata, its registration not yet accepted (KRaft; left out of the repr as above)
    unregistered: bool = field(default=False, repr=False)
    # split_fetch_handling: the follower Fetches it read and has yet to complete (left out of the repr as above)
    held_reads: tuple[HeldFetchView, ...] = field(default=(), repr=False)
    # split_become_follower: the (leader, leader epoch) of its stale fetcher, () none (left out as above)
    stale_fetcher: tuple[int, ...] = field(default=(), repr=False)
    # leader: the highest LEO each follower's Fetches found (-1 none; the previous-fetch rule's, left out as above)
    last_fetch_leader_leo: tuple[int, ...] = field(default=(), repr=False)
    # metadata_cache: its metadata cache, per broker id the broker epoch it holds, -1 fenced; () without
    # the switch (left out as above)
    cached_broker_epochs: tuple[int, ...] = field(default=(), repr=False)

    @property
    def log_end_offset(self) -> int:
        return len(self.log)


@dataclass(frozen=True)
class ClusterSnapshot:
    """Every broker's view and the controller's state at one instant."""

    now_ms: int
    brokers: tuple[BrokerSnapshot, ...]
    controller: ControllerState


class LogView:
    """A broker's log as snapshot entries, kept from one snapshot to the next so that a snapshot
    costs what changed in the log rather than its length. Appends are read from the old end. After
    a truncation (a new ``key``) or a restart (a new ``Log``) the log's bytes are read again whole,
    but only the batches after the longest run of leading batches whose bytes are unchanged are
    decoded: log recovery and truncation cut a log, they rarely rewrite its start."""

    def __init__(self) -> None:
        self._log: Log | None = None  # held, so its identity means the same log
        self._key: object = None
        self._start = -1  # the log start offset the entries were read from
        self._chunks: list[bytes] = []  # the log's bytes from the start, in pieces as read
        self._byte_ends: list[int] = []  # where each batch ends in those bytes
        self._ends: list[int] = []  # len(entries) after each batch
        self.entries: tuple[LogEntry, ...] = ()
        # the fields of the last broker snapshot built over this view, and that snapshot: a broker
        # a step left alone gives the same snapshot object (cheaper than building and comparing one)
        self.last: tuple[tuple, BrokerSnapshot | None] = ((), None)

    def update(self, log: Log, key: object) -> tuple[LogEntry, ...]:
        """The records of ``log`` as (offset, leader epoch of its batch, value, base offset of its
        batch); ``key`` must change whenever ``log`` may have been cut."""
        start = log.log_start_offset
        if log is self._log and key == self._key and start == self._start:  # only appended to since
            offset = self.entries[-1].offset + 1 if self.entries else start
            if offset >= log.log_end_offset:
                return self.entries
            keep, data = len(self._ends), _read(log, offset)
            self._chunks.append(data)
        else:
            data = _read(log, start)
            keep = self._same_batches(data) if start == self._start else 0
            self._chunks = [data]
            data = data[self._byte_ends[keep - 1] :] if keep else data
        kept = self.entries[: self._ends[keep - 1]] if keep else ()
        del self._byte_ends[keep:], self._ends[keep:]
        position = self._byte_ends[-1] if keep else 0
        new: list[LogEntry] = []
        for batch in iter_batches(data):
            new.extend(
                LogEntry(r.offset, batch.partition_leader_epoch, r.value, batch.base_offset)
                for r in batch.records()
                if r.offset >= start
            )
            position += batch.size
            self._byte_ends.append(position)
            self._ends.append(len(kept) + len(new))
        self._log, self._key, self._start = log, key, log.log_start_offset
        self.entries = kept + tuple(new)
        return self.entries

    def _same_batches(self, data: bytes) -> int:
        """How many leading batches ``data`` has byte for byte as the last update read them. Equal
        byte prefixes nest, so a binary search over batch ends finds the longest at C speed."""
        old = b"".join(self._chunks)
        ends, low, high = self._byte_ends, 0, len(self._byte_ends)
        while low < high:
            mid = (low + high + 1) // 2
            end = ends[mid - 1]
            if data[:end] == old[:end]:
                low = mid
            else:
                high = mid - 1
        return low


def broker_snapshot(b: Broker, replicas: int, view: LogView) -> BrokerSnapshot:
    """A live broker's view; ``view`` is its log's, kept from the broker's last snapshot."""
    p, ids = b.partition, range(replicas)
    entries = view.update(p.log, p.truncations)  # between truncations a log only grows
    if p.is_leader:
        fs = p.followers
        remote = tuple(fs[r].log_end_offset if r in fs else -1 for r in ids)
        caught = tuple(fs[r].last_caught_up_ms if r in fs else p.leader_since_ms for r in ids)
        fetched = tuple(fs[r].last_fetch_time_ms if r in fs else 0 for r in ids)
        fetched_leo = tuple(fs[r].last_fetch_leader_log_end_offset if r in fs else -1 for r in ids)
        epochs = tuple(fs[r].broker_epoch if r in fs else -1 for r in ids)
    else:
        remote, caught, fetched, epochs = (-1,) * replicas, (0,) * replicas, (0,) * replicas, (-1,) * replicas
        fetched_leo = (-1,) * replicas
    fetcher = b.replica_manager.fetcher
    fields = (
        b.broker_id,
        True,
        entries,
        b.durable_offset,
        p.high_watermark,
        b.hw_checkpoint,
        p.leader,
        p.leader_epoch,
        p.isr,
        p.partition_epoch,
        p.epoch_start_offset,
        remote,
        caught,
        p.pending_isr,
        tuple((op.value, op.offset, op.deadline_ms, op.count) for op in b.replica_manager.purgatory.pending),
        fetcher.truncating_epoch,
        fetcher.outstanding is not None,
        False,
        b.broker_epoch,
        fetched,
        epochs,
        p.pending_isr_epochs,
        # its registration, not yet accepted, will be unclean
        b.replica_manager.starting and b.broker_epoch < 0 and b.previous_broker_epoch < 0,
        b.replica_manager.starting,
        tuple(_held_view(h) for _, h in sorted(b.replica_manager.held_fetches.items())),
        fetcher.stale or (),
        fetched_leo,
        b.replica_manager.metadata_cache.broker_epochs if b.config.metadata_cache else (),
    )
    last_fields, last = view.last
    if fields == last_fields:
        return last
    pending = tuple(PendingProduce(*op) for op in fields[14])
    snap = BrokerSnapshot(
        *fields[:14],
        pending,
        *fields[15:-5],
        unregistered=fields[-5],
        held_reads=fields[-4],
        stale_fetcher=fields[-3],
        last_fetch_leader_leo=fields[-2],
        cached_broker_epochs=fields[-1],
    )
    view.last = (fields, snap)
    return snap


def _held_view(h) -> HeldFetchView:
    """A held Fetch (``ReplicaManager.held_fetches``) as plain data."""
    req, read, env = h.req, h.read, h.handle
    batches = () if h.hw_only else read.info.batches
    return HeldFetchView(
        req.replica_id,
        env.seq,
        h.header.correlation_id,
        req.fetch_offset,
        req.replica_epoch,
        h.fetch_time_ms,
        read.log_end_offset,
        read.high_watermark,
        tuple((r.offset, b.partition_leader_epoch, r.value, b.base_offset) for b in batches for r in b.records()),
        next((b.base_offset for b in batches if not b.is_valid()), -1),
        env.orphan,
        h.detached,
        h.hw_only,
        req.max_batches if h.hw_only else 0,
    )


def first_bad_batch(log: Log) -> int:
    """The base offset of the first batch of ``log`` whose bytes fail the CRC check, -1 if none."""
    for batch in iter_batches(_read(log, log.log_start_offset)):
        if not batch.is_valid():
            return batch.base_offset
    return -1


def _read(log: Log, start: int) -> bytes:
    """The bytes of ``log``'s batches from the one holding ``start`` to its end."""
    if log.log_end_offset <= start:
        return b""
    return log.read(start, max_bytes=log.size_in_bytes + 1).data
