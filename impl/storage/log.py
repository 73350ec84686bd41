"""Log: the segments of one partition replica, its leader epoch cache and its checkpoints (UnifiedLog)."""

from __future__ import annotations

import time
from bisect import bisect_right
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

from .cleaner import clean_log
from .config import LogConfig
from .epoch_cache import LeaderEpochFileCache
from .errors import (
    CorruptRecordError,
    InvalidConfigError,
    InvalidRecordError,
    LogClosedError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
    UnexpectedAppendOffsetError,
)
from .fs import FileSystem, OsFileSystem
from .loader import CLEAN_SHUTDOWN_FILE, LoadedLog, LogLoader, RecoveryReport
from .producer_state import ProducerStateManager
from .records import (
    LOG_APPEND_TIME,
    MAGIC,
    LogRecord,
    Record,
    RecordBatch,
    build_batch,
    iter_batches,
    restamp,
    validate_producer_batch,
)
from .segment import LogSegment
from .swap import swap_segment

DEFAULT_FETCH_MAX_BYTES = 1 << 20


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class BatchExtent:
    """Where one batch lies on disk: its segment file, position and size, and its offsets."""

    path: str
    position: int
    size: int
    base_offset: int
    next_offset: int


@dataclass(frozen=True, slots=True)
class LogAppendInfo:
    """What an append wrote: offsets first..last, the max timestamp, the record count."""

    first_offset: int
    last_offset: int
    max_timestamp: int
    record_count: int
    size_bytes: int


