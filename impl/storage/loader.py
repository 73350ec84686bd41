"""Loading a log directory (Kafka's LogLoader): finish or discard interrupted work, open the
segments, re-validate everything after the recovery point, rebuild broken indexes and caches."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .epoch_cache import LeaderEpochFileCache
from .errors import CorruptLogError, CorruptRecordError
from .index import CorruptIndexError
from .segment import SEGMENT_FILE, LogSegment, file_name

if TYPE_CHECKING:
    from .log import Log

SWAP_SUFFIX = ".swap"           # a finished cleaner rewrite waiting to replace its segment
CLEANED_SUFFIX = ".cleaned"     # an unfinished cleaner rewrite
TEMP_SUFFIX = ".tmp"            # an unfinished atomic checkpoint write


def _finish_interrupted_work(log: "Log", events: list[str]) -> None:
    fs, d = log.fs, log.dir
    changed = False
    for name in fs.listdir(d):
        path = fs.join(d, name)
        if name.endswith(TEMP_SUFFIX) or name.endswith(CLEANED_SUFFIX):
            fs.remove(path)
            events.append(f"removed leftover {name}")
            changed = True
        elif name.endswith(SWAP_SUFFIX):
            target = name[:-len(SWAP_SUFFIX)]
            stem = target.rsplit(".", 1)[0]
            for suffix in (".index", ".timeindex"):     # they describe the old content: rebuilt below
                if fs.exists(fs.join(d, stem + suffix)):
                    fs.remove(fs.join(d, stem + suffix))
            fs.rename(path, fs.join(d, target))
            events.append(f"completed the swap of cleaned segment {target}")
            changed = True
    if changed:
        fs.fsync_dir(d)


def _segment_files(log: "Log") -> list[int]:
    fs, d = log.fs, log.dir
    names = fs.listdir(d)
    bases, indexes = set(), []
    for name in names:
        match = SEGMENT_FILE.match(name)
        if match is None:
            if name.endswith(".log"):
                raise CorruptLogError(f"{fs.join(d, name)}: not a segment file name "
                                      f"(expected a 20-digit base offset)")
            continue
        if match.group(2) == "log":
            bases.add(int(match.group(1)))
        else:
            indexes.append((int(match.group(1)), name))
    orphans = [name for base, name in indexes if base not in bases]
    for name in orphans:                   # a segment deleted half-way: its log went first
        fs.remove(fs.join(d, name))
    if orphans:
        fs.fsync_dir(d)
    return sorted(bases)


def load_log(log: "Log") -> None:
    from .log import CLEAN_SHUTDOWN_FILE, LEADER_EPOCH_CHECKPOINT, RecoveryReport
    fs, d, cfg = log.fs, log.dir, log.config
    events: list[str] = []
    if fs.exists(d) and not _is_dir(fs, d):
        raise CorruptLogError(f"{d}: exists and is not a directory")
    fs.makedirs(d)
    _finish_interrupted_work(log, events)
    bases = _segment_files(log)
    marker = fs.join(d, CLEAN_SHUTDOWN_FILE)
    clean = fs.exists(marker)

    try:
        checkpointed_rp = log._rp_checkpoint.read()
    except CorruptLogError as exc:
        checkpointed_rp = None
        events.append(f"{exc}; recovering every segment")
        clean = False
    recovery_point = checkpointed_rp or 0
    try:
        hw = log._hw_checkpoint.read()
    except CorruptLogError as exc:
        hw = None
        events.append(f"{exc}; high watermark reset to the log start offset")
    cache_path = fs.join(d, LEADER_EPOCH_CHECKPOINT)
    try:
        cache = LeaderEpochFileCache.load(fs, cache_path)
        if cache is None and bases:
            events.append(f"{cache_path} missing; rebuilt from the record batches")
    except CorruptLogError as exc:
        cache = None
        events.append(f"{exc}; rebuilt from the record batches")
    rebuild_cache = cache is None and bool(bases)
    log.leader_epoch_cache = cache or LeaderEpochFileCache(fs, cache_path)

    segments: list[LogSegment] = []
    truncated_bytes, deleted, rebuilt = 0, [], []
    first_recovered = True

    def assign(batch) -> None:
        # epochs of batches below the recovery point were checkpointed with them and are trusted
        if batch.base_offset >= recovery_point and batch.partition_leader_epoch > log.leader_epoch_cache.latest_epoch:
            log.leader_epoch_cache.assign(batch.partition_leader_epoch, batch.base_offset)

    for i, base in enumerate(bases):
        segment = LogSegment(fs, d, base, cfg.index_interval_bytes)
        if segments and segments[-1].last_offset is not None and base <= segments[-1].last_offset:
            raise CorruptLogError(f"{segment.log_path}: base offset {base} overlaps the previous segment, "
                                  f"which ends at offset {segments[-1].last_offset}")
        limit = bases[i + 1] if i + 1 < len(bases) else None
        # unflushed: may hold offsets at or past the recovery point, so every batch is re-validated
        needs_recovery = unflushed = not clean and (limit is None or limit > recovery_point)
        if not unflushed:
            try:
                segment.load(limit)
            except CorruptIndexError as exc:
                events.append(f"rebuilding the indexes of segment {base}: {exc}")
                rebuilt.append(base)
                needs_recovery = True
        on_batch = None
        if unflushed and not rebuild_cache:
            if first_recovered:
                log.leader_epoch_cache.truncate_from_end(recovery_point)
                first_recovered = False
            on_batch = assign
        removed = 0
        if needs_recovery:
            removed, reason = segment.recover(on_batch, limit)
            if not unflushed:                   # durable data: its rebuilt indexes may be durable too
                segment.offset_index.flush()
                segment.time_index.flush()
            if removed:
                truncated_bytes += removed
                events.append(f"segment {base}: truncated {removed} bytes at offset {segment.next_offset}: {reason}")
        segments.append(segment)
        if removed and i < len(bases) - 1:
            for later in bases[i + 1:]:         # nothing after a corrupt batch can be trusted
                for suffix in (".log", ".index", ".timeindex"):
                    path = fs.join(d, file_name(later, suffix))
                    if fs.exists(path):
                        fs.remove(path)
                deleted.append(later)
            fs.fsync_dir(d)
            events.append(f"deleted segments {deleted} after the corrupt one")
            break

    if not segments:
        segments.append(LogSegment(fs, d, 0, cfg.index_interval_bytes))
        log._dir_dirty = True
    log._segments = segments
    log._bases = [s.base_offset for s in segments]
    log._leo = segments[-1].next_offset

    if clean and checkpointed_rp is not None and log._leo != checkpointed_rp:
        # close() checkpoints the LEO as the recovery point: anything past it is damage
        if log._leo > checkpointed_rp:
            found = log._leo
            truncated_bytes += _cut_to(log, checkpointed_rp)
            events.append(f"log ended at offset {found} after a clean shutdown that checkpointed "
                          f"{checkpointed_rp}: truncated to {log._leo}")
        else:
            events.append(f"log ends at offset {log._leo}, below the recovery point {checkpointed_rp} "
                          f"checkpointed at the clean shutdown: data was lost")

    if rebuild_cache:
        entries = []
        for segment in segments:
            try:
                for _, batch in segment.iter_batches():
                    epoch = batch.partition_leader_epoch
                    if epoch >= 0 and (not entries or epoch > entries[-1][0]):
                        entries.append((epoch, batch.base_offset))
            except CorruptRecordError as exc:
                raise CorruptLogError(f"{segment.log_path}: cannot rebuild the leader epoch cache: {exc}") from None
        from .epoch_cache import EpochEntry
        log.leader_epoch_cache = LeaderEpochFileCache(fs, cache_path, [EpochEntry(*e) for e in entries])
        log.leader_epoch_cache.flush()
    log.leader_epoch_cache.truncate_from_end(log._leo)
    log.leader_epoch_cache.truncate_from_start(log.log_start_offset)

    if clean:
        log._recovery_point = log._leo
        log._rp_checkpoint.write(log._leo)
        fs.remove(marker)
        fs.fsync_dir(d)
    else:
        log._recovery_point = min(recovery_point, log._leo)
        if checkpointed_rp is None or checkpointed_rp > log._leo:
            log._rp_checkpoint.write(log._recovery_point)
    log._hw = min(max(hw or 0, log.log_start_offset), log._leo)
    log.recovery_report = RecoveryReport(
        clean_shutdown=clean, recovery_point=recovery_point, log_end_offset=log._leo,
        truncated_bytes=truncated_bytes, deleted_segments=tuple(deleted), rebuilt_indexes=tuple(rebuilt),
        epoch_cache_rebuilt=rebuild_cache, events=tuple(events))


def _is_dir(fs, path: str) -> bool:
    try:
        fs.listdir(path)
        return True
    except (NotADirectoryError, FileNotFoundError):
        return False


def _cut_to(log: "Log", offset: int) -> int:
    """Remove what lies at or past ``offset`` during load (before the epoch cache is consulted)."""
    removed = 0
    while len(log._segments) > 1 and log._bases[-1] >= offset:
        segment = log._segments.pop()
        log._bases.pop()
        removed += segment.size
        segment.delete()
    removed += log._segments[-1].truncate_to(offset)
    log.fs.fsync_dir(log.dir)
    log._leo = log._segments[-1].next_offset
    return removed
