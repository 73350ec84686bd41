"""Kafka's checkpoint files: a version line, a count line, then one entry per line; always
replaced atomically (temp file, fsync, rename, fsync of the directory)."""

from __future__ import annotations

from .errors import CorruptLogError
from .fs import FileSystem

VERSION = 0


class CheckpointFile:
    """Entries are tuples of ints written space-separated (OffsetCheckpointFile, LeaderEpochCheckpointFile)."""

    def __init__(self, fs: FileSystem, path: str, fields: int) -> None:
        self.fs = fs
        self.path = path
        self.fields = fields
        self._line = " ".join(["%d"] * fields) + "\n"
        self._written: tuple[list, list[str]] = ([], [])  # the last entries written, and their lines

    def write(self, entries: list[tuple[int, ...]]) -> None:
        # The file is rewritten whole on every change (the leader epoch cache's grows with every
        # leader change), but the lines of the entries it starts with as before are not formatted again.
        last, lines = self._written
        same = min(len(last), len(entries))
        if entries[:same] != last[:same]:
            same = 0
        lines = lines[:same] + [self._line % tuple(entry) for entry in entries[same:]]
        self._written = (list(entries), lines)
        self.fs.write_file_atomically(self.path, f"{VERSION}\n{len(entries)}\n{''.join(lines)}".encode("ascii"))

    def read(self) -> list[tuple[int, ...]] | None:
        """The entries, None if the file does not exist; CorruptLogError naming the file if malformed."""
        if not self.fs.exists(self.path):
            return None
        try:
            lines = self.fs.read_file(self.path).decode("ascii").split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            if len(lines) < 2 or int(lines[0]) != VERSION:
                raise ValueError(f"expected version {VERSION} and a count")
            count = int(lines[1])
            if count != len(lines) - 2:
                raise ValueError(f"count says {count} entries, found {len(lines) - 2}")
            entries = []
            for line in lines[2:]:
                parts = line.split(" ")
                if len(parts) != self.fields:
                    raise ValueError(f"entry {line!r} does not have {self.fields} fields")
                entries.append(tuple(map(int, parts)))
            return entries
        except (ValueError, UnicodeDecodeError) as exc:
            raise CorruptLogError(f"{self.path}: malformed checkpoint file: {exc}") from None


class OffsetCheckpoint:
    """A single-offset checkpoint: ``replication-offset-checkpoint`` (HW) or
    ``recovery-point-offset-checkpoint``; rewritten only when the value a reader would get changes
    (each write costs two fsyncs). ``missing`` is the value a reader takes for a missing file (the
    HW's is 0), so writing that value over no file is skipped too."""

    def __init__(self, fs: FileSystem, path: str, missing: int | None = None) -> None:
        self._file = CheckpointFile(fs, path, 1)
        self.path = path
        self.missing = missing
        self.value: int | None = None
        self.exists = False

    def read(self) -> int | None:
        """The offset, None if the file does not exist; CorruptLogError if malformed."""
        entries = self._file.read()
        if entries is None:
            self.value = self.missing
            return None
        if len(entries) != 1 or entries[0][0] < 0:
            raise CorruptLogError(f"{self.path}: expected one non-negative offset, found {entries}")
        self.value = entries[0][0]
        self.exists = True
        return self.value

    def write(self, offset: int, create: bool = False) -> bool:
        """Checkpoint ``offset`` if it differs from what the file says; with ``create`` also if the
        file is missing (a clean shutdown leaves every checkpoint file). Says whether it wrote, and
        so fsynced the directory."""
        if offset == self.value and (self.exists or not create):
            return False
        self._file.write([(offset,)])
        self.value = offset
        self.exists = True
        return True
