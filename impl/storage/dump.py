"""Reading and checking the files of a log directory for inspection (Kafka's DumpLogSegments).

Streams, so that memory does not grow with the file: a ``.log`` is read batch by batch from a file
object and each batch is written out before the next is read; indexes are read entry by entry and
checkpoints line by line. Memory is bounded by ``max_message_size``: a larger batch is CRC-checked
in chunks but its records are not decoded. Never repairs.

Every problem is named with its byte position in the file, and all are counted; the ones the
loader would reject: a torn tail or a batch length shorter than a header (the batches after it
cannot be found), a wrong magic, negative offsets, offsets not ascending or outside the segment,
a CRC mismatch, undecodable records; index entries out of order, a partial entry, a position past
the end of the log or not at the batch the entry names, a time-index offset no batch ends at;
checkpoint lines that are garbled, negative, out of order or miscounted.
"""

from __future__ import annotations

import json
import os
import re
import struct
import zlib
from typing import IO, Any, Iterator

from crc32c import crc32c

from .errors import CorruptRecordError
from .records import (
    COMPRESSION_MASK,
    COMPRESSION_NAMES,
    CRC_START,
    HEADER,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    RecordBatch,
)
from .segment import INT32_MAX, SEGMENT_FILE

MAX_MESSAGE_SIZE = 5 * 1024 * 1024  # DumpLogSegments' --max-message-size default
MAX_KEPT_PROBLEMS = 100  # kept for the summary; every problem is printed and counted
MAX_CHECKPOINT_LINE = 128  # an entry is at most two int64 and a space
_CHUNK = 1 << 16

_LENGTH = struct.Struct(">qi")
_SCAN = struct.Struct(">qi11xi")  # baseOffset, batchLength, lastOffsetDelta
_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_INTEGER = re.compile(rb"-?[0-9]{1,19}")

CHECKPOINT_FIELDS = {
    "leader-epoch-checkpoint": ("epoch", "start_offset"),
    "replication-offset-checkpoint": ("high_watermark",),
    "recovery-point-offset-checkpoint": ("recovery_point",),
}


def file_kind(name: str) -> tuple[str, int]:
    """('log' | 'index' | 'timeindex', base offset) from a segment file name, ('checkpoint', 0) for
    a checkpoint file; ValueError otherwise."""
    if name in CHECKPOINT_FIELDS:
        return "checkpoint", 0
    match = SEGMENT_FILE.match(name)
    if match is None:
        raise ValueError(
            f"{name!r} is not a segment file: expected <20-digit base offset>.log, .index "
            f"or .timeindex, or one of {', '.join(sorted(CHECKPOINT_FIELDS))}"
        )
    return match.group(2), int(match.group(1))


