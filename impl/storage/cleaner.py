"""Log compaction (Kafka's LogCleaner): keep the latest record per key, keep offsets, drop old tombstones.

Only closed segments entirely below the HW are cleaned. The cleaner only decides what to keep;
``Log.replace_segments`` swaps the rewritten content in, crash-safely (see ``swap``).
"""

from __future__ import annotations

from typing import Callable, Protocol, Sequence

from .config import LogConfig
from .records import LogRecord, RecordBatch
from .segment import LogSegment


class CleanableLog(Protocol):
    """What the cleaner needs of a log (``Log`` is one)."""

    config: LogConfig

    @property
    def segments(self) -> list[LogSegment]: ...

    @property
    def high_watermark(self) -> int: ...

    def replace_segments(
        self, new_segments: Sequence[Sequence[RecordBatch]], old_segments: Sequence[LogSegment]
    ) -> list[LogSegment]: ...


def _offset_map(segments: list[LogSegment]) -> dict[bytes, int]:
    """Kafka's OffsetMap: key -> offset of its latest record in the cleanable range."""
    latest: dict[bytes, int] = {}
    for segment in segments:
        for _, batch in segment.iter_batches():
            if batch.is_control_batch:  # a marker's key is its type, not a record key
                continue
            for record in batch.records():
                if record.key is not None:
                    latest[record.key] = record.offset
    return latest


def _retain(record: LogRecord, latest: dict[bytes, int], tombstone_horizon: int) -> bool:
    if record.key is None:  # nothing to compact it against
        return True
    if latest[record.key] != record.offset:
        return False
    # a tombstone must live delete.retention.ms so consumers see the delete before it vanishes
    return record.value is not None or record.timestamp_ms >= tombstone_horizon


def _clean_segment(segment: LogSegment, latest: dict[bytes, int], horizon: int) -> list[RecordBatch] | None:
    """The segment's batches after cleaning, or None if nothing would change. The last batch is kept
    even when empty, so the segment still ends at the same offset (as Kafka keeps empty batches).
    Control batches are kept whole: without transactions to track, no marker is known to be spent."""
    batches = [batch for _, batch in segment.iter_batches()]
    out: list[RecordBatch] = []
    changed = False
    for i, batch in enumerate(batches):
        if batch.is_control_batch:
            out.append(batch)
            continue
        records = batch.records()
        kept = [r for r in records if _retain(r, latest, horizon)]
        if len(kept) == len(records):
            out.append(batch)
            continue
        changed = True
        if kept or i == len(batches) - 1:
            out.append(batch.with_records(kept))
    return out if changed else None


def clean_log(log: CleanableLog, clock: Callable[[], int]) -> int:
    """Compact the closed segments below the HW; returns the bytes removed."""
    if not log.config.compact:
        return 0
    segments = log.segments
    count = 0
    while count < len(segments) - 1 and segments[count + 1].base_offset <= log.high_watermark:
        count += 1
    cleanable = segments[:count]
    if not cleanable:
        return 0
    latest = _offset_map(cleanable)
    horizon = clock() - log.config.delete_retention_ms
    removed = 0
    for segment in cleanable:
        batches = _clean_segment(segment, latest, horizon)
        if batches is not None:
            size = segment.size
            (cleaned,) = log.replace_segments([batches], [segment])
            removed += size - cleaned.size
    return removed
