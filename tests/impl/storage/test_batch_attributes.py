"""Batch attributes beyond compression: LogAppendTime (bit 3) and control batches (bits 4-5)."""

import struct

import pytest

from isrcheck.impl.storage import (
    InvalidConfigError,
    Log,
    LogConfig,
    Record,
    RecordBatch,
    SimulatedFileSystem,
    build_batch,
)
from isrcheck.impl.storage.records import CONTROL_ABORT, CONTROL_COMMIT, end_transaction_marker


def open_log(now, **config):
    return Log.open("/t-0", LogConfig(**config), fs=SimulatedFileSystem(), clock=lambda: now[0])


# ---------------------------------------------------------------------------- LogAppendTime


def test_log_append_time_stamps_the_batch_with_the_leaders_clock():
    now = [5000]
    log = open_log(now, message_timestamp_type="LogAppendTime")
    info = log.append_as_leader([Record(b"a", b"1", timestamp_ms=10), Record(b"b", b"2")], leader_epoch=0)
    assert info.max_timestamp == 5000
    (batch,) = log.read(0).batches
    assert batch.timestamp_type == "LogAppendTime" and batch.attributes & 0x08
    assert (batch.first_timestamp, batch.max_timestamp) == (10, 5000)  # the producer's first, the append time
    assert [r.timestamp_ms for r in log.read(0).records] == [5000, 5000]


def test_create_time_keeps_the_producers_timestamps():
    now = [5000]
    log = open_log(now)
    info = log.append_as_leader([Record(b"a", b"1", timestamp_ms=10), Record(b"b", b"2", timestamp_ms=20)], 0)
    assert info.max_timestamp == 20 and log.read(0).batches[0].timestamp_type == "CreateTime"
    assert [r.timestamp_ms for r in log.read(0).records] == [10, 20]


def test_log_append_time_drives_time_lookups_and_retention():
    now = [1000]
    log = open_log(now, message_timestamp_type="LogAppendTime", segment_bytes=200, retention_ms=500)
    for i in range(6):
        now[0] = 1000 + 100 * i
        log.append_as_leader([Record(b"k", b"v" * 40, timestamp_ms=1)], leader_epoch=0)  # stale producer time
    assert log.offset_for_timestamp(1250) == 3
    log.high_watermark = log.log_end_offset
    now[0] = 1900
    assert log.delete_old_segments() > 0 and log.log_start_offset > 0


def test_followers_keep_the_leaders_append_time():
    now = [7000]
    leader = open_log(now, message_timestamp_type="LogAppendTime")
    leader.append_as_leader([Record(b"k", b"v", timestamp_ms=3)], leader_epoch=1)
    now[0] = 9000
    follower = open_log(now)  # a follower's own config does not restamp
    follower.append_as_follower(leader.read(0).data)
    assert [r.timestamp_ms for r in follower.read(0).records] == [7000]


def test_timestamp_types_are_validated():
    with pytest.raises(InvalidConfigError, match="message_timestamp_type"):
        LogConfig(message_timestamp_type="AppendTime")
    with pytest.raises(Exception, match="timestamp type"):
        build_batch(0, [Record(b"k", b"v")], 0, now_ms=0, timestamp_type="Now")


def test_kafka_python_reads_log_append_time():
    kafka_records = pytest.importorskip("kafka.record.default_records")
    ours = build_batch(0, [Record(b"k", b"v", timestamp_ms=1)] * 3, 0, now_ms=777, timestamp_type="LogAppendTime")
    theirs = kafka_records.DefaultRecordBatch(bytearray(ours.buffer))
    assert theirs.timestamp_type == 1 and [r.timestamp for r in theirs] == [777] * 3


# ---------------------------------------------------------------------------- control batches


def test_an_end_transaction_marker_is_a_transactional_control_batch():
    marker = end_transaction_marker(
        10, partition_leader_epoch=2, now_ms=99, producer_id=7, producer_epoch=1, commit=True, coordinator_epoch=4
    )
    marker.ensure_valid()
    assert marker.is_control_batch and marker.is_transactional and marker.attributes & 0x30 == 0x30
    (record,) = marker.records()
    assert record.key == bytes([0, 0, 0, CONTROL_COMMIT]) and record.value == bytes([0, 0, 0, 0, 0, 4])
    abort = end_transaction_marker(0, 0, 0, 7, 1, commit=False)
    assert abort.records()[0].key[-1] == CONTROL_ABORT
    plain = build_batch(0, [Record(b"k", b"v")], 0, now_ms=0)
    assert not plain.is_control_batch and not plain.is_transactional


def log_with_marker():
    now = [0]
    log = open_log(now, cleanup_policy="compact", segment_bytes=300)
    data = b"".join(
        [
            build_batch(0, [Record(b"a", b"1"), Record(b"b", b"2")], 0, now_ms=0).buffer,
            end_transaction_marker(2, 0, 0, producer_id=7, producer_epoch=1, commit=True).buffer,
            build_batch(3, [Record(b"a", b"3")], 0, now_ms=0).buffer,
        ]
    )
    log.append_as_follower(data)
    return log


def test_control_batches_are_replicated_but_never_read_as_records():
    log = log_with_marker()
    assert log.log_end_offset == 4
    fetched = log.read(0)
    assert [b.is_control_batch for b in fetched.batches] == [False, True, False]
    assert [(r.offset, r.key, r.value) for r in fetched.records] == [(0, b"a", b"1"), (1, b"b", b"2"), (3, b"a", b"3")]
    assert log.read(2).records[0].offset == 3


def test_compaction_keeps_markers_and_ignores_their_keys():
    log = log_with_marker()
    for i in range(8):  # roll the marker's segment out of the active one
        log.append_as_leader([Record(b"c", b"%d" % i)], leader_epoch=0)
    log.high_watermark = log.log_end_offset
    log.compact()
    batches = log.read(0, 1 << 20).batches
    assert sum(b.is_control_batch for b in batches) == 1
    assert [(r.offset, r.key) for r in log.read(0, 1 << 20).records][:2] == [(1, b"b"), (3, b"a")]


def test_kafka_python_sees_our_marker_as_a_control_record():
    kafka_records = pytest.importorskip("kafka.record.default_records")
    marker = end_transaction_marker(0, 0, 0, producer_id=7, producer_epoch=1, commit=False)
    theirs = kafka_records.DefaultRecordBatch(bytearray(marker.buffer))
    assert theirs.is_control_batch and theirs.is_transactional and theirs.validate_crc()
    (record,) = list(theirs)
    assert struct.unpack(">hh", record.key) == (0, CONTROL_ABORT)


def test_a_control_batch_survives_a_round_trip_through_bytes():
    marker = end_transaction_marker(3, 1, 5, producer_id=9, producer_epoch=2, commit=True)
    again = RecordBatch(marker.buffer)
    assert again.is_control_batch and (again.producer_id, again.producer_epoch) == (9, 2)
