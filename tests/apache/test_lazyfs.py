"""The lazy file system on a real FUSE mount, driven by real processes: what survives a power loss
(``drop``, or SIGKILL of the daemon and a remount), what is metadata, mmap, locks, injected I/O
errors, start-up errors and the clean-up of mounts left by an earlier run.

The rule under test: bytes written reach the disk (the backing directory) only by fsync or
``sync``; names, directories, truncates and sizes set by truncate are durable at once; so a file
written but never synced survives a power loss with its last synced size."""

from __future__ import annotations

import errno
import fcntl
import mmap
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from isrcheck.conformance.engines.apache.lazyfs import LazyFS, LazyFSError, process_identity, unmount_stale

pytestmark = pytest.mark.skipif(
    not os.path.exists("/dev/fuse") or shutil.which("fusermount3") is None,
    reason="no FUSE here: needs /dev/fuse and fusermount3 (Debian's fuse3)",
)

WRITER = Path(__file__).parent / "Writer.java"


@pytest.fixture
def place():
    """A fresh short directory (a Unix socket's path holds 107 bytes) with ``disk`` and ``mnt``."""
    where = Path(tempfile.mkdtemp(prefix="lazyfs-"))
    (where / "disk").mkdir()
    (where / "mnt").mkdir()
    yield where
    unmount_stale(where)
    shutil.rmtree(where, ignore_errors=True)


@pytest.fixture
def fs(place):
    lazy = LazyFS(place / "disk", place / "mnt", place / "ctl", place / "log")
    lazy.start()
    yield lazy
    lazy.kill()


def lose_power(fs: LazyFS, how: str) -> None:
    if how == "drop":
        fs.drop()
    else:
        fs.kill()
        fs.remount()


def write(path: Path, data: bytes, *, fsync: bool, mode: str = "ab") -> None:
    with open(path, mode) as f:
        f.write(data)
        f.flush()
        if fsync:
            os.fsync(f.fileno())


@pytest.mark.parametrize("how", ["drop", "kill"])
def test_synced_bytes_survive_a_power_loss_and_unsynced_ones_do_not(fs, how):
    log = fs.mount / "00000.log"
    write(log, b"synced;", fsync=True)
    write(log, b"unsynced", fsync=False)
    assert log.read_bytes() == b"synced;unsynced" and log.stat().st_size == 15
    assert (fs.backing / "00000.log").read_bytes() == b"synced;"
    assert fs.status()["unsynced_bytes"] == 8
    lose_power(fs, how)
    assert log.read_bytes() == b"synced;"
    assert fs.status()["unsynced_bytes"] == 0


def test_a_file_never_synced_survives_with_its_last_synced_size(fs):
    (fs.mount / "topic-0").mkdir()
    never = fs.mount / "topic-0" / "never.log"
    write(never, b"x" * 10_000, fsync=False)
    once = fs.mount / "topic-0" / "once.log"
    write(once, b"12345", fsync=True)
    write(once, b"678", fsync=False)
    assert never.stat().st_size == 10_000
    fs.drop()
    assert sorted(os.listdir(fs.mount / "topic-0")) == ["never.log", "once.log"]
    assert never.stat().st_size == 0 and once.read_bytes() == b"12345"


def test_a_rename_keeps_the_unsynced_bytes_until_the_power_loss(fs):
    write(fs.mount / "a.log", b"kept", fsync=False)
    write(fs.mount / "b.log", b"lost", fsync=False)
    os.rename(fs.mount / "a.log", fs.mount / "a.log.deleted")
    os.rename(fs.mount / "b.log", fs.mount / "b.log.swap")
    assert (fs.mount / "a.log.deleted").read_bytes() == b"kept"
    with open(fs.mount / "a.log.deleted", "rb+") as f:
        os.fsync(f.fileno())  # by its new name
    directory = os.open(fs.mount, os.O_RDONLY)  # Kafka's Utils.flushDir after a rename
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
    fs.drop()
    assert (fs.mount / "a.log.deleted").read_bytes() == b"kept"
    assert (fs.mount / "b.log.swap").read_bytes() == b""
    assert not (fs.mount / "a.log").exists() and not (fs.mount / "b.log").exists()


