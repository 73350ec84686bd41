"""Compressed batches: every codec round-trips, agrees with a real Kafka client library
(kafka-python) both ways, refuses compression bombs within bounded memory, and reports damaged
compressed data as a CorruptRecordError that names the batch."""

import gzip
import random
import struct
import tracemalloc

import cramjam
import lz4.frame
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from isrcheck.impl.storage import (
    CorruptRecordError,
    Log,
    LogConfig,
    Record,
    RecordBatch,
    RecordTooLargeError,
    SimulatedFileSystem,
    build_batch,
)
from isrcheck.impl.storage.compression import SNAPPY, XERIAL_HEADER, compress
from isrcheck.impl.storage.records import HEADER_SIZE, MAX_DECOMPRESSED_BYTES, _crc

CODECS = ["gzip", "snappy", "lz4", "zstd"]
KAFKA_CODES = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def records(count=40):
    return [
        Record(b"key-%d" % i, b"value %d " % i * 50, 1000 + i, (("h", b"x"),) if i % 3 else ()) for i in range(count)
    ]


def decoded(batch):
    return [(r.offset, r.timestamp_ms, r.key, r.value, r.headers) for r in batch.records()]


def expected(recs, base=0):
    return [(base + i, r.timestamp_ms, r.key, r.value, r.headers) for i, r in enumerate(recs)]


def reframe(batch: RecordBatch, body: bytes) -> RecordBatch:
    """The same header over another records section, with the batch length and CRC made right: what
    reaches the decompressor when a producer (or an attacker) sends a well-framed batch."""
    data = bytearray(batch.buffer[:HEADER_SIZE]) + body
    struct.pack_into(">i", data, 8, len(data) - 12)
    struct.pack_into(">I", data, 17, _crc(bytes(data[21:])))
    return RecordBatch(bytes(data))


@pytest.mark.parametrize("codec", CODECS)
def test_each_codec_round_trips_and_is_deterministic(codec):
    recs = records()
    batch = build_batch(7, recs, 2, now_ms=0, compression=codec)
    again = build_batch(7, recs, 2, now_ms=0, compression=codec)
    batch.ensure_valid()
    assert batch.buffer == again.buffer and batch.compression == codec
    assert batch.size < sum(len(r.value) for r in recs) / 2
    assert decoded(batch) == expected(recs, 7)


_bytes_or_none = st.one_of(st.none(), st.binary(max_size=300))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    recs=st.lists(
        st.tuples(
            _bytes_or_none,
            _bytes_or_none,
            st.integers(0, 2**42),
            st.lists(st.tuples(st.text(max_size=5), _bytes_or_none), max_size=3),
        ),
        min_size=1,
        max_size=6,
    ),
    codec=st.sampled_from(CODECS),
)
def test_any_compressed_batch_round_trips(recs, codec):
    batch = build_batch(3, [Record(k, v, ts, tuple(h)) for k, v, ts, h in recs], 1, now_ms=0, compression=codec)
    again = RecordBatch(batch.buffer)
    again.ensure_valid()
    assert [(r.key, r.value, r.timestamp_ms, r.headers) for r in again.records()] == [
        (k, v, ts, tuple(h)) for k, v, ts, h in recs
    ]


def test_the_wire_formats_are_kafkas():
    """xerial framing for snappy (SnappyOutputStream), the KIP-57 LZ4 frame KafkaLZ4BlockOutputStream
    writes (FLG: version 1, independent blocks; BD: 64 KB blocks), a zstd frame, a gzip stream."""
    batch = {codec: build_batch(0, records(), 0, now_ms=0, compression=codec).buffer[HEADER_SIZE:] for codec in CODECS}
    assert batch["snappy"].startswith(XERIAL_HEADER)
    assert batch["lz4"][:6] == b"\x04\x22\x4d\x18\x60\x40"
    assert batch["zstd"][:4] == b"\x28\xb5\x2f\xfd"
    assert batch["gzip"][:2] == b"\x1f\x8b"


def test_raw_snappy_is_read_too():
    """SnappyInputStream falls back to one raw snappy block when the xerial header is missing."""
    recs = records()
    xerial = build_batch(0, recs, 0, now_ms=0, compression="snappy")
    body = gzip.decompress(build_batch(0, recs, 0, now_ms=0, compression="gzip").buffer[HEADER_SIZE:])
    raw = reframe(xerial, bytes(cramjam.snappy.compress_raw(body)))
    assert decoded(raw) == decoded(xerial) == expected(recs)