class Dump:
    """One file being dumped: ``fields`` known up front, ``items`` (batches or entries) read lazily,
    and ``trailer``, what is known only at the end, complete once ``items`` is exhausted.

    A problem found at an item goes into that item's ``problems`` (so it prints beside it), one about
    the file as a whole into ``trailer["problems"]``. All are counted; only the first
    ``MAX_KEPT_PROBLEMS`` of the items' are kept for the summary, as a file can be corrupt throughout."""

    def __init__(self, path: str, kind: str) -> None:
        self.path = path
        self.kind = kind
        self.fields: dict[str, Any] = {"path": path, "kind": kind}
        self.items_name = "batches" if kind == "log" else "entries"
        self.items: Iterator[dict[str, Any]] = iter(())
        self.trailer: dict[str, Any] = {"problems": []}
        self.problem_count = 0
        self.first_problems: list[dict[str, Any]] = []
        self._handles: list[IO[bytes]] = []

    def problem(self, item: dict[str, Any] | None, position: int, message: str) -> None:
        """Record a problem at byte ``position``, found at ``item`` (None: about the whole file)."""
        problem = {"position": position, "message": message}
        self.problem_count += 1
        if item is None:
            self.trailer["problems"].append(problem)
        else:
            item["problems"].append(problem)
        if item is None or len(self.first_problems) < MAX_KEPT_PROBLEMS:
            self.first_problems.append(problem)

    @property
    def valid(self) -> bool:
        return self.problem_count == 0

    def summary(self) -> str:
        """One line naming the file, how many problems, and the first with its byte position."""
        first = self.first_problems[0]
        plural = "s" if self.problem_count > 1 else ""
        return (
            f"{self.path}: {self.problem_count} problem{plural}, the first at byte {first['position']}: "
            f"{first['message']}"
        )

    def open(self, path: str) -> IO[bytes]:
        handle = open(path, "rb")
        self._handles.append(handle)
        return handle

    def close(self) -> None:
        for handle in self._handles:
            handle.close()

    def __enter__(self) -> "Dump":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_dump(path: str, max_message_size: int = MAX_MESSAGE_SIZE) -> Dump:
    """The dump of a segment or checkpoint file; ValueError if the name is not one, OSError if it
    cannot be opened. Nothing is read until ``items`` is iterated."""
    name = os.path.basename(path)
    kind, base_offset = file_kind(name)
    dump = Dump(path, kind)
    try:
        handle = dump.open(path)
        if kind == "checkpoint":
            dump.items = _checkpoint_entries(dump, handle, CHECKPOINT_FIELDS[name])
            return dump
        dump.fields.update(base_offset=base_offset, size=os.fstat(handle.fileno()).st_size)
        if kind == "log":
            dump.items = _log_batches(dump, handle, base_offset, max_message_size)
            return dump
        log_path = os.path.join(os.path.dirname(path), name[:20] + ".log")
        log = _LogHeaders(dump.open(log_path)) if os.path.isfile(log_path) else None
        dump.fields["checked_against"] = None if log is None else log_path
        entries = _index_entries if kind == "index" else _time_index_entries
        dump.items = entries(dump, handle, base_offset, log)
        return dump
    except OSError:
        dump.close()
        raise


# ------------------------------------------------------------------------------------------ .log


def _log_batches(dump: Dump, handle: IO[bytes], base_offset: int, max_message_size: int) -> Iterator[dict[str, Any]]:
    """Every batch, in file order, checked as recovery would; stops where batches can no longer be
    told apart (the rest is reported as a torn tail)."""
    end = dump.fields["size"]
    position, previous = 0, None  # previous: (position, last offset) of the batch before
    dump.trailer["torn_tail"] = None
    while position < end:
        remain = end - position
        head = handle.read(min(HEADER_SIZE, remain))
        size = _LENGTH.unpack_from(head)[1] + LOG_OVERHEAD if len(head) >= LOG_OVERHEAD else 0
        data, computed = _read_batch(handle, head, size, remain, max_message_size)
        if computed is None:
            reason = (
                "partial batch header"
                if len(head) < LOG_OVERHEAD
                else f"batch declares {size} bytes, less than its {HEADER_SIZE}-byte header"
                if size < HEADER_SIZE
                else f"batch declares {size} bytes, {remain} remain"
            )
            dump.trailer["torn_tail"] = {"position": position, "bytes": remain, "reason": reason}
            dump.problem(None, position, f"torn tail: {reason}; the {remain} bytes from here are not batches")
            return
        item = _batch_item(dump, head, position, size, computed, base_offset, previous)
        if item["base_offset"] >= 0 and item["last_offset"] >= item["base_offset"]:
            previous = (position, item["last_offset"])
        if data is None:
            item["records_skipped"] = f"the batch is larger than --max-message-size ({max_message_size} bytes)"
        elif not item["problems"]:
            item["records"] = _records(dump, item, data, max_message_size)
        yield item
        position += size


def _read_batch(
    handle: IO[bytes], head: bytes, size: int, remain: int, max_message_size: int
) -> tuple[bytes | None, int | None]:
    """(the batch's bytes or None if larger than ``max_message_size``, computed CRC); (None, None)
    if the batch cannot be framed. A large batch is CRC-checked in chunks, never held whole."""
    if size < HEADER_SIZE or size > remain or len(head) < HEADER_SIZE:
        return None, None
    if size <= max_message_size:
        data = head + handle.read(size - HEADER_SIZE)
        return (data, crc32c(memoryview(data)[CRC_START:])) if len(data) == size else (None, None)
    computed, left = crc32c(head[CRC_START:]), size - HEADER_SIZE
    while left:
        chunk = handle.read(min(_CHUNK, left))
        if not chunk:
            return None, None  # the file shrank while being read
        computed, left = crc32c(chunk, computed), left - len(chunk)
    return None, computed


