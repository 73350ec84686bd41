"""The file-system contract both implementations keep, and what the simulated one keeps through
a process crash and a power loss."""

import random

import pytest

from isrcheck.impl.storage import LogClosedError, OsFileSystem, SimulatedFileSystem


@pytest.fixture(params=["os", "simulated"])
def fs_and_dir(request, tmp_path):
    if request.param == "os":
        return OsFileSystem(), str(tmp_path / "d")
    return SimulatedFileSystem(), "/d"


def test_both_file_systems_keep_the_same_contract(fs_and_dir):
    fs, d = fs_and_dir
    fs.makedirs(d)
    f = fs.open(fs.join(d, "b.log"))
    assert f.append(b"hello ") == 0 and f.append(b"world") == 6
    assert f.size() == 11 and f.read(6, 100) == b"world"
    f.truncate(5)
    assert f.read(0, 100) == b"hello"
    fs.open(fs.join(d, "a.log")).append(b"x")
    assert fs.listdir(d) == ["a.log", "b.log"]
    fs.rename(fs.join(d, "a.log"), fs.join(d, "b.log"))  # atomic replace
    assert fs.listdir(d) == ["b.log"] and fs.read_file(fs.join(d, "b.log")) == b"x"
    fs.write_file_atomically(fs.join(d, "c"), b"v1")
    fs.write_file_atomically(fs.join(d, "c"), b"v2")
    assert fs.read_file(fs.join(d, "c")) == b"v2" and "c.tmp" not in fs.listdir(d)
    fs.remove(fs.join(d, "c"))
    assert not fs.exists(fs.join(d, "c"))
    with pytest.raises(FileNotFoundError):
        fs.open(fs.join(d, "missing"), create=False)


def test_power_loss_keeps_fsynced_bytes_and_fsynced_directory_entries_only():
    fs = SimulatedFileSystem()
    fs.makedirs("/d")
    durable = fs.open("/d/durable")
    durable.append(b"synced")
    durable.fsync()
    durable.append(b"+cached")
    fs.open("/d/never-synced-entry").append(b"x")
    fs.fsync_dir("/d")
    fs.open("/d/created-after").append(b"y")
    fs.rename("/d/durable", "/d/renamed")  # not made durable by fsync_dir
    fs.power_loss()
    assert fs.listdir("/d") == ["durable", "never-synced-entry"]
    assert fs.read_file("/d/durable") == b"synced"
    assert fs.read_file("/d/never-synced-entry") == b""  # its entry survived, its data did not


def test_truncation_is_durable_and_a_process_crash_keeps_everything():
    fs = SimulatedFileSystem()
    fs.makedirs("/d")
    f = fs.open("/d/f")
    f.append(b"0123456789")
    f.fsync()
    f.truncate(4)
    f.append(b"abc")
    fs.fsync_dir("/d")
    fs.process_crash()
    assert fs.read_file("/d/f") == b"0123abc"
    with pytest.raises(LogClosedError):
        f.append(b"late")  # the crashed process's handle
    fs.power_loss()
    assert fs.read_file("/d/f") == b"0123"  # the truncation held; "abc" was cached


def test_a_torn_power_loss_keeps_a_prefix_of_the_unsynced_tail_and_maybe_garbage():
    outcomes = set()
    for seed in range(40):
        fs = SimulatedFileSystem()
        fs.makedirs("/d")
        f = fs.open("/d/f")
        f.append(b"synced|")
        f.fsync()
        fs.fsync_dir("/d")
        f.append(b"unsynced-tail")
        fs.power_loss(random.Random(seed))
        data = fs.read_file("/d/f")
        assert data.startswith(b"synced|")
        tail = data[len(b"synced|") :]
        kept = next(n for n in range(len(tail), -1, -1) if b"unsynced-tail".startswith(tail[:n]))
        outcomes.add((kept == len(tail), kept > 0))
    assert len(outcomes) >= 3  # clean cuts, partial writes, garbage
    fs_a, fs_b = SimulatedFileSystem(), SimulatedFileSystem()
    for fs in (fs_a, fs_b):
        fs.makedirs("/d")
        fs.fsync_dir("/d")
        fs.open("/d/f").append(b"z" * 100)
        fs.fsync_dir("/d")
        fs.power_loss(random.Random(3))
    assert fs_a.read_file("/d/f") == fs_b.read_file("/d/f")  # seeded: the same tear every time


def test_a_power_loss_keeps_exactly_the_written_back_prefix_with_its_directory_entry():
    fs = SimulatedFileSystem()
    fs.makedirs("/d")
    f = fs.open("/d/log")  # its entry was never fsynced
    f.append(b"synced|")
    f.fsync()
    f.append(b"written|torn-write")
    assert not f.synced()
    other = fs.open("/d/other")
    other.append(b"cached")
    fs.power_loss(written_back={"/d/log": len(b"synced|written|torn")})
    assert fs.listdir("/d") == ["log"]
    assert fs.read_file("/d/log") == b"synced|written|torn"
    assert fs.open("/d/log").synced()  # what a power loss leaves is on disk


def test_a_lost_directory_is_gone_from_cache_and_disk_and_comes_back_empty():
    fs = SimulatedFileSystem()
    fs.makedirs("/data/part")
    for path in ("/data/checkpoint", "/data/part/0.log"):
        fs.write_file_atomically(path, b"x")
    fs.lose_directory("/data")
    assert fs.listdir("/data") == [] and not fs.exists("/data/part")
    fs.power_loss()
    assert fs.listdir("/data") == []
