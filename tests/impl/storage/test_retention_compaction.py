"""Retention deletes whole old segments below the HW; compaction keeps the latest record per key
at its original offset, drops tombstones once delete.retention.ms has passed, survives crashes."""

import random

import pytest

from isrcheck.impl.storage import Log, LogConfig, Record, SimulatedFileSystem

DIR = "/logs/c-0"


class Clock:
    def __init__(self):
        self.now = 0

    def __call__(self):
        return self.now


def test_retention_by_time_deletes_old_segments_below_the_hw_only():
    fs, clock = SimulatedFileSystem(), Clock()
    log = Log.open(DIR, LogConfig(segment_bytes=300, retention_ms=1000), fs=fs, clock=clock)
    for i in range(20):
        clock.now = i * 100
        log.append_as_leader([Record(b"k", b"v%d" % i)], 0)
    bases = [s.base_offset for s in log.segments]
    assert len(bases) >= 4
    clock.now = 5000
    assert log.delete_old_segments() == 0  # HW is 0: nothing is committed yet
    log.high_watermark = bases[2]
    assert log.delete_old_segments() == 2
    assert log.log_start_offset == bases[2] and log.read(bases[2]).records[0].offset == bases[2]
    log.high_watermark = log.log_end_offset
    log.delete_old_segments()
    assert len(log.segments) == 1  # never the active segment
    fs.power_loss()  # deletions are durable
    log = Log.open(DIR, LogConfig(segment_bytes=300, retention_ms=1000), fs=fs, clock=clock)
    assert log.log_start_offset == log.segments[0].base_offset > 0


def test_retention_by_size_keeps_the_log_under_retention_bytes():
    fs = SimulatedFileSystem()
    log = Log.open(DIR, LogConfig(segment_bytes=400, retention_bytes=1000, retention_ms=None), fs=fs)
    for i in range(60):
        log.append_as_leader([Record(b"k", b"x" * 20)], 0)
    log.high_watermark = log.log_end_offset
    total = log.size_in_bytes
    deleted = log.delete_old_segments()
    assert deleted > 0 and log.size_in_bytes <= 1000 + log.segments[0].size
    assert log.size_in_bytes < total and log.log_start_offset == log.segments[0].base_offset
    assert log.leader_epoch_cache.entries[0].start_offset == log.log_start_offset


def compacted_log(fs, clock):
    return Log.open(
        DIR, LogConfig(segment_bytes=250, cleanup_policy="compact", delete_retention_ms=500), fs=fs, clock=clock
    )


def committed_log(fs, clock, records, keys):
    """A compacted log of ``records`` writes cycling over ``keys`` keys, all committed and flushed."""
    log = compacted_log(fs, clock)
    for i in range(records):
        log.append_as_leader([Record(b"k%d" % (i % keys), b"v%d" % i)], 0)
    log.high_watermark = log.log_end_offset
    log.flush()
    return log


def test_compaction_keeps_the_latest_value_per_key_at_its_offset():
    fs, clock = SimulatedFileSystem(), Clock()
    log = compacted_log(fs, clock)
    writes = [
        (b"a", b"1"),
        (b"b", b"1"),
        (b"a", b"2"),
        (b"c", b"1"),
        (b"b", None),
        (b"a", b"3"),
        (b"c", b"2"),
        (b"d", b"1"),
        (b"a", b"4"),
        (b"e", b"1"),
        (b"e", b"2"),
        (b"f", b"1"),
    ]
    for key, value in writes:
        log.append_as_leader([Record(key, value)], 0)
    log.high_watermark = log.log_end_offset
    closed_end = log.segments[-1].base_offset
    removed = log.compact()
    assert removed > 0
    got = [(r.offset, r.key, r.value) for r in log.read(0, 10**9).records]
    latest = {}
    for offset, (key, value) in enumerate(writes[:closed_end]):
        latest[key] = (offset, key, value)
    expected = sorted(latest.values()) + [(o, k, v) for o, (k, v) in enumerate(writes) if o >= closed_end]
    assert got == expected
    assert (4, b"b", None) in got  # the tombstone is young: kept
    gap = next(o for o in range(closed_end) if o not in {g[0] for g in got})
    assert log.read(gap).records[0].offset > gap  # reading from a removed offset skips ahead
    clock.now = 1000
    log.compact()  # now past delete.retention.ms: tombstone gone
    assert all(k != b"b" for _, k, _ in [(r.offset, r.key, r.value) for r in log.read(0, 10**9).records])
    assert log.log_end_offset == len(writes)