def test_an_unlink_or_a_rename_over_drops_the_last_links_bytes(fs):
    write(fs.mount / "gone", b"abc", fsync=False)
    write(fs.mount / "linked", b"def", fsync=False)
    os.link(fs.mount / "linked", fs.mount / "other")
    write(fs.mount / "over", b"ghi", fsync=False)
    write(fs.mount / "new", b"jk", fsync=True)
    os.unlink(fs.mount / "gone")
    os.unlink(fs.mount / "linked")  # "other" is still a link: its bytes stay
    os.replace(fs.mount / "new", fs.mount / "over")
    assert fs.status()["unsynced_bytes"] == 3
    assert (fs.mount / "other").read_bytes() == b"def" and (fs.mount / "over").read_bytes() == b"jk"
    fs.sync()
    assert (fs.backing / "other").read_bytes() == b"def"


def test_a_truncate_is_metadata_and_drops_the_cached_bytes_beyond(fs):
    seg = fs.mount / "seg"
    write(seg, b"s" * 10_000, fsync=True)
    write(seg, b"u" * 5_000, fsync=False)
    with open(seg, "rb+") as f:
        os.ftruncate(f.fileno(), 12_000)  # Kafka truncating its log to an offset
    assert seg.read_bytes() == b"s" * 10_000 + b"u" * 2_000
    assert fs.status()["unsynced_bytes"] == 2_000
    fs.drop()
    assert seg.read_bytes() == b"s" * 10_000 + bytes(2_000)

    index = fs.mount / "idx"
    with open(index, "wb") as f:
        os.ftruncate(f.fileno(), 1 << 20)  # RandomAccessFile.setLength: pre-allocation
    os.truncate(index, 4096)  # trimToValidSize, by path
    write(seg, b"v" * 100, fsync=False)
    write(seg, b"w", fsync=False, mode="wb")  # O_TRUNC: the cached bytes go, the size 0 stays
    assert seg.read_bytes() == b"w"
    fs.drop()
    assert index.stat().st_size == 4096 and seg.stat().st_size == 0


def test_other_metadata_goes_to_the_disk_at_once(fs):
    data = fs.mount / "data"
    write(data, b"abc", fsync=False)
    with open(data, "rb+") as f:
        os.posix_fallocate(f.fileno(), 0, 10_000)
    os.symlink("data", fs.mount / "alias")
    os.chmod(data, 0o600)
    os.utime(data, ns=(1_000_000_000, 2_000_000_000))
    assert os.statvfs(fs.mount).f_bsize > 0
    fs.drop()
    st = data.stat()
    assert (st.st_size, st.st_mode & 0o777, st.st_mtime_ns) == (10_000, 0o600, 2_000_000_000)
    assert os.readlink(fs.mount / "alias") == "data" and (fs.mount / "alias").read_bytes() == bytes(10_000)


@pytest.mark.parametrize("msync", [True, False])
def test_a_shared_mmap_survives_only_with_msync(fs, msync):
    index = fs.mount / "00000.index"
    with open(index, "wb+") as f:
        f.truncate(8192)
        with mmap.mmap(f.fileno(), 8192, mmap.MAP_SHARED) as m:
            m[100:108] = b"entry-01"
            m[5000:5008] = b"entry-02"
            if msync:
                m.flush()
    assert index.read_bytes()[100:108] == b"entry-01"
    fs.drop()
    data = index.read_bytes()
    assert len(data) == 8192
    assert (data[100:108], data[5000:5008]) == ((b"entry-01", b"entry-02") if msync else (bytes(8), bytes(8)))


def test_random_writes_fsyncs_truncates_and_power_losses_match_a_model(fs):
    """Unaligned writes across pages, with gaps inside a page over synced bytes: what the mount
    reads is the last write; what survives a power loss is the last fsync, cut by truncates."""
    rng = random.Random(20240)
    path = fs.mount / "model"
    current, durable = bytearray(), bytearray()
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        for _ in range(300):
            op = rng.choices(["write", "fsync", "truncate", "drop"], [20, 3, 2, 2])[0]
            if op == "write":
                offset, data = rng.randrange(20_000), rng.randbytes(rng.choice([1, 7, 100, 4096, 9000]))
                os.pwrite(fd, data, offset)
                current.extend(bytes(max(0, offset + len(data) - len(current))))
                current[offset : offset + len(data)] = data
            elif op == "fsync":
                os.fsync(fd)
                durable = bytearray(current)
            elif op == "truncate":
                length = rng.randrange(25_000)
                os.ftruncate(fd, length)
                current = current[:length].ljust(length, b"\0")
                durable = durable[:length].ljust(length, b"\0")
            else:
                os.close(fd)  # the power loss of a killed process: its files closed first
                fs.drop()
                fd = os.open(path, os.O_RDWR)
                current = bytearray(durable)
            assert os.fstat(fd).st_size == len(current)
            assert os.pread(fd, 40_000, 0) == current
    finally:
        os.close(fd)


