"""Log against a plain in-memory reference (a list of batches), on the simulated file system.

Every step compares the whole log — offsets, epochs, keys, values, timestamps, the leader epoch
cache, LEO, HW, log start offset — with the reference. After a power loss the recovered log must be
a prefix of the reference that keeps at least everything flushed: never less, never garbage."""

from __future__ import annotations

import random
import shutil
import tempfile
from dataclasses import dataclass, field

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from isrcheck.impl.storage import Log, LogConfig, OsFileSystem, Record, SimulatedFileSystem, build_batch

DIR = "/kafka-logs/topic-0"
KEYS = [b"a", b"b", b"c", b"d"]


@dataclass
class RefBatch:
    base: int
    last: int
    epoch: int
    max_ts: int
    records: list = field(default_factory=list)  # (offset, timestamp, key, value)


class Reference:
    """What the log must contain, kept as the simplest possible structure."""

    def __init__(self):
        self.batches: list[RefBatch] = []
        self.log_start = self.leo = self.hw = self.hw_checkpoint = self.durable = 0
        self.epochs: list[tuple[int, int]] = []

    def assign(self, epoch, offset):
        if self.epochs and self.epochs[-1][0] == epoch and self.epochs[-1][1] <= offset:
            return
        self.epochs = [e for e in self.epochs if e[0] < epoch and e[1] < offset] + [(epoch, offset)]

    def append(self, batch: RefBatch):
        if batch.epoch != (self.epochs[-1][0] if self.epochs else -1):
            self.assign(batch.epoch, batch.base)
        self.batches.append(batch)
        self.leo = batch.last + 1

    def truncate(self, offset, active_base=0):
        """``active_base``: base offset of the segment left active, the LEO's floor (Kafka's truncateTo
        keeps the segment holding ``offset`` even if the offsets before it are a gap)."""
        self.batches = [b for b in self.batches if b.last < offset]
        self.leo = max(self.batches[-1].last + 1 if self.batches else self.log_start, active_base)
        self.hw = min(self.hw, self.leo)
        self.durable = min(self.durable, self.leo)
        self.epochs = [e for e in self.epochs if e[1] < self.leo]

    def start_at(self, offset):
        self.batches, self.epochs = [], []
        self.log_start = self.leo = self.hw = self.durable = offset

    def delete_before(self, start):
        self.batches = [b for b in self.batches if b.base >= start]
        self.log_start = start
        self.hw = max(self.hw, start)
        below = [e for e in self.epochs if e[1] <= start]
        if below and not (len(below) == 1 and below[0][1] == start):
            self.epochs = [(below[-1][0], start)] + self.epochs[len(below) :]
        self.epochs = [e for e in self.epochs if e[1] < self.leo]


