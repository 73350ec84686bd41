"""The storage engine: segmented record-batch logs with indexes, leader epoch cache, checkpoints,
retention, compaction and crash recovery, over a real or a simulated file system."""

from .config import LogConfig
from .epoch_cache import EpochEntry, LeaderEpochFileCache
from .errors import (
    CorruptLogError,
    CorruptRecordError,
    InvalidConfigError,
    InvalidRecordError,
    LogClosedError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
    StorageError,
    UnexpectedAppendOffsetError,
)
from .fs import FileHandle, FileSystem, OsFileSystem, SimulatedFileSystem
from .loader import LoadedLog, LogLoader
from .log import BatchExtent, FetchDataInfo, Log, LogAppendInfo, RecoveryReport
from .records import LogRecord, Record, RecordBatch, build_batch, iter_batches

__all__ = [
    "Log",
    "LogLoader",
    "LoadedLog",
    "LogConfig",
    "Record",
    "LogRecord",
    "RecordBatch",
    "build_batch",
    "iter_batches",
    "LogAppendInfo",
    "FetchDataInfo",
    "BatchExtent",
    "RecoveryReport",
    "LeaderEpochFileCache",
    "EpochEntry",
    "FileSystem",
    "FileHandle",
    "OsFileSystem",
    "SimulatedFileSystem",
    "StorageError",
    "InvalidConfigError",
    "CorruptRecordError",
    "RecordTooLargeError",
    "InvalidRecordError",
    "UnexpectedAppendOffsetError",
    "OffsetOutOfRangeError",
    "CorruptLogError",
    "LogClosedError",
]