def test_xerial_blocks_split_large_bodies():
    recs = [Record(b"k%d" % i, bytes(range(256)) * 64) for i in range(10)]  # 160 KB
    body = build_batch(0, recs, 0, now_ms=0, compression="snappy").buffer[HEADER_SIZE:]
    blocks, pos = 0, len(XERIAL_HEADER)
    while pos < len(body):
        pos += 4 + struct.unpack_from(">i", body, pos)[0]
        blocks += 1
    assert pos == len(body) and blocks == 6  # 32 KB blocks


# ------------------------------------------------------------------------------ kafka-python

kafka_records = pytest.importorskip("kafka.record.default_records")


def kafka_batch(codec, recs, is_transactional=False):
    builder = kafka_records.DefaultRecordBatchBuilder(
        magic=2,
        compression_type=KAFKA_CODES[codec],
        is_transactional=is_transactional,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 30,
    )
    for i, r in enumerate(recs):
        builder.append(i, timestamp=r.timestamp_ms, key=r.key, value=r.value, headers=list(r.headers))
    return bytes(builder.build())


@pytest.mark.parametrize("codec", ["none", *CODECS])
def test_batches_from_kafka_python_decode(codec):
    recs = records()
    batch = RecordBatch(kafka_batch(codec, recs))
    batch.ensure_valid()
    assert batch.compression == codec
    assert decoded(batch) == expected(recs)


@pytest.mark.parametrize("codec", ["none", *CODECS])
def test_kafka_python_decodes_our_batches(codec):
    recs = records()
    ours = build_batch(0, recs, 0, now_ms=0, compression=codec)
    theirs = kafka_records.DefaultRecordBatch(bytearray(ours.buffer))
    assert theirs.validate_crc() and theirs.compression_type == KAFKA_CODES[codec]
    assert [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in theirs] == expected(recs)


@pytest.mark.parametrize("codec", ["none", "snappy", "zstd"])
def test_same_bytes_as_kafka_python(codec):
    """Where both sides use the same codec settings the batches are byte for byte the same (gzip differs
    in level and header time, lz4 in the stored content size)."""
    recs = records()
    assert build_batch(0, recs, 0, now_ms=0, compression=codec).buffer == kafka_batch(codec, recs)


# -------------------------------------------------------------------------- compression bombs

GIB = 1 << 30


def _lz4_frame_of_blocks(block_bytes: int, count: int) -> bytes:
    """One LZ4 frame repeating the compressed 64 KB block of zeros ``count`` times."""
    frame = lz4.frame.compress(
        bytes(block_bytes),
        block_size=lz4.frame.BLOCKSIZE_MAX64KB,
        block_linked=False,
        content_checksum=False,
        store_size=False,
    )
    header, block, end = frame[:7], frame[7:-4], frame[-4:]
    return header + block * count + end


def _zstd_stream(total: int, content_size: bool) -> bytes:
    compressor = zstandard.ZstdCompressor(write_content_size=content_size).compressobj(
        size=total if content_size else -1
    )
    chunk = bytes(1 << 20)
    return b"".join([compressor.compress(chunk) for _ in range(total >> 20)] + [compressor.flush()])


def _xerial_of_zero_blocks(count: int) -> bytes:
    block = bytes(cramjam.snappy.compress_raw(bytes(32 * 1024)))
    return XERIAL_HEADER + (struct.pack(">i", len(block)) + block) * count


def _raw_snappy_claiming(length: int) -> bytes:
    varint = bytearray()
    while length >= 0x80:
        varint.append(length & 0x7F | 0x80)
        length >>= 7
    return bytes(varint) + bytes([length]) + b"\x00" * 10


BOMBS = {
    "gzip members": ("gzip", lambda: gzip.compress(bytes(1 << 20), mtime=0) * 1024),
    "lz4 blocks": ("lz4", lambda: _lz4_frame_of_blocks(64 * 1024, 16 * 1024)),
    "zstd frames": ("zstd", lambda: zstandard.ZstdCompressor().compress(bytes(1 << 20)) * 1024),
    "zstd stating its size": ("zstd", lambda: _zstd_stream(256 << 20, content_size=True)),
    "zstd not stating its size": ("zstd", lambda: _zstd_stream(256 << 20, content_size=False)),
    "xerial snappy blocks": ("snappy", lambda: _xerial_of_zero_blocks(4 * 1024 + 1)),
    "raw snappy claiming 1 GiB": ("snappy", lambda: _raw_snappy_claiming(GIB)),
}


