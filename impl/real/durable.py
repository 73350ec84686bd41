"""What a power loss keeps of a real log directory: ``JournaledFileSystem`` is the OS file system
that also records, in a journal beside the directory, every point at which a file's bytes became
durable (an fsync, a truncation, which is durable on return, a rename of a synced file). The
process can die by SIGKILL at any moment: what it wrote stays in the page cache, as after a
process crash. ``power_loss(journal)`` then does what losing power would have done: each file is
cut back to the length it had when last made durable, and a file never made durable is removed.

The journal is the stand-in for the disk's own knowledge of what reached it: it is written (not
fsynced) by the broker process, so it survives a SIGKILL, and only a simulated power loss reads it.
A directory entry counts as durable with the file's first fsync (the storage engine fsyncs a new
file's directory right after creating it).
"""
from __future__ import annotations

import os

from ..storage.fs import FileHandle, OsFileSystem


class _JournaledFile(FileHandle):
    __slots__ = ("_file", "_path", "_journal")

    def __init__(self, file: FileHandle, path: str, journal) -> None:
        self._file, self._path, self._journal = file, path, journal

    def size(self) -> int:
        return self._file.size()

    def append(self, data: bytes) -> int:
        return self._file.append(data)

    def read(self, position: int, size: int) -> bytes:
        return self._file.read(position, size)

    def truncate(self, size: int) -> None:
        self._file.truncate(size)
        self._journal.record("durable", self._path, size)

    def fsync(self) -> None:
        self._file.fsync()
        self._journal.record("durable", self._path, self._file.size())

    def close(self) -> None:
        self._file.close()


class _Journal:
    def __init__(self, path: str) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)

    def record(self, *fields) -> None:
        os.write(self._fd, ("\t".join(map(str, fields)) + "\n").encode())


class JournaledFileSystem(OsFileSystem):
    """OsFileSystem recording what became durable in ``journal`` (a file path)."""

    def __init__(self, journal: str) -> None:
        super().__init__()
        self._journal = _Journal(journal)

    def open(self, path: str, create: bool = True) -> FileHandle:
        return _JournaledFile(super().open(path, create), os.path.abspath(path), self._journal)

    def remove(self, path: str) -> None:
        super().remove(path)
        self._journal.record("removed", os.path.abspath(path))

    def rename(self, source: str, target: str) -> None:
        super().rename(source, target)
        self._journal.record("renamed", os.path.abspath(source), os.path.abspath(target))


def durable_lengths(journal: str) -> dict[str, int]:
    """Per file path, the length it had when last made durable, from the journal."""
    lengths: dict[str, int] = {}
    with open(journal, encoding="utf-8") as f:
        for line in f:
            if not line.endswith("\n"):  # a last line cut by the SIGKILL is not a record
                break
            fields = line[:-1].split("\t")
            if fields[0] == "durable" and len(fields) == 3:
                lengths[fields[1]] = int(fields[2])
            elif fields[0] == "removed" and len(fields) == 2:
                lengths.pop(fields[1], None)
            elif fields[0] == "renamed" and len(fields) == 3:
                if fields[1] in lengths:
                    lengths[fields[2]] = lengths.pop(fields[1])
                else:
                    lengths.pop(fields[2], None)
    return lengths


def power_loss(directory: str, journal: str, written_back: dict[str, int] | None = None) -> dict[str, int]:
    """After the process writing ``directory`` was killed: cut every file to its durable length and
    remove the files never made durable. ``written_back`` (path -> length) says how far the page
    cache had written some files back besides (a write cut there is torn); their directory entries
    reached the disk with their data. Returns the bytes lost per file (only files that lost some)."""
    lengths = durable_lengths(journal) if os.path.exists(journal) else {}
    for path, length in (written_back or {}).items():
        path = os.path.abspath(path)
        lengths[path] = max(lengths.get(path, 0), length)
    lost = {}
    for root, _dirs, files in os.walk(directory):
        for name in sorted(files):
            path = os.path.abspath(os.path.join(root, name))
            size = os.path.getsize(path)
            keep = lengths.get(path)
            if keep is None:
                os.remove(path)
                lost[path] = size
            elif keep < size:
                os.truncate(path, keep)
                lost[path] = size - keep
    return lost
