"""A power-loss file system for a Kafka node's log directory, in the spirit of Jepsen's lazyfs.

A FUSE daemon (``python -m isrcheck.conformance.engines.apache.lazyfs BACKING MOUNT --control
SOCKET``, foreground) passes MOUNT through to the directory BACKING, except that written bytes stay
in the daemon's memory until the application makes them durable. The rules, and why:

* Data written (by ``write``, or by the kernel writing back a shared mmap's dirty pages) is kept
  in memory, the daemon's "page cache", as 4 KiB pages keyed by the backing file's inode, and
  reads see it merged over the backing file. It reaches the backing file only on ``fsync`` or
  ``fdatasync`` of that file (``msync(MS_SYNC)``, Java's ``FileChannel.force`` and
  ``MappedByteBuffer.force`` arrive as FUSE's fsync) or on the control command ``sync``: that is
  the durability contract Kafka relies on. ``close`` persists nothing: a kernel does not either.
* Metadata operations (create, mkdir, unlink, rmdir, rename, symlink, link, chmod, chown,
  utimens, truncate and ftruncate, fallocate) go to the backing directory at once, as a
  journaling file system's metadata does. A truncate drops the cached bytes beyond the new
  size. Keyed by inode, cached data follows a rename and goes with the file's last link.
* So a file created and written but never synced exists after a power loss, with its last
  synced size (0 if never synced): a size grown by writes is data, a size set by truncate is
  metadata (Kafka's index files are pre-allocated with ``RandomAccessFile.setLength``).
* ``getattr`` reports size = max(backing size, end of cached writes) and the newest mtime.
* The backing file system stands for the disk; bytes handed to it survive the daemon's death
  (its own page cache is not this test's power loss), so persisting is ``pwrite``, no fsync.
* Entry, attribute and negative timeouts are 0 and files are opened without ``keep_cache`` or
  ``direct_io``, so the kernel asks again after a ``drop`` and re-reads a file's pages on each
  open, while ``MAP_SHARED`` (Kafka's memory-mapped indexes) works. Locks are not implemented,
  so the kernel keeps POSIX and BSD locks itself: Kafka's ``.lock`` (``FileChannel.tryLock``)
  excludes other processes of this machine.

The control socket (Unix stream, one command a line, one line back, ``ok ...`` or ``error ...``):
``drop`` throws away every unsynced byte (a power loss), ``sync`` persists them all, ``fail OP
ERRNO [COUNT]`` (OP write, fsync or read; ERRNO EIO or ENOSPC) fails the next COUNT such
operations (the kernel retries a failed read once: COUNT 2 fails one ``read``; a failed fsync
keeps its bytes unsynced), ``status`` gives JSON: unsynced bytes, the files holding them, armed
failures.

A power loss of a node: SIGKILL its JVM and wait for it to exit (closing its files, the kernel
hands the daemon the dirty pages of its mmaps), ``drop``, restart the JVM. SIGKILL of the daemon
loses its unsynced data too; its mount is then dead until lazily unmounted (``LazyFS.kill``).
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from isrcheck.conformance.vocabulary import UsageError

PAGE = 4096
FAILABLE = ("write", "fsync", "read")
ERRNOS = {"EIO": errno.EIO, "ENOSPC": errno.ENOSPC}
FSTYPE = "fuse.lazyfs"
UTIME_NOW, UTIME_OMIT = (1 << 30) - 1, (1 << 30) - 2
_DEAD = (errno.ENOTCONN, errno.ECONNABORTED)


class LazyFSError(UsageError):
    """What is wrong with the lazy file system or its set-up, and what to do, in one line."""


# ----------------------------------------------------------------------------------------- daemon


class _Dirty:
    """One inode's unsynced bytes: pages ``number -> [4 KiB buffer, lo, hi]`` whose ``[lo, hi)`` is
    newer than the backing file, like a kernel's dirty pages; ``fd`` is the daemon's own handle on
    the inode, so persisting works after the application closed or renamed the file."""

    def __init__(self, fd: int, path: str | None):
        self.fd, self.path = fd, path
        self.pages: dict[int, list] = {}
        self.end = 0  # end of the cached writes
        self.mtime_ns = 0

    def write(self, offset: int, data: bytes) -> None:
        view, pos = memoryview(data), 0
        while pos < len(data):
            number, a = divmod(offset + pos, PAGE)
            b = min(PAGE, a + len(data) - pos)
            page = self.pages.get(number)
            if page is None:
                page = self.pages[number] = [bytearray(PAGE), a, b]
            else:
                buf, lo, hi = page
                for gap_lo, gap_hi in ((hi, a), (b, lo)):  # a gap inside the page: the disk's bytes
                    if gap_lo < gap_hi:
                        old = os.pread(self.fd, gap_hi - gap_lo, number * PAGE + gap_lo)
                        buf[gap_lo:gap_hi] = old.ljust(gap_hi - gap_lo, b"\0")
                page[1], page[2] = min(lo, a), max(hi, b)
            page[0][a:b] = view[pos : pos + b - a]
            pos += b - a
        self.end = max(self.end, offset + len(data))
        self.mtime_ns = time.time_ns()

    def read(self, size: int, offset: int) -> bytes:
        total = max(os.fstat(self.fd).st_size, self.end)
        size = min(size, total - offset)
        if size <= 0:
            return b""
        out = bytearray(os.pread(self.fd, size, offset).ljust(size, b"\0"))
        for number in range(offset // PAGE, (offset + size - 1) // PAGE + 1):
            page = self.pages.get(number)
            if page is not None:
                base = number * PAGE
                lo, hi = max(base + page[1], offset), min(base + page[2], offset + size)
                if lo < hi:
                    out[lo - offset : hi - offset] = page[0][lo - base : hi - base]
        return bytes(out)

    def trim(self, length: int) -> None:
        """A truncate to ``length``: the cached bytes beyond it are gone."""
        for number in [n for n in self.pages if n * PAGE + self.pages[n][2] > length]:
            page, keep = self.pages[number], length - number * PAGE
            if keep <= page[1]:
                del self.pages[number]
            else:
                page[2] = keep
        self.end = min(self.end, length)

    def unsynced(self) -> int:
        return sum(hi - lo for _, lo, hi in self.pages.values())

    def persist(self) -> int:
        """Write every dirty range to the backing file, adjacent pages in one ``pwrite``."""
        run: list = []
        run_start = run_end = 0
        for number in sorted(self.pages):
            buf, lo, hi = self.pages[number]
            start = number * PAGE + lo
            if run and start != run_end:
                os.pwrite(self.fd, b"".join(run), run_start)
                run = []
            if not run:
                run_start = start
            run.append(bytes(buf[lo:hi]))
            run_end = number * PAGE + hi
        if run:
            os.pwrite(self.fd, b"".join(run), run_start)
        return self.unsynced()


class LazyOperations:
    """The file system's operations, as mfusepy calls them (paths relative to the mount, ``fh``
    the daemon's handle on the backing file). No ``lock``/``flock``: the kernel keeps locks."""

    use_ns = True

    def __init__(self, backing: Path):
        self.backing = str(backing)
        self.mutex = threading.Lock()  # not `lock`: that name would be the FUSE lock op
        self.cache: dict[tuple[int, int], _Dirty] = {}  # (st_dev, st_ino) -> unsynced bytes
        self.handles: dict[int, tuple[int, int]] = {}  # fh -> its inode's key
        self.armed: dict[str, list] = {}  # op -> [errno name, count]
        self.mounted = False

    def _real(self, path: str | None) -> str:
        if path is None:  # an fh-less operation on an unlinked open file
            raise OSError(errno.ENOENT, "no path")
        return os.path.join(self.backing, path.lstrip("/"))

    def _inject(self, op: str) -> None:
        if self.armed:
            with self.mutex:
                armed = self.armed.get(op)
                if armed:
                    armed[1] -= 1
                    if not armed[1]:
                        del self.armed[op]
                    raise OSError(ERRNOS[armed[0]], f"lazyfs: injected {armed[0]}")

    def _forget(self, st: os.stat_result | None) -> None:
        """The inode lost its last link: its unsynced bytes go with it."""
        if st is not None and st.st_nlink <= 1:
            with self.mutex:
                dirty = self.cache.pop((st.st_dev, st.st_ino), None)
            if dirty is not None:
                os.close(dirty.fd)

    def _lstat(self, real: str) -> os.stat_result | None:
        try:
            return os.lstat(real)
        except FileNotFoundError:
            return None

    # mfusepy calls init with libfuse 3's configuration: no caching of names or attributes
    def init_with_config(self, conn, config) -> None:
        self.mounted = True
        if config is not None:
            config.entry_timeout = config.attr_timeout = config.negative_timeout = 0.0
            config.hard_remove = 1  # unlink at once, not a .fuse_hidden rename
            config.use_ino = 1
            config.kernel_cache = config.auto_cache = config.direct_io = 0

    # ------------------------------------------------------------------------- metadata, at once
    def getattr(self, path, fh=None):
        st = os.fstat(fh) if fh is not None else os.lstat(self._real(path))
        attrs = {
            key: getattr(st, key)
            for key in ("st_mode", "st_ino", "st_nlink", "st_uid", "st_gid", "st_size", "st_blocks", "st_rdev")
        }
        attrs.update(st_atime=st.st_atime_ns, st_mtime=st.st_mtime_ns, st_ctime=st.st_ctime_ns)
        dirty = self.cache.get((st.st_dev, st.st_ino))
        if dirty is not None:
            with self.mutex:
                attrs["st_size"] = max(st.st_size, dirty.end)
                attrs["st_mtime"] = max(st.st_mtime_ns, dirty.mtime_ns)
        return attrs

    def readlink(self, path):
        return os.readlink(self._real(path))

    def readdir(self, path, fh):  # with use_ino, an entry needs its inode: readdir(3) skips inode 0
        entries = [(".", {"st_ino": 1, "st_mode": 0o40755}, 0), ("..", {"st_ino": 1, "st_mode": 0o40755}, 0)]
        with os.scandir(self._real(path)) as found:
            for entry in found:
                try:
                    st = entry.stat(follow_symlinks=False)
                except FileNotFoundError:  # removed meanwhile
                    continue
                entries.append((entry.name, {"st_ino": st.st_ino, "st_mode": st.st_mode}, 0))
        return entries

    def statfs(self, path):
        sv = os.statvfs(self._real(path))
        return {
            key: getattr(sv, key)
            for key in (
                "f_bsize",
                "f_frsize",
                "f_blocks",
                "f_bfree",
                "f_bavail",
                "f_files",
                "f_ffree",
                "f_favail",
                "f_flag",
                "f_namemax",
            )
        }

    def access(self, path, amode):
        if not os.access(self._real(path), amode):
            raise OSError(errno.EACCES, "access")

    def mknod(self, path, mode, dev):
        os.mknod(self._real(path), mode, dev)

    def mkdir(self, path, mode):
        os.mkdir(self._real(path), mode)

    def rmdir(self, path):
        os.rmdir(self._real(path))

    def unlink(self, path):
        real = self._real(path)
        st = os.lstat(real)
        os.unlink(real)
        self._forget(st)

    def rename(self, old, new):
        new_real = self._real(new)
        replaced = self._lstat(new_real)
        os.rename(self._real(old), new_real)
        if replaced is not None and not os.path.samestat(replaced, os.lstat(new_real)):
            self._forget(replaced)

    def symlink(self, target, source):  # ln -s source target
        os.symlink(source, self._real(target))

    def link(self, target, source):  # ln source target
        os.link(self._real(source), self._real(target))

    def chmod(self, path, mode):
        os.chmod(self._real(path), mode)

    def chown(self, path, uid, gid):
        os.lchown(self._real(path), uid, gid)

    def utimens(self, path, times=None):
        real = self._real(path)
        if times is None:
            return os.utime(real, follow_symlinks=False)
        st, now = os.lstat(real), time.time_ns()
        pick = [st.st_atime_ns if t == UTIME_OMIT else now if t == UTIME_NOW else t for t in times]
        os.utime(real, ns=tuple(pick), follow_symlinks=False)

    def truncate(self, path, length, fh=None):
        if fh is not None:
            os.ftruncate(fh, length)
            st = os.fstat(fh)
        else:
            real = self._real(path)
            os.truncate(real, length)
            st = os.stat(real)
        with self.mutex:
            dirty = self.cache.get((st.st_dev, st.st_ino))
            if dirty is not None:
                dirty.trim(length)

    def fallocate(self, path, mode, offset, size, fh):
        if mode != 0:  # keep-size, punch-hole, ...: not needed by Kafka
            raise OSError(errno.EOPNOTSUPP, "fallocate mode")
        os.posix_fallocate(fh, offset, size)

    # ------------------------------------------------------------------------------ file handles
    def _open(self, path, flags, mode=None) -> int:
        backing_flags = flags & ~(os.O_APPEND | os.O_TRUNC | os.O_DIRECT) | os.O_CLOEXEC
        if flags & os.O_ACCMODE != os.O_RDONLY:  # the daemon may read what it caches
            backing_flags = backing_flags & ~os.O_ACCMODE | os.O_RDWR
        fh = os.open(self._real(path), backing_flags, *(() if mode is None else (mode,)))
        st = os.fstat(fh)
        self.handles[fh] = (st.st_dev, st.st_ino)
        if flags & os.O_TRUNC:  # libfuse 3 passes O_TRUNC on to open (atomic_o_trunc)
            self.truncate(path, 0, fh)
        return fh

    def open(self, path, flags):
        return self._open(path, flags)

    def create(self, path, mode, flags):
        return self._open(path, flags | os.O_CREAT, mode)

    def read(self, path, size, offset, fh):
        self._inject("read")
        dirty = self.cache.get(self.handles.get(fh))
        if dirty is None:
            return os.pread(fh, size, offset)
        with self.mutex:
            return dirty.read(size, offset)

    def write(self, path, data, offset, fh):
        self._inject("write")
        key = self.handles[fh]
        with self.mutex:
            dirty = self.cache.get(key)
            if dirty is None:
                dirty = self.cache[key] = _Dirty(os.dup(fh), path)
            dirty.path = path or dirty.path
            dirty.write(offset, data)
        return len(data)

    def fsync(self, path, datasync, fh):
        self._inject("fsync")
        with self.mutex:
            dirty = self.cache.pop(self.handles.get(fh), None)
            if dirty is not None:
                try:
                    dirty.persist()
                except OSError:
                    self.cache[self.handles[fh]] = dirty  # still unsynced; the error goes to fsync
                    raise
                os.close(dirty.fd)

    def fsyncdir(self, path, datasync, fh):
        return 0  # metadata is durable at once

    def flush(self, path, fh):
        return 0  # close persists nothing

    def release(self, path, fh):
        self.handles.pop(fh, None)
        os.close(fh)

    # ---------------------------------------------------------------------------- control socket
    def _settle(self, persist: bool) -> dict:
        """``sync`` (persist) or ``drop`` every inode's unsynced bytes."""
        done = {"bytes": 0, "files": 0}
        with self.mutex:
            for key in list(self.cache):
                dirty = self.cache[key]
                done["bytes"] += dirty.persist() if persist else dirty.unsynced()
                done["files"] += 1
                del self.cache[key]
                os.close(dirty.fd)
        return done

    def status(self) -> dict:
        with self.mutex:
            files = {d.path or f"inode {key[1]}": d.unsynced() for key, d in self.cache.items()}
            failures = {op: {"errno": e, "count": n} for op, (e, n) in self.armed.items()}
        return {
            "unsynced_bytes": sum(files.values()),
            "unsynced_files": len(files),
            "files": files,
            "failures": failures,
        }

    def control(self, line: str) -> str:
        """One command of the control socket, its one-line answer."""
        words = line.split()
        try:
            if words == ["drop"]:
                return "ok " + json.dumps(self._settle(persist=False))
            if words == ["sync"]:
                return "ok " + json.dumps(self._settle(persist=True))
            if words == ["status"]:
                return "ok " + json.dumps(self.status())
            if words == ["disarm"]:
                with self.mutex:
                    self.armed.clear()
                return "ok no failure armed"
            if words[:1] == ["fail"] and len(words) in (3, 4):
                op, name, count = words[1], words[2], words[3] if len(words) == 4 else "1"
                if op not in FAILABLE or name not in ERRNOS or not count.isdigit() or not 0 < int(count) <= 10**9:
                    return (
                        f"error fail {' '.join(words[1:])}: expected fail {'|'.join(FAILABLE)} "
                        f"{'|'.join(ERRNOS)} [COUNT 1..1000000000]"
                    )
                with self.mutex:
                    self.armed[op] = [name, int(count)]
                return f"ok the next {count} {op} fail with {name}"
        except OSError as e:
            return f"error {words[0]}: {e}"
        return (
            f"error unknown command {line.strip()[:80]!r}: expected drop, sync, status, fail OP ERRNO [COUNT] or disarm"
        )


