"""Log behaviour a replication layer relies on: offsets, reads, epochs, truncation, checkpoints."""

import pytest

from isrcheck.impl.storage import (
    CorruptRecordError,
    InvalidConfigError,
    InvalidRecordError,
    Log,
    LogConfig,
    OffsetOutOfRangeError,
    Record,
    RecordTooLargeError,
    SimulatedFileSystem,
    UnexpectedAppendOffsetError,
)

SMALL = LogConfig(segment_bytes=400, index_interval_bytes=100)


class Clock:
    def __init__(self):
        self.now = 1_000

    def __call__(self):
        return self.now


def open_log(fs=None, config=SMALL, clock=None, path="/data/p-0"):
    fs = fs or SimulatedFileSystem()
    return Log.open(path, config, fs=fs, clock=clock or Clock()), fs


def fill(log, n, epoch=0, start=0):
    for i in range(start, start + n):
        log.append_as_leader([Record(b"k%d" % i, b"value-%d" % i)], epoch)


def test_leader_append_assigns_consecutive_offsets_and_reads_them_back():
    log, _ = open_log()
    info = log.append_as_leader([Record(b"a", b"1"), Record(None, b"2", timestamp_ms=5)], leader_epoch=3)
    assert (info.first_offset, info.last_offset, info.record_count) == (0, 1, 2)
    fill(log, 30, epoch=3)
    assert log.log_end_offset == 32 and len(log.segments) > 1
    for start in range(32):
        records = log.read(start, max_bytes=10**6).records
        assert [r.offset for r in records] == list(range(start, 32))
    first = log.read(0).records
    assert (first[0].key, first[0].value, first[0].timestamp_ms) == (b"a", b"1", 1000)
    assert (first[1].key, first[1].timestamp_ms) == (None, 5)
    assert all(b.partition_leader_epoch == 3 for b in log.read(0).batches)


def test_read_bounds_max_offset_and_max_bytes():
    log, _ = open_log()
    fill(log, 10)
    assert [r.offset for r in log.read(2, max_offset=5).records] == [2, 3, 4]
    assert log.read(10).records == [] and log.read(5, max_offset=5).records == []
    one = log.read(0, max_bytes=1)  # KIP-74: at least one whole batch
    assert [r.offset for r in one.records] == [0]
    with pytest.raises(OffsetOutOfRangeError):
        log.read(11)


def test_follower_appends_fetched_batches_with_their_offsets_and_epochs():
    leader, _ = open_log()
    fill(leader, 5, epoch=1)
    fill(leader, 5, epoch=4, start=5)
    follower, _ = open_log(path="/data/p-1")
    offset = 0
    while offset < leader.log_end_offset:
        fetched = leader.read(offset, max_bytes=200)
        follower.append_as_follower(fetched.data)
        offset = follower.log_end_offset
    assert [(r.offset, r.value) for r in follower.read(0, 10**6).records] == [
        (r.offset, r.value) for r in leader.read(0, 10**6).records
    ]
    assert follower.leader_epoch_cache.entries == leader.leader_epoch_cache.entries == [(1, 0), (4, 5)]
    with pytest.raises(UnexpectedAppendOffsetError):
        follower.append_as_follower(leader.read(3).data)


def test_follower_rejects_a_corrupt_batch_and_appends_nothing():
    leader, _ = open_log()
    fill(leader, 3)
    data = bytearray(leader.read(0, 10**6).data)
    data[-3] ^= 0xFF
    follower, _ = open_log(path="/data/p-1")
    with pytest.raises(CorruptRecordError, match="CRC"):
        follower.append_as_follower(bytes(data))
    assert follower.log_end_offset == 0


def test_end_offset_for_epoch_follows_kip_279():
    log, _ = open_log()
    assert log.end_offset_for_epoch(0) == (-1, 0)
    fill(log, 3, epoch=1)
    fill(log, 4, epoch=3, start=3)
    cache = log.leader_epoch_cache
    assert log.end_offset_for_epoch(0) == (-1, 0)
    assert log.end_offset_for_epoch(1) == (1, 3)
    assert log.end_offset_for_epoch(2) == (1, 3)
    assert log.end_offset_for_epoch(3) == (3, 7)
    assert log.end_offset_for_epoch(9) == (3, 7)
    assert cache.end_offset_for_v0(1, 7) == 3 and cache.end_offset_for_v0(0, 7) == -1
    assert cache.end_offset_for_v0(3, 7) == 7 and cache.end_offset_for_v0(9, 7) == -1


def test_truncate_removes_the_suffix_and_its_epochs_durably():
    log, fs = open_log()
    fill(log, 6, epoch=1)
    fill(log, 6, epoch=2, start=6)
    log.high_watermark = 10
    log.flush()
    assert log.truncate_to(4)
    assert log.log_end_offset == 4 and log.high_watermark == 4
    assert log.leader_epoch_cache.entries == [(1, 0)]
    assert not log.truncate_to(9)
    fs.power_loss()  # truncation is durable: nothing comes back
    log, _ = open_log(fs)
    assert log.log_end_offset == 4 and log.leader_epoch_cache.entries == [(1, 0)]
    assert log.high_watermark == 4


