"""Storage engine figures.

1. Append throughput of ``Log.append_as_leader`` on real files (1 KB values, batches of 100
   records, one ``Log.flush`` at the end), as MB/s and records/s and as a ratio to writing the very
   same bytes to a new file with a plain buffered file-write loop that fsyncs once at the end (the
   median of alternated runs of each); the same on the simulated file system; and single-record
   batches per second (the shape the simulation appends).
2. Offset lookup time against log size: random ``read(offset, 1)`` calls on logs of 1e4, 1e5
   and 1e6 records (sparse index + binary search over segments and index, then a short scan).
3. Recovery time of the largest log when no recovery point survived (every batch re-validated).
4. Each codec on the simulated file system: append and read-back rates of half-compressible 1 KB
   records in batches of 100, and the compressed size.

Usage: python benchmarks/storage.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import tempfile
import time

from isrcheck.impl.storage import Log, LogConfig, Record, SimulatedFileSystem
from isrcheck.impl.storage.config import COMPRESSION_TYPES


def _records(rng: random.Random, count: int, value_size: int, start: int = 0) -> list[Record]:
    return [Record(b"key-%d" % (start + i), rng.randbytes(value_size)) for i in range(count)]


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def _timed_log_append(payload: list[list[Record]], log_dir: str) -> tuple[float, Log]:
    """Appends then one flush, as a producer's batches reach a leader with ``flush.messages`` unset and
    the data is then made durable: encoding, offsets, segment and index writes, the leader epoch
    checkpoint of the first batch, and ``Log.flush`` (segment fsync and recovery-point checkpoint)."""
    log = Log.open(log_dir, LogConfig(segment_bytes=256 << 20))  # creates the segment file durably
    start = time.perf_counter()
    for records in payload:
        log.append_as_leader(records, leader_epoch=0)
    log.flush()
    return time.perf_counter() - start, log


def _timed_plain_write(chunks: list[bytes], directory: str) -> float:
    """The same bytes to a new file through a buffered file object, then one fsync: the data's own
    durability work. The file is created and its directory entry made durable before the clock
    starts, as ``Log.open`` creates the segment file."""
    os.makedirs(directory)
    path = os.path.join(directory, "plain.bin")
    with open(path, "wb") as handle:
        os.fsync(handle.fileno())
        fd = os.open(directory, os.O_RDONLY)
        os.fsync(fd)
        os.close(fd)
        start = time.perf_counter()
        for chunk in chunks:
            handle.write(chunk)
        handle.flush()
        os.fsync(handle.fileno())
        return time.perf_counter() - start


def append_throughput(batches: int, directory: str, rounds: int) -> None:
    rng = random.Random(42)
    payload = [_records(rng, 100, 1024, b * 100) for b in range(batches)]
    log_times, plain_times, chunks, size = [], [], None, 0
    for i in range(rounds):  # alternated, so load on a shared machine hits both
        log_dir, plain_dir = os.path.join(directory, f"append-{i}"), os.path.join(directory, f"plain-{i}")
        if chunks is None or i % 2 == 0:
            seconds, log = _timed_log_append(payload, log_dir)
            log_times.append(seconds)
            if chunks is None:
                chunks = [b.buffer for b in log.read(0, 1 << 40).batches]
                size = log.size_in_bytes
            log.close()
            plain_times.append(_timed_plain_write(chunks, plain_dir))
        else:
            plain_times.append(_timed_plain_write(chunks, plain_dir))
            seconds, log = _timed_log_append(payload, log_dir)
            log_times.append(seconds)
            log.close()
        shutil.rmtree(log_dir)
        shutil.rmtree(plain_dir)
    log_seconds, plain_seconds = _median(log_times), _median(plain_times)

    sim_fs = SimulatedFileSystem()
    sim_log = Log.open("/append-0", LogConfig(segment_bytes=256 << 20), fs=sim_fs)
    fsyncs_before = sim_fs.fsync_count
    start = time.perf_counter()
    for records in payload:
        sim_log.append_as_leader(records, leader_epoch=0)
    sim_log.flush()
    sim_seconds = time.perf_counter() - start
    fsyncs = sim_fs.fsync_count - fsyncs_before

    records_total = batches * 100
    mb = size / 1e6
    print(
        f"append, {records_total} records of 1 KB in batches of 100 ({mb:.1f} MB), then one flush; "
        f"median of {rounds} alternated runs:"
    )
    print(
        f"  Log on OS files      {mb / log_seconds:8.1f} MB/s {records_total / log_seconds:10.0f} records/s"
        f"  (runs: {', '.join(f'{t * 1e3:.0f}' for t in log_times)} ms)"
    )
    print(
        f"  plain write loop     {mb / plain_seconds:8.1f} MB/s {records_total / plain_seconds:10.0f} records/s"
        f"  (runs: {', '.join(f'{t * 1e3:.0f}' for t in plain_times)} ms)"
    )
    print(f"  ratio Log / plain    {plain_seconds / log_seconds:8.3f}")
    print(
        f"    Log: encoding, segment and index writes, the new leader epoch's checkpoint, the flush; "
        f"{fsyncs} fsyncs of files and the directory"
    )
    print("    plain: the same bytes to a new file, 1 fsync")
    print(f"  Log on simulated FS  {mb / sim_seconds:8.1f} MB/s {records_total / sim_seconds:10.0f} records/s")

    small = Log.open("/small-0", LogConfig(), fs=SimulatedFileSystem())
    count = 20000 if batches >= 200 else 5000
    start = time.perf_counter()
    for i in range(count):
        small.append_as_leader([Record(b"", b"%d" % i)], leader_epoch=0)
    seconds = time.perf_counter() - start
    print(f"  single-record batches on the simulated FS: {count / seconds:8.0f} appends/s")


def lookup_time(sizes: list[int], directory: str, lookups: int) -> None:
    print(
        f"offset lookup, read(offset, 1) at {lookups} random offsets (100-byte values, batches of 10, "
        f"16 MB segments, index every 4 KB):"
    )
    rng = random.Random(7)
    for size in sizes:
        log_dir = os.path.join(directory, f"lookup-{size}")
        log = Log.open(log_dir, LogConfig(segment_bytes=16 << 20))
        value = rng.randbytes(100)
        for base in range(0, size, 10):
            log.append_as_leader([Record(b"k%d" % (base + i), value) for i in range(10)], leader_epoch=0)
        targets = [rng.randrange(size) for _ in range(lookups)]
        start = time.perf_counter()
        for offset in targets:
            log.read(offset, 1)
        seconds = time.perf_counter() - start
        for offset in targets[:50]:  # the figure means nothing unless the answer is right
            got = log.read(offset, 1).batches[0]
            assert got.base_offset <= offset <= got.last_offset
        print(
            f"  {size:>9} records, {len(log.segments):3d} segments, {log.size_in_bytes / 1e6:7.1f} MB: "
            f"{seconds / lookups * 1e6:7.1f} us per lookup"
        )
        if size == sizes[-1]:
            recovery(log, log_dir)  # the log dies there: not closed
        else:
            log.close()
        shutil.rmtree(log_dir)


def recovery(log: Log, log_dir: str) -> None:
    """Reopen after a crash that left no recovery point: every batch is re-validated."""
    log.flush()
    for segment in log.segments:
        segment.close()  # the process dies: no clean-shutdown marker
    os.remove(os.path.join(log_dir, "recovery-point-offset-checkpoint"))
    start = time.perf_counter()
    reopened = Log.open(log_dir, log.config)
    seconds = time.perf_counter() - start
    assert reopened.log_end_offset == log.log_end_offset and not reopened.recovery_report.truncated
    print(
        f"recovery of the {reopened.log_end_offset} records without a recovery point: {seconds:.2f} s "
        f"({reopened.size_in_bytes / 1e6 / seconds:.0f} MB/s re-validated, indexes rebuilt)"
    )
    reopened.close()


def codecs(batches: int) -> None:
    rng = random.Random(5)
    payload = [[Record(b"key-%d" % (b * 100 + i), rng.randbytes(512) * 2) for i in range(100)] for b in range(batches)]
    raw = sum(len(r.key) + len(r.value) for records in payload for r in records) / 1e6
    print(f"codecs, {batches * 100} records of 1 KB (each 512 random bytes twice), simulated FS:")
    for codec in COMPRESSION_TYPES:
        log = Log.open(
            f"/{codec}-0", LogConfig(segment_bytes=256 << 20, compression_type=codec), fs=SimulatedFileSystem()
        )
        start = time.perf_counter()
        for records in payload:
            log.append_as_leader(records, leader_epoch=0)
        append_seconds = time.perf_counter() - start
        start = time.perf_counter()
        count = len(log.read(0, 1 << 40).records)
        read_seconds = time.perf_counter() - start
        assert count == batches * 100
        print(
            f"  {codec:6s} append {raw / append_seconds:7.1f} MB/s  read {raw / read_seconds:7.1f} MB/s  "
            f"size {log.size_in_bytes / 1e6 / raw:5.2f} of the records"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller runs (about ten seconds)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="isrcheck-bench-") as directory:
        append_throughput(100 if args.quick else 500, directory, 3 if args.quick else 5)
        lookup_time(
            [10_000, 100_000] if args.quick else [10_000, 100_000, 1_000_000], directory, 1000 if args.quick else 5000
        )
    codecs(20 if args.quick else 100)


if __name__ == "__main__":
    main()
