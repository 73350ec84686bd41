"""Storage errors, named after their Kafka counterparts; all derive from ``StorageError``."""

from __future__ import annotations


class StorageError(Exception):
    """Base class of every error the storage engine raises on purpose."""


class InvalidConfigError(StorageError, ValueError):
    """A LogConfig value is out of range (Kafka's ConfigException)."""


class CorruptRecordError(StorageError):
    """A record batch fails validation: CRC, sizes, magic or offsets (Kafka's CorruptRecordException)."""


class RecordTooLargeError(StorageError):
    """A batch exceeds ``max.message.bytes`` (Kafka's RecordBatchTooLargeException)."""


class InvalidRecordError(StorageError):
    """A record breaks a topic rule, e.g. no key on a compacted log (Kafka's InvalidRecordException)."""


class UnexpectedAppendOffsetError(StorageError):
    """A follower batch does not start at or after the log end offset (Kafka's UnexpectedAppendOffsetException)."""


class OffsetOutOfRangeError(StorageError):
    """A read asks for an offset outside [log start offset, log end offset] (OffsetOutOfRangeException)."""


class CorruptLogError(StorageError):
    """A file of the log directory cannot be read or repaired; the message names the file."""


class LogClosedError(StorageError):
    """The log was closed or lost to a crash and cannot be used any more."""