class LogMachine(RuleBasedStateMachine):
    @initialize(
        segment_bytes=st.sampled_from([300, 700, 1 << 20]),
        index_interval=st.sampled_from([0, 90, 4096]),
        compression=st.sampled_from(["none", "gzip"]),
        compact=st.booleans(),
        retention_ms=st.sampled_from([None, 30]),
        retention_bytes=st.sampled_from([None, 600]),
    )
    def setup(self, segment_bytes, index_interval, compression, compact, retention_ms, retention_bytes):
        self.config = LogConfig(
            segment_bytes=segment_bytes,
            index_interval_bytes=index_interval,
            compression_type=compression,
            retention_ms=retention_ms,
            retention_bytes=retention_bytes,
            delete_retention_ms=20,
            cleanup_policy="compact,delete" if compact else "delete",
            segment_ms=None,
        )
        self.now = 0
        self.fs = self._new_fs()
        self.ref = Reference()
        self.epoch = 0
        self.log = self._open()

    def _open(self):
        return Log.open(self.dir, self.config, fs=self.fs, clock=lambda: self.now)

    def _new_fs(self):
        self.dir = DIR
        return SimulatedFileSystem()

    def _crash_process(self):
        self.fs.process_crash()

    def _records(self, data, n):
        keys = [data.draw(st.sampled_from(KEYS if self.config.compact else KEYS + [None])) for _ in range(n)]
        return [
            Record(k, None if data.draw(st.integers(0, 9)) == 0 else bytes([65 + i]) * data.draw(st.integers(0, 40)))
            for i, k in enumerate(keys)
        ]

    # ------------------------------------------------------------------------------- appends

    @rule(data=st.data(), n=st.integers(1, 3), bump=st.booleans())
    def append_as_leader(self, data, n, bump):
        self.epoch += bump
        records = self._records(data, n)
        info = self.log.append_as_leader(records, self.epoch)
        base = self.ref.leo
        assert (info.first_offset, info.last_offset) == (base, base + n - 1)
        self.ref.append(
            RefBatch(
                base,
                base + n - 1,
                self.epoch,
                self.now,
                [(base + i, self.now, r.key, r.value) for i, r in enumerate(records)],
            )
        )

    @rule(
        data=st.data(),
        sizes=st.lists(st.integers(1, 3), min_size=1, max_size=3),
        bump=st.booleans(),
        gap=st.sampled_from([0, 0, 0, 4]),
    )
    def append_as_follower(self, data, sizes, bump, gap):
        """Offsets as the leader sent them; a gap is what a compacted leader's log can leave."""
        self.epoch += bump
        payload, base = b"", self.ref.leo + gap
        pending = []
        for n in sizes:
            records = self._records(data, n)
            ts = max(0, self.now - data.draw(st.integers(0, 5)))
            records = [Record(r.key, r.value, timestamp_ms=ts) for r in records]
            payload += build_batch(base, records, self.epoch, self.now, self.config.compression_type).buffer
            pending.append(
                RefBatch(
                    base, base + n - 1, self.epoch, ts, [(base + i, ts, r.key, r.value) for i, r in enumerate(records)]
                )
            )
            base += n
        self.log.append_as_follower(payload)
        for batch in pending:
            self.ref.append(batch)

    # ------------------------------------------------------------------------ reads, HW, time

    @rule(data=st.data(), max_bytes=st.sampled_from([1, 150, 10**9]), bounded=st.booleans())
    def read(self, data, max_bytes, bounded):
        offset = data.draw(st.integers(self.ref.log_start, self.ref.leo))
        max_offset = self.ref.hw if bounded else None
        got = self.log.read(offset, max_bytes, max_offset)
        expected = [b for b in self.ref.batches if b.last >= offset and (max_offset is None or b.last < max_offset)]
        batches = [(b.base_offset, b.last_offset, b.partition_leader_epoch) for b in got.batches]
        assert batches == [(b.base, b.last, b.epoch) for b in expected][: len(batches)]
        if expected and (max_offset is None or offset < max_offset):
            assert batches, "a read with data available returned nothing"
        if max_bytes == 10**9:
            assert len(batches) == len(expected)
        records = [(r.offset, r.timestamp_ms, r.key, r.value) for r in got.records]
        assert records == [r for b in expected[: len(batches)] for r in b.records if r[0] >= offset]

    @rule(data=st.data())
    def set_high_watermark(self, data):
        hw = data.draw(st.one_of(st.just(self.ref.leo), st.integers(self.ref.log_start, self.ref.leo)))
        self.log.high_watermark = hw
        self.ref.hw = hw

    @rule(ms=st.integers(1, 25))
    def advance_clock(self, ms):
        self.now += ms

    @rule()
    def roll(self):
        self.log.roll()

    # ---------------------------------------------------------------------------- truncation

    @rule(data=st.data())
    def truncate_to(self, data):
        offset = data.draw(st.integers(self.ref.log_start, self.ref.leo))
        active_base = max(b for b in self._segment_ranges()[0] if b <= offset)
        self.log.truncate_to(offset)
        if offset < self.ref.leo:
            self.ref.truncate(offset, active_base)

    @rule(gap=st.integers(0, 5))
    def truncate_fully_and_start_at(self, gap):
        offset = self.ref.leo + gap
        self.log.truncate_fully_and_start_at(offset)
        self.ref.start_at(offset)

    # ------------------------------------------------------------------ retention, compaction

    def _segment_ranges(self):
        bases = [s.base_offset for s in self.log.segments]
        return bases, [(lo, hi) for lo, hi in zip(bases, bases[1:] + [None])]

    @rule()
    def delete_old_segments(self):
        segments = self.log.segments
        bases, ranges = self._segment_ranges()
        cfg, excess = self.config, None
        if cfg.retention_bytes is not None:
            excess = sum(s.size for s in segments) - cfg.retention_bytes
        expected = 0
        for i, (lo, hi) in enumerate(ranges[:-1]):
            in_segment = [b for b in self.ref.batches if lo <= b.base < hi]
            max_ts = max((b.max_ts for b in in_segment), default=-1)
            assert segments[i].max_timestamp == max_ts
            if hi > self.ref.hw:
                break
            if not (
                (cfg.retention_ms is not None and self.now - max_ts > cfg.retention_ms)
                or (excess is not None and excess - segments[i].size >= 0)
            ):
                break
            if excess is not None:
                excess -= segments[i].size
            expected += 1
        assert self.log.delete_old_segments() == expected
        if expected:
            self.ref.delete_before(bases[expected])

    @rule()
    def compact(self):
        bases, ranges = self._segment_ranges()
        count = 0
        while count < len(bases) - 1 and bases[count + 1] <= self.ref.hw:
            count += 1
        self.log.compact()
        if not self.config.compact or not count:
            return
        limit = bases[count]
        latest = {r[2]: r[0] for b in self.ref.batches if b.last < limit for r in b.records if r[2] is not None}
        horizon = self.now - self.config.delete_retention_ms
        kept_batches = []
        for lo, hi in ranges[:count]:
            in_segment = [b for b in self.ref.batches if lo <= b.base < hi]
            for j, b in enumerate(in_segment):
                kept = [
                    r
                    for r in b.records
                    if r[2] is None or (latest[r[2]] == r[0] and (r[3] is not None or r[1] >= horizon))
                ]
                if len(kept) < len(b.records):
                    if not kept and j < len(in_segment) - 1:
                        continue
                    b = RefBatch(b.base, b.last, b.epoch, b.max_ts, kept)
                kept_batches.append(b)
        self.ref.batches = kept_batches + [b for b in self.ref.batches if b.base >= limit]

    # ------------------------------------------------------------------------- flush, crashes

    @rule()
    def flush(self):
        self.log.flush()
        self.ref.durable = self.ref.leo
        self.ref.hw_checkpoint = self.ref.hw

    @rule()
    def clean_restart(self):
        self.log.close()
        self.log = self._open()
        self.ref.durable, self.ref.hw_checkpoint = self.ref.leo, self.ref.hw
        assert self.log.recovery_report.clean_shutdown and not self.log.recovery_report.truncated

    @rule()
    def process_crash(self):
        self._crash_process()
        self.log = self._open()
        assert self.log.log_end_offset == self.ref.leo, "a process crash lost data"
        self._after_restart()

    @precondition(lambda self: isinstance(self.fs, SimulatedFileSystem))
    @rule(torn=st.booleans(), seed=st.integers(0, 2**16))
    def power_loss(self, torn, seed):
        self.fs.power_loss(random.Random(seed) if torn else None)
        self.log = self._open()
        leo = self.log.log_end_offset
        assert self.ref.durable <= leo <= self.ref.leo, (
            f"recovered LEO {leo} outside [flushed {self.ref.durable}, appended {self.ref.leo}]"
        )
        self.ref.truncate(leo, active_base=self.log.segments[-1].base_offset)
        self.ref.durable = leo
        self._after_restart()

    def _after_restart(self):
        self.ref.hw = min(max(self.ref.hw_checkpoint, self.ref.log_start), self.ref.leo)

    # ----------------------------------------------------------------------------- invariant

    @invariant()
    def matches_reference(self):
        if not hasattr(self, "log"):
            return
        log, ref = self.log, self.ref
        assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (ref.log_start, ref.leo, ref.hw)
        got = log.read(log.log_start_offset, 10**9)
        assert [(b.base_offset, b.last_offset, b.partition_leader_epoch) for b in got.batches] == [
            (b.base, b.last, b.epoch) for b in ref.batches
        ]
        assert [(r.offset, r.timestamp_ms, r.key, r.value) for r in got.records] == [
            r for b in ref.batches for r in b.records
        ]
        assert [tuple(e) for e in log.leader_epoch_cache.entries] == ref.epochs


