"""Cluster configuration of the model and the bounds of an exploration scope."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from .alphabet import ACKS, CRASH_KINDS, MAX_BATCH_RECORDS, MAX_REPLICAS, shown, shown_key
from .protocols import PROTOCOLS, Protocol


class ConfigError(ValueError):
    """A configuration or scope value is out of range. ``field`` names it (None: the whole
    object) and ``detail`` says what is wrong, so a loader can name the place (``config.replicas``)."""

    def __init__(self, field: str | None, detail: str) -> None:
        super().__init__(f"{field}: {detail}" if field else detail)
        self.field, self.detail = field, detail


# A time setting is in ticks, and a tick is a millisecond of the implementation's clock: the bound
# is request.timeout.ms's, an int32 of milliseconds in Kafka's ProduceRequest and in the
# implementation's wire codec (a larger value cannot be sent), used for every time setting.
MAX_TICKS = 2**31 - 1
# flush.messages: int32 too; ``null`` is "never", and a schedule cannot produce more records.
MAX_FLUSH_MESSAGES = 2**31 - 1
# how a restarted broker tells the controller it may have lost data (kip-966; docs/steps.md, "Config")
UNCLEAN_SHUTDOWN_DETECTIONS = ("page-cache", "clean-shutdown-file")


@dataclass(frozen=True, slots=True)
class ScheduleConfig:
    """A schedule's cluster ``config`` (docs/steps.md, "Config"), in Kafka's terms, with every
    bound checked here and nowhere else. Times are in ticks of the model's clock."""

    replicas: int = 3  # replication factor, 1..MAX_REPLICAS
    min_insync_replicas: int = 2  # min.insync.replicas
    unclean_leader_election_enable: bool = False  # unclean.leader.election.enable
    replica_lag_time_max_ticks: int = 2  # replica.lag.time.max.ms, 0..MAX_TICKS
    request_timeout_ticks: int = 1000  # request.timeout.ms of a produce, 0..MAX_TICKS
    flush_messages: int | None = (
        None  # flush.messages, 1..MAX_FLUSH_MESSAGES; None: only flush steps and clean shutdown
    )
    unclean_shutdown_detection: str = "page-cache"  # isrcheck's; "clean-shutdown-file": Apache Kafka 4.x's
    # a leader's fetch handling as read_fetch then handle_fetch (docs/steps.md): Kafka's handler threads
    split_fetch_handling: bool = False
    # becoming a follower as deliver_leader_and_isr then remove_fetcher (docs/steps.md): Kafka's
    # applyLocalFollowersDelta runs makeFollower before it replaces the fetcher
    split_become_follower: bool = False
    # the leader's HW also waits for a caught-up follower outside the ISR that may join it (docs/steps.md,
    # maybe_increment_leader_hw): Kafka 3.6+'s shouldWaitForReplicaToJoinIsr, KAFKA-15021
    hw_waits_for_caught_up: bool = False
    # a follower whose Fetch reaches the LEO its previous Fetch read is caught up as of that Fetch
    # (docs/steps.md, handle_fetch): Kafka's Replica.updateFetchStateOrThrow, lastFetchLeaderLogEndOffset
    catch_up_at_previous_fetch: bool = False
    # each broker holds a metadata cache of the brokers' registrations that a leader's ISR eligibility
    # reads (docs/steps.md, update_metadata_cache): Kafka's KRaftMetadataCache, Partition.isReplicaIsrEligible
    metadata_cache: bool = False
    # the controller holds a registration fenced until the heartbeat that shows the broker caught up
    # with it, the step unfence (docs/steps.md): KRaft's BrokerHeartbeatManager.calculateNextBrokerState
    unfence_at_heartbeat: bool = False
    # a broker's controlled shutdown is the controller's state and a step (docs/steps.md, controlled_shutdown):
    # KRaft's BrokerRegistration.inControlledShutdown, ReplicationControlManager.handleBrokerInControlledShutdown
    kraft_controlled_shutdown: bool = False

    def __post_init__(self) -> None:
        _check_int("replicas", self.replicas, 1, MAX_REPLICAS)
        _check_int("min_insync_replicas", self.min_insync_replicas, 1, self.replicas)
        _check_int("replica_lag_time_max_ticks", self.replica_lag_time_max_ticks, 0, MAX_TICKS)
        _check_int("request_timeout_ticks", self.request_timeout_ticks, 0, MAX_TICKS)
        if self.flush_messages is not None:
            _check_int("flush_messages", self.flush_messages, 1, MAX_FLUSH_MESSAGES)
        if self.unclean_shutdown_detection not in UNCLEAN_SHUTDOWN_DETECTIONS:
            raise ConfigError(
                "unclean_shutdown_detection",
                f"expected one of {', '.join(UNCLEAN_SHUTDOWN_DETECTIONS)}, "
                f"got {shown(self.unclean_shutdown_detection)}",
            )
        for name in _FLAGS:
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(name, f"expected true or false, got {shown(getattr(self, name))}")

    @classmethod
    def from_json(cls, data: Any) -> "ScheduleConfig":
        """From a schedule's ``config`` object (None: every default); unknown fields are an error."""
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise ConfigError(None, f"expected an object, got {type(data).__name__}")
        known = cls.__dataclass_fields__
        for key in sorted(data, key=str):
            if key not in known:
                raise ConfigError(shown_key(key), f"unknown config field (known: {', '.join(sorted(known))})")
        return cls(**data)

    def to_json(self) -> dict:
        """The schedule ``config`` object of this configuration (the unclean shutdown detection and
        the later switches only where they are not the default, so schedules written before them
        read and hash the same)."""
        out = {name: getattr(self, name) for name in ScheduleConfig.__dataclass_fields__}
        for name, default in _LEFT_OUT_AT_DEFAULT:
            if out[name] == default:
                del out[name]
        return out