def _serve_control(server: socket.socket, ops: LazyOperations) -> None:
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
    while True:
        conn, _ = server.accept()
        with conn, conn.makefile("rb") as lines:
            conn.settimeout(30)
            try:
                for line in lines:
                    reply = ops.control(line.decode(errors="replace"))
                    print(f"lazyfs: {line.decode(errors='replace').strip()} -> {reply}", flush=True)
                    conn.sendall(reply.encode() + b"\n")
            except OSError:
                pass


def process_identity(pid: int) -> str | None:
    """``PID.STARTTIME`` of a live process (its start time tells a reused pid apart), or None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return f"{pid}.{stat.rpartition(')')[2].split()[19]}"


def _owner_alive(owner: str) -> bool:
    pid, _, _ = owner.partition(".")
    return pid.isdigit() and process_identity(int(pid)) == owner


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="lazyfs", description=__doc__.split("\n\n")[0])
    parser.add_argument("backing", type=Path, help="the directory that stands for the disk")
    parser.add_argument("mount", type=Path, help="where the file system is mounted (a directory)")
    parser.add_argument("--control", type=Path, required=True, help="the control socket's path")
    parser.add_argument(
        "--owner", help="PID.STARTTIME of the process the mount belongs to (default: the parent), for unmount_stale"
    )
    args = parser.parse_args(argv)
    for what, path in (("backing directory", args.backing), ("mount point", args.mount)):
        if not path.exists():
            print(f"lazyfs: {what} {path} does not exist: create the directory first", file=sys.stderr)
            return 2
        if not path.is_dir():
            print(f"lazyfs: {what} {path} is not a directory: give a directory", file=sys.stderr)
            return 2
    if not os.path.exists("/dev/fuse"):
        print(
            "lazyfs: no FUSE device (/dev/fuse): load the fuse module, or give the container /dev/fuse", file=sys.stderr
        )
        return 2
    try:
        # the FUSE binding: only in the file system's own process
        import mfusepy
    except (ImportError, OSError) as e:
        print(f"lazyfs: cannot load libfuse 3 ({e}): install Debian's fuse3 and pip's mfusepy", file=sys.stderr)
        return 2

    class _FUSE(mfusepy.FUSE):
        """mfusepy's libfuse 3 glue, giving truncate its file handle (Kafka's ftruncate) and
        utimens the raw UTIME_NOW/UTIME_OMIT marks."""

        def truncate_fuse_3(self, path, length, fip):
            fh = fip.contents.fh if fip else None
            return self.operations.truncate(
                None if path is None else path.decode(self.encoding, self.errors), length, fh
            )

        def utimens_fuse_3(self, path, buf, fip):
            times = (
                None
                if not buf
                else tuple(
                    t.tv_nsec if t.tv_nsec in (UTIME_NOW, UTIME_OMIT) else t.tv_sec * 10**9 + t.tv_nsec
                    for t in (buf.contents.actime, buf.contents.modtime)
                )
            )
            return self.operations.utimens(None if path is None else path.decode(self.encoding, self.errors), times)

    ops = LazyOperations(args.backing.resolve())
    owner = args.owner or process_identity(os.getppid()) or "0.0"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    args.control.unlink(missing_ok=True)
    server.bind(str(args.control))
    server.listen(8)
    threading.Thread(target=_serve_control, args=(server, ops), daemon=True, name="control").start()
    print(f"lazyfs: {args.backing} at {args.mount}, control {args.control}, owner {owner}", flush=True)
    try:
        _FUSE(ops, str(args.mount), foreground=True, fsname=f"lazyfs@{owner}", subtype="lazyfs")
    except RuntimeError as e:  # libfuse's status: 8 after a signal too
        if not ops.mounted:
            print(f"lazyfs: mounting {args.mount} failed (libfuse status {e}; its message is above)", file=sys.stderr)
            return 1
    finally:
        args.control.unlink(missing_ok=True)
    lost = ops.status()
    print(
        f"lazyfs: unmounted; {lost['unsynced_bytes']} unsynced bytes in {lost['unsynced_files']} files not persisted",
        flush=True,
    )
    return 0


# -------------------------------------------------------------------------------- harness side


def _lazy_unmount(mount: Path) -> None:
    tool = shutil.which("fusermount3")
    if tool is None:
        raise LazyFSError("fusermount3 not found: install Debian's fuse3")
    done = subprocess.run([tool, "-u", "-z", str(mount)], capture_output=True, text=True)
    if done.returncode and _mount_state(mount) != "none":
        raise LazyFSError(f"fusermount3 -u -z {mount} failed: {done.stderr.strip()}")


def _mount_state(path: Path) -> str:
    """ "live" (a mount point), "dead" (a FUSE mount whose daemon is gone: ENOTCONN) or "none"."""
    try:
        os.lstat(path)
    except OSError as e:
        return "dead" if e.errno in _DEAD else "none"
    return "live" if os.path.ismount(path) else "none"


def _fuse_mounts() -> list[tuple[Path, str, str]]:
    """(mount point, file system type, source) of every FUSE mount of this mount namespace."""
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fstype, source = (right.split() + ["", ""])[:2]
        if fstype == "fuse" or fstype.startswith("fuse."):
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), left.split()[4])
            found.append((Path(point), fstype, source))
    return found


def unmount_stale(root: Path) -> list[Path]:
    """Lazily unmount the FUSE mounts under ``root`` left by an earlier run: those whose daemon is
    gone (a killed daemon leaves its mount answering ENOTCONN) and the lazyfs mounts whose owner,
    the process that started the daemon, is gone. Live mounts of a live owner (this run, or a
    concurrent one) stay. Deepest first; returns what was unmounted."""
    root = Path(root).resolve()
    stale = []
    for point, fstype, source in _fuse_mounts():
        if point != root and root not in point.parents:
            continue
        orphan = fstype == FSTYPE and source.startswith("lazyfs@") and not _owner_alive(source[len("lazyfs@") :])
        if orphan or _mount_state(point) == "dead":
            stale.append(point)
    for point in sorted(stale, key=lambda p: len(p.parts), reverse=True):
        _lazy_unmount(point)
    return stale


class LazyFS:
    """One lazy file system: BACKING (the node's disk) served at MOUNT (the node's log directory)
    by a daemon process, driven through its control socket. Its log collects the daemon's output."""

    def __init__(self, backing: Path, mount: Path, control: Path, log: Path):
        self.backing, self.mount, self.control, self.log = Path(backing), Path(mount), Path(control), Path(log)
        self._process: subprocess.Popen | None = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self.running else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self, timeout: float = 10) -> None:
        """Spawn the daemon and wait until the mount is live."""
        if self.running:
            raise LazyFSError(f"lazyfs on {self.mount} is already running (pid {self._process.pid})")
        if not os.path.exists("/dev/fuse"):
            raise LazyFSError("no FUSE device (/dev/fuse): load the fuse module, or give the container /dev/fuse")
        if shutil.which("fusermount3") is None:
            raise LazyFSError("fusermount3 not found: install Debian's fuse3")
        if len(os.fsencode(self.control)) > 107:
            raise LazyFSError(
                f"control socket path {self.control} is longer than a Unix socket's 107 bytes: choose a shorter one"
            )
        if _mount_state(self.mount) != "none":
            raise LazyFSError(
                f"{self.mount} is already a mount point: unmount it (unmount_stale, or fusermount3 -u -z {self.mount})"
            )
        self.log.parent.mkdir(parents=True, exist_ok=True)
        offset = self.log.stat().st_size if self.log.exists() else 0
        with open(self.log, "ab") as out:
            self._process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    __name__,
                    str(self.backing),
                    str(self.mount),
                    "--control",
                    str(self.control),
                    "--owner",
                    process_identity(os.getpid()),
                ],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
            )
        deadline = time.monotonic() + timeout
        while not (os.path.ismount(self.mount) and self.control.exists()):
            code = self._process.poll()
            if code is not None or time.monotonic() > deadline:
                if code is None:
                    self.kill()
                why = f"exited with status {code}" if code is not None else f"was not mounted within {timeout:g} s"
                raise LazyFSError(f"lazyfs on {self.mount} {why}: {self._log_tail(offset)} (log {self.log})")
            time.sleep(0.01)

    def _log_tail(self, offset: int, lines: int = 3) -> str:
        with open(self.log, "rb") as f:
            f.seek(offset)
            text = f.read().decode(errors="replace").strip().splitlines()
        return " | ".join(text[-lines:]) or "no output"

    def _command(self, line: str, timeout: float = 60) -> str:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(timeout)
                s.connect(str(self.control))
                s.sendall(line.encode() + b"\n")
                reply = s.makefile("rb").readline().decode().rstrip("\n")
        except OSError as e:
            raise LazyFSError(
                f"lazyfs control socket {self.control}: no daemon answers ({e.strerror or e}): start() it first"
            ) from None
        if not reply.startswith("ok"):
            raise LazyFSError(f"lazyfs {line}: {reply or 'no answer (did the daemon die?)'}")
        return reply[3:]

    def drop(self) -> dict:
        """Throw away every unsynced byte (a power loss); ``{"bytes": N, "files": M}`` lost."""
        return json.loads(self._command("drop"))

    def sync(self) -> dict:
        """Persist every unsynced byte; ``{"bytes": N, "files": M}`` written."""
        return json.loads(self._command("sync"))

    def fail(self, op: str, errno_name: str, count: int = 1) -> None:
        """The next ``count`` ``op`` (write, fsync, read) fail with ``errno_name`` (EIO, ENOSPC)."""
        self._command(f"fail {op} {errno_name} {count}")

    def disarm(self) -> None:
        """No armed failure left (one no operation met)."""
        self._command("disarm")

    def status(self) -> dict:
        """``unsynced_bytes``, ``unsynced_files``, ``files`` (path at its last write -> bytes), ``failures``."""
        return json.loads(self._command("status"))

    def kill(self) -> None:
        """SIGKILL the daemon (its unsynced bytes die with it) and lazily unmount its dead mount."""
        if self._process is None:
            return  # never started: a mount there is someone else's
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()
        self.control.unlink(missing_ok=True)
        if _mount_state(self.mount) != "none":
            _lazy_unmount(self.mount)

    def stop(self, timeout: float = 10) -> dict:
        """Unmount cleanly; the daemon exits. It persists nothing extra: a node's clean stop comes
        after Kafka's own clean shutdown, which fsyncs, so what is still unsynced is lost, as in a
        power loss right then. Returns the status just before (what was lost)."""
        try:
            last = self.status()
        except LazyFSError:
            last = {}
        if self.running:
            self._process.send_signal(signal.SIGTERM)
            try:
                self._process.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        self.kill()
        return last

    def remount(self, timeout: float = 10) -> None:
        """Start again over the same backing directory (after ``stop`` or ``kill``; stops a running one)."""
        if self.running:
            self.stop()
        self.start(timeout)


if __name__ == "__main__":
    sys.exit(main())
