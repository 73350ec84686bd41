"""ClusterConfig: the cluster's settings in Kafka's terms (milliseconds), validated on construction."""

from __future__ import annotations

from dataclasses import dataclass, fields

from .protocol import VARIANTS, ProtocolVariant

MAX_REPLICAS = 5


class InvalidConfigError(ValueError):
    """A config value is out of range; the message names the field."""


UNCLEAN_SHUTDOWN_DETECTIONS = ("page-cache", "clean-shutdown-file")
# the boolean settings
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
# settings of KRaft's controller: only with the variants whose brokers register (start_before_registration)
_KRAFT_ONLY = ("unfence_at_heartbeat", "kraft_controlled_shutdown")


@dataclass(frozen=True)
class ClusterConfig:
    """Replication settings shared by every broker and the controller.

    The first block is what schedules set; the second only matters in auto mode (``isrcheck sim``).
    """

    protocol: str = "kip-320"
    replicas: int = 3
    min_insync_replicas: int = 2
    unclean_leader_election_enable: bool = False
    replica_lag_time_max_ms: int = 2
    request_timeout_ms: int = 1000
    flush_messages: int | None = None
    # kip-966: "page-cache" (a process crash leaves the broker epoch in the page cache: not unclean)
    # or "clean-shutdown-file" (Apache Kafka's CleanShutdownFileHandler alone: every crash is unclean)
    unclean_shutdown_detection: str = "page-cache"
    # a leader's fetch handling as two steps, read_fetch then handle_fetch (step mode; Kafka's
    # fetchRecords reads, releases the partition's lock, then updates the follower's state)
    split_fetch_handling: bool = False
    # becoming a follower as two steps, deliver_leader_and_isr then remove_fetcher (Kafka's
    # applyLocalFollowersDelta runs makeFollower, then replaces the fetcher)
    split_become_follower: bool = False
    # the leader's HW also waits for a follower outside the ISR caught up within the lag time (Kafka
    # 3.6+'s maybeIncrementLeaderHW, KAFKA-15021), so one catching up is not left behind by the HW
    hw_waits_for_caught_up: bool = False
    # a follower whose Fetch reaches the LEO its previous Fetch found is caught up as of that Fetch
    # (Kafka's Replica.updateFetchStateOrThrow), so one kept below the LEO by steady appends keeps up
    catch_up_at_previous_fetch: bool = False
    # each broker caches the brokers' registrations (Kafka's KRaftMetadataCache) and a leader takes no
    # follower into the ISR, nor waits with its HW for one, that its cache holds fenced or registered
    # with another broker epoch than its Fetch carried (Partition.isReplicaIsrEligible)
    metadata_cache: bool = False
    # the controller holds a registration fenced until the broker's heartbeat shows it caught up with it
    # (KRaft's RegisterBrokerRecord.fenced, BrokerHeartbeatManager.calculateNextBrokerState): till then no
    # election picks it and no ISR takes it in. Only with the variants whose brokers start before registering
    unfence_at_heartbeat: bool = False
    # a broker's controlled shutdown is the controller's state (KRaft's BrokerRegistration.inControlledShutdown,
    # ReplicationControlManager.handleBrokerInControlledShutdown): while it lasts the broker leads nothing,
    # joins no ISR and every metadata cache holds it ineligible, until its fence or registration
    kraft_controlled_shutdown: bool = False

    replica_fetch_backoff_ms: int = 5  # a follower's pause after an empty or failed fetch
    replica_fetch_wait_max_ms: int = 0  # 0: a fetch with nothing new is answered at once (no long poll)
    # a follower's request unanswered this long counts as lost and is sent again (Kafka's
    # replica.socket.timeout.ms): a leader up but not yet serving (KRaft, unregistered) never answers
    replica_socket_timeout_ms: int = 30_000
    replica_lag_check_interval_ms: int = 0  # 0: half of replica.lag.time.max.ms (Kafka's schedule)
    broker_heartbeat_interval_ms: int = 10
    broker_session_timeout_ms: int = 60
    replica_high_watermark_checkpoint_interval_ms: int = 0  # 0: only on flush and clean shutdown

    def __post_init__(self) -> None:
        if self.protocol not in VARIANTS:
            raise InvalidConfigError(f"protocol: unknown variant {self.protocol!r} (known: {', '.join(VARIANTS)})")
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("protocol", "unclean_shutdown_detection") + _FLAGS or (
                f.name == "flush_messages" and value is None
            ):
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidConfigError(f"{f.name}: expected an integer >= 0, got {value!r}")
        for name in _FLAGS:
            if not isinstance(getattr(self, name), bool):
                raise InvalidConfigError(f"{name}: expected a bool, got {getattr(self, name)!r}")
        if not 1 <= self.replicas <= MAX_REPLICAS:
            raise InvalidConfigError(f"replicas: expected 1..{MAX_REPLICAS}, got {self.replicas}")
        if not 1 <= self.min_insync_replicas <= self.replicas:
            raise InvalidConfigError(
                f"min_insync_replicas: expected 1..{self.replicas}, got {self.min_insync_replicas}"
            )
        if self.unclean_shutdown_detection not in UNCLEAN_SHUTDOWN_DETECTIONS:
            raise InvalidConfigError(
                f"unclean_shutdown_detection: expected one of "
                f"{', '.join(UNCLEAN_SHUTDOWN_DETECTIONS)}, got {self.unclean_shutdown_detection!r}"
            )
        if self.flush_messages is not None and self.flush_messages < 1:
            raise InvalidConfigError(f"flush_messages: expected None or >= 1, got {self.flush_messages}")
        for name in _KRAFT_ONLY:
            if getattr(self, name) and not self.variant.start_before_registration:
                with_register = " and ".join(n for n, v in VARIANTS.items() if v.start_before_registration)
                raise InvalidConfigError(
                    f"{name}: valid only with {with_register} (a KRaft registration), not {self.protocol}"
                )

    @property
    def variant(self) -> ProtocolVariant:
        return VARIANTS[self.protocol]

    @property
    def lag_check_interval_ms(self) -> int:
        return self.replica_lag_check_interval_ms or max(1, self.replica_lag_time_max_ms // 2)