# config fields a schedule leaves out at their default (added after schedules were pinned)
_LEFT_OUT_AT_DEFAULT = (
    ("unclean_shutdown_detection", "page-cache"),
    ("split_fetch_handling", False),
    ("split_become_follower", False),
    ("hw_waits_for_caught_up", False),
    ("catch_up_at_previous_fetch", False),
    ("metadata_cache", False),
    ("unfence_at_heartbeat", False),
    ("kraft_controlled_shutdown", False),
)
# the boolean config fields
_FLAGS = (
    "unclean_leader_election_enable",
    "split_fetch_handling",
    "split_become_follower",
    "hw_waits_for_caught_up",
    "catch_up_at_previous_fetch",
    "metadata_cache",
    "unfence_at_heartbeat",
    "kraft_controlled_shutdown",
)
# switches of KRaft's controller: valid only with the variants whose brokers register (kip-903, kip-966)
_KRAFT_ONLY = ("unfence_at_heartbeat", "kraft_controlled_shutdown")


def check_protocol(protocol: str, config: ScheduleConfig) -> None:
    """ConfigError unless ``config``'s switches go with ``protocol`` (a known one): the switches of
    KRaft's controller (unfence_at_heartbeat, kraft_controlled_shutdown) need the variants with ``register``."""
    if PROTOCOLS[protocol].start_before_registration:
        return
    for name in _KRAFT_ONLY:
        if getattr(config, name):
            with_register = " and ".join(p for p, rules in PROTOCOLS.items() if rules.start_before_registration)
            raise ConfigError(name, f"valid only with {with_register} (the variants with register), not {protocol}")


@dataclass(frozen=True, slots=True)
class ModelConfig(ScheduleConfig):
    """A schedule's config with the protocol variant it runs: what the model takes. ``rules`` is
    the variant's ``Protocol`` (model/protocols.py)."""

    protocol: str = "kip-320"
    rules: Protocol = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise ConfigError("protocol", f"unknown protocol {self.protocol!r}; choose one of {', '.join(PROTOCOLS)}")
        ScheduleConfig.__post_init__(self)
        check_protocol(self.protocol, self)
        object.__setattr__(self, "rules", PROTOCOLS[self.protocol])

    @classmethod
    def of(cls, protocol: str, config: ScheduleConfig) -> "ModelConfig":
        """The model's config for a schedule's ``protocol`` and ``config``."""
        return cls(protocol=protocol, **config.to_json())

    def to_schedule(self) -> dict:
        """The schedule ``config`` object for this configuration."""
        return self.to_json()


