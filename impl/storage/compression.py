"""The codecs of record batch bodies (attributes bits 0-2), as Kafka's producers write them.

gzip is the zlib stream format; snappy is xerial's framing (Kafka's Java client writes it through
``SnappyOutputStream``) and reads raw snappy too, as ``SnappyInputStream`` does; lz4 is the LZ4
frame format of KIP-57 with independent 64 KB blocks; zstd is a standard zstd frame.

Decompression is bounded: a body that would inflate past ``limit`` bytes is refused after producing
at most about that much, so a compression bomb costs ``limit`` bytes of memory, never its full size.
Every failure is a ``CorruptRecordError`` whose message the caller prefixes with the batch.
"""

from __future__ import annotations

import gzip
import struct
import zlib

import cramjam
import lz4.frame
import zstandard

from .errors import CorruptRecordError

NONE, GZIP, SNAPPY, LZ4, ZSTD = range(5)
CODECS = {"none": NONE, "gzip": GZIP, "snappy": SNAPPY, "lz4": LZ4, "zstd": ZSTD}
NAMES = {code: name for name, code in CODECS.items()}

GZIP_LEVEL = 6  # java.util.zip's default, as Kafka's GzipCompression
ZSTD_LEVEL = 3  # Kafka's ZstdCompression default
XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)  # version 1, compatible with 1
XERIAL_BLOCK = 32 * 1024  # xerial's default block size
_BLOCK_LENGTH = struct.Struct(">i")
_CHUNK = 1 << 20  # output per step of a streaming decompression
# a zstd block never yields more than 128 KB and takes at least 4 bytes (an RLE block): feeding
# ``4 * budget // 128 KB`` input bytes at a time bounds what one step can produce
_ZSTD_BLOCK_MAX = 128 * 1024


def compress(code: int, data: bytes) -> bytes:
    """Compress a batch body with codec ``code``; same bytes for the same input on every run."""
    if code == GZIP:
        return gzip.compress(data, compresslevel=GZIP_LEVEL, mtime=0)  # mtime=0: deterministic
    if code == SNAPPY:
        view = memoryview(data)
        parts = [XERIAL_HEADER]
        for start in range(0, len(data), XERIAL_BLOCK):
            block = cramjam.snappy.compress_raw(view[start : start + XERIAL_BLOCK])
            parts += (_BLOCK_LENGTH.pack(len(block)), block)
        return b"".join(parts)
    if code == LZ4:
        # the frame KafkaLZ4BlockOutputStream writes: 64 KB independent blocks, no content size
        return lz4.frame.compress(
            data, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False, content_checksum=False, store_size=False
        )
    if code == ZSTD:
        return zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(data)
    raise ValueError(f"unknown compression code {code}")


def decompress(code: int, data: bytes, limit: int) -> bytes:
    """The body that ``data`` inflates to; CorruptRecordError if it is malformed or exceeds ``limit``."""
    name = NAMES.get(code, str(code))
    try:
        if code == GZIP:
            return _gunzip(data, limit)
        if code == SNAPPY:
            return _unsnappy(data, limit)
        if code == LZ4:
            return _unlz4(data, limit)
        if code == ZSTD:
            return _unzstd(data, limit)
    except (zlib.error, cramjam.DecompressionError, RuntimeError, ValueError, zstandard.ZstdError) as exc:
        raise CorruptRecordError(f"bad {name} data: {exc}") from None
    raise CorruptRecordError(f"unknown compression code {code}")


def _too_large(name: str, limit: int) -> CorruptRecordError:
    return CorruptRecordError(f"{name} data inflates past the {limit}-byte limit (a compression bomb?)")


def _frames(name: str, data: bytes, limit: int, open_frame) -> bytes:
    """Concatenated gzip members or lz4 frames (as GZIPInputStream reads members one after another),
    inflated in steps of at most ``_CHUNK`` bytes so that the output stops just past ``limit``."""
    out: list[bytes] = []
    total = 0
    rest = data
    while True:
        frame = open_frame()
        pending = rest
        while True:
            chunk = frame.decompress(pending, min(limit - total, _CHUNK) + 1)
            total += len(chunk)
            if total > limit:
                raise _too_large(name, limit)
            out.append(chunk)
            pending = getattr(frame, "unconsumed_tail", b"")  # lz4 keeps its own
            if frame.eof or not pending and not chunk:
                break
        if not frame.eof:
            raise CorruptRecordError(f"bad {name} data: truncated stream")
        rest = frame.unused_data
        if not rest:
            return b"".join(out)


def _gunzip(data: bytes, limit: int) -> bytes:
    return _frames("gzip", data, limit, lambda: zlib.decompressobj(31))  # 31: gzip header, trailer


def _unsnappy(data: bytes, limit: int) -> bytes:
    if len(data) < len(XERIAL_HEADER) or data[: len(XERIAL_MAGIC)] != XERIAL_MAGIC:
        return _snappy_block(data, 0, limit)
    out: list[bytes] = []
    view, pos, total = memoryview(data), len(XERIAL_HEADER), 0
    while pos < len(data):
        if pos + 4 > len(data):
            raise CorruptRecordError("bad snappy data: torn xerial block length")
        (size,) = _BLOCK_LENGTH.unpack_from(data, pos)
        pos += 4
        if size < 0 or pos + size > len(data):
            raise CorruptRecordError(f"bad snappy data: xerial block of {size} bytes, {len(data) - pos} remain")
        block = _snappy_block(view[pos : pos + size], total, limit)
        total += len(block)
        out.append(block)
        pos += size
    return b"".join(out)


def _snappy_block(block, total: int, limit: int) -> bytes:
    """A raw snappy block declares its length up front: checked, with the ``total`` inflated before
    it, before anything is allocated."""
    if total + cramjam.snappy.decompress_raw_len(block) > limit:
        raise _too_large("snappy", limit)
    return bytes(cramjam.snappy.decompress_raw(block))


def _unlz4(data: bytes, limit: int) -> bytes:
    return _frames("lz4", data, limit, lz4.frame.LZ4FrameDecompressor)


def _unzstd(data: bytes, limit: int) -> bytes:
    """zstd frames; one that states its content size within the limit is decoded in one call."""
    content_size = zstandard.frame_content_size(data)
    if content_size > limit:
        raise _too_large("zstd", limit)
    if content_size >= 0:
        try:
            return zstandard.ZstdDecompressor().decompress(data, allow_extra_data=False)
        except zstandard.ZstdError:
            pass  # more frames, or damage: the stream below tells
    out: list[bytes] = []
    view, pos, total = memoryview(data), 0, 0
    decompressor = zstandard.ZstdDecompressor()
    while pos < len(data):
        frame = decompressor.decompressobj()
        while not frame.eof:
            if pos >= len(data):
                raise CorruptRecordError("bad zstd data: truncated frame")
            fed = view[pos : pos + max(4, (limit - total) // _ZSTD_BLOCK_MAX * 4)]
            pos += len(fed)
            chunk = frame.decompress(fed)
            total += len(chunk)
            if total > limit:
                raise _too_large("zstd", limit)
            out.append(chunk)
        pos -= len(frame.unused_data)
    return b"".join(out)
