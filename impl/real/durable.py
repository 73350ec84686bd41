"""What a power loss keeps of a real log directory: ``JournaledFileSystem`` is the OS file system
that also records, in a journal beside the directory, every point at which something became
durable: a file's bytes (an fsync; a truncation, whose cut is durable on return, the bytes before
it no more than they were; a rename carries them to the new name) and a directory's entries (an fsync of the
directory: its listing then).
The process can die by SIGKILL at any moment: what it wrote stays in the page cache, as after a
process crash. ``power_loss`` then does what losing power would have done, as the simulated file
system does (``storage.fs.SimulatedFileSystem.power_loss``): a file whose entry was not durable
goes, the others are cut back to their durable bytes.

The journal is the stand-in for the disk's own knowledge of what reached it: it is written (not
fsynced) by the broker process, so it survives a SIGKILL, and only a played power loss reads it.
Two things a real file system cannot give back are not played: an entry removed or replaced after
the directory's last fsync does not come back.
"""

from __future__ import annotations

import os

from ..storage.fs import FileHandle, OsFileSystem


class _JournaledFile(FileHandle):
    __slots__ = ("_file", "_path", "_journal")

    def __init__(self, file: FileHandle, path: str, journal: "_Journal") -> None:
        self._file, self._path, self._journal = file, path, journal

    def size(self) -> int:
        return self._file.size()

    def append(self, data: bytes) -> int:
        return self._file.append(data)

    def read(self, position: int, size: int) -> bytes:
        return self._file.read(position, size)

    def truncate(self, size: int) -> None:
        # the cut is durable on return (FileHandle's contract); the bytes before it are no more
        # durable than they were: the OS's fsync makes them so, but Kafka's truncateTo does not
        # fsync, and neither the model nor the simulated disk counts them (docs/storage.md)
        self._file.truncate(size)
        self._journal.record("durable", self._path, min(size, self._journal.durable.get(self._path, 0)))

    def fsync(self) -> None:
        self._file.fsync()
        self._journal.record("durable", self._path, self._file.size())

    def synced(self) -> bool:
        return self._journal.durable.get(self._path) == self._file.size()

    def close(self) -> None:
        self._file.close()


class _Journal:
    """The journal file, and the durable length of each file it says (read at start, then kept)."""

    def __init__(self, path: str) -> None:
        self.durable = durable_lengths(path) if os.path.exists(path) else {}
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)

    def record(self, *fields) -> None:
        os.write(self._fd, ("\t".join(map(str, fields)) + "\n").encode())
        if fields[0] == "durable":
            self.durable[fields[1]] = fields[2]
        elif fields[0] == "removed":
            self.durable.pop(fields[1], None)
        elif fields[0] == "renamed":
            length = self.durable.pop(fields[1], None)
            self.durable.pop(fields[2], None)
            if length is not None:
                self.durable[fields[2]] = length


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

    def fsync_dir(self, directory: str) -> None:
        super().fsync_dir(directory)
        directory = os.path.abspath(directory)
        files = sorted(n for n in os.listdir(directory) if os.path.isfile(os.path.join(directory, n)))
        self._journal.record("dirsync", directory, *files)


def durable_lengths(journal: str) -> dict[str, int]:
    """Per file path, the length it had when last made durable, from the journal."""
    return durable_state(journal)[0]


def durable_state(journal: str) -> tuple[dict[str, int], dict[str, set]]:
    """Per file path its durable length, and per directory the names its last fsync made durable."""
    lengths: dict[str, int] = {}
    listings: dict[str, set] = {}
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
            elif fields[0] == "dirsync" and len(fields) >= 2:
                listings[fields[1]] = set(fields[2:])
    return lengths, listings


def power_loss(directory: str, journal: str, written_back: dict[str, int] | None = None) -> dict[str, int]:
    """After the process writing ``directory`` was killed: cut every file to its durable length and
    remove the files never made durable. ``written_back`` (path -> length) says how far the page
    cache had written some files back besides (a write cut there is torn); their directory entries
    reached the disk with their data. Returns the bytes lost per file (only files that lost some)."""
    lengths, listings = durable_state(journal) if os.path.exists(journal) else ({}, {})
    written_back = {os.path.abspath(p): n for p, n in (written_back or {}).items()}
    lost, kept = {}, {}
    for root, _dirs, files in os.walk(directory):
        listed = listings.get(os.path.abspath(root))
        for name in sorted(files):
            path = os.path.abspath(os.path.join(root, name))
            size = os.path.getsize(path)
            # a directory never fsynced: its files' entries count as durable with their data
            entry = path in written_back or (name in listed if listed is not None else path in lengths)
            keep = max(lengths.get(path, 0), written_back.get(path, 0)) if entry else None
            if keep is None:
                os.remove(path)
                lost[path] = size
                continue
            if keep < size:
                os.truncate(path, keep)
                lost[path] = size - keep
            kept[path] = min(keep, size)
    with open(journal, "a", encoding="utf-8") as f:  # what is left is all on the disk now
        f.writelines(f"durable\t{path}\t{n}\n" for path, n in sorted(kept.items()))
    return lost
