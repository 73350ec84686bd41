"""The file-system interface of the storage engine and its two implementations.

``OsFileSystem`` uses real files: every append reaches the OS at once (a process crash loses nothing),
``fsync`` makes it durable. ``SimulatedFileSystem`` keeps files in memory and models the page cache:
written bytes are readable at once but durable only after ``fsync``; directory entries (create,
rename, remove) are durable only after ``fsync_dir``; ``power_loss`` keeps just the durable state and
may tear the last unsynced write, or keeps exactly the written-back prefix it is told of;
``lose_directory`` is a replaced disk; ``fail_next`` makes the next write, fsync or read fail with an
errno (EIO, ENOSPC) as a failing disk does. Both promise the same contract, so the log cannot tell them
apart: appends only (no overwrite in place), ``truncate`` is durable when it returns, ``rename`` is
atomic.
"""

from __future__ import annotations

import errno
import functools
import os
import posixpath
import random

from .errors import LogClosedError, StorageError

IO_OPERATIONS = ("write", "fsync", "read")  # what ``InjectedFailures.fail_next`` can fail


class InjectedFailures:
    """A disk that fails on command: the next ``operation`` (``write``: a file append; ``fsync``;
    ``read``) on any file of the file system raises OSError(``code``) and does nothing, once: a
    failing disk (EIO) or a full one (ENOSPC). File handles call ``io`` only while ``failing`` is
    set, so a healthy disk pays one attribute test per operation."""

    def __init__(self) -> None:
        self.failing: tuple[str, int] | None = None  # (operation, errno) the disk fails next

    def fail_next(self, operation: str, code: int = errno.EIO) -> None:
        if operation not in IO_OPERATIONS:
            raise ValueError(f"operation must be one of {', '.join(IO_OPERATIONS)}, got {operation!r}")
        self.failing = (operation, code)

    def disarm(self) -> None:
        self.failing = None

    def io(self, operation: str) -> None:
        """Raise the armed failure if it is of ``operation`` (it fires once)."""
        failing = self.failing
        if failing is not None and failing[0] == operation:
            self.failing = None
            raise OSError(failing[1], f"{os.strerror(failing[1])} (injected {operation} failure)")


