"""Log compaction (Kafka's LogCleaner): keep the latest record per key, keep offsets, drop old tombstones.

Only closed segments entirely below the HW are cleaned. A rewritten segment goes to
``<base>.log.cleaned``, is fsynced, renamed to ``<base>.log.swap``, then replaces the ``.log``;
``Log.open`` deletes a leftover ``.cleaned`` and completes a leftover ``.swap``, so a crash at any
point leaves either the old or the new content.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .loader import CLEANED_SUFFIX, SWAP_SUFFIX
from .records import LogRecord, RecordBatch
from .segment import LogSegment

if TYPE_CHECKING:
    from .log import Log


def _offset_map(segments: list[LogSegment]) -> dict[bytes, int]:
    """Kafka's OffsetMap: key -> offset of its latest record in the cleanable range."""
    latest: dict[bytes, int] = {}
    for segment in segments:
        for _, batch in segment.iter_batches():
            for record in batch.records():
                if record.key is not None:
                    latest[record.key] = record.offset
    return latest


def _retain(record: LogRecord, latest: dict[bytes, int], tombstone_horizon: int) -> bool:
    if record.key is None:                      # nothing to compact it against
        return True
    if latest[record.key] != record.offset:
        return False
    # a tombstone must live delete.retention.ms so consumers see the delete before it vanishes
    return record.value is not None or record.timestamp_ms >= tombstone_horizon


def _clean_segment(segment: LogSegment, latest: dict[bytes, int], horizon: int) -> list[RecordBatch] | None:
    """The segment's batches after cleaning, or None if nothing would change. The last batch is kept
    even when empty, so the segment still ends at the same offset (as Kafka keeps empty batches)."""
    batches = [batch for _, batch in segment.iter_batches()]
    out: list[RecordBatch] = []
    changed = False
    for i, batch in enumerate(batches):
        records = batch.records()
        kept = [r for r in records if _retain(r, latest, horizon)]
        if len(kept) == len(records):
            out.append(batch)
            continue
        changed = True
        if kept or i == len(batches) - 1:
            out.append(batch.with_records(kept))
    return out if changed else None


def _swap_in(log: "Log", index: int, batches: list[RecordBatch]) -> int:
    fs, old = log.fs, log._segments[index]
    cleaned = old.log_path + CLEANED_SUFFIX
    swap = old.log_path + SWAP_SUFFIX
    handle = fs.open(cleaned)
    handle.truncate(0)
    for batch in batches:
        handle.append(batch.buffer)
    handle.fsync()
    handle.close()
    fs.rename(cleaned, swap)
    fs.fsync_dir(log.dir)                       # from here on, open completes the swap
    old.close()
    for path in (old.index_path, old.time_index_path):
        if fs.exists(path):
            fs.remove(path)
    fs.rename(swap, old.log_path)
    fs.fsync_dir(log.dir)
    segment = LogSegment(fs, log.dir, old.base_offset, log.config.index_interval_bytes)
    segment.recover()                           # rebuilds both indexes from the new content
    segment.flush()
    log._segments[index] = segment
    return old.size - segment.size


def clean_log(log: "Log") -> int:
    """Compact the closed segments below the HW; returns the bytes removed."""
    if not log.config.compact:
        return 0
    bases = log._bases
    count = 0
    while count < len(bases) - 1 and bases[count + 1] <= log.high_watermark:
        count += 1
    cleanable = log._segments[:count]
    if not cleanable:
        return 0
    latest = _offset_map(cleanable)
    horizon = log._clock() - log.config.delete_retention_ms
    removed = 0
    for i, segment in enumerate(cleanable):
        batches = _clean_segment(segment, latest, horizon)
        if batches is not None:
            removed += _swap_in(log, i, batches)
    return removed
