"""Plain frozen views of the cluster's state, read by tests and by the conformance adapter."""
from __future__ import annotations

from dataclasses import dataclass

from ..controller import ControllerState
from ..storage import Log


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
class BrokerSnapshot:
    """One broker's view (docs/steps.md "Per-replica state"); a dead broker keeps its last view.

    Leader-only fields hold neutral values on a follower (-1, -1s, 0s, None), like the model's.
    ``remote_leo`` and ``last_caught_up_ms`` are indexed by replica id.
    """

    broker_id: int
    alive: bool
    log: tuple[LogEntry, ...]
    durable: int                  # length of the fsynced prefix (the recovery point)
    hw: int
    hw_checkpoint: int            # replication-offset-checkpoint
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int
    epoch_start_offset: int
    remote_leo: tuple[int, ...]
    last_caught_up_ms: tuple[int, ...]
    pending_isr: tuple[int, ...] | None
    pending_produces: tuple[PendingProduce, ...]
    truncating_epoch: int         # KIP-101/KIP-279: epoch to ask about next; -1 fetching
    fetch_outstanding: bool
    power_lost: bool              # down after a power loss or a lost disk: unflushed data goes at restart
    broker_epoch: int
    last_fetch_ms: tuple[int, ...] = ()  # leader: when each follower last fetched (-1 never)

    @property
    def log_end_offset(self) -> int:
        return len(self.log)


@dataclass(frozen=True)
class ClusterSnapshot:
    """Every broker's view and the controller's state at one instant."""

    now_ms: int
    brokers: tuple[BrokerSnapshot, ...]
    controller: ControllerState


def log_entries(log: Log, start: int | None = None) -> tuple[LogEntry, ...]:
    """The records of the log from ``start`` (default: the log start) as (offset, leader epoch of
    its batch, value, base offset of its batch)."""
    start = log.log_start_offset if start is None else start
    if log.log_end_offset <= start:
        return ()
    data = log.read(start, max_bytes=log.size_in_bytes + 1)
    return tuple(LogEntry(r.offset, b.partition_leader_epoch, r.value, b.base_offset)
                 for b in data.batches for r in b.records() if r.offset >= start)
