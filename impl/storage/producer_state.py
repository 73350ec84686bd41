"""ProducerStateManager: what the idempotent producer's sequence numbers are checked against.

For each producer id: its epoch and the sequence ranges and offsets of its last five batches
(Kafka's ProducerStateEntry keeps five, the most a producer has in flight). It is a function of the
log: every batch a producer wrote, leader or follower, updates it, so a new leader has the state of
every producer the old one acknowledged; a truncation drops it and it is rebuilt from the log's
batch headers, as is the state of a log opened after a restart (Kafka reloads from its snapshots
and the log after the last one; this one has no snapshots and reads the headers).
"""

from __future__ import annotations

from collections import deque
from typing import Iterable

from .records import RecordBatch

MAX_CACHED_BATCHES = 5  # ProducerStateEntry.NUM_BATCHES_TO_RETAIN
MAX_SEQUENCE = 2**31 - 1


class ProducerStateEntry:
    """One producer's epoch and its last batches as (first sequence, last sequence, base offset)."""

    __slots__ = ("epoch", "batches")

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        self.batches: deque[tuple[int, int, int]] = deque(maxlen=MAX_CACHED_BATCHES)

    @property
    def last_sequence(self) -> int:
        return self.batches[-1][1] if self.batches else -1


class DuplicateBatch(Exception):
    """The batch is a retry of one already in the log (at ``base_offset``): acknowledge it again."""

    def __init__(self, base_offset: int, record_count: int) -> None:
        super().__init__(f"duplicate of the batch at offset {base_offset}")
        self.base_offset, self.record_count = base_offset, record_count


class SequenceError(Exception):
    """The batch breaks its producer's sequence; ``error`` is Kafka's name for how."""

    def __init__(self, error: str, message: str) -> None:
        super().__init__(message)
        self.error = error


def _last_sequence(batch: RecordBatch) -> int:
    return (batch.base_sequence + batch.last_offset_delta) % (MAX_SEQUENCE + 1)


def _in_sequence(last: int, first: int) -> bool:
    return first == last + 1 or (first == 0 and last == MAX_SEQUENCE)


class ProducerStateManager:
    """Producer id -> ProducerStateEntry, for one partition's log."""

    def __init__(self, batches: Iterable[RecordBatch] = ()) -> None:
        self.producers: dict[int, ProducerStateEntry] = {}
        for batch in batches:
            self.update(batch)

    def update(self, batch: RecordBatch) -> None:
        """ProducerAppendInfo.append: a batch went into the log."""
        pid = batch.producer_id
        if pid < 0 or batch.is_control_batch:
            return
        entry = self.producers.get(pid)
        if entry is None or batch.producer_epoch > entry.epoch:
            entry = self.producers[pid] = ProducerStateEntry(batch.producer_epoch)
        entry.batches.append((batch.base_sequence, _last_sequence(batch), batch.base_offset))

    def check(self, batch: RecordBatch) -> None:
        """ProducerAppendInfo.checkProducerEpoch and checkSequence, on the leader before it appends:
        raise DuplicateBatch for a retry of a cached batch, SequenceError for one out of order."""
        pid = batch.producer_id
        if pid < 0:
            return
        entry = self.producers.get(pid)
        if entry is None:
            return  # an unknown producer (or one whose batches left the log): any sequence
        first, last = batch.base_sequence, _last_sequence(batch)
        if batch.producer_epoch < entry.epoch:
            raise SequenceError(
                "INVALID_PRODUCER_EPOCH",
                f"producer {pid}: epoch {batch.producer_epoch} is older than its current epoch {entry.epoch}",
            )
        if batch.producer_epoch > entry.epoch:
            if first != 0:
                raise SequenceError(
                    "OUT_OF_ORDER_SEQUENCE_NUMBER",
                    f"producer {pid}: a new epoch {batch.producer_epoch} must start at sequence 0, not {first}",
                )
            return
        for cached_first, cached_last, offset in entry.batches:
            if (cached_first, cached_last) == (first, last):
                raise DuplicateBatch(offset, batch.last_offset_delta + 1)
        if _in_sequence(entry.last_sequence, first):
            return
        if entry.batches and entry.batches[0][0] > last >= 0 and first <= entry.last_sequence:
            raise SequenceError(
                "DUPLICATE_SEQUENCE_NUMBER",
                f"producer {pid}: sequences {first}..{last} were written before the batches still remembered",
            )
        raise SequenceError(
            "OUT_OF_ORDER_SEQUENCE_NUMBER", f"producer {pid}: sequence {first} does not follow {entry.last_sequence}"
        )
