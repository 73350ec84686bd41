"""What a broker's disk holds after the faults of the step alphabet, read back from the simulated
file system: a lost disk, an HW checkpoint without a flush, and a power loss that kept some
unflushed batches and tore the next one."""

import errno

import pytest

from isrcheck.impl.replication.broker import DATA_DIR, HW_CHECKPOINT_NAME
from isrcheck.impl.sim import Cluster, ClusterConfig, ClusterError

PARTITION_DIR = DATA_DIR + "/isr-0"


def cluster(replicas=1, min_isr=1):
    return Cluster(ClusterConfig(protocol="kip-320", replicas=replicas, min_insync_replicas=min_isr))


def test_a_lost_disk_takes_log_and_checkpoints_and_the_restart_starts_empty():
    c = cluster(replicas=2)
    c.produce(0, [b"1", b"2"], 1)
    for _ in range(3):  # the third answer carries the HW the second moved
        c.send_fetch(1)
        c.handle_fetch(1)
        c.handle_fetch_response(1)
    c.crash(1, "clean")  # everything on disk, checkpoints written
    fs = c.filesystems[1]
    assert fs.exists(DATA_DIR + "/" + HW_CHECKPOINT_NAME) and len(fs.listdir(PARTITION_DIR)) > 3
    c.lose_disk(1)
    assert fs.listdir(DATA_DIR) == []
    down = c.snapshot().brokers[1]
    assert (down.log, down.durable, down.hw, down.hw_checkpoint, down.power_lost) == ((), 0, 0, 0, True)
    c.restart(1)  # a fast bounce: still in the controller's ISR (KAFKA-14139)
    up = c.snapshot().brokers[1]
    assert (up.log, up.hw, up.hw_checkpoint, up.power_lost) == ((), 0, 0, False)
    assert c.snapshot().controller.isr == (0, 1)
    # nothing of the old disk; the broker epoch of the new registration, in the page cache only
    assert fs.listdir(DATA_DIR) == [".kafka_running", "isr-0"] and "leader-epoch-checkpoint" not in fs.listdir(
        PARTITION_DIR
    )
    assert fs.read_file(PARTITION_DIR + "/00000000000000000000.log") == b""


def test_checkpoint_hw_writes_only_the_replication_offset_checkpoint():
    c = cluster()
    c.produce(0, b"1", 1)  # committed at once: a maximal ISR of one
    fs, fsyncs = c.filesystems[0], c.filesystems[0].fsync_count
    c.checkpoint_hw(0)
    snap = c.snapshot().brokers[0]
    assert (snap.hw, snap.hw_checkpoint, snap.durable) == (1, 1, 0)
    assert fs.read_file(DATA_DIR + "/" + HW_CHECKPOINT_NAME) == b"0\n1\n0 1\n"
    assert fs.fsync_count - fsyncs == 2  # the checkpoint file and its directory, no segment
    with pytest.raises(ClusterError, match="already holds its HW 1"):
        c.checkpoint_hw(0)
    c.crash(0, "power")
    c.restart(0)
    snap = c.snapshot().brokers[0]
    assert (snap.log, snap.hw, snap.hw_checkpoint) == ((), 0, 1)


def test_a_power_loss_keeps_the_written_back_batches_and_recovery_cuts_the_torn_one():
    c = cluster()
    c.produce(0, b"1", 1)
    c.flush(0)
    for values in ([b"2", b"3"], [b"4"], [b"5"]):
        c.produce(0, values, 1)
    log = c.brokers[0].log
    kept, torn = log.unflushed_batches()[:2]
    with pytest.raises(ClusterError, match="only 3 unflushed batches, 4 needed"):
        c.crash(0, "power", 3, True)
    c.crash(0, "power", 1, True)
    down = c.snapshot().brokers[0]
    assert (down.durable, len(down.log), down.power_lost) == (3, 5, True)
    on_disk = c.filesystems[0].read_file(torn.path)
    assert len(on_disk) == torn.position + torn.size // 2 and kept.path == torn.path
    c.restart(0)
    report = c.brokers[0].log.recovery_report
    assert report.truncated_bytes == torn.size // 2
    assert (
        f"segment 0: truncated {torn.size // 2} bytes at offset 3: torn batch at position {torn.position}"
        in report.events[0]
    )
    up = c.snapshot().brokers[0]
    assert [e.value for e in up.log] == [b"1", b"2", b"3"] and up.durable == 3


@pytest.mark.parametrize("survive,torn,leo", [(0, False, 1), (0, True, 1), (2, False, 4), (3, False, 5)])
def test_a_power_loss_keeps_exactly_the_durable_prefix_and_the_surviving_batches(survive, torn, leo):
    c = cluster()
    c.produce(0, b"1", 1)
    c.flush(0)
    for values in ([b"2", b"3"], [b"4"], [b"5"]):
        c.produce(0, values, 1)
    c.crash(0, "power", survive, torn)
    c.restart(0)
    snap = c.snapshot().brokers[0]
    assert (len(snap.log), snap.durable) == (leo, leo)


