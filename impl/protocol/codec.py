"""A compact versioned binary codec: every request and response travels as real bytes.

A frame is a 9-byte header ``>BhhI`` (frame type 0 request / 1 response, api key, api version,
correlation id) followed by the body. A body is laid out by the message's schema for that version:
fixed-size scalars are packed together with one precompiled ``struct.Struct``; int32 arrays carry
a count; strings a length and their UTF-8; record sets (what a producer sends) carry a count and a
CRC-32C over their bytes, so a corrupted record is detected rather than appended; fetched data travels as the log's
own record batch bytes, each
batch checked by its CRC when the follower appends it. Decoding never trusts a length: any truncated,
oversized or inconsistent frame raises ``DecodeError``.
"""

from __future__ import annotations

import struct
from dataclasses import fields
from typing import Any, NamedTuple

import crc32c

REQUEST, RESPONSE = 0, 1
HEADER = struct.Struct(">BhhI")
_COUNT = struct.Struct(">i")
_RECORDS_HEAD = struct.Struct(">iI")
_RECORD_HEAD = struct.Struct(">qiii")  # offset, leader epoch, key length, value length
_SCALARS = {"i8": "b", "bool": "?", "i16": "h", "i32": "i", "i64": "q"}
MAX_ARRAY = 1 << 26


class DecodeError(ValueError):
    """Bytes that are not a well-formed frame; the message says what is wrong."""


class WireRecord(NamedTuple):
    """One record as it travels: offset and leader epoch (-1 before the leader assigns them)."""

    offset: int
    leader_epoch: int
    key: bytes | None
    value: bytes


class Header(NamedTuple):
    """The decoded 9-byte frame header."""

    frame_type: int
    api_key: int
    api_version: int
    correlation_id: int


class _Layout:
    """The compiled body layout of one message class at one version."""

    __slots__ = ("cls", "ops", "names", "defaults")

    def __init__(self, cls: type, schema: tuple[tuple[str, str], ...]) -> None:
        self.cls = cls
        self.names = tuple(n for n, _ in schema)
        self.defaults = {f.name: f.default for f in fields(cls) if f.name not in self.names}
        ops: list[tuple[str, Any, tuple[str, ...]]] = []
        run: list[tuple[str, str]] = []
        for name, kind in schema + (("", "end"),):
            if kind in _SCALARS:
                run.append((name, kind))
                continue
            if run:
                ops.append(
                    ("fixed", struct.Struct(">" + "".join(_SCALARS[k] for _, k in run)), tuple(n for n, _ in run))
                )
                run = []
            if kind in ("[i32]", "[i64]"):
                ops.append(("array", _SCALARS[kind[1:-1]], (name,)))
            elif kind == "records":
                ops.append(("records", None, (name,)))
            elif kind == "bytes":
                ops.append(("bytes", None, (name,)))
            elif kind == "str":
                ops.append(("str", None, (name,)))
            elif kind != "end":
                raise TypeError(f"unknown field type {kind!r}")
        self.ops = tuple(ops)

    def encode(self, msg: Any, out: list[bytes]) -> None:
        for op, st, names in self.ops:
            if op == "fixed":
                out.append(st.pack(*[getattr(msg, n) for n in names]))
            elif op == "array":
                items = getattr(msg, names[0])
                out.append(struct.pack(f">i{len(items)}{st}", len(items), *items))
            elif op == "bytes":
                data = getattr(msg, names[0])
                out.append(_COUNT.pack(len(data)))
                out.append(data)
            elif op == "str":
                data = getattr(msg, names[0]).encode("utf-8")
                out.append(_COUNT.pack(len(data)))
                out.append(data)
            else:
                out.append(_encode_records(getattr(msg, names[0])))

    def decode(self, data: bytes, pos: int) -> Any:
        values = dict(self.defaults)
        for op, st, names in self.ops:
            if op == "fixed":
                if pos + st.size > len(data):
                    raise DecodeError(f"{self.cls.__name__}: body truncated at byte {pos}")
                values.update(zip(names, st.unpack_from(data, pos)))
                pos += st.size
            elif op == "array":
                size = struct.calcsize(st)
                n = _read_count(data, pos, size, self.cls.__name__)
                values[names[0]] = tuple(struct.unpack_from(f">{n}{st}", data, pos + 4))
                pos += 4 + size * n
            elif op == "bytes":
                n = _read_count(data, pos, 1, self.cls.__name__)
                values[names[0]] = bytes(data[pos + 4 : pos + 4 + n])
                pos += 4 + n
            elif op == "str":
                n = _read_count(data, pos, 1, self.cls.__name__)
                try:
                    values[names[0]] = bytes(data[pos + 4 : pos + 4 + n]).decode("utf-8")
                except UnicodeDecodeError:
                    raise DecodeError(f"{self.cls.__name__}: a string at byte {pos} is not UTF-8") from None
                pos += 4 + n
            else:
                values[names[0]], pos = _decode_records(data, pos, self.cls.__name__)
        if pos != len(data):
            raise DecodeError(f"{self.cls.__name__}: {len(data) - pos} trailing bytes")
        return self.cls(**values)


