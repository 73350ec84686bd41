"""A real log directory whose disk fails on command: ``FailingFileSystem(inner)`` is any file system
(the OS's, or the journaled one a power loss is played with) that raises OSError(EIO or ENOSPC) on
the next write, fsync or read once ``failures.fail_next`` armed it, as the simulated file system does
(``storage.fs.InjectedFailures``). The broker process arms it when told to (``node.py``: SIGUSR1
with the failure in ``DISK_FAILURE_FILE``), so a soak can take a broker's log directory offline.
"""

from __future__ import annotations

from ..storage.fs import FileHandle, FileSystem, InjectedFailures

DISK_FAILURE_FILE = ".disk-failure"  # in the broker's data directory: "<operation>:<errno>", e.g. fsync:EIO


class _FailingFile(FileHandle):
    __slots__ = ("_file", "_failures")

    def __init__(self, file: FileHandle, failures: InjectedFailures) -> None:
        self._file, self._failures = file, failures

    def size(self) -> int:
        return self._file.size()

    def append(self, data: bytes) -> int:
        if self._failures.failing is not None:
            self._failures.io("write")
        return self._file.append(data)

    def read(self, position: int, size: int) -> bytes:
        if self._failures.failing is not None:
            self._failures.io("read")
        return self._file.read(position, size)

    def truncate(self, size: int) -> None:
        self._file.truncate(size)

    def fsync(self) -> None:
        if self._failures.failing is not None:
            self._failures.io("fsync")
        self._file.fsync()

    def synced(self) -> bool:
        return self._file.synced()

    def close(self) -> None:
        self._file.close()


class FailingFileSystem(FileSystem):
    """``inner`` with a disk that fails on command (``failures``); paths go through unchanged."""

    def __init__(self, inner: FileSystem) -> None:
        self.inner = inner
        self.failures = InjectedFailures()

    def join(self, directory: str, name: str) -> str:
        return self.inner.join(directory, name)

    def dirname(self, path: str) -> str:
        return self.inner.dirname(path)

    def open(self, path: str, create: bool = True) -> FileHandle:
        return _FailingFile(self.inner.open(path, create), self.failures)

    def exists(self, path: str) -> bool:
        return self.inner.exists(path)

    def listdir(self, directory: str) -> list[str]:
        return self.inner.listdir(directory)

    def makedirs(self, directory: str) -> None:
        self.inner.makedirs(directory)

    def remove(self, path: str) -> None:
        self.inner.remove(path)

    def rmdir(self, directory: str) -> None:
        self.inner.rmdir(directory)

    def rename(self, source: str, target: str) -> None:
        self.inner.rename(source, target)

    def fsync_dir(self, directory: str) -> None:
        self.inner.fsync_dir(directory)
