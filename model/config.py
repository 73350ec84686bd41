"""Cluster configuration of the model and the bounds of an exploration scope."""
from __future__ import annotations

from dataclasses import dataclass, field

from .protocols import PROTOCOLS, Protocol

# schedule ``config`` field -> ModelConfig attribute (docs/steps.md, "Config")
_SCHEDULE_FIELDS = {
    "replicas": "replicas",
    "min_insync_replicas": "min_insync_replicas",
    "unclean_leader_election_enable": "unclean_leader_election_enable",
    "replica_lag_time_max_ticks": "replica_lag_time_max_ticks",
    "request_timeout_ticks": "request_timeout_ticks",
    "flush_messages": "flush_messages",
}


class ConfigError(ValueError):
    """A configuration or scope value is out of range; the message names it."""


@dataclass(frozen=True, slots=True)
class ModelConfig:
    """Broker/topic settings of one partition (names follow Kafka's configs)."""

    protocol: str = "kip-320"
    replicas: int = 3
    min_insync_replicas: int = 2
    unclean_leader_election_enable: bool = False
    replica_lag_time_max_ticks: int = 2
    request_timeout_ticks: int = 1000
    flush_messages: int | None = None
    rules: Protocol = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise ConfigError(f"unknown protocol {self.protocol!r}; choose one of {', '.join(PROTOCOLS)}")
        _check_int("replicas", self.replicas, 1, 5)
        _check_int("min_insync_replicas", self.min_insync_replicas, 1, self.replicas)
        _check_int("replica_lag_time_max_ticks", self.replica_lag_time_max_ticks, 0, None)
        _check_int("request_timeout_ticks", self.request_timeout_ticks, 0, None)
        if self.flush_messages is not None:
            _check_int("flush_messages", self.flush_messages, 1, None)
        if not isinstance(self.unclean_leader_election_enable, bool):
            raise ConfigError("unclean_leader_election_enable must be true or false")
        object.__setattr__(self, "rules", PROTOCOLS[self.protocol])

    @classmethod
    def from_schedule(cls, protocol: str, config: dict) -> "ModelConfig":
        """Build from a schedule's ``protocol`` and ``config`` object (unknown fields are an error)."""
        if not isinstance(config, dict):
            raise ConfigError("config must be an object")
        unknown = sorted(set(config) - set(_SCHEDULE_FIELDS))
        if unknown:
            raise ConfigError(f"unknown config field(s): {', '.join(unknown)}")
        return cls(protocol=protocol, **{_SCHEDULE_FIELDS[k]: v for k, v in config.items()})

    def to_schedule(self) -> dict:
        """The schedule ``config`` object for this configuration."""
        return {k: getattr(self, v) for k, v in _SCHEDULE_FIELDS.items()}


@dataclass(frozen=True, slots=True)
class Scope:
    """Bounds of an exhaustive exploration (TLC-style state and action constraints), not
    protocol rules. The defaults are the default scope of ``isrcheck explore``: small enough to
    explore kip-320 completely in well under a minute, large enough for the pre-KIP-320 variants
    to violate StrongIsr (two crashes, so a leader can fail, come back and be re-elected)."""

    max_records: int = 2      # produce steps (each takes a record id)
    max_epoch: int = 4        # highest controller leader epoch (a failover costs two: fence, elect)
    max_crashes: int = 2      # crash steps of any kind
    max_power_losses: int = 0  # crash steps of kind power
    max_clock: int = 0        # ticks; 0 keeps lag-based ISR shrinks and produce timeouts out
    max_drops: int = 0        # lost messages
    consumes: bool = False    # consume steps (reads for NoDivergentRead & co.)
    flushes: bool = False     # flush steps (clean shutdown and flush.messages still fsync)
    fetch_rounds: bool = True  # a follower's send/handle/response taken as one transition
    acks: tuple = (-1,)       # acks of produce steps
    crash_kinds: tuple = ("process",)  # crash kinds besides power (bounded by max_power_losses)
    # leave out the two losses Kafka itself suffers within the NoLostAckedWrite fault budget:
    # an ISR left with only members that lost power (KIP-966 Last Replica Standing), and an ISR
    # expansion counting a follower LEO from before it lost power and restarted (KIP-903)
    exclude_known_losses: bool = False

    def __post_init__(self) -> None:
        for name in ("max_records", "max_epoch", "max_crashes", "max_power_losses", "max_clock", "max_drops"):
            _check_int(name, getattr(self, name), 0, None)
        for name in ("consumes", "flushes", "fetch_rounds", "exclude_known_losses"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} must be true or false")
        if not self.acks or not set(self.acks) <= {0, 1, -1}:
            raise ConfigError(f"acks must be a non-empty subset of 0, 1, -1, got {self.acks!r}")
        if not set(self.crash_kinds) <= {"clean", "process"}:
            raise ConfigError(f"crash_kinds must be a subset of clean, process, got {self.crash_kinds!r}")
        if self.max_power_losses > self.max_crashes:
            raise ConfigError("max_power_losses cannot exceed max_crashes (a power loss is a crash)")

    def to_json(self) -> dict:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in
                ((k, getattr(self, k)) for k in self.__dataclass_fields__)}


def _check_int(name: str, value: object, low: int, high: int | None) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ConfigError(f"{name} must be an integer, got {value!r}")
    if value < low or (high is not None and value > high):
        bound = f"{low}..{high}" if high is not None else f">= {low}"
        raise ConfigError(f"{name} must be {bound}, got {value}")
