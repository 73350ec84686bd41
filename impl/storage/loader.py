"""Loading a log directory (Kafka's LogLoader): finish or discard interrupted work, open the
segments, re-validate everything after the recovery point, rebuild broken indexes and caches.

The loader only touches the directory and returns a ``LoadedLog``, the value a ``Log`` is built
from (Kafka's ``LoadedLogOffsets``): a log is never seen half-loaded.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from .checkpoints import OffsetCheckpoint
from .config import LogConfig
from .epoch_cache import EpochEntry, LeaderEpochFileCache
from .errors import CorruptLogError, CorruptRecordError
from .fs import FileSystem
from .index import CorruptIndexError
from .segment import SEGMENT_FILE, LogSegment, file_name
from .swap import CLEANED_SUFFIX, SWAP_SUFFIX, complete_swap

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
TEMP_SUFFIX = ".tmp"  # an unfinished atomic checkpoint write

# Every truncation recovery makes is a warning here, in Kafka's words ("Found invalid messages in
# log segment ..."); a node process sends them to its log. Without a handler they go nowhere (the
# simulation recovers thousands of logs).
log = logging.getLogger("isrcheck.impl.storage")
log.addHandler(logging.NullHandler())


@dataclass(frozen=True, slots=True)
class RecoveryReport:
    """What ``Log.open`` found and repaired (Kafka logs these lines as it loads a log)."""

    clean_shutdown: bool
    recovery_point: int  # from the checkpoint, where validation started
    log_end_offset: int  # after recovery
    truncated_bytes: int = 0  # torn or corrupt tail cut away
    deleted_segments: tuple[int, ...] = ()  # segments after a corrupt one, dropped
    rebuilt_indexes: tuple[int, ...] = ()  # segments whose indexes were missing or broken
    epoch_cache_rebuilt: bool = False
    events: tuple[str, ...] = field(default=())  # one human-readable line per repair

    @property
    def truncated(self) -> bool:
        return self.truncated_bytes > 0 or bool(self.deleted_segments)


@dataclass(frozen=True, slots=True)
class LoadedLog:
    """A loaded log directory: Kafka's LoadedLogOffsets plus what Kafka's loader fills in place
    (the segments, the leader epoch cache) and the checkpoint files, which remember the values they
    hold so that unchanged values are not rewritten. The Log built from it owns these objects."""

    segments: tuple[LogSegment, ...]  # at least one; the last is the active segment
    log_start_offset: int
    recovery_point: int  # offsets below it are fsynced
    log_end_offset: int
    high_watermark: int  # from its checkpoint, clamped to the log
    leader_epoch_cache: LeaderEpochFileCache
    recovery_point_checkpoint: OffsetCheckpoint
    high_watermark_checkpoint: OffsetCheckpoint
    recovery_report: RecoveryReport
    dir_needs_fsync: bool  # a segment file was created and not yet fsynced


class LogLoader:
    """Kafka's LogLoader for one log directory: ``LogLoader(fs, dir, config).load()``."""

    def __init__(self, fs: FileSystem, directory: str, config: LogConfig) -> None:
        self.fs = fs
        self.dir = directory
        self.config = config

    def load(self) -> LoadedLog:
        """Recover the directory (creating it if missing) and describe what it now holds."""
        fs, d = self.fs, self.dir
        events: list[str] = []
        if fs.exists(d) and not _is_dir(fs, d):
            raise CorruptLogError(f"{d}: exists and is not a directory")
        fs.makedirs(d)
        self._finish_interrupted_work(events)
        bases = self._segment_files()
        marker = fs.join(d, CLEAN_SHUTDOWN_FILE)
        clean = fs.exists(marker)

        rp_checkpoint = OffsetCheckpoint(fs, fs.join(d, RECOVERY_POINT_CHECKPOINT))
        hw_checkpoint = OffsetCheckpoint(fs, fs.join(d, REPLICATION_OFFSET_CHECKPOINT), missing=0)
        try:
            checkpointed_rp = rp_checkpoint.read()
        except CorruptLogError as exc:
            checkpointed_rp = None
            events.append(f"{exc}; recovering every segment")
            clean = False
        recovery_point = checkpointed_rp or 0
        try:
            hw = hw_checkpoint.read()
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
        cache = cache or LeaderEpochFileCache(fs, cache_path)

        segments, truncated_bytes, deleted, rebuilt = self._load_segments(
            bases, clean, recovery_point, None if rebuild_cache else cache, events
        )
        dir_needs_fsync = not segments
        if not segments:
            segments.append(LogSegment(fs, d, 0, self.config.index_interval_bytes))
        leo = segments[-1].next_offset

        if clean and checkpointed_rp is not None and leo != checkpointed_rp:
            # close() checkpoints the LEO as the recovery point: anything past it is damage
            if leo > checkpointed_rp:
                cut = self._cut_to(segments, checkpointed_rp)
                truncated_bytes += cut
                events.append(
                    f"log ended at offset {leo} after a clean shutdown that checkpointed "
                    f"{checkpointed_rp}: truncated to {segments[-1].next_offset}"
                )
                log.warning(
                    "[Log dir=%s] Log ends at offset %d past the recovery point %d of its clean shutdown; "
                    "truncating %d bytes, to offset %d",
                    d,
                    leo,
                    checkpointed_rp,
                    cut,
                    segments[-1].next_offset,
                )
                leo = segments[-1].next_offset
            else:
                events.append(
                    f"log ends at offset {leo}, below the recovery point {checkpointed_rp} "
                    f"checkpointed at the clean shutdown: data was lost"
                )

        if rebuild_cache:
            cache = LeaderEpochFileCache(fs, cache_path, _epochs_of(segments))
            cache.flush()
        log_start_offset = segments[0].base_offset
        cache.truncate_from_end(leo)
        cache.truncate_from_start(log_start_offset)

        if clean:
            loaded_rp = leo
            rp_checkpoint.write(leo)
            fs.remove(marker)
            fs.fsync_dir(d)
            dir_needs_fsync = False
        else:
            loaded_rp = min(recovery_point, leo)
            if loaded_rp < leo and self._on_stable_storage(segments, loaded_rp):
                # Kafka keeps the checkpointed recovery point (it cannot know better); a file system
                # that sees its page cache can say the re-validated tail was written back already,
                # as after a power loss, when all that is left is on the disk
                loaded_rp = leo
            if (checkpointed_rp is None or checkpointed_rp != loaded_rp) and rp_checkpoint.write(loaded_rp):
                dir_needs_fsync = False  # its rename fsynced the directory: a segment created above too
        report = RecoveryReport(
            clean_shutdown=clean,
            recovery_point=recovery_point,
            log_end_offset=leo,
            truncated_bytes=truncated_bytes,
            deleted_segments=tuple(deleted),
            rebuilt_indexes=tuple(rebuilt),
            epoch_cache_rebuilt=rebuild_cache,
            events=tuple(events),
        )
        return LoadedLog(
            segments=tuple(segments),
            log_start_offset=log_start_offset,
            recovery_point=loaded_rp,
            log_end_offset=leo,
            high_watermark=min(max(hw or 0, log_start_offset), leo),
            leader_epoch_cache=cache,
            recovery_point_checkpoint=rp_checkpoint,
            high_watermark_checkpoint=hw_checkpoint,
            recovery_report=report,
            dir_needs_fsync=dir_needs_fsync,
        )

    # ------------------------------------------------------------------------------ the files

    def _finish_interrupted_work(self, events: list[str]) -> None:
        fs, d = self.fs, self.dir
        changed = False
        for name in fs.listdir(d):
            if name.endswith(TEMP_SUFFIX) or name.endswith(CLEANED_SUFFIX):
                fs.remove(fs.join(d, name))
                events.append(f"removed leftover {name}")
                changed = True
            elif name.endswith(SWAP_SUFFIX):
                target = complete_swap(fs, d, name)
                events.append(f"completed the swap of cleaned segment {target}")
                changed = True
        if changed:
            fs.fsync_dir(d)

    def _segment_files(self) -> list[int]:
        fs, d = self.fs, self.dir
        bases, indexes = set(), []
        for name in fs.listdir(d):
            match = SEGMENT_FILE.match(name)
            if match is None:
                if name.endswith(".log"):
                    raise CorruptLogError(
                        f"{fs.join(d, name)}: not a segment file name (expected a 20-digit base offset)"
                    )
                continue
            if match.group(2) == "log":
                bases.add(int(match.group(1)))
            else:
                indexes.append((int(match.group(1)), name))
        orphans = [name for base, name in indexes if base not in bases]
        for name in orphans:  # a segment deleted half-way: its log went first
            fs.remove(fs.join(d, name))
        if orphans:
            fs.fsync_dir(d)
        return sorted(bases)

    # --------------------------------------------------------------------------- the segments

    def _load_segments(
        self, bases: list[int], clean: bool, recovery_point: int, cache: LeaderEpochFileCache | None, events: list[str]
    ) -> tuple[list[LogSegment], int, list[int], list[int]]:
        """Open each segment, re-validating those that may hold unflushed data; the first corrupt
        batch ends the log. Epochs found past the recovery point go to ``cache`` (None when the
        whole cache is rebuilt afterwards). Returns (segments, bytes truncated, deleted, rebuilt)."""
        fs, d = self.fs, self.dir
        segments: list[LogSegment] = []
        truncated_bytes, deleted, rebuilt = 0, [], []
        first_recovered = True

        def assign(batch) -> None:
            # epochs of batches below the recovery point were checkpointed with them and are trusted
            if batch.base_offset >= recovery_point and batch.partition_leader_epoch > cache.latest_epoch:
                cache.assign(batch.partition_leader_epoch, batch.base_offset)

        for i, base in enumerate(bases):
            segment = LogSegment(fs, d, base, self.config.index_interval_bytes)
            if segments and segments[-1].last_offset is not None and base <= segments[-1].last_offset:
                raise CorruptLogError(
                    f"{segment.log_path}: base offset {base} overlaps the previous segment, "
                    f"which ends at offset {segments[-1].last_offset}"
                )
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
            if unflushed and cache is not None:
                if first_recovered:
                    cache.truncate_from_end(recovery_point)
                    first_recovered = False
                on_batch = assign
            removed = 0
            if needs_recovery:
                removed, reason = segment.recover(on_batch, limit)
                if not unflushed:  # durable data: its rebuilt indexes may be durable too
                    segment.offset_index.flush()
                    segment.time_index.flush()
                if removed:
                    truncated_bytes += removed
                    log.warning(
                        "[Log dir=%s] Found invalid messages in log segment %s at byte offset %d: %s; "
                        "truncating %d bytes, to offset %d",
                        d,
                        segment.log_path,
                        segment.size,
                        reason,
                        removed,
                        segment.next_offset,
                    )
                    events.append(
                        f"segment {base}: truncated {removed} bytes at offset {segment.next_offset}: {reason}"
                    )
            segments.append(segment)
            if removed and i < len(bases) - 1:
                for later in bases[i + 1 :]:  # nothing after a corrupt batch can be trusted
                    for suffix in (".log", ".index", ".timeindex"):
                        path = fs.join(d, file_name(later, suffix))
                        if fs.exists(path):
                            fs.remove(path)
                    deleted.append(later)
                fs.fsync_dir(d)
                events.append(f"deleted segments {deleted} after the corrupt one")
                log.warning("[Log dir=%s] Deleting segments %s after the corrupt segment %d", d, deleted, base)
                break
        return segments, truncated_bytes, deleted, rebuilt

    @staticmethod
    def _on_stable_storage(segments: list[LogSegment], offset: int) -> bool:
        """Every segment holding offsets at or past ``offset`` is known to be fully on stable storage."""
        return all(s.log.synced() for s in segments if s.next_offset > offset)

    def _cut_to(self, segments: list[LogSegment], offset: int) -> int:
        """Remove what lies at or past ``offset`` (before the epoch cache is consulted)."""
        removed = 0
        while len(segments) > 1 and segments[-1].base_offset >= offset:
            segment = segments.pop()
            removed += segment.size
            segment.delete()
        removed += segments[-1].truncate_to(offset)
        self.fs.fsync_dir(self.dir)
        return removed


def _epochs_of(segments: list[LogSegment]) -> list[EpochEntry]:
    """The leader epoch cache derived from the batches: each epoch at the offset of its first batch."""
    entries: list[EpochEntry] = []
    for segment in segments:
        try:
            for _, batch in segment.iter_batches():
                epoch = batch.partition_leader_epoch
                if epoch >= 0 and (not entries or epoch > entries[-1].epoch):
                    entries.append(EpochEntry(epoch, batch.base_offset))
        except CorruptRecordError as exc:
            raise CorruptLogError(f"{segment.log_path}: cannot rebuild the leader epoch cache: {exc}") from None
    return entries


def _is_dir(fs: FileSystem, path: str) -> bool:
    try:
        fs.listdir(path)
        return True
    except (NotADirectoryError, FileNotFoundError):
        return False
