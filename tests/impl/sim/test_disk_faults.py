"""What a broker's disk holds after the faults of the step alphabet, read back from the simulated
file system: a lost disk, an HW checkpoint without a flush, and a power loss that kept some
unflushed batches and tore the next one."""
import pytest

from isrcheck.impl.replication.broker import DATA_DIR, HW_CHECKPOINT_NAME
from isrcheck.impl.sim import Cluster, ClusterConfig, ClusterError

PARTITION_DIR = DATA_DIR + "/isr-0"


def cluster(replicas=1, min_isr=1):
    return Cluster(ClusterConfig(protocol="kip-320", replicas=replicas, min_insync_replicas=min_isr))


def test_a_lost_disk_takes_log_and_checkpoints_and_the_restart_starts_empty():
    c = cluster(replicas=2)
    c.produce(0, [b"1", b"2"], 1)
    for _ in range(2):
        c.send_fetch(1)
        c.handle_fetch(1)
        c.handle_fetch_response(1)
    c.crash(1, "clean")                     # everything on disk, checkpoints written
    fs = c.filesystems[1]
    assert fs.exists(DATA_DIR + "/" + HW_CHECKPOINT_NAME) and len(fs.listdir(PARTITION_DIR)) > 3
    c.lose_disk(1)
    assert fs.listdir(DATA_DIR) == []
    down = c.snapshot().brokers[1]
    assert (down.log, down.durable, down.hw, down.hw_checkpoint, down.power_lost) == ((), 0, 0, 0, True)
    c.restart(1)                            # a fast bounce: still in the controller's ISR (KAFKA-14139)
    up = c.snapshot().brokers[1]
    assert (up.log, up.hw, up.hw_checkpoint, up.power_lost) == ((), 0, 0, False)
    assert c.snapshot().controller.isr == (0, 1)
    # nothing of the old disk; the broker epoch of the new registration, in the page cache only
    assert fs.listdir(DATA_DIR) == [".kafka_running", "isr-0"] and "leader-epoch-checkpoint" not in fs.listdir(PARTITION_DIR)
    assert fs.read_file(PARTITION_DIR + "/00000000000000000000.log") == b""


def test_checkpoint_hw_writes_only_the_replication_offset_checkpoint():
    c = cluster()
    c.produce(0, b"1", 1)                   # committed at once: a maximal ISR of one
    fs, fsyncs = c.filesystems[0], c.filesystems[0].fsync_count
    c.checkpoint_hw(0)
    snap = c.snapshot().brokers[0]
    assert (snap.hw, snap.hw_checkpoint, snap.durable) == (1, 1, 0)
    assert fs.read_file(DATA_DIR + "/" + HW_CHECKPOINT_NAME) == b"0\n1\n0 1\n"
    assert fs.fsync_count - fsyncs == 2     # the checkpoint file and its directory, no segment
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
    assert f"segment 0: truncated {torn.size // 2} bytes at offset 3: torn batch at position {torn.position}" \
        in report.events[0]
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
