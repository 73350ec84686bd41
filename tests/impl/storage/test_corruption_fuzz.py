"""Random damage to any file of a log directory (bit flips, truncation, deletion) after a clean or
unclean shutdown: opening either repairs the log or fails with CorruptLogError naming the file, and
a read either returns records exactly as written or raises CorruptRecordError. Never a bare
exception, never a silently wrong record.

One hole is inherent to Kafka's v2 format: the CRC does not cover a batch's base offset (a leader
assigns offsets without recomputing it). A flipped bit there is caught only when it breaks the
order of offsets, leaves the segment's range or passes the LEO checkpointed at a clean shutdown;
so a flip in a base offset field is the one damage allowed to go unnoticed."""

import random
import struct

import pytest

from isrcheck.impl.storage import CorruptLogError, CorruptRecordError, Log, LogConfig, Record, SimulatedFileSystem

DIR = "/logs/fuzz-0"


def batch_starts(data):
    starts, position = [], 0
    while position + 12 <= len(data):
        starts.append(position)
        position += 12 + struct.unpack_from(">i", data, position + 8)[0]
    return starts


def damage(fs, rng):
    """Returns True if a bit of some batch's base offset field was flipped."""
    hit_base_offset = False
    names = fs.listdir(DIR)
    for _ in range(rng.randrange(1, 4)):
        name = rng.choice(names)
        path = f"{DIR}/{name}"
        data = fs.read_file(path)
        if not data:
            continue
        pos = rng.randrange(len(data))
        mode = rng.random()
        if mode < 0.6:
            fs.corrupt(path, pos, bytes([data[pos] ^ (1 << rng.randrange(8))]))
            if name.endswith(".log") and any(s <= pos < s + 8 for s in batch_starts(data)):
                hit_base_offset = True
        elif mode < 0.8:
            fs.open(path).truncate(pos)
        else:
            fs.remove(path)
            names.remove(name)
    return hit_base_offset


@pytest.mark.parametrize("chunk", range(4))
def test_damaged_directories_are_repaired_or_refused_never_misread(chunk):
    outcomes = {"opened": 0, "refused": 0, "read refused": 0, "base offset flips unnoticed": 0}
    for seed in range(chunk * 100, chunk * 100 + 100):
        rng = random.Random(seed)
        fs = SimulatedFileSystem()
        config = LogConfig(
            segment_bytes=rng.choice([300, 800]),
            index_interval_bytes=rng.choice([0, 100]),
            compression_type=rng.choice(["none", "gzip"]),
        )
        log = Log.open(DIR, config, fs=fs, clock=lambda: 5)
        written = {}
        for i in range(rng.randrange(1, 40)):
            value = b"v%d-" % i + b"x" * rng.randrange(30)
            log.append_as_leader([Record(b"k%d" % i, value)], i // 10)
            written[i] = value
            if rng.random() < 0.1:
                log.flush()
        if rng.random() < 0.5:
            log.close()
        else:
            fs.process_crash()
        hit_base_offset = damage(fs, rng)
        try:
            log = Log.open(DIR, config, fs=fs, clock=lambda: 5)
        except CorruptLogError as exc:
            assert DIR in str(exc)
            outcomes["refused"] += 1
            continue
        outcomes["opened"] += 1
        try:
            records = log.read(log.log_start_offset, 10**9).records
        except CorruptRecordError:
            outcomes["read refused"] += 1
            continue
        if not all(written.get(r.offset) == r.value for r in records):
            assert hit_base_offset, f"seed {seed}: a record was read back wrong"
            outcomes["base offset flips unnoticed"] += 1
        log.append_as_leader([Record(b"new", b"value")], 9)
        log.close()
        reopened = Log.open(DIR, config, fs=fs, clock=lambda: 5)
        assert reopened.recovery_report.clean_shutdown
    assert outcomes["opened"] > 50 and outcomes["base offset flips unnoticed"] <= 3, outcomes