def test_sync_persists_everything_and_status_says_what_is_unsynced(fs):
    write(fs.mount / "a", b"1" * 5000, fsync=False)
    write(fs.mount / "b", b"2", fsync=False)
    status = fs.status()
    assert status == {"unsynced_bytes": 5001, "unsynced_files": 2, "files": {"/a": 5000, "/b": 1}, "failures": {}}
    assert fs.sync() == {"bytes": 5001, "files": 2}
    fs.drop()
    assert (fs.mount / "a").read_bytes() == b"1" * 5000 and (fs.mount / "b").read_bytes() == b"2"


def test_a_clean_stop_persists_nothing_extra(fs):
    write(fs.mount / "synced", b"s", fsync=True)
    write(fs.mount / "unsynced", b"u", fsync=False)
    assert fs.stop()["unsynced_bytes"] == 1
    assert not os.path.ismount(fs.mount) and not fs.running
    fs.remount()
    assert (fs.mount / "synced").read_bytes() == b"s" and (fs.mount / "unsynced").read_bytes() == b""


def test_injected_write_fsync_and_read_errors(fs):
    path = fs.mount / "f"
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        fs.fail("write", "EIO")
        assert fs.status()["failures"] == {"write": {"errno": "EIO", "count": 1}}
        with pytest.raises(OSError) as failed:
            os.pwrite(fd, b"abc", 0)
        assert failed.value.errno == errno.EIO
        assert os.pwrite(fd, b"abc", 0) == 3  # only the next one
        fs.fail("write", "ENOSPC", 2)
        for _ in range(2):
            with pytest.raises(OSError) as failed:
                os.pwrite(fd, b"d", 3)
            assert failed.value.errno == errno.ENOSPC
        fs.fail("fsync", "EIO")
        with pytest.raises(OSError) as failed:
            os.fsync(fd)
        assert failed.value.errno == errno.EIO
        assert fs.status()["unsynced_bytes"] == 3  # a failed fsync persisted nothing
        os.fsync(fd)
        assert fs.status() == {"unsynced_bytes": 0, "unsynced_files": 0, "files": {}, "failures": {}}
    finally:
        os.close(fd)
    fs.fail("read", "EIO", 2)  # the kernel retries a failed read once
    with pytest.raises(OSError) as failed:
        path.read_bytes()  # a fresh open: the kernel's cached pages are dropped
    assert failed.value.errno == errno.EIO
    assert fs.status()["failures"] == {}
    assert path.read_bytes() == b"abc"
    fs.fail("fsync", "EIO")
    fs.disarm()  # one no operation met is taken back
    assert fs.status()["failures"] == {}


def test_bad_control_commands_are_refused(fs):
    with pytest.raises(LazyFSError, match="expected fail write|fsync|read"):
        fs.fail("rename", "EIO")
    with pytest.raises(LazyFSError, match="expected fail"):
        fs.fail("write", "EPERM")
    with pytest.raises(LazyFSError, match="expected fail"):
        fs.fail("write", "EIO", 0)
    fs.kill()
    with pytest.raises(LazyFSError, match="no daemon answers"):
        fs.status()