# -- disks that fail as disks do (docs/steps.md, "Disk faults") ------------------------------------


def replicated(c, records=(b"1",)):
    c.produce(0, list(records), 1)
    c.send_fetch(1), c.handle_fetch(1), c.handle_fetch_response(1)


@pytest.mark.parametrize("io", ["write:EIO", "write:ENOSPC", "fsync:EIO", "fsync:ENOSPC", "read:EIO"])
def test_a_failed_io_takes_the_log_directory_offline_the_broker_halts_and_the_controller_fences_it(io):
    c = cluster(replicas=2)
    replicated(c)
    c.flush(0)
    c.produce(0, [b"2"], 1)  # unflushed on the leader
    checkpoint = c.brokers[0].hw_checkpoint
    c.fail_disk(0, io)
    down = c.snapshot().brokers[0]
    assert not down.alive and 0 in c.controller.fenced and c.controller.leader == -1
    assert c.brokers[0].log_dir_failure_channel.offline  # the directory the error came from
    assert down.hw_checkpoint == checkpoint  # a failed write is no checkpoint
    c.restart(0)
    kept = [e.value for e in c.snapshot().brokers[0].log]
    # a failed fsync never counts as durable and its dirty pages are gone; the others keep the page cache
    assert kept == ([b"1"] if io.startswith("fsync") else [b"1", b"2"])


def test_a_disk_failure_that_has_nothing_to_hit_is_refused():
    c = cluster(replicas=2)
    for io, reason in (("fsync:EIO", "nothing unflushed"), ("read:EIO", "nothing to read"), ("rot:EIO", "io must be")):
        with pytest.raises(ClusterError, match=reason):
            c.fail_disk(0, io)
    assert c.snapshot().brokers[0].alive and not c.filesystems[0].failures.failing


def test_the_simulated_disk_fails_the_armed_operation_once_and_writes_nothing():
    import errno

    from isrcheck.impl.storage import SimulatedFileSystem

    fs = SimulatedFileSystem()
    fs.makedirs("/d")
    handle = fs.open("/d/f")
    fs.fail_next("write", errno.ENOSPC)
    with pytest.raises(OSError) as err:
        handle.append(b"abc")
    assert err.value.errno == errno.ENOSPC and handle.size() == 0
    handle.append(b"abc")  # once only
    fs.fail_next("fsync")
    with pytest.raises(OSError):
        handle.fsync()
    fs.fsync_dir("/d")  # the entry is durable, its bytes are not
    fs.power_loss()  # the failed fsync made nothing durable
    assert fs.read_file("/d/f") == b""


@pytest.mark.parametrize("tail", ["stale", "random"])
def test_a_torn_tail_of_garbage_is_as_long_as_its_header_says_and_fails_only_the_crc(tail):
    c = cluster()
    c.produce(0, [b"1"], 1)
    c.flush(0)
    c.produce(0, [b"22", b"33"], 1)
    before = c.filesystems[0].read_file(PARTITION_DIR + "/00000000000000000000.log")
    c.crash(0, "power", 0, True, tail)
    after = c.filesystems[0].read_file(PARTITION_DIR + "/00000000000000000000.log")
    assert len(after) == len(before) and after != before  # the length check passes
    c.restart(0)
    report = c.brokers[0].log.recovery_report
    assert "CRC mismatch" in report.events[0] and report.log_end_offset == 1


def test_a_produce_whose_append_fails_is_never_acknowledged_and_the_leader_halts():
    """ENOSPC on the leader's append of a produce (not through ``fail_disk``, which runs an operation of
    its own): the log directory goes offline, the broker halts without answering, the controller
    fences it and elects elsewhere, and the log holds nothing of the failed batch."""
    c = cluster(replicas=3, min_isr=2)
    c.produce(0, b"1", 1)
    assert [r.error for r in c.take_client_responses()] == ["NONE"]
    c.filesystems[0].fail_next("write", errno.ENOSPC)
    c.produce(0, b"2", 1)
    assert c.take_client_responses() == []  # acks=1 and no answer: nothing acknowledged
    leader = c.world.brokers[0]
    assert not leader.alive and leader.log_dir_failure_channel.offline[DATA_DIR].errno == errno.ENOSPC
    assert [e.value for e in c.snapshot().brokers[0].log] == [b"1"]
    controller = c.snapshot().controller
    assert (controller.fenced, controller.leader, controller.isr) == ((0,), -1, (1, 2))
    c.elect()
    assert c.snapshot().controller.leader == 1


def test_a_follower_whose_append_fails_halts_and_the_leader_serves_on():
    c = cluster(replicas=2)
    c.produce(0, b"1", 1)
    c.send_fetch(1)
    c.filesystems[1].fail_next("write", errno.EIO)
    c.handle_fetch(1)
    c.handle_fetch_response(1)  # the fetched batch's append fails
    assert not c.world.brokers[1].alive and c.snapshot().brokers[1].log == ()
    assert 1 in c.snapshot().controller.fenced
    c.produce(0, b"2", 1)
    assert [r.error for r in c.take_client_responses()] == ["NONE", "NONE"]
