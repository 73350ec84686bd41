"""LogConfig: Kafka's topic-level log configs in snake_case, validated on construction."""

from __future__ import annotations

from dataclasses import dataclass, fields

from .compression import CODECS
from .errors import InvalidConfigError
from .records import TIMESTAMP_TYPES

COMPRESSION_TYPES = tuple(CODECS)
CLEANUP_POLICIES = ("delete", "compact", "compact,delete")


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Kafka's LogConfig; ``None`` for retention/flush settings means "never" (Kafka's -1 / Long.MaxValue)."""

    segment_bytes: int = 1 << 30
    segment_ms: int | None = 7 * 24 * 3600 * 1000
    index_interval_bytes: int = 4096
    max_message_bytes: int = 1048588
    retention_ms: int | None = 7 * 24 * 3600 * 1000
    retention_bytes: int | None = None
    cleanup_policy: str = "delete"
    delete_retention_ms: int = 24 * 3600 * 1000
    flush_messages: int | None = None
    flush_ms: int | None = None
    compression_type: str = "none"
    message_timestamp_type: str = "CreateTime"

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in _CHOICES:
                if value not in _CHOICES[f.name]:
                    raise InvalidConfigError(
                        f"LogConfig.{f.name} must be one of {', '.join(_CHOICES[f.name])}, got {value!r}"
                    )
                continue
            if value is None and f.name in _OPTIONAL:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidConfigError(f"LogConfig.{f.name} must be an integer, got {value!r}")
            if value < _MINIMUM[f.name]:
                raise InvalidConfigError(f"LogConfig.{f.name} must be >= {_MINIMUM[f.name]}, got {value}")
        if self.segment_bytes > 2**31 - 1:
            raise InvalidConfigError(f"LogConfig.segment_bytes must fit in 32 bits, got {self.segment_bytes}")

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy


_CHOICES = {
    "cleanup_policy": CLEANUP_POLICIES,
    "compression_type": COMPRESSION_TYPES,
    "message_timestamp_type": TIMESTAMP_TYPES,
}
_OPTIONAL = {"segment_ms", "retention_ms", "retention_bytes", "flush_messages", "flush_ms"}
# segment.bytes has Kafka's floor of 14 bytes (LegacyRecord.RECORD_OVERHEAD_V0); one batch header is 61
_MINIMUM = {
    "segment_bytes": 14,
    "segment_ms": 1,
    "index_interval_bytes": 0,
    "max_message_bytes": 0,
    "retention_ms": 0,
    "retention_bytes": 0,
    "delete_retention_ms": 0,
    "flush_messages": 1,
    "flush_ms": 0,
}