class OsLogMachine(LogMachine):
    """The same machine on real files in a temporary directory; no power loss on a real disk, and a
    process crash abandons the log object with its file descriptors closed but nothing flushed."""

    def _new_fs(self):
        self.tmp = tempfile.mkdtemp(prefix="isrcheck-log-")
        self.dir = self.tmp + "/topic-0"
        return OsFileSystem()

    def _crash_process(self):
        for segment in self.log.segments:
            segment.close()

    def teardown(self):
        if hasattr(self, "tmp"):
            shutil.rmtree(self.tmp, ignore_errors=True)


TestLogOnOsFilesAgainstReference = OsLogMachine.TestCase
TestLogOnOsFilesAgainstReference.settings = settings(
    max_examples=40, stateful_step_count=30, deadline=None, derandomize=True
)

TestLogAgainstReference = LogMachine.TestCase
TestLogAgainstReference.settings = settings(max_examples=300, stateful_step_count=50, deadline=None, derandomize=True)


class LongLogMachine(LogMachine):
    """The same machine, many more and longer runs (``pytest -m slow``)."""


TestLogAgainstReferenceLong = pytest.mark.slow(LongLogMachine.TestCase)
TestLogAgainstReferenceLong.settings = settings(
    max_examples=3000, stateful_step_count=80, deadline=None, derandomize=True
)
