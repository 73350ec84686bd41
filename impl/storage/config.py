"""LogConfig: Kafka's topic-level log configs in snake_case, validated on construction."""
from __future__ import annotations

from dataclasses import dataclass, fields

from .errors import InvalidConfigError

COMPRESSION_TYPES = ("none", "gzip")
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

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("cleanup_policy", "compression_type"):
                continue
            if value is None and f.name in _OPTIONAL:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidConfigError(f"LogConfig.{f.name} must be an integer, got {value!r}")
            if value < _MINIMUM[f.name]:
                raise InvalidConfigError(
                    f"LogConfig.{f.name} must be >= {_MINIMUM[f.name]}, got {value}")
        if self.segment_bytes > 2**31 - 1:
            raise InvalidConfigError(f"LogConfig.segment_bytes must fit in 32 bits, got {self.segment_bytes}")
        if self.cleanup_policy not in CLEANUP_POLICIES:
            raise InvalidConfigError(
                f"LogConfig.cleanup_policy must be one of {', '.join(CLEANUP_POLICIES)}, got {self.cleanup_policy!r}")
        if self.compression_type not in COMPRESSION_TYPES:
            raise InvalidConfigError(
                f"LogConfig.compression_type must be one of {', '.join(COMPRESSION_TYPES)}, "
                f"got {self.compression_type!r}")

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy


_OPTIONAL = {"segment_ms", "retention_ms", "retention_bytes", "flush_messages", "flush_ms"}
# segment.bytes has Kafka's floor of 14 bytes (LegacyRecord.RECORD_OVERHEAD_V0); one batch header is 61
_MINIMUM = {
    "segment_bytes": 14, "segment_ms": 1, "index_interval_bytes": 0, "max_message_bytes": 0,
    "retention_ms": 0, "retention_bytes": 0, "delete_retention_ms": 0, "flush_messages": 1,
    "flush_ms": 0,
}