def _batch_item(
    dump: Dump, head: bytes, position: int, size: int, computed: int, base_offset: int, previous: tuple[int, int] | None
) -> dict[str, Any]:
    """The batch header's fields and what is wrong with them (RecordBatch.ensureValid, and the
    offset order LogSegment.recover requires)."""
    (base, _, epoch, magic, crc, attributes, last_delta, first_ts, max_ts, producer_id, _, _, count) = (
        HEADER.unpack_from(head)
    )
    last = base + last_delta
    compression = COMPRESSION_NAMES.get(attributes & COMPRESSION_MASK, "unknown")
    item = {
        "base_offset": base,
        "last_offset": last,
        "position": position,
        "size": size,
        "partition_leader_epoch": epoch,
        "magic": magic,
        "crc": crc,
        "crc_valid": computed == crc,
        "compression": compression,
        "record_count": count,
        "first_timestamp": first_ts,
        "max_timestamp": max_ts,
        "producer_id": producer_id,
        "records": [],
        "problems": [],
    }
    if magic != MAGIC:
        dump.problem(item, position, f"magic {magic}, expected {MAGIC}")
    if base < 0 or last_delta < 0:
        dump.problem(
            item,
            position,
            f"negative {'base offset' if base < 0 else 'last offset delta'} {base if base < 0 else last_delta}",
        )
    elif previous is not None and base <= previous[1]:
        dump.problem(
            item,
            position,
            f"offsets not ascending: base offset {base} is not above {previous[1]}, "
            f"the last offset of the batch at byte {previous[0]}",
        )
    elif base < base_offset or last - base_offset > INT32_MAX:
        dump.problem(
            item, position, f"offsets {base}..{last} outside the segment ({base_offset}..{base_offset + INT32_MAX})"
        )
    if not 0 <= count <= max(last_delta, 0) + 1:
        dump.problem(item, position, f"record count {count} does not fit last offset delta {last_delta}")
    if compression == "unknown":
        dump.problem(item, position, f"unknown compression code {attributes & COMPRESSION_MASK}")
    if computed != crc:
        dump.problem(item, position, f"CRC mismatch: stored {crc:#010x}, computed {computed:#010x}")
    return item


def _records(dump: Dump, item: dict[str, Any], data: bytes, limit: int) -> list[Any]:
    """The batch's records, with their offsets checked against the batch's; [] and a problem if they
    cannot be decoded. A gzip batch is decoded only if it inflates to at most ``limit`` bytes."""
    position, base, last = item["position"], item["base_offset"], item["last_offset"]
    if item["compression"] == "gzip":
        try:
            if _inflated_size(data[HEADER_SIZE:], limit) > limit:
                item["records_skipped"] = f"the batch inflates to more than --max-message-size ({limit} bytes)"
                return []
        except zlib.error as exc:
            dump.problem(item, position, f"bad gzip data: {exc}")
            return []
    try:
        records = RecordBatch(data).records()
    except (CorruptRecordError, zlib.error, EOFError, OSError) as exc:
        dump.problem(item, position, f"records: {exc}")
        return []
    previous = base - 1
    for record in records:
        if not previous < record.offset <= last:
            dump.problem(
                item,
                position,
                f"record offset {record.offset} is not after {previous} and within the batch's {base}..{last}",
            )
            break
        previous = record.offset
    return records


def _inflated_size(data: bytes, limit: int) -> int:
    """Size of gzip ``data`` inflated (every member), or ``limit`` + 1 as soon as it passes ``limit``:
    a small batch can inflate to gigabytes. zlib.error if it is not gzip data."""
    total = 0
    while data and total <= limit:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        total += len(inflater.decompress(data, limit + 1 - total))
        if inflater.unconsumed_tail:
            return limit + 1
        if not inflater.eof:
            raise zlib.error("gzip data ends before its end-of-stream marker")
        data = inflater.unused_data
    return total