@dataclass(frozen=True, slots=True)
class Scope:
    """Bounds of an exhaustive exploration (TLC-style state and action constraints), not
    protocol rules. The defaults are the default scope of ``isrcheck explore``: small enough to
    explore kip-320 completely in well under a minute, large enough for the pre-KIP-320 variants
    to violate StrongIsr (two crashes, so a leader can fail, come back and be re-elected)."""

    max_records: int = 2  # records produced (each takes a record id)
    max_epoch: int = 4  # highest controller leader epoch (a failover costs two: fence, elect)
    max_crashes: int = 2  # crash steps of any kind
    max_power_losses: int = 0  # crash steps of kind power
    max_clock: int = 0  # ticks; 0 keeps lag-based ISR shrinks and produce timeouts out
    max_drops: int = 0  # lost messages
    consumes: bool = False  # consume steps (reads for NoDivergentRead & co.)
    flushes: bool = False  # flush steps (clean shutdown and flush.messages still fsync)
    fetch_rounds: bool = True  # a follower's send/handle/response taken as one transition
    acks: tuple = (-1,)  # acks of produce steps
    crash_kinds: tuple = ("process",)  # crash kinds besides power (bounded by max_power_losses)
    # leave out the two losses Kafka itself suffers within the NoLostAckedWrite fault budget:
    # an ISR left with only members that lost power (KIP-966 Last Replica Standing), and an ISR
    # expansion counting a follower LEO from before it lost power and restarted (KIP-903)
    exclude_known_losses: bool = False
    # fault classes of real clusters, each off (0) by default
    max_bounces: int = 0  # restarts before the controller fenced the broker (fast bounce)
    max_zombies: int = 0  # fences of a live broker
    max_leader_moves: int = 0  # elections with a target (preferred election, controlled shutdown)
    max_disk_losses: int = 0  # lose_disk steps
    max_batch_records: int = 1  # records in one produce batch
    partial_fetches: bool = False  # fetches limited to one batch
    torn_writes: bool = False  # power losses that keep a batch or tear the next one
    hw_checkpoints: bool = False  # checkpoint_hw steps
    # disk faults (docs/steps.md, "Disk faults"), each off by default
    garbage_tails: bool = False  # torn power losses whose tail holds stale or random bytes
    max_corruptions: int = 0  # corrupt steps (a flushed batch damaged at rest)
    max_disk_failures: int = 0  # fail_disk steps of any I/O operation
    max_fsync_failures: int = 0  # fail_disk steps of an fsync (they lose the unflushed data)
    max_live_corruptions: int = 0  # corrupt_live steps (a flushed batch damaged under a live broker)

    def __post_init__(self) -> None:
        for name in (
            "max_records",
            "max_epoch",
            "max_crashes",
            "max_power_losses",
            "max_clock",
            "max_drops",
            "max_bounces",
            "max_zombies",
            "max_leader_moves",
            "max_disk_losses",
            "max_corruptions",
            "max_disk_failures",
            "max_fsync_failures",
            "max_live_corruptions",
        ):
            _check_int(name, getattr(self, name), 0, None)
        _check_int("max_batch_records", self.max_batch_records, 1, MAX_BATCH_RECORDS)
        for name in (
            "consumes",
            "flushes",
            "fetch_rounds",
            "exclude_known_losses",
            "partial_fetches",
            "torn_writes",
            "hw_checkpoints",
            "garbage_tails",
        ):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(name, f"expected true or false, got {getattr(self, name)!r}")
        if not self.acks or not set(self.acks) <= set(ACKS):
            raise ConfigError("acks", f"expected a non-empty subset of {', '.join(map(str, ACKS))}, got {self.acks!r}")
        if not set(self.crash_kinds) <= set(CRASH_KINDS) - {"power"}:
            raise ConfigError("crash_kinds", f"expected a subset of clean, process, got {self.crash_kinds!r}")
        if self.max_fsync_failures > self.max_disk_failures:
            raise ConfigError(
                "max_fsync_failures", "cannot exceed max_disk_failures (a failed fsync is a disk failure)"
            )
        if self.max_power_losses > self.max_crashes:
            raise ConfigError("max_power_losses", "cannot exceed max_crashes (a power loss is a crash)")

    @property
    def disk_faults(self) -> bool:
        """Whether the scope takes any disk fault (docs/steps.md, "Disk faults")."""
        return (
            self.garbage_tails
            or self.max_corruptions > 0
            or self.max_disk_failures > 0
            or self.max_live_corruptions > 0
        )

    def to_json(self) -> dict:
        return {
            k: list(v) if isinstance(v, tuple) else v
            for k, v in ((k, getattr(self, k)) for k in self.__dataclass_fields__)
        }


def check_scope(config: ModelConfig, scope: Scope) -> None:
    """ConfigError unless ``config`` and ``scope`` go together: fetch rounds take a fetch as one
    transition, so they cannot take a leader's read and its update apart (split_fetch_handling)."""
    if config.split_fetch_handling and scope.fetch_rounds:
        raise ConfigError(
            "split_fetch_handling",
            "takes a fetch's read and its update as two steps, and fetch rounds take a whole fetch as one "
            "transition: explore without fetch rounds (--no-fetch-rounds)",
        )


def _check_int(name: str, value: object, low: int, high: int | None) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < low or (high is not None and value > high):
        bound = f"{low}..{high}" if high is not None else f">= {low}"
        raise ConfigError(name, f"expected an integer {bound}, got {shown(value)}")
