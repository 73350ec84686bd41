"""Splitting the requested seed space into tasks, skipping ranges a previous run completed.

The cut points depend only on the command (first seed, count, number of tasks), never on what
is already done: rerunning a killed campaign plans the very same seed ranges, so a straggler
task of the killed run that still finishes writes the same file name with the same rows as its
replacement, instead of an overlapping range.
"""

from __future__ import annotations

from isrcheck.conformance.vocabulary import Number

Range = tuple[int, int]  # [lo, hi)

# How big a campaign may be, for the command line and the Python API alike: every seed range is
# a file and a marker, and every task an entry the driver plans.
SCHEDULES = Number(int, 1, 1_000_000_000)
STEPS = Number(int, 1, 1_000_000)  # of one random walk; the Parquet steps column is int32
PARTITIONS = Number(int, 1, 1_000_000)


def missing(requested: Range, done: list[Range]) -> list[Range]:
    """The parts of ``requested`` not covered by any range in ``done``, in seed order."""
    lo, hi = requested
    gaps = []
    cursor = lo
    for dlo, dhi in sorted(done):
        if dhi <= cursor or dlo >= hi:
            continue
        if dlo > cursor:
            gaps.append((cursor, dlo))
        cursor = max(cursor, dhi)
    if cursor < hi:
        gaps.append((cursor, hi))
    return gaps


def split(gaps: list[Range], tasks: int) -> list[list[Range]]:
    """Cut ``gaps`` into ``tasks`` chunks of near-equal seed counts (fewer if seeds are fewer).

    A chunk may span a gap boundary, so it is a list of ranges; each range becomes one Parquet
    file and one ledger marker.
    """
    total = sum(hi - lo for lo, hi in gaps)
    if total == 0:
        return []
    tasks = max(1, min(tasks, total))
    sizes = [total // tasks + (1 if i < total % tasks else 0) for i in range(tasks)]
    chunks: list[list[Range]] = []
    queue = list(gaps)
    for size in sizes:
        chunk: list[Range] = []
        while size:
            lo, hi = queue[0]
            take = min(size, hi - lo)
            chunk.append((lo, lo + take))
            size -= take
            if lo + take == hi:
                queue.pop(0)
            else:
                queue[0] = (lo + take, hi)
        chunks.append(chunk)
    return chunks


def default_tasks(seeds: int, parallelism: int, per_task: int = 200) -> int:
    """Enough tasks to keep every core busy and bound what a killed run loses, few enough that
    per-task overhead stays small: about ``per_task`` seeds each, a multiple of ``parallelism``."""
    parallelism = max(1, parallelism)
    rounds = max(1, -(-seeds // (per_task * parallelism)))
    return max(1, min(seeds, rounds * parallelism))


def plan_tasks(requested: Range, tasks: int, done: list[Range]) -> list[list[Range]]:
    """``requested`` cut into ``tasks`` fixed chunks, each minus the ``done`` ranges; chunks
    with nothing left are dropped."""
    remaining = []
    for chunk in split([requested], tasks):
        left = [gap for lo, hi in chunk for gap in missing((lo, hi), done)]
        if left:
            remaining.append(left)
    return remaining