class FileHandle:
    """An open file: append at the end, read anywhere, truncate, fsync."""

    def size(self) -> int:
        raise NotImplementedError

    def append(self, data: bytes) -> int:
        raise NotImplementedError  # returns the write position

    def read(self, position: int, size: int) -> bytes:
        raise NotImplementedError

    def truncate(self, size: int) -> None:
        raise NotImplementedError  # durable on return

    def fsync(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def synced(self) -> bool:
        """Every byte is known to be on stable storage. Only a file system that sees its page cache
        can tell; the others say False, so nothing relies on it."""
        return False


class FileSystem:
    """Path operations; ``listdir`` is sorted so nothing depends on directory order."""

    def join(self, directory: str, name: str) -> str:
        raise NotImplementedError

    def dirname(self, path: str) -> str:
        raise NotImplementedError

    def open(self, path: str, create: bool = True) -> FileHandle:
        raise NotImplementedError

    def exists(self, path: str) -> bool:
        raise NotImplementedError

    def listdir(self, directory: str) -> list[str]:
        raise NotImplementedError

    def makedirs(self, directory: str) -> None:
        raise NotImplementedError

    def remove(self, path: str) -> None:
        raise NotImplementedError

    def rmdir(self, directory: str) -> None:
        raise NotImplementedError  # an empty one

    def rename(self, source: str, target: str) -> None:
        raise NotImplementedError  # atomic, replaces

    def fsync_dir(self, directory: str) -> None:
        raise NotImplementedError

    def read_file(self, path: str) -> bytes:
        handle = self.open(path, create=False)
        try:
            return handle.read(0, handle.size())
        finally:
            handle.close()

    def write_file_atomically(self, path: str, data: bytes) -> None:
        """Temp file, fsync, rename over ``path``, fsync the directory: old or new content, never a mix."""
        temp = path + ".tmp"
        if self.exists(temp):  # left by a crash mid-write
            self.remove(temp)
        handle = self.open(temp)
        try:
            handle.append(data)
            handle.fsync()
        finally:
            handle.close()
        self.rename(temp, path)
        self.fsync_dir(self.dirname(path))


# --------------------------------------------------------------------------------------------- OS


class _OsFile(FileHandle):
    __slots__ = ("_fd", "_size", "_path")

    def __init__(self, path: str, create: bool) -> None:
        flags = os.O_RDWR | os.O_APPEND | getattr(os, "O_CLOEXEC", 0) | (os.O_CREAT if create else 0)
        self._fd = os.open(path, flags, 0o644)
        self._size = os.fstat(self._fd).st_size
        self._path = path

    def size(self) -> int:
        return self._size

    def append(self, data: bytes) -> int:
        position = self._size
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        self._size = position + len(data)
        return position

    def read(self, position: int, size: int) -> bytes:
        return os.pread(self._fd, size, position)

    def truncate(self, size: int) -> None:
        os.ftruncate(self._fd, size)
        os.fsync(self._fd)
        self._size = size

    def fsync(self) -> None:
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class OsFileSystem(FileSystem):
    """Real files through unbuffered ``os`` calls."""

    def join(self, directory: str, name: str) -> str:
        return os.path.join(directory, name)

    def dirname(self, path: str) -> str:
        return os.path.dirname(path)

    def open(self, path: str, create: bool = True) -> FileHandle:
        return _OsFile(path, create)

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def listdir(self, directory: str) -> list[str]:
        return sorted(os.listdir(directory))

    def makedirs(self, directory: str) -> None:
        os.makedirs(directory, exist_ok=True)

    def remove(self, path: str) -> None:
        os.remove(path)

    def rmdir(self, directory: str) -> None:
        os.rmdir(directory)

    def rename(self, source: str, target: str) -> None:
        os.replace(source, target)

    def fsync_dir(self, directory: str) -> None:
        fd = os.open(directory or ".", os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# ------------------------------------------------------------------------------------- simulated


class _Inode:
    __slots__ = ("data", "durable")

    def __init__(self) -> None:
        self.data = bytearray()
        self.durable = 0  # length of the fsynced prefix; appends only, so the prefix never changes


class _SimFile(FileHandle):
    __slots__ = ("_inode", "_fs", "_generation")

    def __init__(self, fs: "SimulatedFileSystem", inode: _Inode) -> None:
        self._fs = fs
        self._inode = inode
        self._generation = fs.generation

    def _check(self) -> _Inode:
        if self._generation != self._fs.generation:
            raise LogClosedError("file handle belongs to a process that crashed")
        return self._inode

    def size(self) -> int:
        return len(self._check().data)

    def append(self, data: bytes) -> int:
        buf = self._check().data
        failures = self._fs.failures
        if failures.failing is not None:
            failures.io("write")
        position = len(buf)
        buf += data
        return position

    def read(self, position: int, size: int) -> bytes:
        data = self._check().data
        failures = self._fs.failures
        if failures.failing is not None:
            failures.io("read")
        return bytes(data[position : position + size])

    def truncate(self, size: int) -> None:
        inode = self._check()
        del inode.data[size:]
        if inode.durable > size:
            inode.durable = size

    def fsync(self) -> None:
        inode = self._check()
        failures = self._fs.failures
        if failures.failing is not None:
            failures.io("fsync")
        inode.durable = len(inode.data)
        self._fs.fsync_count += 1

    def synced(self) -> bool:
        inode = self._check()
        return inode.durable == len(inode.data)

    def close(self) -> None:
        pass


class SimulatedFileSystem(FileSystem):
    """In-memory files with a page cache: see the module docstring for what survives which crash."""

    def __init__(self) -> None:
        self._tree: dict[str, dict[str, _Inode]] = {"/": {}}  # directory -> name -> inode (page cache)
        self._durable: dict[str, dict[str, _Inode]] = {"/": {}}  # the same after the last fsync_dir
        self.generation = 0  # bumped by a crash: handles of the crashed process stop working
        self.fsync_count = 0
        self.failures = InjectedFailures()  # what a failing disk fails next (docs/steps.md, "Disk faults")

    @staticmethod
    @functools.lru_cache(maxsize=4096)  # a log touches a few dozen paths, millions of times
    def _split(path: str) -> tuple[str, str]:
        path = posixpath.normpath(posixpath.join("/", path))
        return posixpath.split(path)

    @staticmethod
    @functools.lru_cache(maxsize=1024)
    def _normdir(directory: str) -> str:
        return posixpath.normpath(posixpath.join("/", directory))

    def _dir(self, directory: str) -> dict[str, _Inode]:
        try:
            return self._tree[directory]
        except KeyError:
            raise FileNotFoundError(f"no such directory: {directory}") from None

    def join(self, directory: str, name: str) -> str:
        return posixpath.join(directory, name)

    def dirname(self, path: str) -> str:
        return posixpath.dirname(path)

    def open(self, path: str, create: bool = True) -> FileHandle:
        directory, name = self._split(path)
        entries = self._dir(directory)
        inode = entries.get(name)
        if inode is None:
            if not create:
                raise FileNotFoundError(f"no such file: {path}")
            inode = entries[name] = _Inode()
        return _SimFile(self, inode)

    def exists(self, path: str) -> bool:
        directory, name = self._split(path)
        normalized = posixpath.join(directory, name)
        return normalized in self._tree or name in self._tree.get(directory, {})

    def listdir(self, directory: str) -> list[str]:
        directory = self._normdir(directory)
        names = list(self._dir(directory))
        prefix = directory.rstrip("/") + "/"
        names += [
            d[len(prefix) :]
            for d in self._tree
            if d.startswith(prefix) and "/" not in d[len(prefix) :] and d != directory
        ]
        return sorted(names)

    def makedirs(self, directory: str) -> None:
        """Directories are created durably at once (only file entries wait for fsync_dir)."""
        path = posixpath.normpath(posixpath.join("/", directory))
        while path not in self._tree:
            self._tree[path] = {}
            self._durable[path] = {}
            path = posixpath.dirname(path)

    def remove(self, path: str) -> None:
        directory, name = self._split(path)
        if self._dir(directory).pop(name, None) is None:
            raise FileNotFoundError(f"no such file: {path}")

    def rmdir(self, directory: str) -> None:
        """Gone durably at once, as directories are made."""
        directory = self._normdir(directory)
        if self.listdir(directory):
            raise OSError(errno.ENOTEMPTY, f"directory not empty: {directory}")
        del self._tree[directory]
        self._durable.pop(directory, None)

    def rename(self, source: str, target: str) -> None:
        sdir, sname = self._split(source)
        tdir, tname = self._split(target)
        inode = self._dir(sdir).pop(sname, None)
        if inode is None:
            raise FileNotFoundError(f"no such file: {source}")
        self._dir(tdir)[tname] = inode

    def fsync_dir(self, directory: str) -> None:
        directory = self._normdir(directory)
        self._durable[directory] = dict(self._dir(directory))
        self.fsync_count += 1

    # ----------------------------------------------------------------------------------- faults

    def fail_next(self, operation: str, code: int = errno.EIO) -> None:
        """``InjectedFailures.fail_next``. What a failed fsync leaves is the caller's to play (the
        kernel drops the dirty pages: ``power_loss()``)."""
        self.failures.fail_next(operation, code)

    def process_crash(self) -> None:
        """The process dies, the machine does not: every byte written survives; open handles die."""
        self.generation += 1

    def power_loss(self, rng: random.Random | None = None, written_back: dict[str, int] | None = None) -> None:
        """Keep only durable data and entries. With ``rng``, each file's unsynced tail may survive in
        part (a prefix of it, possibly followed by a few garbage bytes): a torn last write.
        ``written_back`` says instead exactly how far the page cache had written files back: path ->
        length of the file on the disk (a write cut there tears it); such a file's directory entry
        reached the disk with its data."""
        self.generation += 1
        kept: dict[int, int] = {}
        for path, length in (written_back or {}).items():
            directory, name = self._split(path)
            inode = self._dir(directory).get(name)
            if inode is None:
                raise FileNotFoundError(f"no such file: {path}")
            kept[id(inode)] = length
            self._durable[directory][name] = inode
        self._tree = {d: dict(entries) for d, entries in self._durable.items()}
        seen: set[int] = set()
        for directory in sorted(self._tree):
            for name in sorted(self._tree[directory]):
                inode = self._tree[directory][name]
                if id(inode) in seen:
                    continue
                seen.add(id(inode))
                tail = bytes(inode.data[inode.durable :])
                del inode.data[inode.durable :]
                if id(inode) in kept:
                    inode.data += tail[: max(0, kept[id(inode)] - inode.durable)]
                elif rng is not None and tail:
                    inode.data += tail[: rng.randrange(len(tail) + 1)]
                    if rng.random() < 0.5:
                        inode.data += rng.randbytes(rng.randrange(1, 64))
                inode.durable = len(inode.data)

    def lose_directory(self, directory: str) -> None:
        """A replaced disk: ``directory`` and everything below it are gone from the page cache and
        from stable storage alike; the directory is there again, empty."""
        directory = self._normdir(directory)
        if directory not in self._tree:
            raise FileNotFoundError(f"no such directory: {directory}")
        self.generation += 1
        prefix = directory.rstrip("/") + "/"
        for tree in (self._tree, self._durable):
            for d in [d for d in tree if d.startswith(prefix)]:
                del tree[d]
            tree[directory] = {}

    def corrupt(self, path: str, position: int, data: bytes) -> None:
        """Overwrite bytes in place, durably (bit rot, a bad disk): for tests of corruption handling."""
        directory, name = self._split(path)
        inode = self._dir(directory).get(name)
        if inode is None:
            raise FileNotFoundError(f"no such file: {path}")
        if position + len(data) > len(inode.data):
            raise StorageError(f"corrupt: {path} has only {len(inode.data)} bytes")
        inode.data[position : position + len(data)] = data
