"""What a broker's disk keeps when its machine loses power, told batch by batch.

Page-cache write-back is sequential: of the batches past the recovery point, the first few may
have reached the disk before the power went, and the next one may be half written (a torn write,
which log recovery finds and cuts). The simulated file system is then told how long each segment
file was on the disk. A torn batch's sectors past its written prefix may hold garbage up to the
length its header declares (``tail``: stale bytes of an earlier write, or random ones), which only
the CRC check of log recovery catches.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from ..storage import Log
from ..storage.records import HEADER_SIZE


class TooFewUnflushedBatches(ValueError):
    """A power loss asks more unflushed batches to reach the disk than the page cache holds."""


@dataclass(frozen=True)
class WriteBack:
    """How far the page cache had written the log back: file lengths on the disk by path, and the
    offset up to which whole batches are there."""

    lengths: dict[str, int]
    durable: int
    garbage: dict[str, tuple[int, bytes]] = field(default_factory=dict)  # path -> (position, bytes) written over


CUT = "cut"  # a torn batch cut where the write stopped: nothing past its written prefix (the default)
TAILS = (CUT, "stale", "random")  # what a torn batch holds past its written prefix


def page_cache_write_back(log: Log, survive: int, torn: bool, tail: str = CUT, seed: int = 0) -> WriteBack:
    """The first ``survive`` unflushed batches reached the disk; with ``torn`` half of the next one
    did too, and with a ``tail`` other than ``cut`` its other half holds garbage: the bytes of the
    batch before it (``stale``; zeros for a file's first batch) or bytes drawn from ``seed`` and
    the batch's position (``random``). TooFewUnflushedBatches, saying how many, if the log has not
    that many."""
    batches = log.unflushed_batches()
    if survive > len(batches) or (torn and survive == len(batches)):
        plural = "es" if len(batches) != 1 else ""
        raise TooFewUnflushedBatches(f"only {len(batches)} unflushed batch{plural}, {survive + torn} needed")
    lengths: dict[str, int] = {}
    for batch in batches[:survive]:
        lengths[batch.path] = batch.position + batch.size
    garbage: dict[str, tuple[int, bytes]] = {}
    if torn:
        half = batches[survive]
        cut = half.position + max(1, half.size // 2)
        lengths[half.path] = cut
        if tail != CUT:
            # the header's sector was written, the records' were not: the header still declares the
            # batch's length and CRC, so only the CRC check can tell (Kafka's batch.ensureValid)
            cut = half.position + HEADER_SIZE + (half.size - HEADER_SIZE) // 2
            lengths[half.path] = half.position + half.size
            garbage[half.path] = (cut, _garbage(log, half, half.position + half.size - cut, tail, seed))
    return WriteBack(lengths, batches[survive - 1].next_offset if survive else log.recovery_point, garbage)


def _garbage(log: Log, batch, size: int, tail: str, seed: int) -> bytes:
    if tail == "random":
        return random.Random(seed * 2**32 + batch.position).randbytes(size)
    if batch.position == 0:
        return bytes(size)
    earlier = log.fs.read_file(batch.path)[: batch.position]  # what an earlier write left in the sectors
    return (earlier * (size // len(earlier) + 1))[-size:]