# -------------------------------------------------------------------------- .index and .timeindex


class _LogHeaders:
    """The batch headers of the segment's ``.log``, read on demand, to check where index entries point."""

    def __init__(self, log: IO[bytes]) -> None:
        self._log = log
        self.size = os.fstat(log.fileno()).st_size
        self.position = 0  # of the next batch for ``next``
        self.stopped: str | None = None

    def at(self, position: int) -> tuple[int, int, int] | str:
        """(size, last offset, max timestamp) of the batch at ``position``, or why there is none."""
        if position >= self.size:
            return f"byte {position} is past the end of the {self.size}-byte log"
        self._log.seek(position)
        head = self._log.read(HEADER_SIZE)
        if len(head) < HEADER_SIZE:
            return f"the log has no whole batch header at byte {position}"
        fields = HEADER.unpack(head)
        size = fields[1] + LOG_OVERHEAD
        if size < HEADER_SIZE or position + size > self.size:
            return f"the log has no whole batch at byte {position}"
        return size, fields[0] + fields[6], fields[8]

    def next(self) -> tuple[int, int, int] | None:
        """(position, last offset, max timestamp) of the next batch in file order; None at the end
        or where batches can no longer be told apart (``stopped`` says why)."""
        if self.stopped is not None or self.position >= self.size:
            return None
        found = self.at(self.position)
        if isinstance(found, str):
            self.stopped = found
            return None
        position, (size, last, max_ts) = self.position, found
        self.position += size
        return position, last, max_ts


def _entries(dump: Dump, handle: IO[bytes], entry: struct.Struct) -> Iterator[tuple[int, tuple[int, ...]]]:
    """(byte position, fields) of every whole entry, read in chunks; a partial last entry is a problem."""
    step = _CHUNK - _CHUNK % entry.size
    position = 0
    while True:
        chunk = handle.read(step)
        usable = len(chunk) - len(chunk) % entry.size
        for i, fields in enumerate(entry.iter_unpack(memoryview(chunk)[:usable])):
            yield position + i * entry.size, fields
        position += usable
        if len(chunk) < step:
            break
    dump.trailer["trailing_bytes"] = trailing = len(chunk) - usable
    if trailing:
        dump.problem(None, position, f"{trailing} trailing bytes: not a whole {entry.size}-byte entry")


def _checked_entries(
    dump: Dump, handle: IO[bytes], entry: struct.Struct, names: tuple[str, str], base_offset: int
) -> Iterator[dict[str, Any]]:
    """The entries of an index as items named ``names``, checked as the loader checks them: no
    negative relative offset or position, keys strictly ascending, values never going down."""
    previous = None
    for at, raw in _entries(dump, handle, entry):
        item: dict[str, Any] = dict(zip(names, raw), problems=[])
        negative = next((n for n, v in zip(names, raw) if v < 0 and n in ("offset", "position")), None)
        item["offset"] += base_offset
        key, value = item[names[0]], item[names[1]]
        if negative is not None:
            dump.problem(
                item,
                at,
                f"negative {'relative offset' if negative == 'offset' else negative} {raw[names.index(negative)]}",
            )
        elif previous is not None and (key <= previous[0] or value < previous[1]):
            dump.problem(
                item,
                at,
                f"out of order: {names[0]} {key} at {names[1]} {value} after "
                f"{names[0]} {previous[0]} at {names[1]} {previous[1]}",
            )
        previous = (key, value)
        yield at, item


def _index_entries(
    dump: Dump, handle: IO[bytes], base_offset: int, log: _LogHeaders | None
) -> Iterator[dict[str, Any]]:
    """OffsetIndex entries (the last offset of a batch, its position), each naming the batch that
    really is at that position of the log (DumpLogSegments' index mismatches)."""
    for at, item in _checked_entries(dump, handle, _OFFSET_ENTRY, ("offset", "position"), base_offset):
        if log is not None and not item["problems"]:
            offset, position = item["offset"], item["position"]
            found = log.at(position)
            if isinstance(found, str):
                dump.problem(item, at, f"offset {offset} points at position {position}, but {found}")
            elif found[1] != offset:
                dump.problem(
                    item,
                    at,
                    f"offset {offset} points at position {position}, but the batch there ends at offset {found[1]}",
                )
        yield item


