"""Kafka's record batch format, magic v2: a 61-byte batch header with a CRC-32C, then varint records.

Layout (big-endian): baseOffset int64, batchLength int32 (bytes after this field), partitionLeaderEpoch
int32, magic int8 = 2, crc uint32 (CRC-32C of everything from attributes to the end), attributes int16
(bits 0-2: compression, bit 3: timestamp type, 1 = LogAppendTime, bit 4: transactional, bit 5: control
batch), lastOffsetDelta int32, baseTimestamp int64, maxTimestamp int64, producerId int64,
producerEpoch int16, baseSequence int32, recordCount int32; then the records, each: length varint,
attributes int8, timestampDelta varlong, offsetDelta varint, key (varint length, -1 = null), value
(same), header count varint, headers (key string, value bytes). A compressed batch holds the records
section compressed (see ``compression``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from operator import add, attrgetter
from typing import Iterator, NamedTuple, Sequence

import crc32c as _crc32c

from .compression import CODECS, NAMES, compress, decompress
from .errors import CorruptRecordError, InvalidRecordError, RecordTooLargeError

MAGIC = 2
LOG_OVERHEAD = 12  # baseOffset + batchLength: bytes not counted by batchLength
HEADER_SIZE = 61
CRC_START = 21  # the CRC covers attributes .. end of batch
NO_PRODUCER_ID = -1
COMPRESSION_CODES = CODECS
COMPRESSION_NAMES = NAMES
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
CREATE_TIME, LOG_APPEND_TIME = "CreateTime", "LogAppendTime"
TIMESTAMP_TYPES = (CREATE_TIME, LOG_APPEND_TIME)
# Kafka bounds only the compressed size (max.message.bytes). This engine also refuses a batch whose
# records inflate past this: on build (RecordTooLargeError) and on read (CorruptRecordError), so a
# compression bomb costs at most this much memory
MAX_DECOMPRESSED_BYTES = 64 << 20
# ControlRecordType of a control record's key (version int16 = 0, type int16); an end transaction
# marker's value is version int16 = 0, coordinatorEpoch int32
CONTROL_ABORT, CONTROL_COMMIT = 0, 1
_CONTROL_KEY = struct.Struct(">hh")
_END_TXN_VALUE = struct.Struct(">hi")

_HEAD = struct.Struct(">qiibI")  # baseOffset, batchLength, partitionLeaderEpoch, magic, crc
_TAIL = struct.Struct(">hiqqqhii")  # attributes .. recordCount
HEADER = struct.Struct(">qiibIhiqqqhii")
_LENGTH = struct.Struct(">qi")  # what a scan needs first: baseOffset, batchLength
_crc = _crc32c.crc32c


@dataclass(frozen=True, slots=True)
class Record:
    """A record to append: key and value bytes (None = null; a null value is a tombstone)."""

    key: bytes | None
    value: bytes | None
    timestamp_ms: int | None = None
    headers: tuple[tuple[str, bytes | None], ...] = ()


class LogRecord(NamedTuple):
    """A record read back from the log, with its absolute offset."""

    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


def _put_varint(out: bytearray, value: int) -> None:
    """Zig-zag varint as Kafka's ByteUtils.writeVarlong (identical to writeVarint on 32-bit values)."""
    v = (value << 1) ^ (value >> 63)
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


_ZIGZAG = [(b >> 1) ^ -(b & 1) for b in range(0x80)]  # one-byte varints, the common case


def _get_varint(buf: bytes, pos: int) -> tuple[int, int]:
    try:
        b = buf[pos]
    except IndexError:
        raise CorruptRecordError("record ends inside a varint") from None
    if b < 0x80:
        return _ZIGZAG[b], pos + 1
    result = shift = 0
    try:
        while True:
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return (result >> 1) ^ -(result & 1), pos
            shift += 7
            if shift > 63:
                raise CorruptRecordError("varint longer than 10 bytes")
    except IndexError:
        raise CorruptRecordError("record ends inside a varint") from None


def _varint_slow(value: int) -> bytes:
    out = bytearray()
    _put_varint(out, value)
    return bytes(out)


_SMALL_VARINTS = [_varint_slow(v) for v in range(1 << 14)]  # lengths and deltas: almost always small
_NULL = _varint_slow(-1)


def _varint(value: int) -> bytes:
    return _SMALL_VARINTS[value] if 0 <= value < 16384 else _varint_slow(value)


