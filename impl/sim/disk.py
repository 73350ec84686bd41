"""What a broker's disk keeps when its machine loses power, told batch by batch.

Page-cache write-back is sequential: of the batches past the recovery point, the first few may
have reached the disk before the power went, and the next one may be half written (a torn write,
which log recovery finds and cuts). The simulated file system is then told how long each segment
file was on the disk.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..storage import Log


class TooFewUnflushedBatches(ValueError):
    """A power loss asks more unflushed batches to reach the disk than the page cache holds."""


@dataclass(frozen=True)
class WriteBack:
    """How far the page cache had written the log back: file lengths on the disk by path, and the
    offset up to which whole batches are there."""

    lengths: dict[str, int]
    durable: int


def page_cache_write_back(log: Log, survive: int, torn: bool) -> WriteBack:
    """The first ``survive`` unflushed batches reached the disk; with ``torn`` half of the next one
    did too. TooFewUnflushedBatches, saying how many, if the log has not that many."""
    batches = log.unflushed_batches()
    if survive > len(batches) or (torn and survive == len(batches)):
        plural = "es" if len(batches) != 1 else ""
        raise TooFewUnflushedBatches(f"only {len(batches)} unflushed batch{plural}, {survive + torn} needed")
    lengths: dict[str, int] = {}
    for batch in batches[:survive]:
        lengths[batch.path] = batch.position + batch.size
    if torn:
        half = batches[survive]
        lengths[half.path] = half.position + max(1, half.size // 2)
    return WriteBack(lengths, batches[survive - 1].next_offset if survive else log.recovery_point)