def _read_count(data: bytes, pos: int, item_size: int, what: str) -> int:
    if pos + 4 > len(data):
        raise DecodeError(f"{what}: array count truncated at byte {pos}")
    (n,) = _COUNT.unpack_from(data, pos)
    if n < 0 or n > MAX_ARRAY or pos + 4 + n * item_size > len(data):
        raise DecodeError(f"{what}: bad array length {n} at byte {pos}")
    return n


def _encode_records(records: tuple[WireRecord, ...]) -> bytes:
    parts = []
    pack = _RECORD_HEAD.pack
    for offset, epoch, key, value in records:
        if key is None:
            parts.append(pack(offset, epoch, -1, len(value)))
        else:
            parts.append(pack(offset, epoch, len(key), len(value)))
            parts.append(key)
        parts.append(value)
    payload = b"".join(parts)
    return _RECORDS_HEAD.pack(len(records), crc32c.crc32c(payload)) + payload


def _decode_records(data: bytes, pos: int, what: str) -> tuple[tuple[WireRecord, ...], int]:
    if pos + _RECORDS_HEAD.size > len(data):
        raise DecodeError(f"{what}: record set header truncated at byte {pos}")
    n, crc = _RECORDS_HEAD.unpack_from(data, pos)
    pos += _RECORDS_HEAD.size
    if n < 0 or n > MAX_ARRAY:
        raise DecodeError(f"{what}: bad record count {n}")
    start, out, end = pos, [], len(data)
    for _ in range(n):
        if pos + _RECORD_HEAD.size > end:
            raise DecodeError(f"{what}: record truncated at byte {pos}")
        offset, epoch, klen, vlen = _RECORD_HEAD.unpack_from(data, pos)
        pos += _RECORD_HEAD.size
        if klen < -1 or vlen < 0 or pos + max(klen, 0) + vlen > end:
            raise DecodeError(f"{what}: bad record lengths ({klen}, {vlen}) at byte {pos}")
        key = None if klen < 0 else bytes(data[pos : pos + klen])
        pos += max(klen, 0)
        out.append(WireRecord(offset, epoch, key, bytes(data[pos : pos + vlen])))
        pos += vlen
    if crc32c.crc32c(bytes(data[start:pos])) != crc:
        raise DecodeError(f"{what}: record set CRC mismatch")
    return tuple(out), pos


class Codec:
    """Registry of (api key, version) -> request and response layouts."""

    def __init__(self) -> None:
        self._requests: dict[tuple[int, int], _Layout] = {}
        self._responses: dict[tuple[int, int], _Layout] = {}
        self._response_class: dict[int, type] = {}

    def register(
        self,
        api_key: int,
        request: type,
        response: type | None,
        request_schemas: dict[int, tuple],
        response_schemas: dict[int, tuple],
    ) -> None:
        for version, schema in request_schemas.items():
            self._requests[(api_key, version)] = _Layout(request, schema)
        if response is not None:
            self._response_class[api_key] = response
            for version, schema in response_schemas.items():
                self._responses[(api_key, version)] = _Layout(response, schema)

    def has_response(self, api_key: int) -> bool:
        return api_key in self._response_class

    def encode(self, frame_type: int, api_key: int, version: int, correlation_id: int, msg: Any) -> bytes:
        table = self._requests if frame_type == REQUEST else self._responses
        layout = table.get((api_key, version))
        if layout is None or not isinstance(msg, layout.cls):
            raise ValueError(f"cannot encode {type(msg).__name__} as api {api_key} v{version}")
        out = [HEADER.pack(frame_type, api_key, version, correlation_id)]
        layout.encode(msg, out)
        return b"".join(out)

    def decode_header(self, data: bytes) -> Header:
        if len(data) < HEADER.size:
            raise DecodeError(f"frame of {len(data)} bytes is shorter than its {HEADER.size}-byte header")
        header = Header(*HEADER.unpack_from(data, 0))
        if header.frame_type not in (REQUEST, RESPONSE):
            raise DecodeError(f"unknown frame type {header.frame_type}")
        return header

    def decode_body(self, header: Header, data: bytes) -> Any:
        table = self._requests if header.frame_type == REQUEST else self._responses
        layout = table.get((header.api_key, header.api_version))
        if layout is None:
            raise DecodeError(f"unsupported api {header.api_key} version {header.api_version}")
        return layout.decode(data, HEADER.size)

    def error_response(self, api_key: int, error: int) -> Any | None:
        """A response to an undecodable request: only the error code set (None for one-way apis)."""
        cls = self._response_class.get(api_key)
        return None if cls is None else cls(error=error)

    def response_versions(self, api_key: int) -> list[int]:
        return sorted(v for (k, v) in self._responses if k == api_key)