def _get_bytes(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    b = buf[pos]
    size, pos = (_ZIGZAG[b], pos + 1) if b < 0x80 else _get_varint(buf, pos)
    if size < 0:
        return None, pos
    end = pos + size
    if end > len(buf):
        raise CorruptRecordError("record field runs past the end of the batch")
    return buf[pos:end], end


def _encode_record(out: list[bytes], record: Record, offset_delta: int, timestamp_delta: int) -> None:
    """Append the record's pieces to ``out`` (joined once per batch: no per-record copies)."""
    varint = _varint
    key, value = record.key, record.value
    key_length = _NULL if key is None else varint(len(key))
    value_length = _NULL if value is None else varint(len(value))
    if record.headers:
        pieces = [varint(len(record.headers))]
        for name, hvalue in record.headers:
            encoded = name.encode("utf-8")
            pieces += (varint(len(encoded)), encoded, _NULL if hvalue is None else varint(len(hvalue)), hvalue or b"")
        headers = b"".join(pieces)
    else:
        headers = b"\x00"
    ts, od = varint(timestamp_delta), varint(offset_delta)
    key, value = key or b"", value or b""
    size = 1 + len(ts) + len(od) + len(key_length) + len(key) + len(value_length) + len(value) + len(headers)
    out += (varint(size), b"\x00", ts, od, key_length, key, value_length, value, headers)  # attributes 0


def _check_record(record: Record) -> None:
    if (
        type(record) is Record
        and type(record.key) is bytes
        and type(record.value) is bytes
        and record.timestamp_ms is None
        and not record.headers
    ):
        return  # the common shape, checked cheaply
    if not isinstance(record, Record):
        raise InvalidRecordError(f"expected a Record, got {type(record).__name__}")
    for name in ("key", "value"):
        field = getattr(record, name)
        if field is not None and not isinstance(field, (bytes, bytearray)):
            raise InvalidRecordError(f"Record.{name} must be bytes or None, got {type(field).__name__}")
    if record.timestamp_ms is not None and (not isinstance(record.timestamp_ms, int) or record.timestamp_ms < 0):
        raise InvalidRecordError(f"Record.timestamp_ms must be a non-negative int or None, got {record.timestamp_ms!r}")
    for header in record.headers:
        if (
            len(header) != 2
            or not isinstance(header[0], str)
            or not (header[1] is None or isinstance(header[1], (bytes, bytearray)))
        ):
            raise InvalidRecordError(f"a record header must be (str, bytes | None), got {header!r}")


_KEY, _VALUE, _TIMESTAMP, _HEADERS = (attrgetter(name) for name in ("key", "value", "timestamp_ms", "headers"))
_VARINT = _SMALL_VARINTS.__getitem__
# sizes of a record's parts for the column-wise encoder, by length: key length varint + key +
# attributes + timestamp delta 0 + header count 0; value length varint + value; a varint alone
_KEY_PART_SIZE = [len(v) + n + 3 for n, v in enumerate(_SMALL_VARINTS)]
_VALUE_PART_SIZE = [len(v) + n for n, v in enumerate(_SMALL_VARINTS)]
_VARINT_SIZE = [len(v) for v in _SMALL_VARINTS]
_COLUMNS_FROM = 4  # fewer records encode faster one by one


def _encode_columns(records: Sequence[Record]) -> list[bytes] | None:
    """The pieces of the records section for the common shape (bytes keys and values under 16 KB,
    no timestamps, no headers), a column at a time through C builtins: several times faster than
    record by record, and what keeps appends close to the disk's speed. None for any other shape."""
    n = len(records)
    if n > len(_SMALL_VARINTS) or set(map(type, records)) != {Record}:
        return None
    keys, values = list(map(_KEY, records)), list(map(_VALUE, records))
    if (
        set(map(type, keys)) != {bytes}
        or set(map(type, values)) != {bytes}
        or any(map(_HEADERS, records))
        or list(map(_TIMESTAMP, records)).count(None) != n
    ):
        return None
    try:
        key_lengths, value_lengths = list(map(len, keys)), list(map(len, values))
        sizes = list(
            map(
                _VARINT,
                map(
                    add,
                    map(
                        add,
                        map(_KEY_PART_SIZE.__getitem__, key_lengths),
                        map(_VALUE_PART_SIZE.__getitem__, value_lengths),
                    ),
                    _VARINT_SIZE[:n],
                ),
            )
        )
        key_lengths, value_lengths = list(map(_VARINT, key_lengths)), list(map(_VARINT, value_lengths))
    except IndexError:  # a length past the varint table: record by record
        return None
    parts: list[bytes] = [b""] * (8 * n)
    parts[0::8] = sizes
    parts[1::8] = [b"\x00\x00"] * n  # attributes, timestamp delta 0
    parts[2::8] = _SMALL_VARINTS[:n]  # offset deltas
    parts[3::8] = key_lengths
    parts[4::8] = keys
    parts[5::8] = value_lengths
    parts[6::8] = values
    parts[7::8] = [b"\x00"] * n  # no headers
    return parts


def _assemble(
    parts: list[bytes],
    base_offset: int,
    partition_leader_epoch: int,
    attributes: int,
    last_offset_delta: int,
    first_timestamp: int,
    max_timestamp: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    record_count: int,
) -> "RecordBatch":
    """One batch over the records section ``parts``. The section is joined once and the CRC chained
    from the header fields it covers through the section, so the batch costs two buffers of its size
    (the section, the batch) however many records it holds."""
    body = b"".join(parts)
    code = attributes & COMPRESSION_MASK
    if code:
        if len(body) > MAX_DECOMPRESSED_BYTES:
            raise RecordTooLargeError(
                f"records of {len(body)} bytes exceed the {MAX_DECOMPRESSED_BYTES}-byte limit of a compressed batch"
            )
        body = compress(code, body)
    tail = _TAIL.pack(
        attributes,
        last_offset_delta,
        first_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        record_count,
    )
    head = _HEAD.pack(
        base_offset, len(body) + HEADER_SIZE - LOG_OVERHEAD, partition_leader_epoch, MAGIC, _crc(body, _crc(tail))
    )
    return RecordBatch(b"".join((head, tail, body)))


def _flags(timestamp_type: str, is_transactional: bool, is_control_batch: bool) -> int:
    """Attribute bits 3-5."""
    if timestamp_type not in TIMESTAMP_TYPES:
        raise InvalidRecordError(f"timestamp type must be one of {', '.join(TIMESTAMP_TYPES)}, got {timestamp_type!r}")
    return (
        (TIMESTAMP_TYPE_MASK if timestamp_type == LOG_APPEND_TIME else 0)
        | (TRANSACTIONAL_MASK if is_transactional else 0)
        | (CONTROL_MASK if is_control_batch else 0)
    )


def build_batch(
    base_offset: int,
    records: Sequence[Record],
    partition_leader_epoch: int,
    now_ms: int,
    compression: str = "none",
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    timestamp_type: str = CREATE_TIME,
    is_transactional: bool = False,
    is_control_batch: bool = False,
) -> "RecordBatch":
    """Encode ``records`` as one v2 batch at ``base_offset`` (MemoryRecordsBuilder); missing timestamps
    = now. With LogAppendTime the max timestamp is ``now_ms``, the leader's append time, and readers
    give it to every record (LogValidator on the leader)."""
    if not records:
        raise InvalidRecordError("a record batch needs at least one record")
    attributes = COMPRESSION_CODES[compression]
    if timestamp_type != CREATE_TIME or is_transactional or is_control_batch:
        attributes |= _flags(timestamp_type, is_transactional, is_control_batch)
    if len(records) >= _COLUMNS_FROM and (parts := _encode_columns(records)) is not None:
        first_ts = max_ts = now_ms
    else:
        timestamps = []
        for record in records:
            _check_record(record)
            timestamps.append(now_ms if record.timestamp_ms is None else record.timestamp_ms)
        first_ts, max_ts = timestamps[0], max(timestamps)
        parts: list[bytes] = []
        for delta, (record, ts) in enumerate(zip(records, timestamps)):
            _encode_record(parts, record, delta, ts - first_ts)
    if attributes & TIMESTAMP_TYPE_MASK:
        max_ts = now_ms
    return _assemble(
        parts,
        base_offset,
        partition_leader_epoch,
        attributes,
        len(records) - 1,
        first_ts,
        max_ts,
        producer_id,
        producer_epoch,
        base_sequence,
        len(records),
    )


def end_transaction_marker(
    base_offset: int,
    partition_leader_epoch: int,
    now_ms: int,
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    coordinator_epoch: int = 0,
) -> "RecordBatch":
    """A transaction marker (MemoryRecords.withEndTransactionMarker): a transactional control batch of
    one control record that commits or aborts the producer's open transaction."""
    record = Record(
        _CONTROL_KEY.pack(0, CONTROL_COMMIT if commit else CONTROL_ABORT), _END_TXN_VALUE.pack(0, coordinator_epoch)
    )
    return build_batch(
        base_offset,
        [record],
        partition_leader_epoch,
        now_ms,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=True,
        is_control_batch=True,
    )


class RecordBatch:
    """A view over the bytes of one v2 batch; header fields parsed at once, records on demand."""

    __slots__ = (
        "buffer",
        "base_offset",
        "partition_leader_epoch",
        "magic",
        "crc",
        "attributes",
        "last_offset_delta",
        "first_timestamp",
        "max_timestamp",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "record_count",
    )

    def __init__(self, buffer: bytes) -> None:
        if len(buffer) < HEADER_SIZE:
            raise CorruptRecordError(
                f"record batch of {len(buffer)} bytes is shorter than its {HEADER_SIZE}-byte header"
            )
        (
            self.base_offset,
            length,
            self.partition_leader_epoch,
            self.magic,
            self.crc,
            self.attributes,
            self.last_offset_delta,
            self.first_timestamp,
            self.max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            self.record_count,
        ) = HEADER.unpack_from(buffer)
        if length + LOG_OVERHEAD != len(buffer):
            raise CorruptRecordError(
                f"batch at offset {self.base_offset} declares {length + LOG_OVERHEAD} bytes but has {len(buffer)}"
            )
        self.buffer = bytes(buffer)

    @property
    def size(self) -> int:
        return len(self.buffer)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> str:
        return COMPRESSION_NAMES.get(self.attributes & COMPRESSION_MASK, "unknown")

    @property
    def timestamp_type(self) -> str:
        return LOG_APPEND_TIME if self.attributes & TIMESTAMP_TYPE_MASK else CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control_batch(self) -> bool:
        """A batch of control records (transaction markers): kept in the log and replicated, never
        handed to a consumer as records."""
        return bool(self.attributes & CONTROL_MASK)

    def is_valid(self) -> bool:
        """CRC-32C of attributes..end matches the stored CRC (DefaultRecordBatch.isValid)."""
        return _crc(memoryview(self.buffer)[CRC_START:]) == self.crc

    def ensure_valid(self) -> None:
        """Raise CorruptRecordError unless magic, offsets, count and CRC are sound (ensureValid)."""
        where = f"batch at offset {self.base_offset}"
        if self.magic != MAGIC:
            raise CorruptRecordError(f"{where}: magic {self.magic}, only v{MAGIC} is supported")
        if self.base_offset < 0 or self.last_offset_delta < 0:
            raise CorruptRecordError(f"{where}: negative offset or last offset delta")
        if self.record_count < 0 or self.record_count > self.last_offset_delta + 1:
            raise CorruptRecordError(
                f"{where}: record count {self.record_count} does not fit last offset delta {self.last_offset_delta}"
            )
        if (self.attributes & COMPRESSION_MASK) not in COMPRESSION_NAMES:
            raise CorruptRecordError(f"{where}: unknown compression code {self.attributes & COMPRESSION_MASK}")
        if not self.is_valid():
            raise CorruptRecordError(
                f"{where}: CRC mismatch (stored {self.crc:#010x}, "
                f"computed {_crc(memoryview(self.buffer)[CRC_START:]):#010x})"
            )

    def _body(self, max_decompressed_bytes: int) -> tuple[bytes, int]:
        """The records section and where it starts (decompressed, within the limit, if compressed)."""
        code = self.attributes & COMPRESSION_MASK
        if code:
            return decompress(code, memoryview(self.buffer)[HEADER_SIZE:], max_decompressed_bytes), 0
        return self.buffer, HEADER_SIZE

    def records(self, max_decompressed_bytes: int = MAX_DECOMPRESSED_BYTES) -> list[LogRecord]:
        """Decode every record (DefaultRecord.readFrom); offsets and timestamps made absolute, every
        timestamp the batch's max timestamp under LogAppendTime. CorruptRecordError, naming the batch,
        for anything malformed, including a compressed section that inflates past the limit. Hot in
        consumers, so one-byte varints are decoded inline through a table."""
        base = self.base_offset
        try:
            out = self._decode(*self._body(max_decompressed_bytes))
        except CorruptRecordError as exc:
            raise CorruptRecordError(f"batch at offset {base}: {exc}") from None
        except IndexError:
            raise CorruptRecordError(f"batch at offset {base}: records run past the end of the batch") from None
        if self.attributes & TIMESTAMP_TYPE_MASK:
            append_time = self.max_timestamp
            out = [record._replace(timestamp_ms=append_time) for record in out]
        return out

    def _decode(self, data: bytes, pos: int) -> list[LogRecord]:
        out = []
        base, first_ts, size = self.base_offset, self.first_timestamp, len(data)
        zz, varint, field = _ZIGZAG, _get_varint, _get_bytes
        for _ in range(self.record_count):
            b = data[pos]
            length, pos = (zz[b], pos + 1) if b < 0x80 else varint(data, pos)
            end = pos + length
            if length < 1 or end > size:
                raise CorruptRecordError(f"record length {length} out of bounds")
            b = data[pos + 1]  # after the record attributes
            ts_delta, pos = (zz[b], pos + 2) if b < 0x80 else varint(data, pos + 1)
            b = data[pos]
            offset_delta, pos = (zz[b], pos + 1) if b < 0x80 else varint(data, pos)
            key, pos = field(data, pos)
            value, pos = field(data, pos)
            count, pos = varint(data, pos)
            headers: tuple = ()
            if count:
                pairs = []
                for _ in range(count):
                    name, pos = field(data, pos)
                    hvalue, pos = field(data, pos)
                    if name is None:
                        raise CorruptRecordError("null header key")
                    pairs.append((name.decode("utf-8", "replace"), hvalue))
                headers = tuple(pairs)
            if pos != end:
                raise CorruptRecordError(f"record length {length} disagrees with its fields")
            out.append(LogRecord(base + offset_delta, first_ts + ts_delta, key, value, headers))
        if pos != size:
            raise CorruptRecordError(f"{size - pos} trailing bytes after the records")
        return out

    def with_records(self, records: Sequence[LogRecord]) -> "RecordBatch":
        """A batch keeping this one's offsets, epoch, attributes and producer fields but only
        ``records`` (the cleaner's rewrite), compressed as this one was."""
        first_ts = records[0].timestamp_ms if records else self.first_timestamp
        parts: list[bytes] = []
        for r in records:
            _encode_record(
                parts,
                Record(r.key, r.value, r.timestamp_ms, r.headers),
                r.offset - self.base_offset,
                r.timestamp_ms - first_ts,
            )
        return _assemble(
            parts,
            self.base_offset,
            self.partition_leader_epoch,
            self.attributes,
            self.last_offset_delta,
            first_ts,
            self.max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            len(records),
        )

    def __repr__(self) -> str:
        return (
            f"RecordBatch(base_offset={self.base_offset}, last_offset={self.last_offset}, "
            f"epoch={self.partition_leader_epoch}, size={self.size})"
        )


def validate_producer_batch(batch: RecordBatch) -> None:
    """LogValidator's checks of a batch a producer sent, beyond its CRC: every record decodes (and
    decompresses: CorruptRecordError), the records are exactly offsets 0..last offset delta, and an
    idempotent producer's batch has a sequence number (InvalidRecordError). A leader that stored a
    batch failing them would stop every consumer at it."""
    deltas = [r.offset - batch.base_offset for r in batch.records()]
    if batch.record_count != batch.last_offset_delta + 1 or deltas != list(range(batch.record_count)):
        raise InvalidRecordError(
            f"batch of {batch.record_count} records with last offset delta "
            f"{batch.last_offset_delta}: its records must be offsets 0..{batch.last_offset_delta}"
        )
    if batch.producer_id >= 0 and batch.base_sequence < 0:
        raise InvalidRecordError(f"producer {batch.producer_id}: an idempotent batch needs a base sequence")


def restamp(
    batch: RecordBatch, base_offset: int, partition_leader_epoch: int, log_append_time: int | None = None
) -> RecordBatch:
    """The batch at ``base_offset`` in ``partition_leader_epoch``: both lie outside the CRC, so the
    rest of its bytes stay as they are, unless ``log_append_time`` sets the LogAppendTime flag and
    the max timestamp, which the CRC covers and is computed again for."""
    buffer = bytearray(batch.buffer)
    struct.pack_into(">q", buffer, 0, base_offset)
    struct.pack_into(">i", buffer, 12, partition_leader_epoch)
    if log_append_time is not None:
        attributes = batch.attributes | TIMESTAMP_TYPE_MASK
        struct.pack_into(">h", buffer, CRC_START, attributes)
        struct.pack_into(">q", buffer, CRC_START + 14, log_append_time)  # after attributes, delta, first ts
        struct.pack_into(">I", buffer, 17, _crc(memoryview(buffer)[CRC_START:]))
    return RecordBatch(bytes(buffer))


def iter_batches(buffer: bytes) -> Iterator[RecordBatch]:
    """Split concatenated batches (a fetched MemoryRecords); raises on a truncated or malformed batch."""
    pos, end = 0, len(buffer)
    while pos < end:
        if end - pos < LOG_OVERHEAD:
            raise CorruptRecordError(f"{end - pos} stray bytes after the last batch")
        _, length = _LENGTH.unpack_from(buffer, pos)
        size = length + LOG_OVERHEAD
        if size < HEADER_SIZE or pos + size > end:
            raise CorruptRecordError(f"batch at position {pos} declares {size} bytes, {end - pos} remain")
        yield RecordBatch(buffer[pos : pos + size])
        pos += size
