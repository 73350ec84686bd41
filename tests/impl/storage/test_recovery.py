"""Recovery on the simulated file system: flush policy, power loss, damaged checkpoints, leftovers
of interrupted work; every repair is reported, nothing is silently wrong."""

import random

import pytest

from isrcheck.impl.storage import CorruptLogError, CorruptRecordError, Log, LogConfig, Record, SimulatedFileSystem

DIR = "/logs/t-0"


class Clock:
    def __init__(self):
        self.now = 0

    def __call__(self):
        return self.now


def open_log(fs, config=LogConfig(segment_bytes=600, index_interval_bytes=100), clock=None):
    return Log.open(DIR, config, fs=fs, clock=clock or Clock())


def append(log, start, n, epoch=0):
    for i in range(start, start + n):
        log.append_as_leader([Record(b"k%d" % i, b"v%d" % i)], epoch)


def offsets(log):
    return [r.offset for r in log.read(log.log_start_offset, 10**9).records]


def test_power_loss_keeps_exactly_the_flushed_prefix():
    fs = SimulatedFileSystem()
    log = open_log(fs, LogConfig(segment_bytes=1 << 20))
    append(log, 0, 7)
    log.high_watermark = 5
    log.flush()
    append(log, 7, 5)
    log.high_watermark = 12
    fs.power_loss()
    log = open_log(fs, LogConfig(segment_bytes=1 << 20))
    assert offsets(log) == list(range(7)) and log.high_watermark == 5


def test_flush_messages_policy_makes_every_nth_append_durable():
    fs = SimulatedFileSystem()
    config = LogConfig(segment_bytes=1 << 20, flush_messages=3)
    log = open_log(fs, config)
    append(log, 0, 8)
    assert log.recovery_point == 6 and log.unflushed_messages == 2
    fs.power_loss()
    assert offsets(open_log(fs, config)) == list(range(6))


def test_flush_ms_policy_uses_the_log_clock():
    fs, clock = SimulatedFileSystem(), Clock()
    config = LogConfig(segment_bytes=1 << 20, flush_ms=100)
    log = open_log(fs, config, clock)
    append(log, 0, 3)
    assert log.recovery_point == 0
    clock.now = 100
    append(log, 3, 1)
    assert log.recovery_point == 4
    append(log, 4, 2)
    fs.power_loss()
    assert offsets(open_log(fs, config, clock)) == list(range(4))


@pytest.mark.parametrize("seed", range(12))
def test_torn_power_loss_recovers_a_valid_prefix_and_reports_it(seed):
    fs = SimulatedFileSystem()
    log = open_log(fs)
    append(log, 0, 10)
    log.flush()
    append(log, 10, 25, epoch=2)
    fs.power_loss(random.Random(seed))
    log = open_log(fs)
    got = offsets(log)
    assert got == list(range(len(got))) and 10 <= len(got) <= 35
    report = log.recovery_report
    assert report.log_end_offset == len(got)
    assert all(e.start_offset < len(got) for e in log.leader_epoch_cache.entries)
    if report.truncated_bytes:
        assert report.events


def test_corruption_below_the_recovery_point_is_caught_on_read():
    fs = SimulatedFileSystem()
    log = open_log(fs)
    append(log, 0, 30)
    first = log.segments[0]
    log.close()
    fs.corrupt(first.log_path, 65, bytes([fs.read_file(first.log_path)[65] ^ 0xFF]))
    log = open_log(fs)
    with pytest.raises(CorruptRecordError, match="batch at offset 0: CRC mismatch"):
        log.read(0).records


def test_corrupt_recovery_point_checkpoint_means_full_recovery():
    fs = SimulatedFileSystem()
    log = open_log(fs)
    append(log, 0, 20)
    log.flush()
    fs.corrupt(DIR + "/recovery-point-offset-checkpoint", 0, b"X")
    fs.process_crash()
    log = open_log(fs)
    assert offsets(log) == list(range(20))
    assert any("recovery-point-offset-checkpoint" in e and "malformed" in e for e in log.recovery_report.events)


def test_corrupt_leader_epoch_checkpoint_is_rebuilt_from_the_batches():
    fs = SimulatedFileSystem()
    log = open_log(fs)
    append(log, 0, 4, epoch=1)
    append(log, 4, 4, epoch=5)
    log.close()
    fs.corrupt(DIR + "/leader-epoch-checkpoint", 0, b"9")
    log = open_log(fs)
    assert log.recovery_report.epoch_cache_rebuilt
    assert [tuple(e) for e in log.leader_epoch_cache.entries] == [(1, 0), (5, 4)]


def test_corrupt_hw_checkpoint_resets_the_high_watermark_and_says_so():
    fs = SimulatedFileSystem()
    log = open_log(fs)
    append(log, 0, 4)
    log.high_watermark = 3
    log.close()
    fs.corrupt(DIR + "/replication-offset-checkpoint", 2, b"?")
    log = open_log(fs)
    assert log.high_watermark == 0
    assert any("high watermark reset" in e for e in log.recovery_report.events)


def test_corruption_found_by_recovery_cuts_the_log_there_and_drops_later_segments():
    fs = SimulatedFileSystem()
    log = open_log(fs)
    append(log, 0, 45)
    third = log.segments[2]
    assert len(log.segments) > 3
    fs.corrupt(third.log_path, 30, b"\xff\xff")  # inside the first batch of that segment
    fs.remove(DIR + "/recovery-point-offset-checkpoint")  # so recovery validates every segment
    fs.process_crash()
    log = open_log(fs)
    report = log.recovery_report
    assert offsets(log) == list(range(third.base_offset))
    assert report.truncated and report.deleted_segments