def test_posix_and_bsd_locks_exclude_another_process(fs):
    lock = fs.mount / ".lock"
    with open(lock, "w") as f:
        fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        other = subprocess.run(
            [
                sys.executable,
                "-c",
                f"""
import fcntl
with open({str(lock)!r}, "w") as f:
    for take in (fcntl.lockf, fcntl.flock):
        try:
            take(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            print("locked")
        except OSError:
            print("busy")
""",
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert other.stdout.split() == ["busy", "busy"], other.stderr


@pytest.mark.skipif(shutil.which("java") is None, reason="no java on PATH (Debian: openjdk-17-jdk-headless)")
def test_java_force_and_trylock(fs):
    """Kafka's own calls: FileChannel.write and force(true), a setLength'd RandomAccessFile
    mapped and MappedByteBuffer.force(), FileChannel.tryLock on the log directory's .lock."""
    java = ["java", str(WRITER)]
    holder = subprocess.Popen(
        [*java, "write", str(fs.mount)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert [holder.stdout.readline().strip() for _ in range(2)] == ["written", "locked"]
        contender = subprocess.run(
            [*java, "lock", str(fs.mount / ".lock")],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert contender.stdout.strip() == "busy", contender.stderr
    finally:
        _, err = holder.communicate("\n", timeout=60)  # the JVM exits: its mmap's dirty page reaches lazyfs
    assert holder.returncode == 0, err
    with open(fs.mount / ".lock", "w") as f:
        fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released with its holder
    assert (fs.mount / "segment.log").read_bytes() == b"forcedunforced"
    assert (fs.mount / "segment.index").read_bytes()[4096:4111] == b"mapped-unforced"
    fs.drop()
    assert (fs.mount / "segment.log").read_bytes() == b"forced"
    index = (fs.mount / "segment.index").read_bytes()
    assert len(index) == 8192 and index[:13] == b"mapped-forced" and index[4096:4111] == bytes(15)


def test_concurrent_writers(fs):
    def writer(n: int) -> None:
        with open(fs.mount / f"w{n}", "wb") as f:
            for i in range(200):
                f.write(bytes([n]) * 1000)
                f.flush()
                if i == 99:
                    os.fsync(f.fileno())

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert fs.status()["unsynced_bytes"] == 4 * 100_000
    fs.drop()
    for n in range(4):
        assert (fs.mount / f"w{n}").read_bytes() == bytes([n]) * 100_000


def test_sequential_append_throughput(fs, capsys):
    """Kafka appends sequentially: 1 KiB appends through the mount, then an fsync (printed, not asserted)."""
    record, count = os.urandom(1024), 20_000
    with open(fs.mount / "bench.log", "wb", buffering=0) as f:
        start = time.perf_counter()
        for _ in range(count):
            f.write(record)
        appended = time.perf_counter() - start
        os.fsync(f.fileno())
        synced = time.perf_counter() - start - appended
    with capsys.disabled():
        print(
            f"\nlazyfs: {count} sequential 1 KiB appends at {count / 1024 / appended:.1f} MB/s "
            f"({appended * 1e6 / count:.0f} us each), fsync of {count // 1024} MiB in {synced * 1000:.0f} ms"
        )
    assert (fs.backing / "bench.log").stat().st_size == count * 1024


def test_a_daemon_that_cannot_start_says_why(place):
    (place / "file").write_text("")
    for mount, why in (
        (place / "missing", "mount point .*missing does not exist"),
        (place / "file", "mount point .*file is not a directory"),
    ):
        lazy = LazyFS(place / "disk", mount, place / "ctl", place / "log")
        with pytest.raises(LazyFSError, match=f"exited with status 2: lazyfs: {why}"):
            lazy.start()
    with pytest.raises(LazyFSError, match="backing directory .*nowhere does not exist"):
        LazyFS(place / "nowhere", place / "mnt", place / "ctl", place / "log").start()
    with pytest.raises(LazyFSError, match="longer than a Unix socket's 107 bytes"):
        LazyFS(place / "disk", place / "mnt", place / ("c" * 120), place / "log").start()


def test_unmount_stale_cleans_what_an_earlier_run_left(place):
    """A daemon killed without its unmount leaves a dead mount; a daemon whose owner died leaves
    a live one. Both go; this run's live mount stays, and its mount point cannot be mounted twice."""
    ours = LazyFS(place / "disk", place / "mnt", place / "ctl", place / "log")
    ours.start()
    try:
        dead_mount, orphan_mount = place / "dead", place / "orphan"
        dead_mount.mkdir()
        orphan_mount.mkdir()
        dead = LazyFS(place / "disk", dead_mount, place / "ctl2", place / "log2")
        dead.start()
        os.kill(dead.pid, 9)
        gone = subprocess.Popen(["true"])
        gone.wait()
        with open(place / "log3", "wb") as log:
            orphan = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "isrcheck.conformance.engines.apache.lazyfs",
                    str(place / "disk"),
                    str(orphan_mount),
                    "--control",
                    str(place / "ctl3"),
                    "--owner",
                    f"{gone.pid}.0",
                ],
                stdout=log,
                stderr=log,
            )
        deadline = time.monotonic() + 10
        while not os.path.ismount(orphan_mount) and time.monotonic() < deadline:
            time.sleep(0.02)
        with pytest.raises(LazyFSError, match="already a mount point"):
            LazyFS(place / "disk", dead_mount, place / "ctl4", place / "log4").start()
        assert sorted(unmount_stale(place)) == [dead_mount, orphan_mount]
        assert orphan.wait(timeout=10) == 0  # its connection ended with the unmount
        assert not os.path.ismount(dead_mount) and os.listdir(dead_mount) == []
        assert os.path.ismount(ours.mount) and unmount_stale(place) == []
        assert process_identity(os.getpid()).startswith(f"{os.getpid()}.")
    finally:
        ours.kill()
