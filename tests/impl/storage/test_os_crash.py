"""The log on real files: a process crash loses nothing, a torn tail is cut back to the last whole
batch, missing or broken indexes are rebuilt, bit rot is detected."""

import os
import subprocess
import sys
import textwrap

import pytest

from isrcheck.impl.storage import CorruptRecordError, Log, LogConfig, Record

CONFIG = LogConfig(segment_bytes=2000, index_interval_bytes=200)


def values(log):
    return [(r.offset, r.value) for r in log.read(log.log_start_offset, 10**9).records]


def test_process_crash_loses_nothing_appended(tmp_path):
    script = textwrap.dedent(f"""
        import os
        from isrcheck.impl.storage import Log, LogConfig, Record
        log = Log.open({str(tmp_path)!r}, LogConfig(segment_bytes=2000, index_interval_bytes=200))
        for i in range(60):
            log.append_as_leader([Record(b"k", b"value-%d" % i)], leader_epoch=i // 20)
        log.high_watermark = 40
        log.flush()
        for i in range(60, 100):                      # appended, never flushed
            log.append_as_leader([Record(b"k", b"value-%d" % i)], leader_epoch=7)
        os._exit(0)                                   # no close, no flush, no atexit
    """)
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
    log = Log.open(str(tmp_path), CONFIG)
    report = log.recovery_report
    assert not report.clean_shutdown and not report.truncated
    assert 60 <= report.recovery_point < 100  # a roll also flushes; the tail was never fsynced
    assert values(log) == [(i, b"value-%d" % i) for i in range(100)]
    assert log.high_watermark == 40
    assert [tuple(e) for e in log.leader_epoch_cache.entries] == [(0, 0), (1, 20), (2, 40), (7, 60)]


def _active_log_file(tmp_path):
    return max(p for p in tmp_path.iterdir() if p.suffix == ".log")


def test_torn_tail_is_truncated_and_only_the_torn_batch_is_lost(tmp_path):
    log = Log.open(str(tmp_path), CONFIG)
    for i in range(30):
        log.append_as_leader([Record(b"k", b"v%d" % i)], leader_epoch=0)
    log.flush()
    for i in range(30, 40):
        log.append_as_leader([Record(b"k", b"v%d" % i)], leader_epoch=1)
    del log  # crash: the object is dropped without close
    segment = _active_log_file(tmp_path)
    size = segment.stat().st_size
    os.truncate(segment, size - 7)  # the last write reached the disk only in part
    log = Log.open(str(tmp_path), CONFIG)
    report = log.recovery_report
    assert report.truncated and report.truncated_bytes == size - 7 - segment.stat().st_size
    assert any("torn" in e for e in report.events)
    assert values(log) == [(i, b"v%d" % i) for i in range(39)]
    assert log.log_end_offset == 39


def test_garbage_after_the_last_batch_is_truncated(tmp_path):
    log = Log.open(str(tmp_path), CONFIG)
    for i in range(5):
        log.append_as_leader([Record(b"k", b"v%d" % i)], leader_epoch=0)
    del log
    with open(_active_log_file(tmp_path), "ab") as f:
        f.write(os.urandom(3) + b"\x00" * 90)  # a torn write of a batch that never completed
    log = Log.open(str(tmp_path), CONFIG)
    assert log.recovery_report.truncated_bytes == 93
    assert values(log) == [(i, b"v%d" % i) for i in range(5)]


@pytest.mark.parametrize("damage", ["delete", "garbage", "stale"])
def test_missing_or_broken_index_is_rebuilt(tmp_path, damage):
    log = Log.open(str(tmp_path), CONFIG)
    for i in range(200):
        log.append_as_leader([Record(b"key-%d" % i, b"x" * 50)], leader_epoch=0)
    first = log.segments[0]
    original = first.offset_index.entries()
    assert len(log.segments) > 2 and original
    log.close()
    index = tmp_path / "00000000000000000000.index"
    if damage == "delete":
        index.unlink()
    elif damage == "garbage":
        index.write_bytes(b"\x01\x02\x03")
    else:  # entries that point at the wrong batches
        index.write_bytes(bytes(reversed(index.read_bytes())))
    log = Log.open(str(tmp_path), CONFIG)
    assert log.recovery_report.rebuilt_indexes == (0,)
    assert log.segments[0].offset_index.entries() == original
    for offset in range(0, 200, 7):
        assert log.read(offset, 1).records[0].offset == offset
    log.close()
    assert index.stat().st_size == 8 * len(original)


def test_bit_rot_in_a_flushed_segment_is_detected_on_read(tmp_path):
    log = Log.open(str(tmp_path), CONFIG)
    for i in range(10):
        log.append_as_leader([Record(b"k", b"value-%d" % i)], leader_epoch=0)
    log.close()
    segment = tmp_path / "00000000000000000000.log"
    data = bytearray(segment.read_bytes())
    data[-2] ^= 0x40  # one flipped bit in the last record's value
    segment.write_bytes(bytes(data))
    log = Log.open(str(tmp_path), CONFIG)  # clean shutdown: segments are trusted
    with pytest.raises(CorruptRecordError, match="CRC"):
        log.read(9).records
    assert [r.value for r in log.read(0, max_offset=9).records] == [b"value-%d" % i for i in range(9)]


def test_every_truncation_recovery_makes_is_logged_as_kafka_does(tmp_path, caplog):
    """Kafka warns "Found invalid messages in log segment ..." for each truncation: nothing of a
    log is cut away in silence."""
    import logging

    log = Log.open(str(tmp_path), CONFIG)
    for i in range(5):
        log.append_as_leader([Record(b"k", b"v%d" % i)], leader_epoch=0)
    del log
    segment = _active_log_file(tmp_path)
    valid = segment.stat().st_size
    with open(segment, "ab") as f:
        f.write(os.urandom(3) + b"\x00" * 90)
    with caplog.at_level(logging.INFO, logger="isrcheck.impl.storage"):
        Log.open(str(tmp_path), CONFIG)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1, caplog.records
    assert warnings[0].startswith(
        f"[Log dir={tmp_path}] Found invalid messages in log segment {segment} at byte offset {valid}: "
    )
    assert warnings[0].endswith("; truncating 93 bytes, to offset 5"), warnings[0]