def _time_index_entries(
    dump: Dump, handle: IO[bytes], base_offset: int, log: _LogHeaders | None
) -> Iterator[dict[str, Any]]:
    """TimeIndex entries (a max timestamp so far, the last offset of the batch that has it), each
    naming a batch of the log that ends at that offset with that max timestamp (DumpLogSegments'
    time index checks). The log is walked once, alongside."""
    batch = None
    for at, item in _checked_entries(dump, handle, _TIME_ENTRY, ("timestamp", "offset"), base_offset):
        if log is not None and not item["problems"]:
            timestamp, offset = item["timestamp"], item["offset"]
            while batch is None or batch[1] < offset:
                batch = log.next()
                if batch is None:
                    break
            if batch is None:
                why = f" ({log.stopped})" if log.stopped else ""
                dump.problem(item, at, f"offset {offset} is past the last batch of the log{why}")
            elif batch[1] != offset:
                dump.problem(
                    item,
                    at,
                    f"no batch of the log ends at offset {offset} (the one at position {batch[0]} ends at {batch[1]})",
                )
            elif batch[2] != timestamp:
                dump.problem(
                    item,
                    at,
                    f"timestamp {timestamp}, but the batch ending at offset {offset} "
                    f"(position {batch[0]}) has max timestamp {batch[2]}",
                )
        yield item


# ----------------------------------------------------------------------------------- checkpoints


def _checkpoint_entries(dump: Dump, handle: IO[bytes], fields: tuple[str, ...]) -> Iterator[dict[str, Any]]:
    """Entries of a checkpoint file (version line 0, a count line, that many entries), checked as
    the log loader reads them: integers, none negative; epochs ascending with start offsets not
    going down; an offset checkpoint holds exactly one entry. Read line by line, lines bounded."""
    position, number, count, entries, previous = 0, 0, None, 0, None
    while True:
        raw = handle.readline(MAX_CHECKPOINT_LINE + 1)
        if not raw:
            break
        start, position, number = position, position + len(raw), number + 1
        line = raw[:-1] if raw.endswith(b"\n") else raw
        if len(line) > MAX_CHECKPOINT_LINE:
            dump.problem(None, start, f"line {number} is longer than {MAX_CHECKPOINT_LINE} bytes: not a checkpoint")
            return
        if number <= 2:
            value = _integer(line)
            if number == 1 and value != 0:
                dump.problem(None, start, f"version line {_show(line)}: expected 0")
                return
            if number == 2 and (value is None or value < 0):
                dump.problem(None, start, f"count line {_show(line)}: expected a count of entries")
                return
            count = value
            continue
        entries += 1
        values = [_integer(v) for v in line.split(b" ")]
        item: dict[str, Any] = {"line": number, "problems": []}
        if len(values) != len(fields) or None in values:
            item["text"] = _show(line)
            dump.problem(
                item,
                start,
                f"line {number} {_show(line)}: expected {' '.join(fields)} as "
                f"{len(fields)} integer{'s' if len(fields) > 1 else ''}",
            )
            yield item
            continue
        item.update(zip(fields, values))
        if min(values) < 0:
            negative = next(f for f, v in zip(fields, values) if v < 0)
            dump.problem(item, start, f"line {number}: negative {negative}")
        elif previous is not None and len(fields) == 2 and not (previous[0] < values[0] and previous[1] <= values[1]):
            dump.problem(
                item,
                start,
                f"line {number}: epoch {values[0]} from offset {values[1]} after epoch "
                f"{previous[0]} from offset {previous[1]}: epochs must ascend, start "
                f"offsets must not go down",
            )
        previous = values
        yield item
    if number < 2:
        dump.problem(None, position, "no version and count lines")
    elif count != entries:
        dump.problem(None, position, f"the count line says {count} entries, the file has {entries}")
    elif len(fields) == 1 and entries != 1:
        dump.problem(None, position, f"{entries} entries: an offset checkpoint holds exactly one")


