"""LogSegment: one ``<base offset>.log`` file of batches with its ``.index`` and ``.timeindex``."""

from __future__ import annotations

import re
import struct
from typing import Callable

from .errors import CorruptRecordError
from .fs import FileSystem
from .index import CorruptIndexError, OffsetIndex, TimeIndex
from .records import HEADER, HEADER_SIZE, LOG_OVERHEAD, RecordBatch

INT32_MAX = 2**31 - 1
# the three header fields a scan needs: baseOffset, batchLength, (skip 11 bytes), lastOffsetDelta
_SCAN = struct.Struct(">qi11xi")
_LENGTH = struct.Struct(">qi")
_MIN_LENGTH = HEADER_SIZE - LOG_OVERHEAD  # the smallest batchLength a real batch can have
SEGMENT_FILE = re.compile(r"^(\d{20})\.(log|index|timeindex)$")


def file_name(base_offset: int, suffix: str) -> str:
    """Kafka's segment file name: the base offset as 20 digits, e.g. 00000000000000000042.log."""
    return f"{base_offset:020d}{suffix}"


class LogSegment:
    """Appends batches, finds offsets (sparse index, then a short scan), truncates, recovers."""

    def __init__(self, fs: FileSystem, directory: str, base_offset: int, index_interval_bytes: int) -> None:
        self.base_offset = base_offset
        self.log_path = fs.join(directory, file_name(base_offset, ".log"))
        self.index_path = fs.join(directory, file_name(base_offset, ".index"))
        self.time_index_path = fs.join(directory, file_name(base_offset, ".timeindex"))
        self._fs = fs
        self._interval = index_interval_bytes
        self._had_indexes = fs.exists(self.index_path) and fs.exists(self.time_index_path)
        self.log = fs.open(self.log_path)
        self.offset_index = OffsetIndex(fs, self.index_path, base_offset)
        self.time_index = TimeIndex(fs, self.time_index_path, base_offset)
        self.size = self.log.size()
        self.last_offset: int | None = None  # last offset of the last batch, None if empty
        self.max_timestamp = -1
        self.offset_of_max_timestamp = -1
        self.rolling_timestamp: int | None = None  # max timestamp of the first batch (segment.ms)
        self._bytes_since_index = 0
        self._dirty = False
        # a known batch boundary (base offset, position): followers fetch at the tail, where the
        # sparse index alone would leave a scan of up to index.interval.bytes
        self._hint = (base_offset, 0)

    # ------------------------------------------------------------------------------- appending

    def _account(self, position: int, size: int, last_offset: int, max_timestamp: int) -> None:
        """Index bookkeeping shared by append and recovery (LogSegment.append)."""
        if self.rolling_timestamp is None:
            self.rolling_timestamp = max_timestamp
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.offset_of_max_timestamp = last_offset
        if self._bytes_since_index > self._interval:
            self.offset_index.append(last_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self._bytes_since_index = 0
        self._bytes_since_index += size
        self.last_offset = last_offset

    def append(self, batch: RecordBatch) -> None:
        buffer = batch.buffer
        position = self.log.append(buffer)
        self.size = position + len(buffer)
        self._hint = (batch.base_offset, position)
        self._account(position, len(buffer), batch.base_offset + batch.last_offset_delta, batch.max_timestamp)
        self._dirty = True

    def should_roll(self, batch: RecordBatch, segment_bytes: int, segment_ms: int | None) -> bool:
        """Kafka's shouldRoll: full, too old (by record timestamps), or relative offsets would overflow."""
        overflow = batch.base_offset + batch.last_offset_delta - self.base_offset > INT32_MAX
        if self.size == 0:
            return overflow
        return (
            overflow
            or self.size + len(batch.buffer) > segment_bytes
            or (segment_ms is not None and batch.max_timestamp - self.rolling_timestamp > segment_ms)
        )

    @property
    def next_offset(self) -> int:
        return self.base_offset if self.last_offset is None else self.last_offset + 1

    # --------------------------------------------------------------------------------- reading

    def find(self, offset: int) -> int | None:
        """Position of the first batch whose last offset is >= ``offset``, None if there is none."""
        position = self.offset_index.lookup(offset)
        hint_base, hint_position = self._hint
        if hint_base <= offset and hint_position > position:
            position = hint_position  # every batch before it ends below hint_base
        size, read = self.size, self.log.read
        try:
            while position < size:
                base, length, last_delta = _SCAN.unpack(read(position, _SCAN.size))
                if length < _MIN_LENGTH:
                    raise self._bad_length(position, length)
                if base + last_delta >= offset:
                    return position
                position += length + LOG_OVERHEAD
        except struct.error:
            raise CorruptRecordError(f"{self.log_path}: torn batch header at position {position}") from None
        return None

    def _bad_length(self, position: int, length: int) -> CorruptRecordError:
        return CorruptRecordError(
            f"{self.log_path}: batch at position {position} declares "
            f"{length + LOG_OVERHEAD} bytes, less than a batch header"
        )

    def read(self, offset: int, max_bytes: int, max_offset: int | None, min_one: bool = True) -> tuple[bytes, bool]:
        """Whole batches from the one holding ``offset``: at most ``max_bytes``, except that with
        ``min_one`` a first batch larger than that is returned whole (KIP-74); only batches entirely
        below ``max_offset``. Also says whether the read stopped at the end of the segment."""
        start = self.find(offset)
        if start is None:
            return b"", True
        chunk = self.log.read(start, min(max_bytes, self.size - start))
        p, end = 0, len(chunk)
        while p + _SCAN.size <= end:
            base, length, last_delta = _SCAN.unpack_from(chunk, p)
            if length < _MIN_LENGTH:
                raise self._bad_length(start + p, length)
            if (max_offset is not None and base + last_delta >= max_offset) or p + length + LOG_OVERHEAD > end:
                break
            p += length + LOG_OVERHEAD
        if p == 0 and min_one:
            base, length, last_delta = _SCAN.unpack(self.log.read(start, _SCAN.size))
            if max_offset is None or base + last_delta < max_offset:
                return self.log.read(start, length + LOG_OVERHEAD), start + length + LOG_OVERHEAD == self.size
        return chunk[:p], start + p == self.size

    def iter_batches(self, start_position: int = 0):
        """Every batch from a position: (position, RecordBatch). For the cleaner, retention, dump."""
        position = start_position
        while position < self.size:
            head = self.log.read(position, LOG_OVERHEAD)
            if len(head) < LOG_OVERHEAD:
                raise CorruptRecordError(f"{self.log_path}: torn batch header at position {position}")
            _, length = _LENGTH.unpack(head)
            size = length + LOG_OVERHEAD
            if size < HEADER_SIZE:
                raise CorruptRecordError(f"{self.log_path}: batch at position {position} declares {size} bytes")
            yield position, RecordBatch(self.log.read(position, size))
            position += size

    # ------------------------------------------------------------------------------ truncation

    def truncate_to(self, offset: int) -> int:
        """Remove every batch whose last offset is >= ``offset``; returns the bytes removed."""
        position = self.find(offset)
        if position is None:
            return 0
        removed = self.size - position
        self._hint = (self.base_offset, 0)
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.log.truncate(position)
        self.size = position
        self._load_tail()
        return removed

    def _load_tail(self, limit: int | None = None) -> None:
        """Derive last offset, max timestamp and index spacing from the last index entries and a
        scan of the batches after them; checks the last offset-index entry points at its batch."""
        entry = self.offset_index.last_entry()
        start = entry[1] if entry else 0
        time_entry = self.time_index.last_entry()
        self.max_timestamp, self.offset_of_max_timestamp = time_entry if time_entry else (-1, -1)
        self.last_offset = None
        self.rolling_timestamp = None
        position = start
        while position < self.size:
            header = self.log.read(position, HEADER_SIZE)
            if len(header) < HEADER_SIZE:
                raise CorruptIndexError(f"{self.log_path}: torn batch header at position {position}")
            fields = HEADER.unpack(header)
            base, length, last_delta, max_ts = fields[0], fields[1], fields[6], fields[8]
            if length < _MIN_LENGTH:
                raise CorruptIndexError(str(self._bad_length(position, length)))
            if position == start and entry and base + last_delta != entry[0]:
                raise CorruptIndexError(
                    f"{self.index_path}: last entry names offset {entry[0]} but the "
                    f"batch at position {position} ends at {base + last_delta}"
                )
            self.last_offset = base + last_delta
            if limit is not None and self.last_offset >= limit:
                raise CorruptIndexError(
                    f"{self.log_path}: batch at position {position} ends at offset "
                    f"{self.last_offset}, inside the next segment (base {limit})"
                )
            if max_ts > self.max_timestamp:
                self.max_timestamp, self.offset_of_max_timestamp = max_ts, self.last_offset
            position += length + LOG_OVERHEAD
        if position != self.size:
            raise CorruptIndexError(f"{self.log_path}: last batch runs past the end of the file")
        if self.size:
            self.rolling_timestamp = HEADER.unpack(self.log.read(0, HEADER_SIZE))[8]
        if time_entry and self.last_offset is not None and time_entry[1] > self.last_offset:
            raise CorruptIndexError(f"{self.time_index_path}: entry beyond the last offset")
        self._bytes_since_index = self.size - start

    # -------------------------------------------------------------------------------- recovery

    def load(self, limit: int | None = None) -> None:
        """Open a segment trusted to be intact (below the recovery point): load and check its indexes,
        and that its last batch ends below ``limit`` (the next segment's base offset). Raises
        CorruptIndexError if not; the caller then calls ``recover``."""
        if not self._had_indexes and self.size:
            raise CorruptIndexError(f"{self.index_path}: missing")
        self.offset_index.load()
        self.time_index.load()
        self.offset_index.check(self.size)
        self._load_tail(limit)

    def recover(
        self, on_batch: Callable[[RecordBatch], None] | None = None, limit: int | None = None
    ) -> tuple[int, str | None]:
        """Kafka's LogSegment.recover: re-validate every batch (CRC, sizes, offsets ascending and below
        ``limit``, the next segment's base), rebuild both indexes, truncate at the first invalid
        batch. Returns (bytes truncated, why) — (0, None) if the segment was sound."""
        self.offset_index.reset()
        self.time_index.reset()
        self._hint = (self.base_offset, 0)
        self.last_offset, self.rolling_timestamp = None, None
        self.max_timestamp = self.offset_of_max_timestamp = -1
        self._bytes_since_index = 0
        file_size = self.log.size()
        position, previous, reason = 0, self.base_offset - 1, None
        while position < file_size:
            head = self.log.read(position, LOG_OVERHEAD)
            if len(head) < LOG_OVERHEAD:
                reason = f"torn batch header at position {position}"
                break
            _, length = _LENGTH.unpack(head)
            size = length + LOG_OVERHEAD
            if size < HEADER_SIZE or position + size > file_size:
                reason = f"torn batch at position {position}: declares {size} bytes, {file_size - position} remain"
                break
            try:
                batch = RecordBatch(self.log.read(position, size))
                batch.ensure_valid()
            except CorruptRecordError as exc:
                reason = f"corrupt batch at position {position}: {exc}"
                break
            if (
                batch.base_offset <= previous
                or batch.last_offset - self.base_offset > INT32_MAX
                or (limit is not None and batch.last_offset >= limit)
            ):
                reason = (
                    f"batch at position {position} has offsets {batch.base_offset}..{batch.last_offset}, "
                    f"not after {previous}" + (f" and below {limit}" if limit is not None else "")
                )
                break
            self._account(position, size, batch.last_offset, batch.max_timestamp)
            if on_batch is not None:
                on_batch(batch)
            previous = batch.last_offset
            position += size
        truncated = file_size - position
        if truncated:
            self.log.truncate(position)
        self.size = position
        self._dirty = True  # the rebuilt indexes must reach the disk on the next flush
        return truncated, reason

    # ------------------------------------------------------------------------------- lifecycle

    def flush(self, indexes: bool = True) -> None:
        """fsync the log file and, unless ``indexes`` is False, both indexes. The log's active segment
        passes False: after an unclean shutdown recovery rebuilds its indexes from the batches whatever
        they hold, so only a roll (closing it) or a clean shutdown needs them on the disk."""
        if self._dirty:
            self.log.fsync()
            self._dirty = False
        if indexes:
            self.offset_index.flush()
            self.time_index.flush()

    def close(self) -> None:
        self.log.close()
        self.offset_index.close()
        self.time_index.close()

    def delete(self) -> None:
        """Remove the files, the log first: a crash in between leaves only orphan indexes, which open drops."""
        self.close()
        for path in (self.log_path, self.index_path, self.time_index_path):
            if self._fs.exists(path):
                self._fs.remove(path)

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self.size}, next_offset={self.next_offset})"