def test_compaction_survives_a_crash_between_its_steps():
    fs, clock = SimulatedFileSystem(), Clock()
    log = committed_log(fs, clock, 30, 3)
    before = [(r.offset, r.value) for r in log.read(0, 10**9).records]
    first = log.segments[0]
    # a rewrite that got as far as the .swap file: open must finish it
    from isrcheck.impl.storage.cleaner import _clean_segment, _offset_map

    batches = _clean_segment(first, _offset_map(log.segments[:-1]), -1)
    handle = fs.open(first.log_path + ".swap")
    for batch in batches:
        handle.append(batch.buffer)
    handle.fsync()
    fs.fsync_dir(DIR)
    fs.power_loss()
    log = compacted_log(fs, clock)
    after = [(r.offset, r.value) for r in log.read(0, 10**9).records]
    assert any("swap" in e for e in log.recovery_report.events)
    assert log.recovery_report.rebuilt_indexes == (0,)  # the old indexes went with the old file
    assert set(after) < set(before)
    assert [o for o, _ in after if o >= log.segments[1].base_offset] == [
        o for o, _ in before if o >= log.segments[1].base_offset
    ]
    log.compact()
    fs.power_loss()
    log = compacted_log(fs, clock)
    final = [(r.offset, r.value) for r in log.read(0, 10**9).records]
    closed_end = log.segments[-1].base_offset
    latest = {offset % 3: (offset, value) for offset, value in before if offset < closed_end}
    assert [x for x in final if x[0] < closed_end] == sorted(latest.values())


def test_replace_segments_swaps_only_closed_segments_of_the_log_with_batches_that_fit():
    from isrcheck.impl.storage.cleaner import _clean_segment, _offset_map

    fs = SimulatedFileSystem()
    log = committed_log(fs, Clock(), 30, 3)
    first, second, active = log.segments[0], log.segments[1], log.segments[-1]
    batches = _clean_segment(first, _offset_map(log.segments[:-1]), -1)
    with pytest.raises(ValueError):
        log.replace_segments([batches], [active])  # never the active segment
    with pytest.raises(ValueError):
        log.replace_segments([[b for _, b in second.iter_batches()]], [first])  # past its offsets
    with pytest.raises(ValueError):
        log.replace_segments([batches, batches], [first])
    assert log.segments[0] is first and not any(n.endswith((".cleaned", ".swap")) for n in fs.listdir(DIR))
    (new,) = log.replace_segments([batches], [first])
    assert log.segments[0] is new and new.base_offset == first.base_offset and new.size < first.size
    assert [r.offset for r in log.read(0, new.size).records] == [r.offset for b in batches for r in b.records()]
    with pytest.raises(ValueError):
        log.replace_segments([batches], [first])  # no longer part of the log


class _Crash(Exception):
    pass


class CrashingFileSystem(SimulatedFileSystem):
    """Dies at the ``budget``-th directory operation (open, remove, rename, fsync_dir) once armed."""

    def __init__(self):
        super().__init__()
        self.budget = None

    def _tick(self):
        if self.budget is not None:
            if self.budget == 0:
                raise _Crash()
            self.budget -= 1

    def open(self, path, create=True):
        self._tick()
        return super().open(path, create)

    def remove(self, path):
        self._tick()
        super().remove(path)

    def rename(self, source, target):
        self._tick()
        super().rename(source, target)

    def fsync_dir(self, directory):
        self._tick()
        super().fsync_dir(directory)


def test_a_power_loss_at_any_step_of_compaction_leaves_each_segment_old_or_new():
    def build():
        fs, clock = CrashingFileSystem(), Clock()
        return fs, clock, committed_log(fs, clock, 40, 4)

    def by_segment(log, bases):
        got = [(r.offset, r.value) for r in log.read(0, 10**9).records]
        return [[x for x in got if lo <= x[0] < hi] for lo, hi in zip(bases, bases[1:] + [10**9])]

    fs, clock, log = build()
    bases = [s.base_offset for s in log.segments]
    old = by_segment(log, bases)
    log.compact()
    new = by_segment(log, bases)
    assert old != new
    for step in range(200):
        fs, clock, log = build()
        fs.budget = step
        try:
            log.compact()
            crashed = False
        except _Crash:
            crashed = True
        fs.budget = None
        fs.power_loss(random.Random(step))
        log = compacted_log(fs, clock)
        got = by_segment(log, bases)
        assert all(g in (o, n) for g, o, n in zip(got, old, new)), (step, log.recovery_report)
        log.compact()  # and a later compaction finishes the job
        assert by_segment(log, bases) == new, step
        if not crashed:
            break
    else:
        raise AssertionError("compaction never finished")
    assert step > 10, step
