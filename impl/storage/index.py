"""Sparse segment indexes: OffsetIndex (relative offset -> file position) and TimeIndex (timestamp ->
relative offset), kept in memory for binary search and appended to their file as entries are added."""

from __future__ import annotations

import struct
from bisect import bisect_right

from .fs import FileHandle, FileSystem


class CorruptIndexError(Exception):
    """An index file fails its sanity check; the segment rebuilds it from the log."""


class _SparseIndex:
    _ENTRY: struct.Struct

    def __init__(self, fs: FileSystem, path: str, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._fs = fs
        self._file: FileHandle = fs.open(path)
        self._keys: list[int] = []
        self._values: list[int] = []
        self._dirty = False

    def __len__(self) -> int:
        return len(self._keys)

    def load(self) -> None:
        """Read the entries back; raise CorruptIndexError on a partial entry or unordered keys."""
        data = self._file.read(0, self._file.size())
        size = self._ENTRY.size
        if len(data) % size:
            raise CorruptIndexError(f"{self.path}: {len(data)} bytes is not a whole number of {size}-byte entries")
        keys, values = [], []
        for key, value in self._ENTRY.iter_unpack(data):
            key, value = self._decode(key, value)
            if keys and (key <= keys[-1] or value < values[-1]):
                raise CorruptIndexError(f"{self.path}: entry {len(keys)} is out of order")
            keys.append(key)
            values.append(value)
        self._keys, self._values = keys, values

    def _decode(self, key: int, value: int) -> tuple[int, int]:
        return key, value

    def _encode(self, key: int, value: int) -> bytes:
        return self._ENTRY.pack(key, value)

    def _append(self, key: int, value: int) -> None:
        self._file.append(self._encode(key, value))
        self._keys.append(key)
        self._values.append(value)
        self._dirty = True

    def _floor(self, key: int) -> int:
        """Index of the last entry with key <= ``key``, -1 if none."""
        return bisect_right(self._keys, key) - 1

    def _truncate_entries(self, count: int) -> None:
        if count < len(self._keys):
            del self._keys[count:]
            del self._values[count:]
            self._file.truncate(count * self._ENTRY.size)

    def reset(self) -> None:
        """Empty the index (and its file, whatever it held) before a rebuild."""
        self._keys, self._values = [], []
        self._file.truncate(0)

    def flush(self) -> None:
        if self._dirty:
            self._file.fsync()
            self._dirty = False

    def close(self) -> None:
        self._file.close()

    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._keys, self._values))


class OffsetIndex(_SparseIndex):
    """Kafka's OffsetIndex: 8-byte entries (offset - base offset: int32, position: int32)."""

    _ENTRY = struct.Struct(">ii")

    def _decode(self, key: int, value: int) -> tuple[int, int]:
        return key + self.base_offset, value

    def _encode(self, key: int, value: int) -> bytes:
        return self._ENTRY.pack(key - self.base_offset, value)

    def append(self, offset: int, position: int) -> None:
        """Index the batch at ``position`` whose last offset is ``offset``."""
        self._append(offset, position)

    def lookup(self, offset: int) -> int:
        """File position to start scanning from for ``offset``: the floor entry's, or 0."""
        i = self._floor(offset)
        return self._values[i] if i >= 0 else 0

    def last_entry(self) -> tuple[int, int] | None:
        return (self._keys[-1], self._values[-1]) if self._keys else None

    def truncate_to(self, offset: int) -> None:
        """Drop entries for offsets >= ``offset`` (their batches are being truncated away)."""
        self._truncate_entries(self._floor(offset - 1) + 1)

    def check(self, log_size: int) -> None:
        """Kafka's sanityCheck: entries must point inside the log file."""
        if self._values and self._values[-1] >= log_size:
            raise CorruptIndexError(
                f"{self.path}: last entry points at position {self._values[-1]} beyond the {log_size}-byte log"
            )


class TimeIndex(_SparseIndex):
    """Kafka's TimeIndex: 12-byte entries (timestamp: int64, offset - base offset: int32)."""

    _ENTRY = struct.Struct(">qi")

    def _decode(self, key: int, value: int) -> tuple[int, int]:
        return key, value + self.base_offset

    def _encode(self, key: int, value: int) -> bytes:
        return self._ENTRY.pack(key, value - self.base_offset)

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Add (max timestamp so far, its offset) if the timestamp grew since the last entry."""
        if not self._keys or timestamp > self._keys[-1]:
            self._append(timestamp, offset)

    def lookup(self, timestamp: int) -> int | None:
        """Offset of the last entry with timestamp <= ``timestamp`` (a scan start), None if none."""
        i = self._floor(timestamp)
        return self._values[i] if i >= 0 else None

    def last_entry(self) -> tuple[int, int] | None:
        return (self._keys[-1], self._values[-1]) if self._keys else None

    def truncate_to(self, offset: int) -> None:
        """Drop entries pointing at offsets >= ``offset``."""
        count = len(self._values)
        while count and self._values[count - 1] >= offset:
            count -= 1
        self._truncate_entries(count)