@pytest.mark.parametrize("name", list(BOMBS))
def test_a_compression_bomb_is_refused_in_bounded_memory(name):
    codec, payload = BOMBS[name]
    template = build_batch(7, [Record(b"k", b"v")], 0, now_ms=0, compression=codec)
    bomb = reframe(template, payload())
    bomb.ensure_valid()  # well framed: only inflating it tells
    tracemalloc.start()
    try:
        with pytest.raises(
            CorruptRecordError,
            match=rf"batch at offset 7: {codec} data inflates past the "
            rf"{MAX_DECOMPRESSED_BYTES}-byte limit",
        ):
            bomb.records()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < MAX_DECOMPRESSED_BYTES * 1.5


@pytest.mark.parametrize("codec", CODECS)
def test_the_limit_can_be_lowered_per_read(codec):
    recs = [Record(b"k", bytes(1000))] * 3
    batch = build_batch(0, recs, 0, now_ms=0, compression=codec)
    size = build_batch(0, recs, 0, now_ms=0).size - HEADER_SIZE  # the records section, uncompressed
    assert len(batch.records(max_decompressed_bytes=size)) == 3
    with pytest.raises(CorruptRecordError, match="batch at offset 0: .*inflates past the"):
        batch.records(max_decompressed_bytes=size - 1)


def test_records_too_large_to_read_back_are_refused_on_build():
    with pytest.raises(RecordTooLargeError, match="limit of a compressed batch"):
        build_batch(0, [Record(b"k", bytes(MAX_DECOMPRESSED_BYTES))], 0, now_ms=0, compression="lz4")


# ----------------------------------------------------------------------- damaged compressed data


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("damage", ["truncated", "empty", "garbage", "trailing garbage", "flipped"])
def test_damaged_compressed_data_is_a_corrupt_record_error_naming_the_batch(codec, damage):
    batch = build_batch(42, records(), 0, now_ms=0, compression=codec)
    body = batch.buffer[HEADER_SIZE:]
    bad = {
        "truncated": body[: len(body) // 2],
        "empty": b"",
        "garbage": bytes(range(7, 250)) * 3,
        "trailing garbage": body + b"\x01\x02\x03",
        "flipped": body[: len(body) // 2] + bytes([body[len(body) // 2] ^ 0xFF]) + body[len(body) // 2 + 1 :],
    }
    with pytest.raises(CorruptRecordError, match="batch at offset 42: "):
        reframe(batch, bad[damage]).records()


@settings(max_examples=150, deadline=None, derandomize=True)
@given(codec=st.sampled_from(CODECS), data=st.data())
def test_random_damage_never_escapes_as_another_exception(codec, data):
    batch = build_batch(5, records(8), 0, now_ms=0, compression=codec)
    body = bytearray(batch.buffer[HEADER_SIZE:])
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(0, len(body) - 1))
        body[position] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(body)))
    try:
        reframe(batch, bytes(body[:cut])).records()
    except CorruptRecordError as exc:
        assert str(exc).startswith("batch at offset 5: ")


# ------------------------------------------------------------------------------------ the log


@pytest.mark.parametrize("codec", CODECS)
def test_a_log_appends_reads_and_recovers_compressed_batches(codec):
    fs = SimulatedFileSystem()
    config = LogConfig(segment_bytes=4000, compression_type=codec)
    log = Log.open("/t-0", config, fs=fs, clock=lambda: 5)
    for i in range(30):
        log.append_as_leader(
            [Record(b"k%d" % i, random.Random(i).randbytes(200)), Record(None, b"w%d" % i)], leader_epoch=1
        )
    assert len(log.segments) > 1 and all(b.compression == codec for b in log.read(0, 1 << 20).batches)
    fs.process_crash()  # no clean shutdown: every batch re-validated
    reopened = Log.open("/t-0", config, fs=fs)
    assert not reopened.recovery_report.truncated_bytes
    got = reopened.read(0, 1 << 20).records
    assert [(r.offset, r.key, r.value) for r in got] == [
        (2 * i + j, *pair)
        for i in range(30)
        for j, pair in enumerate([(b"k%d" % i, random.Random(i).randbytes(200)), (None, b"w%d" % i)])
    ]


def test_compress_rejects_an_unknown_code():
    with pytest.raises(ValueError):
        compress(7, b"x")
    assert compress(SNAPPY, b"")[: len(XERIAL_HEADER)] == XERIAL_HEADER
