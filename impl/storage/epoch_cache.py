"""LeaderEpochFileCache: leader epoch -> start offset, persisted in ``leader-epoch-checkpoint`` (KIP-101)."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from operator import attrgetter
from typing import NamedTuple

from .checkpoints import CheckpointFile
from .errors import CorruptLogError
from .fs import FileSystem

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


_START = attrgetter("start_offset")


class LeaderEpochFileCache:
    """Kafka's LeaderEpochFileCache; every change is written through to the checkpoint at once."""

    def __init__(self, fs: FileSystem, path: str, entries: list[EpochEntry] | None = None) -> None:
        self._file = CheckpointFile(fs, path, 2)
        self.path = path
        self._entries: list[EpochEntry] = list(entries or [])
        self._epochs = [e.epoch for e in self._entries]

    @classmethod
    def load(cls, fs: FileSystem, path: str) -> "LeaderEpochFileCache | None":
        """The cache from its checkpoint; None if the file is missing; CorruptLogError if malformed."""
        raw = CheckpointFile(fs, path, 2).read()
        if raw is None:
            return None
        entries = [EpochEntry(*e) for e in raw]
        for a, b in zip(entries, entries[1:]):
            if not (a.epoch < b.epoch and a.start_offset <= b.start_offset):
                raise CorruptLogError(f"{path}: epochs or start offsets out of order: {a} then {b}")
        if any(e.epoch < 0 or e.start_offset < 0 for e in entries):
            raise CorruptLogError(f"{path}: negative epoch or offset")
        return cls(fs, path, entries)

    def _set(self, entries: list[EpochEntry], kept: int = 0) -> None:
        """The new entries, of which the first ``kept`` are the old ones, written through."""
        self._epochs[kept:] = [e.epoch for e in entries[kept:]]
        self._entries = entries
        self._file.write(entries)

    def flush(self) -> None:
        self._file.write(self._entries)

    # ---------------------------------------------------------------------------------- reads

    @property
    def entries(self) -> list[EpochEntry]:
        return list(self._entries)

    @property
    def latest_epoch(self) -> int:
        return self._entries[-1].epoch if self._entries else UNDEFINED_EPOCH

    @property
    def latest_entry(self) -> EpochEntry | None:
        return self._entries[-1] if self._entries else None

    @property
    def earliest_entry(self) -> EpochEntry | None:
        return self._entries[0] if self._entries else None

    def epoch_for_offset(self, offset: int) -> int:
        """The epoch whose range holds ``offset`` (-1 if before the first entry)."""
        i = bisect_right([e.start_offset for e in self._entries], offset) - 1
        return self._entries[i].epoch if i >= 0 else UNDEFINED_EPOCH

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """OffsetsForLeaderEpoch as of KIP-279 (Kafka 2.0+): (largest epoch E' <= ``epoch``, start
        offset of the next larger epoch, or the LEO if E' is the latest); (-1, 0) if no epoch <= ``epoch``."""
        i = bisect_right(self._epochs, epoch) - 1
        if i < 0:
            return UNDEFINED_EPOCH, 0
        if i == len(self._entries) - 1:
            return self._entries[i].epoch, log_end_offset
        return self._entries[i].epoch, self._entries[i + 1].start_offset

    def end_offset_for_v0(self, epoch: int, log_end_offset: int) -> int:
        """OffsetsForLeaderEpoch as of KIP-101 (Kafka 0.11): the LEO for the latest epoch, else the start
        offset of the first larger epoch; -1 (undefined) below the earliest epoch or past the latest."""
        if epoch == self.latest_epoch:
            return log_end_offset
        if not self._entries or epoch < self._entries[0].epoch:
            return UNDEFINED_EPOCH_OFFSET
        i = bisect_right(self._epochs, epoch)
        return self._entries[i].start_offset if i < len(self._entries) else UNDEFINED_EPOCH_OFFSET

    # -------------------------------------------------------------------------------- updates

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` starts at ``start_offset`` (on append); entries with an epoch >= it or
        a start offset >= it are replaced, as Kafka's assign does."""
        entries = self._entries
        if entries and entries[-1].epoch == epoch and entries[-1].start_offset <= start_offset:
            return
        # epochs ascend and start offsets do not descend, so the entries kept are a prefix, found by
        # bisection: the cache grows with every leader change, and is updated on every new epoch
        kept = min(bisect_left(self._epochs, epoch), bisect_left(entries, start_offset, key=_START))
        self._set(entries[:kept] + [EpochEntry(epoch, start_offset)], kept)

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop epochs starting at or after ``end_offset`` (the log was truncated to it)."""
        if self._entries and self._entries[-1].start_offset >= end_offset:
            kept = bisect_left(self._entries, end_offset, key=_START)
            self._set(self._entries[:kept], kept)

    def truncate_from_start(self, start_offset: int) -> None:
        """Drop epochs wholly before ``start_offset``; the one spanning it now starts there."""
        below = [e for e in self._entries if e.start_offset <= start_offset]
        if not below or (len(below) == 1 and below[0].start_offset == start_offset):
            return
        rest = self._entries[len(below) :]
        self._set([EpochEntry(below[-1].epoch, start_offset)] + rest)

    def clear(self) -> None:
        self._set([])

    def __repr__(self) -> str:
        return f"LeaderEpochFileCache({[tuple(e) for e in self._entries]})"
