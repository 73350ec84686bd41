"""Replacing a segment's content so that a crash at any point leaves the old or the new content.

The new batches go to ``<base>.log.cleaned`` and are fsynced; the rename to ``<base>.log.swap``
is the commit point; then the old indexes go and the ``.swap`` is renamed over the ``.log``. On
load, a leftover ``.cleaned`` is deleted (the old content stays) and a leftover ``.swap`` is
completed by ``complete_swap`` (the indexes are rebuilt from the new content). Both halves live
here so the protocol can be read in one place.
"""

from __future__ import annotations

from typing import Iterable

from .fs import FileSystem
from .records import RecordBatch
from .segment import LogSegment

SWAP_SUFFIX = ".swap"  # a finished rewrite waiting to replace its segment
CLEANED_SUFFIX = ".cleaned"  # an unfinished rewrite
_INDEX_SUFFIXES = (".index", ".timeindex")


def swap_segment(
    fs: FileSystem, directory: str, old: LogSegment, batches: Iterable[RecordBatch], index_interval_bytes: int
) -> LogSegment:
    """Write ``batches`` as the new content of ``old`` (which is closed) and return the segment
    reopened on it, both indexes rebuilt and fsynced."""
    cleaned = old.log_path + CLEANED_SUFFIX
    swap = old.log_path + SWAP_SUFFIX
    handle = fs.open(cleaned)
    handle.truncate(0)
    for batch in batches:
        handle.append(batch.buffer)
    handle.fsync()
    handle.close()
    fs.rename(cleaned, swap)
    fs.fsync_dir(directory)  # from here on, loading completes the swap
    old.close()
    for path in (old.index_path, old.time_index_path):
        if fs.exists(path):
            fs.remove(path)
    fs.rename(swap, old.log_path)
    fs.fsync_dir(directory)
    segment = LogSegment(fs, directory, old.base_offset, index_interval_bytes)
    segment.recover()  # rebuilds both indexes from the new content
    segment.flush()
    return segment


def complete_swap(fs: FileSystem, directory: str, swap_name: str) -> str:
    """Finish a committed swap found on load; returns the segment file name it replaced. The old
    indexes describe the old content, so they are removed and rebuilt when the segment loads."""
    target = swap_name[: -len(SWAP_SUFFIX)]
    stem = target.rsplit(".", 1)[0]
    for suffix in _INDEX_SUFFIXES:
        if fs.exists(fs.join(directory, stem + suffix)):
            fs.remove(fs.join(directory, stem + suffix))
    fs.rename(fs.join(directory, swap_name), fs.join(directory, target))
    return target