class FetchDataInfo:
    """Whole batches read from ``fetch_offset``: raw ``data`` to ship to a follower, ``batches``, and
    ``records`` (offsets >= fetch_offset: a batch may start before it)."""

    __slots__ = ("fetch_offset", "data", "_batches", "_end", "cut")

    def __init__(self, fetch_offset: int, data: bytes, log_end_offset: int | None = None, cut: bool = False) -> None:
        self.fetch_offset = fetch_offset
        self.data = data
        self._batches: list[RecordBatch] | None = None
        self._end = log_end_offset
        self.cut = cut  # the read stopped at ``max_bytes`` before the end of the log

    @property
    def batches(self) -> list[RecordBatch]:
        if self._batches is None:
            self._batches = list(iter_batches(self.data))
        return self._batches

    @property
    def records(self) -> list[LogRecord]:
        """Decoded records, as a consumer sees them: control batches (transaction markers) give none.
        Bit rot raises CorruptRecordError: the CRC is checked, and since it does not cover the base
        offset, offsets must also ascend and stay below the LEO of the read."""
        start = self.fetch_offset
        out: list[LogRecord] = []
        previous = -1
        for batch in self.batches:
            batch.ensure_valid()
            if batch.base_offset <= previous or (self._end is not None and batch.last_offset >= self._end):
                raise CorruptRecordError(
                    f"batch at offset {batch.base_offset} (last {batch.last_offset}) is out "
                    f"of order after offset {previous} or past the log end {self._end}"
                )
            previous = batch.last_offset
            if not batch.is_control_batch:
                out.extend(r for r in batch.records() if r.offset >= start)
        return out

    @property
    def size(self) -> int:
        return len(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        return f"FetchDataInfo(fetch_offset={self.fetch_offset}, bytes={len(self.data)})"


class Log:
    """One replica's log. Open with ``Log.open``; the replication layer sets ``high_watermark``."""

    def __init__(
        self, directory: str, config: LogConfig, fs: FileSystem, clock: Callable[[], int], loaded: LoadedLog
    ) -> None:
        """A log over what ``LogLoader(fs, directory, config).load()`` returned for ``directory``."""
        self.dir = directory
        self.config = config
        self.fs = fs
        self._clock = clock
        self._segments: list[LogSegment] = list(loaded.segments)
        self._bases: list[int] = [s.base_offset for s in self._segments]
        self._leo = loaded.log_end_offset
        self._hw = loaded.high_watermark
        self._recovery_point = loaded.recovery_point
        self._last_flush_ms = clock()
        self._dir_dirty = loaded.dir_needs_fsync
        self._closed = False
        self._hw_checkpoint = loaded.high_watermark_checkpoint
        self._rp_checkpoint = loaded.recovery_point_checkpoint
        self.leader_epoch_cache: LeaderEpochFileCache = loaded.leader_epoch_cache
        self.recovery_report: RecoveryReport = loaded.recovery_report
        self._producer_state: ProducerStateManager | None = None  # built from the log when first needed

    # ===================================================================================== open

    @classmethod
    def open(
        cls,
        directory: str,
        config: LogConfig | None = None,
        fs: FileSystem | None = None,
        clock: Callable[[], int] | None = None,
    ) -> "Log":
        """Open (or create) the log in ``directory``, recovering it after an unclean shutdown."""
        config = LogConfig() if config is None else config
        if not isinstance(config, LogConfig):
            raise InvalidConfigError(f"config must be a LogConfig, got {type(config).__name__}")
        fs = OsFileSystem() if fs is None else fs
        directory = str(directory)
        return cls(directory, config, fs, clock or wall_clock_ms, LogLoader(fs, directory, config).load())

    # ================================================================================ properties

    @property
    def log_start_offset(self) -> int:
        return self._segments[0].base_offset

    @property
    def log_end_offset(self) -> int:
        return self._leo

    @property
    def high_watermark(self) -> int:
        return self._hw

    @high_watermark.setter
    def high_watermark(self, offset: int) -> None:
        self.update_high_watermark(offset)

    def update_high_watermark(self, offset: int) -> int:
        """Set the HW, clamped to [log start offset, LEO] as Kafka's updateHighWatermark does."""
        self._hw = min(max(int(offset), self.log_start_offset), self._leo)
        return self._hw

    @property
    def recovery_point(self) -> int:
        """Offsets below it are fsynced (Kafka's recoveryPoint)."""
        return self._recovery_point

    @property
    def latest_epoch(self) -> int:
        return self.leader_epoch_cache.latest_epoch

    @property
    def segments(self) -> list[LogSegment]:
        return list(self._segments)

    @property
    def size_in_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    @property
    def unflushed_messages(self) -> int:
        return self._leo - self._recovery_point

    @property
    def hw_checkpoint(self) -> int:
        """The HW last written to ``replication-offset-checkpoint`` (0 if never)."""
        return self._hw_checkpoint.value or 0

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetsForLeaderEpoch (KIP-279): see LeaderEpochFileCache.end_offset_for."""
        return self.leader_epoch_cache.end_offset_for(epoch, self._leo)

    end_offset_for = end_offset_for_epoch

    def end_offset_for_v0(self, epoch: int) -> int:
        """OffsetsForLeaderEpoch as of KIP-101 (0.11): see LeaderEpochFileCache.end_offset_for_v0."""
        return self.leader_epoch_cache.end_offset_for_v0(epoch, self._leo)

    # ================================================================================== appends

    def append_as_leader(self, records: Sequence[Record], leader_epoch: int) -> LogAppendInfo:
        """Assign offsets from the LEO to ``records`` as one batch stamped with ``leader_epoch``
        (UnifiedLog.appendAsLeader); validates size and compaction rules, then applies the flush policy."""
        self._check_open()
        if isinstance(leader_epoch, bool) or not isinstance(leader_epoch, int) or not 0 <= leader_epoch < 2**31:
            raise InvalidRecordError(f"leader_epoch must be an int in [0, 2**31), got {leader_epoch!r}")
        records = list(records)
        now = self._clock()
        batch = build_batch(
            self._leo,
            records,
            leader_epoch,
            now,
            self.config.compression_type,
            timestamp_type=self.config.message_timestamp_type,
        )
        if batch.size > self.config.max_message_bytes:
            raise RecordTooLargeError(
                f"batch of {batch.size} bytes exceeds max.message.bytes={self.config.max_message_bytes}"
            )
        if self.config.compact and any(r.key is None for r in records):
            raise InvalidRecordError("a compacted log cannot accept a record without a key")
        self._append_batch(batch)
        self._maybe_flush(now)
        return LogAppendInfo(batch.base_offset, batch.last_offset, batch.max_timestamp, len(records), batch.size)

    @property
    def producer_state(self) -> ProducerStateManager:
        """The idempotent producers' state (see producer_state), built from the batch headers of the
        log the first time it is asked for, then kept by every append; a truncation drops it."""
        if self._producer_state is None:
            self._producer_state = ProducerStateManager(
                batch for segment in self._segments for _, batch in segment.iter_batches()
            )
        return self._producer_state

    def append_batch_as_leader(self, batch: RecordBatch, leader_epoch: int) -> LogAppendInfo:
        """A producer's batch as it came (UnifiedLog.appendAsLeader with LogValidator's in-place
        path): checked (size, magic 2, CRC, every record decoded, offsets consecutive), then given
        its base offset and this leader's epoch, fields outside the CRC, so its bytes are stored as
        the client wrote them; under LogAppendTime its timestamp is stamped and the CRC computed anew."""
        self._check_open()
        if batch.size > self.config.max_message_bytes:  # before decoding a batch that is refused anyway
            raise RecordTooLargeError(
                f"batch of {batch.size} bytes exceeds max.message.bytes={self.config.max_message_bytes}"
            )
        if batch.magic != MAGIC:
            raise InvalidRecordError(f"record batch magic {batch.magic}: only v{MAGIC} batches are accepted")
        batch.ensure_valid()
        if batch.is_control_batch:
            raise InvalidRecordError("a producer cannot write a control batch")
        validate_producer_batch(batch)
        now = self._clock()
        append_time = now if self.config.message_timestamp_type == LOG_APPEND_TIME else None
        batch = restamp(batch, self._leo, leader_epoch, append_time)
        self._append_batch(batch)
        self._maybe_flush(now)
        return LogAppendInfo(batch.base_offset, batch.last_offset, batch.max_timestamp, batch.record_count, batch.size)

    def append_as_follower(
        self, batches: bytes | bytearray | FetchDataInfo | RecordBatch | Iterable[RecordBatch | bytes]
    ) -> LogAppendInfo | None:
        """Append fetched batches with the offsets they carry (UnifiedLog.appendAsFollower): each
        must pass its CRC check and start after the previous one, the first at or after the LEO.
        Nothing is appended unless every batch is valid. Returns None for an empty fetch."""
        self._check_open()
        parsed = _as_batches(batches)
        if not parsed:
            return None
        expected = self._leo
        for batch in parsed:
            batch.ensure_valid()
            if batch.base_offset < expected:
                if batch is parsed[0]:
                    raise UnexpectedAppendOffsetError(
                        f"first batch starts at offset {batch.base_offset}, below the log end offset {self._leo}"
                    )
                raise CorruptRecordError(
                    f"batch at offset {batch.base_offset} does not follow the previous batch (next offset {expected})"
                )
            expected = batch.last_offset + 1
        for batch in parsed:
            self._append_batch(batch)
        self._maybe_flush(self._clock())
        return LogAppendInfo(
            parsed[0].base_offset,
            parsed[-1].last_offset,
            max(b.max_timestamp for b in parsed),
            sum(b.record_count for b in parsed),
            sum(b.size for b in parsed),
        )

    def _append_batch(self, batch: RecordBatch) -> None:
        if self._producer_state is not None:
            self._producer_state.update(batch)
        epoch = batch.partition_leader_epoch
        if epoch >= 0 and epoch != self.leader_epoch_cache.latest_epoch:
            self.leader_epoch_cache.assign(epoch, batch.base_offset)
        segment = self._segments[-1]
        if segment.should_roll(batch, self.config.segment_bytes, self.config.segment_ms):
            segment = self._roll(batch.base_offset)
        segment.append(batch)
        self._leo = batch.base_offset + batch.last_offset_delta + 1

    def _roll(self, base_offset: int) -> LogSegment:
        """Start a new active segment. The old ones are fsynced first and the recovery point moves to
        the new base (Kafka schedules flushUptoOffsetExclusive on roll): a power loss can never keep a
        newer segment while losing part of an older one, and closed segments never need recovery."""
        if not self._segments[-1].size:
            # an empty segment too far below the batch for 32-bit relative offsets: replace it
            self._segments.pop().delete()
            self._bases.pop()
        start = max(bisect_right(self._bases, self._recovery_point) - 1, 0)
        for old in self._segments[start:]:
            old.flush()
        segment = LogSegment(self.fs, self.dir, base_offset, self.config.index_interval_bytes)
        self._segments.append(segment)
        self._bases.append(base_offset)
        self._recovery_point = max(self._recovery_point, min(base_offset, self._leo))
        if self._rp_checkpoint.value != self._recovery_point:
            self._rp_checkpoint.write(self._recovery_point)  # its rename fsyncs the directory too
        else:
            self.fs.fsync_dir(self.dir)
        self._dir_dirty = False
        return segment

    def roll(self) -> None:
        """Roll now (Kafka's forced roll), unless the active segment is empty."""
        self._check_open()
        if self._segments[-1].size:
            self._roll(self._leo)

    # ==================================================================================== reads

    def read(
        self, offset: int, max_bytes: int = DEFAULT_FETCH_MAX_BYTES, max_offset: int | None = None, max_batches: int = 0
    ) -> FetchDataInfo:
        """Whole batches from the one holding ``offset``, up to ``max_bytes`` and, if > 0,
        ``max_batches`` (but at least one batch, KIP-74), across segments, only batches entirely
        below ``max_offset`` (e.g. the HW for a consumer). Offsets removed by compaction are skipped.
        OffsetOutOfRangeError outside [log start offset, LEO]."""
        info = self._read(offset, max_bytes, max_offset)
        if max_batches > 0 and len(info.batches) > max_batches:
            data = b"".join(b.buffer for b in info.batches[:max_batches])
            return FetchDataInfo(offset, data, self._leo)
        return info

    def _read(self, offset: int, max_bytes: int, max_offset: int | None) -> FetchDataInfo:
        self._check_open()
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
        if offset < self.log_start_offset or offset > self._leo:
            raise OffsetOutOfRangeError(f"offset {offset} is outside [{self.log_start_offset}, {self._leo}]")
        if offset == self._leo or (max_offset is not None and offset >= max_offset):
            return FetchDataInfo(offset, b"")
        segments = self._segments
        parts: list[bytes] = []
        remaining = max_bytes
        for i in range(bisect_right(self._bases, offset) - 1, len(segments)):
            data, at_end = segments[i].read(offset, remaining, max_offset, min_one=not parts)
            if data:
                parts.append(data)
                remaining -= len(data)
            if not at_end or remaining <= 0:
                break
        cut = max_offset is None and not (at_end and i == len(segments) - 1)
        return FetchDataInfo(offset, parts[0] if len(parts) == 1 else b"".join(parts), self._leo, cut)

    def unflushed_batches(self) -> list[BatchExtent]:
        """The batches at or past the recovery point, in log order, with where they lie on disk: what a
        power loss may keep a prefix of (page-cache write-back is sequential)."""
        self._check_open()
        out: list[BatchExtent] = []
        for segment in self._segments[max(bisect_right(self._bases, self._recovery_point) - 1, 0) :]:
            start = segment.find(self._recovery_point)
            if start is not None:
                out.extend(
                    BatchExtent(segment.log_path, position, batch.size, batch.base_offset, batch.next_offset)
                    for position, batch in segment.iter_batches(start)
                )
        return out

    def offset_for_timestamp(self, timestamp: int) -> int | None:
        """ListOffsets by time: the first offset whose record timestamp is >= ``timestamp`` (TimeIndex)."""
        self._check_open()
        for segment in self._segments:
            if segment.max_timestamp < timestamp:
                continue
            start = segment.time_index.lookup(timestamp)
            position = segment.find(segment.base_offset if start is None else start) or 0
            for _, batch in segment.iter_batches(position):
                if batch.max_timestamp >= timestamp:
                    for record in batch.records():
                        if record.timestamp_ms >= timestamp:
                            return record.offset
        return None

    # =============================================================================== truncation

    def truncate_to(self, offset: int) -> bool:
        """Remove every batch at or after ``offset`` (a follower discarding a divergent suffix).
        Durable on return. The LEO becomes ``offset``, or the base of a batch that straddled it."""
        self._check_open()
        if offset < 0:
            raise OffsetOutOfRangeError(f"cannot truncate to negative offset {offset}")
        if offset >= self._leo:
            return False
        if offset < self.log_start_offset:
            self.truncate_fully_and_start_at(offset)
            return True
        while self._bases[-1] > offset:  # newest first: a crash leaves a prefix of the log
            self._segments.pop().delete()
            self._bases.pop()
            self._dir_dirty = True
        self._segments[-1].truncate_to(offset)
        if self._dir_dirty:
            self.fs.fsync_dir(self.dir)
            self._dir_dirty = False
        self._after_truncation(self._segments[-1].next_offset)
        return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Delete every segment and start an empty log at ``offset`` (a follower out of range)."""
        self._check_open()
        if offset < 0:
            raise OffsetOutOfRangeError(f"cannot start the log at negative offset {offset}")
        while self._segments:
            self._segments.pop().delete()
        self._bases.clear()
        self._segments.append(LogSegment(self.fs, self.dir, offset, self.config.index_interval_bytes))
        self._bases.append(offset)
        self.fs.fsync_dir(self.dir)
        self._dir_dirty = False
        self.leader_epoch_cache.clear()
        self._producer_state = None
        self._leo = offset
        self._hw = offset
        self._recovery_point = offset
        self._rp_checkpoint.write(offset)

    def _after_truncation(self, leo: int) -> None:
        self._producer_state = None
        self._leo = leo
        self.leader_epoch_cache.truncate_from_end(leo)
        self._hw = min(self._hw, leo)
        if self._recovery_point > leo:
            # written now: a stale, higher recovery point would let a torn tail escape validation
            self._recovery_point = leo
            self._rp_checkpoint.write(leo)

    # ================================================================================ retention

    def delete_old_segments(self) -> int:
        """Retention (UnifiedLog.deleteOldSegments): delete the oldest whole segments past
        ``retention.ms`` (by their largest timestamp) or beyond ``retention.bytes``; never the active
        segment, never one holding offsets at or above the HW. Returns how many were deleted."""
        self._check_open()
        if not self.config.delete:
            return 0
        now = self._clock()
        cfg = self.config
        excess = None if cfg.retention_bytes is None else self.size_in_bytes - cfg.retention_bytes
        count = 0
        for i, segment in enumerate(self._segments[:-1]):
            if self._bases[i + 1] > self._hw:
                break
            by_time = cfg.retention_ms is not None and now - segment.max_timestamp > cfg.retention_ms
            by_size = excess is not None and excess - segment.size >= 0
            if not (by_time or by_size):
                break
            if excess is not None:
                excess -= segment.size
            count += 1
        if count:
            self.delete_segments_before(self._bases[count])
        return count

    def delete_segments_before(self, offset: int) -> None:
        """Delete whole segments that end at or before the segment base ``offset``; the log start
        offset becomes the first remaining base (the active segment always stays)."""
        self._check_open()
        removed = False
        while len(self._segments) > 1 and self._bases[1] <= offset:
            self._segments.pop(0).delete()
            self._bases.pop(0)
            removed = True
        if removed:
            self.fs.fsync_dir(self.dir)
            start = self.log_start_offset
            self.leader_epoch_cache.truncate_from_start(start)
            # an epoch whose records are all gone is forgotten, as a reopen would (the cache is
            # derived from the log: epoch -> offset of its first record)
            self.leader_epoch_cache.truncate_from_end(self._leo)
            self._hw = max(self._hw, start)
            self._recovery_point = max(self._recovery_point, start)

    # ==================================================================================== flush

    def _maybe_flush(self, now: int) -> None:
        cfg = self.config
        if (cfg.flush_messages is not None and self._leo - self._recovery_point >= cfg.flush_messages) or (
            cfg.flush_ms is not None and now - self._last_flush_ms >= cfg.flush_ms
        ):
            self.flush()

    def flush(self) -> None:
        """fsync every segment with unflushed data (and the directory if segments were created), then
        advance the recovery point to the LEO and checkpoint it and the HW. The active segment's
        indexes wait for its roll or the clean shutdown: recovery rebuilds them anyway."""
        self._check_open()
        start = max(bisect_right(self._bases, self._recovery_point) - 1, 0)
        active = self._segments[-1]
        for segment in self._segments[start:]:
            segment.flush(indexes=segment is not active)
        if self._dir_dirty:
            self.fs.fsync_dir(self.dir)
            self._dir_dirty = False
        self._recovery_point = self._leo
        self._rp_checkpoint.write(self._leo)
        self._hw_checkpoint.write(self._hw)
        self._last_flush_ms = self._clock()

    def close(self) -> None:
        """Clean shutdown: flush, checkpoint, leave the clean-shutdown marker, close the files."""
        if self._closed:
            return
        for segment in self._segments:  # also indexes rebuilt below the recovery point
            segment.flush()
        self.flush()
        self._hw_checkpoint.write(self._hw, create=True)
        self.fs.write_file_atomically(self.fs.join(self.dir, CLEAN_SHUTDOWN_FILE), b"")
        for segment in self._segments:
            segment.close()
        self._closed = True

    def __enter__(self) -> "Log":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise LogClosedError(f"log {self.dir} is closed")

    # ================================================================================ compaction

    def compact(self) -> int:
        """Log compaction (LogCleaner) over the closed segments; returns the bytes removed."""
        self._check_open()
        return clean_log(self, self._clock)

    def replace_segments(
        self, new_segments: Sequence[Sequence[RecordBatch]], old_segments: Sequence[LogSegment]
    ) -> list[LogSegment]:
        """Kafka's replaceSegments: ``new_segments[i]``, batches within the offsets of the closed
        segment ``old_segments[i]``, becomes its content. Each swap is crash-safe (see ``swap``):
        after a crash, ``Log.open`` finds the old content or the new, never a mix. Offsets, the
        recovery point and the epoch cache are unchanged. Returns the new segments."""
        self._check_open()
        if len(new_segments) != len(old_segments):
            raise ValueError(f"{len(new_segments)} new segments for {len(old_segments)} old ones")
        replaced = []
        for batches, old in zip(new_segments, old_segments):
            i = bisect_right(self._bases, old.base_offset) - 1
            if i < 0 or i == len(self._segments) - 1 or self._segments[i] is not old:
                raise ValueError(f"{old!r} is not a closed segment of {self.dir}")
            if batches and (batches[0].base_offset < old.base_offset or batches[-1].last_offset >= self._bases[i + 1]):
                raise ValueError(
                    f"batches {batches[0].base_offset}..{batches[-1].last_offset} do not fit "
                    f"segment {old.base_offset} (next segment at {self._bases[i + 1]})"
                )
            self._segments[i] = swap_segment(self.fs, self.dir, old, batches, self.config.index_interval_bytes)
            replaced.append(self._segments[i])
        return replaced

    def __repr__(self) -> str:
        return (
            f"Log({self.dir!r}, log_start_offset={self.log_start_offset}, log_end_offset={self._leo}, "
            f"high_watermark={self._hw}, segments={len(self._segments)})"
        )


def _as_batches(batches) -> list[RecordBatch]:
    if isinstance(batches, FetchDataInfo):
        return batches.batches
    if isinstance(batches, RecordBatch):
        return [batches]
    if isinstance(batches, (bytes, bytearray, memoryview)):
        return list(iter_batches(bytes(batches)))
    out: list[RecordBatch] = []
    for item in batches:
        if isinstance(item, RecordBatch):
            out.append(item)
        elif isinstance(item, (bytes, bytearray, memoryview)):
            out.extend(iter_batches(bytes(item)))
        else:
            raise CorruptRecordError(f"expected RecordBatch or bytes, got {type(item).__name__}")
    return out
