"""Decoding segment files for inspection (kafka-dump-log): batches of a ``.log``, entries of indexes.
Reads whatever is there, never repairs: a corrupt batch is reported and the scan goes on if its
length is sane; a torn tail is reported with its position."""
from __future__ import annotations

import struct
from typing import Any

from .errors import CorruptRecordError
from .records import HEADER_SIZE, LOG_OVERHEAD, RecordBatch
from .segment import SEGMENT_FILE

_LENGTH = struct.Struct(">qi")
_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


CHECKPOINT_FIELDS = {"leader-epoch-checkpoint": ("epoch", "start_offset"),
                     "replication-offset-checkpoint": ("high_watermark",),
                     "recovery-point-offset-checkpoint": ("recovery_point",)}


def file_kind(name: str) -> tuple[str, int]:
    """('log' | 'index' | 'timeindex', base offset) from a segment file name, ('checkpoint', 0) for
    a checkpoint file; ValueError otherwise."""
    if name in CHECKPOINT_FIELDS:
        return "checkpoint", 0
    match = SEGMENT_FILE.match(name)
    if match is None:
        raise ValueError(f"{name!r} is not a segment file: expected <20-digit base offset>.log, .index "
                         f"or .timeindex, or one of {', '.join(sorted(CHECKPOINT_FIELDS))}")
    return match.group(2), int(match.group(1))


def dump_checkpoint_bytes(data: bytes, name: str) -> dict[str, Any]:
    """Entries of a checkpoint file (version line, count line, entries), or the reason it is malformed."""
    fields = CHECKPOINT_FIELDS[name]
    try:
        lines = data.decode("ascii").splitlines()
        if len(lines) < 2 or lines[0] != "0" or int(lines[1]) != len(lines) - 2:
            raise ValueError("expected version 0, a count and that many entries")
        entries = []
        for line in lines[2:]:
            values = [int(v) for v in line.split(" ")]
            if len(values) != len(fields):
                raise ValueError(f"entry {line!r} does not have {len(fields)} fields")
            entries.append(dict(zip(fields, values)))
    except (UnicodeDecodeError, ValueError) as exc:
        return {"kind": "checkpoint", "size": len(data), "entries": [], "error": str(exc), "valid": False}
    return {"kind": "checkpoint", "size": len(data), "entries": entries, "valid": True}


def _text(data: bytes | None) -> str | None:
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def dump_log_bytes(data: bytes) -> dict[str, Any]:
    batches: list[dict[str, Any]] = []
    position, end, torn = 0, len(data), None
    while position < end:
        if end - position < LOG_OVERHEAD:
            torn = {"position": position, "bytes": end - position, "reason": "partial batch header"}
            break
        base, length = _LENGTH.unpack_from(data, position)
        size = length + LOG_OVERHEAD
        if size < HEADER_SIZE or position + size > end:
            torn = {"position": position, "bytes": end - position,
                    "reason": f"batch declares {size} bytes, {end - position} remain"}
            break
        batch = RecordBatch(data[position:position + size])
        entry: dict[str, Any] = {
            "base_offset": batch.base_offset, "last_offset": batch.last_offset, "position": position,
            "size": size, "partition_leader_epoch": batch.partition_leader_epoch, "magic": batch.magic,
            "crc": batch.crc, "crc_valid": batch.is_valid(), "compression": batch.compression,
            "record_count": batch.record_count, "first_timestamp": batch.first_timestamp,
            "max_timestamp": batch.max_timestamp, "producer_id": batch.producer_id, "records": [],
        }
        if entry["crc_valid"]:
            try:
                entry["records"] = [
                    {"offset": r.offset, "timestamp": r.timestamp_ms, "key": _text(r.key),
                     "key_hex": None if r.key is None else r.key.hex(),
                     "key_size": -1 if r.key is None else len(r.key),
                     "value_size": -1 if r.value is None else len(r.value), "headers": len(r.headers)}
                    for r in batch.records()]
            except CorruptRecordError as exc:
                entry["error"] = str(exc)
        batches.append(entry)
        position += size
    return {"kind": "log", "size": end, "batches": batches, "torn_tail": torn,
            "valid": torn is None and all(b["crc_valid"] and "error" not in b for b in batches)}


def dump_index_bytes(data: bytes, kind: str, base_offset: int) -> dict[str, Any]:
    entry = _OFFSET_ENTRY if kind == "index" else _TIME_ENTRY
    usable = len(data) - len(data) % entry.size
    if kind == "index":
        entries = [{"offset": base_offset + rel, "position": pos}
                   for rel, pos in entry.iter_unpack(data[:usable])]
    else:
        entries = [{"timestamp": ts, "offset": base_offset + rel}
                   for ts, rel in entry.iter_unpack(data[:usable])]
    return {"kind": kind, "size": len(data), "base_offset": base_offset, "entries": entries,
            "trailing_bytes": len(data) - usable, "valid": len(data) == usable}


def render_text(path: str, dump: dict[str, Any]) -> str:
    lines = [f"Dumping {path}"]
    if dump["kind"] == "log":
        for b in dump["batches"]:
            lines.append(
                f"baseOffset: {b['base_offset']} lastOffset: {b['last_offset']} count: {b['record_count']} "
                f"position: {b['position']} size: {b['size']} partitionLeaderEpoch: {b['partition_leader_epoch']} "
                f"magic: {b['magic']} compresscodec: {b['compression']} maxTimestamp: {b['max_timestamp']} "
                f"crc: {b['crc']} isvalid: {str(b['crc_valid']).lower()}")
            for r in b["records"]:
                key = "null" if r["key_hex"] is None else (r["key"] if r["key"] is not None else "0x" + r["key_hex"])
                lines.append(f"| offset: {r['offset']} CreateTime: {r['timestamp']} keySize: {r['key_size']} "
                             f"valueSize: {r['value_size']} headers: {r['headers']} key: {key}")
            if "error" in b:
                lines.append(f"| error: {b['error']}")
        if dump["torn_tail"]:
            t = dump["torn_tail"]
            lines.append(f"torn tail: {t['bytes']} bytes at position {t['position']} ({t['reason']})")
    elif dump["kind"] == "checkpoint":
        lines += [" ".join(f"{k}: {v}" for k, v in e.items()) for e in dump["entries"]]
        if "error" in dump:
            lines.append(f"malformed: {dump['error']}")
    else:
        for e in dump["entries"]:
            if dump["kind"] == "index":
                lines.append(f"offset: {e['offset']} position: {e['position']}")
            else:
                lines.append(f"timestamp: {e['timestamp']} offset: {e['offset']}")
        if dump["trailing_bytes"]:
            lines.append(f"{dump['trailing_bytes']} trailing bytes: not a whole entry")
    return "\n".join(lines)