def _integer(text: bytes) -> int | None:
    """The int64 ``text`` spells in plain digits, None otherwise."""
    if not _INTEGER.fullmatch(text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def _show(line: bytes) -> str:
    return repr(line)[1:]  # b'...' without the b: non-ASCII bytes escaped


# -------------------------------------------------------------------------------------- output


def _key_text(key: bytes | None) -> str:
    if key is None:
        return "null"
    try:
        text = key.decode("utf-8")
    except UnicodeDecodeError:
        return "0x" + key.hex()
    return text if text.isprintable() else "0x" + key.hex()


def _batch_text(b: dict[str, Any]) -> list[str]:
    lines = [
        f"baseOffset: {b['base_offset']} lastOffset: {b['last_offset']} count: {b['record_count']} "
        f"position: {b['position']} size: {b['size']} partitionLeaderEpoch: {b['partition_leader_epoch']} "
        f"magic: {b['magic']} compresscodec: {b['compression']} maxTimestamp: {b['max_timestamp']} "
        f"crc: {b['crc']} isvalid: {'true' if b['crc_valid'] else 'false'}"
    ]
    lines += [
        f"| offset: {offset} CreateTime: {timestamp} keySize: {-1 if key is None else len(key)} "
        f"valueSize: {-1 if value is None else len(value)} headers: {len(headers)} key: {_key_text(key)}"
        for offset, timestamp, key, value, headers in b["records"]
    ]
    if "records_skipped" in b:
        lines.append(f"| records not decoded: {b['records_skipped']}")
    return lines


def _entry_text(e: dict[str, Any]) -> list[str]:
    if "text" in e:
        return [f"line {e['line']}: {e['text']}"]
    return [" ".join(f"{k}: {v}" for k, v in e.items() if k not in ("line", "problems"))]


def _problem_text(problems: list[dict[str, Any]]) -> list[str]:
    return [f"problem at byte {p['position']}: {p['message']}" for p in problems]


def write_text(dump: Dump, out: IO[str]) -> None:
    """Kafka-style lines, each batch or entry written as soon as it is read, problems beside it."""
    out.write(f"Dumping {dump.path}\n")
    if dump.kind == "log":
        out.write(f"Log starting offset: {dump.fields['base_offset']}\n")
    elif dump.kind != "checkpoint" and dump.fields["checked_against"] is None:
        out.write("no .log beside it: entries not checked against the log\n")
    render = _batch_text if dump.kind == "log" else _entry_text
    for item in dump.items:
        out.write("\n".join(render(item) + _problem_text(item["problems"])) + "\n")
    for line in _problem_text(dump.trailer["problems"]):
        out.write(line + "\n")


def _record_json(record: Any) -> dict[str, Any]:
    offset, timestamp, key, value, headers = record
    text = None
    if key is not None:
        try:
            text = key.decode("utf-8")
        except UnicodeDecodeError:
            pass
    return {
        "offset": offset,
        "timestamp": timestamp,
        "key": text,
        "key_hex": None if key is None else key.hex(),
        "key_size": -1 if key is None else len(key),
        "value_size": -1 if value is None else len(value),
        "headers": len(headers),
    }


def write_json(dump: Dump, out: IO[str]) -> None:
    """One JSON document, written as it is read: the file's fields, one batch or entry a line, then
    the trailer, ``problems`` (the first ``MAX_KEPT_PROBLEMS``), ``problem_count`` and ``valid``."""
    head = "".join(f"{json.dumps(k)}: {json.dumps(v)}, " for k, v in dump.fields.items())
    out.write("{" + head + json.dumps(dump.items_name) + ": [")
    separator = "\n  "
    for item in dump.items:
        if dump.kind == "log":
            item = dict(item, records=[_record_json(r) for r in item["records"]])
        out.write(separator + json.dumps(item, sort_keys=True))
        separator = ",\n  "
    tail = {k: v for k, v in dump.trailer.items() if k != "problems"}
    tail.update(problems=dump.first_problems, problem_count=dump.problem_count, valid=dump.valid)
    out.write("\n], " + json.dumps(tail, sort_keys=True)[1:] + "\n")
