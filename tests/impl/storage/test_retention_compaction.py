"""Retention deletes whole old segments below the HW; compaction keeps the latest record per key
at its original offset, drops tombstones once delete.retention.ms has passed, survives crashes."""
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
    assert log.delete_old_segments() == 0             # HW is 0: nothing is committed yet
    log.high_watermark = bases[2]
    assert log.delete_old_segments() == 2
    assert log.log_start_offset == bases[2] and log.read(bases[2]).records[0].offset == bases[2]
    log.high_watermark = log.log_end_offset
    log.delete_old_segments()
    assert len(log.segments) == 1                     # never the active segment
    fs.power_loss()                                   # deletions are durable
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
    return Log.open(DIR, LogConfig(segment_bytes=250, cleanup_policy="compact", delete_retention_ms=500),
                    fs=fs, clock=clock)


def test_compaction_keeps_the_latest_value_per_key_at_its_offset():
    fs, clock = SimulatedFileSystem(), Clock()
    log = compacted_log(fs, clock)
    writes = [(b"a", b"1"), (b"b", b"1"), (b"a", b"2"), (b"c", b"1"), (b"b", None), (b"a", b"3"),
              (b"c", b"2"), (b"d", b"1"), (b"a", b"4"), (b"e", b"1"), (b"e", b"2"), (b"f", b"1")]
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
    assert (4, b"b", None) in got                     # the tombstone is young: kept
    gap = next(o for o in range(closed_end) if o not in {g[0] for g in got})
    assert log.read(gap).records[0].offset > gap      # reading from a removed offset skips ahead
    clock.now = 1000
    log.compact()                                     # now past delete.retention.ms: tombstone gone
    assert all(k != b"b" for _, k, _ in [(r.offset, r.key, r.value) for r in log.read(0, 10**9).records])
    assert log.log_end_offset == len(writes)


def test_compaction_survives_a_crash_between_its_steps():
    fs, clock = SimulatedFileSystem(), Clock()
    log = compacted_log(fs, clock)
    for i in range(30):
        log.append_as_leader([Record(b"k%d" % (i % 3), b"v%d" % i)], 0)
    log.high_watermark = log.log_end_offset
    log.flush()
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
    assert log.recovery_report.rebuilt_indexes == (0,)     # the old indexes went with the old file
    assert set(after) < set(before)
    assert [o for o, _ in after if o >= log.segments[1].base_offset] == \
           [o for o, _ in before if o >= log.segments[1].base_offset]
    log.compact()
    fs.power_loss()
    log = compacted_log(fs, clock)
    final = [(r.offset, r.value) for r in log.read(0, 10**9).records]
    closed_end = log.segments[-1].base_offset
    latest = {offset % 3: (offset, value) for offset, value in before if offset < closed_end}
    assert [x for x in final if x[0] < closed_end] == sorted(latest.values())