def test_truncate_fully_and_start_at():
    log, fs = open_log()
    fill(log, 8, epoch=2)
    log.truncate_fully_and_start_at(50)
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (50, 50, 50)
    assert log.leader_epoch_cache.entries == []
    fill(log, 2, epoch=3)
    assert [r.offset for r in log.read(50).records] == [50, 51]
    with pytest.raises(OffsetOutOfRangeError):
        log.read(10)
    log.close()
    log, _ = open_log(fs)
    assert (log.log_start_offset, log.log_end_offset) == (50, 52)


def test_high_watermark_checkpoint_survives_clean_restart_and_is_clamped():
    log, fs = open_log()
    fill(log, 5)
    log.high_watermark = 3
    assert log.high_watermark == 3
    log.high_watermark = 99  # clamped to the LEO like updateHighWatermark
    assert log.high_watermark == 5
    log.high_watermark = 3
    log.close()
    log, _ = open_log(fs)
    assert log.high_watermark == 3 and log.recovery_report.clean_shutdown


def test_config_and_record_validation():
    with pytest.raises(InvalidConfigError, match="segment_bytes"):
        LogConfig(segment_bytes=0)
    with pytest.raises(InvalidConfigError, match="cleanup_policy"):
        LogConfig(cleanup_policy="shred")
    with pytest.raises(InvalidConfigError, match="compression_type"):
        LogConfig(compression_type="lz5")
    log, _ = open_log(config=LogConfig(max_message_bytes=200))
    with pytest.raises(RecordTooLargeError):
        log.append_as_leader([Record(b"k", b"x" * 500)], 0)
    with pytest.raises(InvalidRecordError):
        log.append_as_leader([Record(b"k", "not bytes")], 0)
    compacted, _ = open_log(config=LogConfig(cleanup_policy="compact"), path="/c")
    with pytest.raises(InvalidRecordError, match="key"):
        compacted.append_as_leader([Record(None, b"v")], 0)
    assert log.log_end_offset == 0 and compacted.log_end_offset == 0


def test_segments_roll_on_size_and_on_segment_ms_and_lookups_cross_them():
    clock = Clock()
    log, _ = open_log(config=LogConfig(segment_bytes=10**6, segment_ms=100), clock=clock)
    for i in range(6):
        clock.now = 1_000 + i * 60  # a new segment once records span more than 100 ms
        log.append_as_leader([Record(b"k", b"v%d" % i)], 0)
    assert [s.base_offset for s in log.segments] == [0, 2, 4]
    assert [r.offset for r in log.read(1, 10**6).records] == [1, 2, 3, 4, 5]
    names = [n for n in log.fs.listdir(log.dir) if n.endswith(".log")]
    assert names == ["00000000000000000000.log", "00000000000000000002.log", "00000000000000000004.log"]


def test_relative_offsets_that_would_overflow_force_a_roll():
    follower, _ = open_log(path="/data/p-1", config=LogConfig(segment_bytes=10**6))
    from isrcheck.impl.storage import build_batch

    follower.append_as_follower(build_batch(0, [Record(b"k", b"a")], 0, now_ms=0).buffer)
    far = 2**31 + 10  # a gap left by compaction on the leader
    follower.append_as_follower(build_batch(far, [Record(b"k", b"b")], 0, now_ms=0).buffer)
    assert [s.base_offset for s in follower.segments] == [0, far]
    assert [r.offset for r in follower.read(0, 10**6).records] == [0, far]
    assert follower.read(5).records[0].offset == far  # offsets in the gap read the next record


def test_offset_for_timestamp_uses_the_time_index():
    clock = Clock()
    log, _ = open_log(config=LogConfig(segment_bytes=500, index_interval_bytes=50), clock=clock)
    for i in range(40):
        clock.now = 10 * i
        log.append_as_leader([Record(b"k", b"v")], 0)
    assert log.offset_for_timestamp(0) == 0
    assert log.offset_for_timestamp(155) == 16
    assert log.offset_for_timestamp(390) == 39
    assert log.offset_for_timestamp(391) is None


def test_log_is_a_context_manager_that_shuts_down_cleanly():
    fs = SimulatedFileSystem()
    with Log.open("/data/p-0", SMALL, fs=fs, clock=Clock()) as log:
        fill(log, 3)
    fs.power_loss()  # close() flushed everything
    reopened = Log.open("/data/p-0", SMALL, fs=fs, clock=Clock())
    assert reopened.recovery_report.clean_shutdown and reopened.log_end_offset == 3


def test_an_empty_segment_far_below_the_first_batch_is_replaced():
    follower, fs = open_log(path="/data/p-1", config=LogConfig(segment_bytes=10**6, index_interval_bytes=0))
    from isrcheck.impl.storage import build_batch

    far = 2**31 + 100
    for i in range(3):
        follower.append_as_follower(build_batch(far + i, [Record(b"k", b"%d" % i)], 0, now_ms=0).buffer)
    assert [s.base_offset for s in follower.segments] == [far]
    assert follower.log_start_offset == far and follower.log_end_offset == far + 3
    follower.close()
    reopened, _ = open_log(fs, path="/data/p-1", config=LogConfig(segment_bytes=10**6, index_interval_bytes=0))
    assert [r.offset for r in reopened.read(far).records] == [far, far + 1, far + 2]