def test_leftovers_of_interrupted_work_are_cleaned_up():
    fs = SimulatedFileSystem()
    log = open_log(fs)
    append(log, 0, 3)
    log.close()
    for name in ("00000000000000000000.log.cleaned", "replication-offset-checkpoint.tmp", "00000000000000000099.index"):
        fs.open(f"{DIR}/{name}").append(b"junk")
    log = open_log(fs)
    assert offsets(log) == [0, 1, 2]
    assert fs.listdir(DIR) == sorted(
        [
            "00000000000000000000.index",
            "00000000000000000000.log",
            "00000000000000000000.timeindex",
            "leader-epoch-checkpoint",
            "recovery-point-offset-checkpoint",
            "replication-offset-checkpoint",
        ]
    )


def test_a_log_file_with_a_bad_name_is_a_clear_error():
    fs = SimulatedFileSystem()
    open_log(fs).close()
    fs.open(DIR + "/12.log").append(b"")
    with pytest.raises(CorruptLogError, match="12.log.*20-digit"):
        open_log(fs)


def test_a_crashed_log_object_cannot_write_any_more():
    fs = SimulatedFileSystem()
    log = open_log(fs)
    append(log, 0, 2)
    fs.process_crash()
    with pytest.raises(Exception, match="crashed"):
        append(log, 2, 1)


def test_the_loader_returns_the_value_a_log_is_built_from():
    from dataclasses import FrozenInstanceError

    from isrcheck.impl.storage.loader import LogLoader

    fs, config, clock = SimulatedFileSystem(), LogConfig(segment_bytes=1 << 20, index_interval_bytes=100), Clock()
    log = open_log(fs, config, clock)
    append(log, 0, 20)
    log.high_watermark = 15
    log.flush()
    append(log, 20, 5)
    fs.power_loss()
    loaded = LogLoader(fs, DIR, config).load()
    assert (loaded.log_start_offset, loaded.log_end_offset, loaded.recovery_point) == (0, 20, 20)
    assert loaded.high_watermark == 15 and loaded.segments[-1].next_offset == 20
    assert not loaded.recovery_report.clean_shutdown and loaded.recovery_report.log_end_offset == 20
    with pytest.raises(FrozenInstanceError):
        loaded.high_watermark = 0
    log = Log(DIR, config, fs, clock, loaded)
    assert (log.log_end_offset, log.high_watermark, log.recovery_point) == (20, 15, 20)
    assert log.recovery_report is loaded.recovery_report and offsets(log) == list(range(20))


def test_after_a_power_loss_the_recovered_tail_is_on_disk_but_after_a_process_crash_it_is_not():
    fs = SimulatedFileSystem()
    config = LogConfig(segment_bytes=1 << 20)
    log = open_log(fs, config)
    append(log, 0, 2)
    log.flush()
    append(log, 2, 3)
    fs.process_crash()
    log = open_log(fs, config)
    assert (log.log_end_offset, log.recovery_point) == (5, 2)  # Kafka's: the checkpointed point
    fs.power_loss(written_back={log.segments[-1].log_path: log.segments[-1].size})
    log = open_log(fs, config)
    assert (log.log_end_offset, log.recovery_point) == (5, 5)  # the file system knows it was written back


@pytest.mark.parametrize("seed", range(5))
def test_a_flush_fsyncs_the_segment_and_the_recovery_point_and_recovery_rebuilds_the_indexes(seed):
    """A flush fsyncs the active segment's log file and writes the recovery-point checkpoint (temp file,
    directory); the active segment's indexes wait for the roll, since any recovery rebuilds them, and
    an HW still 0 has no checkpoint to write (a missing one reads as 0)."""
    fs = SimulatedFileSystem()
    config = LogConfig(segment_bytes=1 << 20, index_interval_bytes=100)
    log = open_log(fs, config)
    append(log, 0, 40)
    fsyncs = fs.fsync_count
    log.flush()
    assert fs.fsync_count - fsyncs == 3
    assert not fs.exists(DIR + "/replication-offset-checkpoint")
    entries = log.segments[-1].offset_index.entries()
    assert len(entries) > 5
    fs.power_loss(random.Random(seed))  # the index files keep any prefix of their tail, or garbage
    log = open_log(fs, config)
    assert offsets(log) == list(range(40)) and not log.recovery_report.truncated
    assert log.segments[-1].offset_index.entries() == entries and log.high_watermark == 0
    assert [log.read(i, 1).records[0].offset for i in range(40)] == list(range(40))
    log.close()
    assert fs.read_file(DIR + "/replication-offset-checkpoint") == b"0\n1\n0\n"  # a clean shutdown writes it


@pytest.mark.parametrize("seed", range(5))
def test_a_roll_makes_the_closed_segments_indexes_durable(seed):
    fs = SimulatedFileSystem()
    config = LogConfig(segment_bytes=1 << 20, index_interval_bytes=100)
    log = open_log(fs, config)
    append(log, 0, 40)
    log.flush()
    log.roll()
    closed = log.segments[0]
    entries, time_entries = closed.offset_index.entries(), closed.time_index.entries()
    append(log, 40, 5)
    fs.power_loss(random.Random(seed))
    log = open_log(fs, config)
    assert offsets(log)[:40] == list(range(40)) and log.recovery_report.rebuilt_indexes == ()
    assert log.segments[0].offset_index.entries() == entries
    assert log.segments[0].time_index.entries() == time_entries
