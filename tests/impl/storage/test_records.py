"""The v2 record batch format: field layout, CRC-32C, varints, gzip, headers, validation."""

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isrcheck.impl.storage import CorruptRecordError, InvalidRecordError, Record, RecordBatch, build_batch, iter_batches
from isrcheck.impl.storage.records import _get_varint, _put_varint


def test_crc32c_is_the_castagnoli_checksum():
    import crc32c

    assert crc32c.crc32c(b"123456789") == 0xE3069283


def test_batch_header_layout_matches_kafka_v2():
    batch = build_batch(
        1000,
        [Record(b"key", b"value", timestamp_ms=50), Record(None, b"x", timestamp_ms=70)],
        partition_leader_epoch=7,
        now_ms=0,
    )
    data = batch.buffer
    base, length, epoch, magic = struct.unpack_from(">qiib", data)
    assert (base, length + 12, epoch, magic) == (1000, len(data), 7, 2)
    attributes, last_delta, first_ts, max_ts, pid, pepoch, seq, count = struct.unpack_from(">hiqqqhii", data, 21)
    assert (attributes, last_delta, first_ts, max_ts, pid, pepoch, seq, count) == (0, 1, 50, 70, -1, -1, -1, 2)
    # first record: length, attributes 0, timestamp delta 0, offset delta 0, key length 3 (zig-zag 6)
    assert data[62:66] == bytes([0, 0, 0, 6]) and data[66:69] == b"key"
    assert batch.is_valid()
    assert [(r.offset, r.timestamp_ms, r.key, r.value) for r in batch.records()] == [
        (1000, 50, b"key", b"value"),
        (1001, 70, None, b"x"),
    ]


@pytest.mark.parametrize("value", [0, 1, -1, 63, -64, 64, 300, -300, 2**31 - 1, -(2**31), 2**62, -(2**63)])
def test_zigzag_varints_round_trip(value):
    out = bytearray()
    _put_varint(out, value)
    assert _get_varint(bytes(out), 0) == (value, len(out))


def test_known_varint_encodings():
    for value, encoded in [(0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (-64, b"\x7f"), (64, b"\x80\x01")]:
        out = bytearray()
        _put_varint(out, value)
        assert bytes(out) == encoded


def test_gzip_headers_and_tombstones_round_trip_deterministically():
    records = [
        Record(b"k", None, timestamp_ms=1, headers=(("trace", b"abc"), ("empty", None))),
        Record(b"k2", b"v" * 1000, timestamp_ms=2),
    ]
    one = build_batch(5, records, 3, now_ms=0, compression="gzip")
    two = build_batch(5, records, 3, now_ms=0, compression="gzip")
    assert one.buffer == two.buffer and one.compression == "gzip"
    assert one.size < 600  # 1000 repeated bytes compress
    got = one.records()
    assert got[0].value is None and got[0].headers == (("trace", b"abc"), ("empty", None))
    assert got[1].value == b"v" * 1000


def test_corrupt_batches_are_rejected_with_a_reason():
    batch = build_batch(0, [Record(b"k", b"v")], 0, now_ms=0)
    flipped = bytearray(batch.buffer)
    flipped[-1] ^= 1
    with pytest.raises(CorruptRecordError, match="CRC mismatch"):
        RecordBatch(bytes(flipped)).ensure_valid()
    with pytest.raises(CorruptRecordError, match="shorter"):
        RecordBatch(batch.buffer[:20])
    with pytest.raises(CorruptRecordError, match="declares"):
        list(iter_batches(batch.buffer + batch.buffer[:-1]))
    wrong_magic = bytearray(batch.buffer)
    wrong_magic[16] = 1
    with pytest.raises(CorruptRecordError, match="magic"):
        RecordBatch(bytes(wrong_magic)).ensure_valid()


def test_invalid_records_are_refused():
    with pytest.raises(InvalidRecordError):
        build_batch(0, [], 0, now_ms=0)
    with pytest.raises(InvalidRecordError):
        build_batch(0, [Record(b"k", b"v", timestamp_ms=-5)], 0, now_ms=0)
    with pytest.raises(InvalidRecordError):
        build_batch(0, [Record(b"k", b"v", headers=((1, b"x"),))], 0, now_ms=0)


_bytes_or_none = st.one_of(st.none(), st.binary(max_size=300))
_records = st.lists(
    st.tuples(
        _bytes_or_none,
        _bytes_or_none,
        st.integers(0, 2**42),
        st.lists(st.tuples(st.text(max_size=5), _bytes_or_none), max_size=3),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    records=_records,
    base=st.integers(0, 2**40),
    epoch=st.integers(0, 2**31 - 1),
    compression=st.sampled_from(["none", "gzip"]),
)
def test_any_batch_round_trips(records, base, epoch, compression):
    batch = build_batch(
        base, [Record(k, v, ts, tuple(h)) for k, v, ts, h in records], epoch, now_ms=0, compression=compression
    )
    again = RecordBatch(batch.buffer)
    again.ensure_valid()
    assert (again.base_offset, again.last_offset, again.partition_leader_epoch) == (
        base,
        base + len(records) - 1,
        epoch,
    )
    assert [(r.offset, r.key, r.value, r.timestamp_ms, r.headers) for r in again.records()] == [
        (base + i, k, v, ts, tuple(h)) for i, (k, v, ts, h) in enumerate(records)
    ]
    assert again.max_timestamp == max(ts for _, _, ts, _ in records)
