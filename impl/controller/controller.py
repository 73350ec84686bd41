"""Controller: the partition's leader, leader epoch, ISR and partition epoch, and broker liveness.

Modelled on Kafka's KRaft QuorumController for one partition: brokers register and get a broker
epoch (BrokerRegistration); heartbeats keep a session alive, and an expired session fences the
broker (removed from the ISR unless it is the last member; a fenced leader leaves the partition
leaderless); ``elect`` picks the first unfenced ISR member in replica order, or with
``unclean.leader.election.enable`` the first unfenced replica with the ISR reset to it;
``move_leader`` hands leadership to a chosen unfenced ISR member (preferred replica election,
controlled shutdown); every change goes to the unfenced brokers as LeaderAndIsr. AlterPartition
from the leader is fenced by leader epoch and partition epoch (KIP-497).

A fenced broker registers again (a new broker epoch) when it restarts or, alive all along, comes
back. A restarted broker whose session has not expired yet: before KIP-903 here (Kafka before
KIP-380) it registers with a newer incarnation, a fast bounce the controller does not notice, so it
keeps its ISR membership and leadership; from KIP-903 on its registration is refused
(DUPLICATE_BROKER_REGISTRATION, as KRaft's ClusterControlManager does) until the old session
expires and fences it.

With broker epochs checked (KIP-903) an AlterPartition naming a member with a broker epoch other
than its registration's is ``INELIGIBLE_REPLICA``. With Eligible Leader Replicas (KIP-966) the
ISR may become empty; whenever an ISR change leaves it below min.insync.replicas, the members it
lost join the ELR (PartitionChangeBuilder.maybePopulateTargetElr); election takes the ISR, then
an unfenced ELR member, then (ISR and ELR empty) the last known leader; and a broker registering
after an unclean shutdown (no previous broker epoch) first leaves ISR, ELR and leadership
(ReplicationControlManager.handleBrokerUncleanShutdown).

With ``unfence_at_heartbeat`` (KRaft's RegisterBrokerRecord with fenced set) a registration awaits
unfence until the heartbeat that shows the broker caught up with it (driven: ``unfence``): till then
the broker is not active (ClusterControlManager.isActive), so no election picks it and an
AlterPartition naming it is ``INELIGIBLE_REPLICA``; its session's end fences nothing.

Every partition is one ``PartitionRegistration`` (KRaft's), handled alike; a single-partition run
(the simulation, lockstep) has one, topic ``isr`` partition 0, whose fields ``leader``, ``isr`` and
the like the controller also shows as its own. With ``kafka_metadata`` on (a cluster that Kafka
clients use, ``isrcheck serve``) topics are created on request (CreateTopics) with Kafka's replica
assignment (partition p's preferred leader is broker p mod N), every partition change goes to every
live broker, as KRaft brokers replay the metadata log, and LeaderAndIsr v2 names the topic, the live
brokers, the topic's ``min.insync.replicas`` and whether it was deleted, which brokers answer Kafka
Metadata from; ``metadata_store`` keeps topics, partition state and broker epochs across controller
restarts (the metadata log's snapshot). Every partition is replicated on every broker (the
replication factor is the broker count). A deleted topic's partitions stay as tombstones (no
leader, replicas or ISR; a partition id is never reused), so that a broker that missed the deletion
learns it as it learns any partition change, and drops the partition and its log.

With ``auto`` off nothing happens by itself: sessions never expire and elections happen only when
``elect`` is called. With it on, a session check runs every heartbeat interval and a leaderless
partition is elected as soon as an eligible replica exists.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Collection, Protocol

from ..invariants import check
from ..network import NodeEndpoint
from ..protocol import (
    AllocateProducerIdsRequest,
    AllocateProducerIdsResponse,
    AlterPartitionRequest,
    AlterPartitionResponse,
    ApiKey,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    Errors,
    Header,
    LeaderAndIsrRequest,
    UpdateMetadataRequest,
)
from ..runtime import Scheduler, Transport

CONTROLLER_ID = 3000  # a node id outside the broker range, as KRaft controllers often have
DEFAULT_TOPIC = "isr"  # the one partition of single-partition runs is this topic's partition 0
MAX_PARTITIONS = 10_000  # partitions of one cluster: a guard against a client asking for millions
PRODUCER_ID_BLOCK_SIZE = 1000  # ProducerIdManager's block


def valid_topic_name(name: str) -> bool:
    """Kafka's Topic.validate: 1..249 characters of [a-zA-Z0-9._-], not "." or ".."."""
    return (
        0 < len(name) <= 249
        and name not in (".", "..")
        and all(c.isascii() and (c.isalnum() or c in "._-") for c in name)
    )


class MetadataStore(Protocol):
    """Where a controller keeps its metadata across restarts (a snapshot of KRaft's metadata log)."""

    def load(self) -> dict | None: ...

    def save(self, metadata: dict) -> None: ...


class PartitionRegistration:
    """The controller's record of one partition (KRaft's PartitionRegistration)."""

    __slots__ = (
        "partition_id",
        "topic",
        "index",
        "replicas",
        "leader",
        "leader_epoch",
        "isr",
        "partition_epoch",
        "elr",
        "last_known_leader",
        "min_insync_replicas",
        "deleted",
    )

    def __init__(
        self,
        partition_id: int,
        topic: str,
        index: int,
        replicas: tuple[int, ...],
        leader: int,
        leader_epoch: int = 0,
        isr: tuple[int, ...] | None = None,
        partition_epoch: int = 0,
        elr: tuple[int, ...] = (),
        last_known_leader: int = -1,
        min_insync_replicas: int = -1,
        deleted: bool = False,
    ) -> None:
        self.partition_id, self.topic, self.index, self.replicas = partition_id, topic, index, replicas
        self.leader, self.leader_epoch, self.partition_epoch = leader, leader_epoch, partition_epoch
        self.isr = tuple(sorted(replicas)) if isr is None else isr
        self.elr, self.last_known_leader = elr, last_known_leader
        self.min_insync_replicas = min_insync_replicas  # the topic's config; -1: the cluster's
        self.deleted = deleted  # a tombstone of a deleted topic

    def to_json(self) -> dict:
        return {name: getattr(self, name) for name in self.__slots__}

    @classmethod
    def from_json(cls, fields: dict) -> "PartitionRegistration":
        fields = dict(fields)
        for name in ("replicas", "isr", "elr"):
            fields[name] = tuple(fields[name])
        return cls(**fields)


@dataclass(frozen=True)
class ControllerState:
    """The controller's partition state, fenced brokers and broker epochs."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int
    fenced: tuple[int, ...]
    broker_epochs: tuple[int, ...]  # per broker id, -1 never registered
    elr: tuple[int, ...] = ()  # Eligible Leader Replicas (KIP-966)
    last_known_leader: int = -1  # the leader the partition last lost (KIP-966)
    # per broker every broker epoch it was given, oldest first (the metadata log's registrations)
    registrations: tuple[tuple[int, ...], ...] = ()
    awaiting_unfence: tuple[int, ...] = ()  # registered, not yet unfenced by a heartbeat (unfence_at_heartbeat)
    in_controlled_shutdown: tuple[int, ...] = ()  # sorted (BrokerRegistration.inControlledShutdown)


class Controller:
    """The cluster's controller (see the module docstring)."""

    def __init__(
        self,
        replicas: int,
        unclean_leader_election_enable: bool,
        scheduler: Scheduler,
        transport: Transport,
        auto: bool = False,
        session_timeout_ms: int = 60,
        check_interval_ms: int = 10,
        on_event: Callable[..., None] | None = None,
        min_insync_replicas: int = 1,
        eligible_leader_replicas: bool = False,
        registration_waits_for_session: bool = False,
        kafka_metadata: bool = False,
        topics: tuple[tuple[str, int], ...] = ((DEFAULT_TOPIC, 1),),
        metadata_store: MetadataStore | None = None,
        events=None,
        metadata_cache: bool = False,
        compared_broker_epochs: bool = True,
        unfence_at_heartbeat: bool = False,
    ) -> None:
        self.replicas = tuple(range(replicas))
        # a registration stays fenced until the heartbeat that shows the broker caught up (or, driven, the
        # step unfence): no election picks it and no ISR takes it in (KRaft's ClusterControlManager.isActive)
        self.unfence_at_heartbeat = unfence_at_heartbeat
        # brokers cache the registrations: a self-driven run tells them of each change (UpdateMetadata)
        self.metadata_cache = metadata_cache
        self.metadata_version = 0  # of the registrations, one more at every change
        # KIP-903: a leader compares a follower's broker epoch with its registration's; before, 0 stands for any
        self.compared_broker_epochs = compared_broker_epochs
        self.events = events  # an EventLog (isrcheck.impl.eventlog) when the run logs its events
        self.min_insync_replicas = min_insync_replicas
        self.elr_enabled = eligible_leader_replicas
        self.registration_waits_for_session = registration_waits_for_session  # KRaft's, KIP-380's
        self.unclean = unclean_leader_election_enable
        self.scheduler = scheduler
        self.auto = auto
        self.session_timeout_ms = session_timeout_ms
        self.check_interval_ms = check_interval_ms
        self.on_event = on_event
        self.kafka_metadata = kafka_metadata
        self.metadata_store = metadata_store
        self.partitions: list[PartitionRegistration] = []  # by partition id
        self.topics: dict[str, tuple[int, ...]] = {}  # topic -> its partitions' ids, by index
        self.fenced: set[int] = set()
        # brokers in controlled shutdown (BrokerRegistration.inControlledShutdown), till their fence or registration
        self.in_controlled_shutdown: set[int] = set()
        self.broker_epochs = [-1] * replicas
        self.registrations: list[list[int]] = [[] for _ in range(replicas)]
        # per broker, every partition's epoch when it last registered: what it must have applied to be
        # caught up (KRaft's registerBrokerRecordOffset, the metadata offset of its registration)
        self.registration_epochs: list[tuple[int, ...]] = [() for _ in range(replicas)]
        # registered and not yet unfenced by the heartbeat that shows them caught up (a self-driven run's, or
        # with unfence_at_heartbeat): fenced in every metadata cache till then, and inactive with the switch
        self.awaiting_unfence: set[int] = set()
        self._last_state: tuple[tuple, ControllerState | None] = ((), None)  # state()'s fields and answer
        self.incarnations = [-1] * replicas  # of the registered process of each broker
        self.session_deadline = [0] * replicas
        self._next_broker_epoch = 1
        self.elections = 0  # leader elections (each a leader change)
        self.isr_changes = 0  # committed ISR changes (AlterPartition, fencing)
        self.endpoint = NodeEndpoint(CONTROLLER_ID, transport)
        self.endpoint.handlers = {
            ApiKey.BROKER_REGISTRATION: self._handle_registration,
            ApiKey.BROKER_HEARTBEAT: self._handle_heartbeat,
            ApiKey.ALTER_PARTITION: self._handle_alter_partition,
        }
        self.next_producer_id = 0
        if kafka_metadata:
            self.endpoint.handlers[ApiKey.CREATE_TOPICS] = self._handle_create_topics
            self.endpoint.handlers[ApiKey.DELETE_TOPICS] = self._handle_delete_topics
            self.endpoint.handlers[ApiKey.ALLOCATE_PRODUCER_IDS] = self._handle_allocate_producer_ids
        transport.register(CONTROLLER_ID, self.endpoint)
        stored = metadata_store.load() if metadata_store is not None else None
        if stored is None:
            for broker in self.replicas:  # the initial brokers registered before the partition was created
                self._register(broker, 0)
            self.awaiting_unfence.clear()  # and every one of them applies the created partition: caught up
        else:
            self._restore(stored)
        for name, count in topics:
            if name not in self.topics:
                self.create_topic(name, count)
        if events is not None and kafka_metadata:
            events.describe_partitions({f"{p.topic}-{p.index}": p.replicas for p in self.partitions if not p.deleted})
        self._save()
        if auto:
            scheduler.schedule(check_interval_ms, self._check_sessions)

    # -- the first partition: what single-partition runs read -------------------------------------
    @property
    def leader(self) -> int:
        return self.partitions[0].leader

    @property
    def leader_epoch(self) -> int:
        return self.partitions[0].leader_epoch

    @property
    def isr(self) -> tuple[int, ...]:
        return self.partitions[0].isr

    @property
    def partition_epoch(self) -> int:
        return self.partitions[0].partition_epoch

    @property
    def elr(self) -> tuple[int, ...]:
        return self.partitions[0].elr

    @property
    def last_known_leader(self) -> int:
        return self.partitions[0].last_known_leader

    @classmethod
    def for_cluster(
        cls,
        config,
        scheduler: Scheduler,
        transport: Transport,
        auto: bool,
        on_event: Callable[..., None] | None = None,
        **kafka: Any,
    ) -> "Controller":
        """The controller of a cluster with ``config`` (a ClusterConfig: replication settings, the
        session timeout, the heartbeat interval as session check interval, the protocol variant);
        ``kafka`` holds ``kafka_metadata``, ``topics`` and ``metadata_store`` for a Kafka cluster."""
        return cls(
            config.replicas,
            config.unclean_leader_election_enable,
            scheduler,
            transport,
            auto=auto,
            session_timeout_ms=config.broker_session_timeout_ms,
            check_interval_ms=config.broker_heartbeat_interval_ms,
            on_event=on_event,
            min_insync_replicas=config.min_insync_replicas,
            eligible_leader_replicas=config.variant.eligible_leader_replicas,
            registration_waits_for_session=config.variant.registration_waits_for_session,
            metadata_cache=config.metadata_cache,
            compared_broker_epochs=config.variant.broker_epochs,
            unfence_at_heartbeat=config.unfence_at_heartbeat,
            **kafka,
        )

    # -- queries ------------------------------------------------------------------------------
    def state(self) -> ControllerState:
        """The first partition's state, fenced brokers and broker epochs."""
        p = self.partitions[0]
        fields = (
            p.leader,
            p.leader_epoch,
            p.isr,
            p.partition_epoch,
            tuple(sorted(self.fenced)),
            tuple(self.broker_epochs),
            p.elr,
            p.last_known_leader,
            tuple(map(tuple, self.registrations)),
            tuple(sorted(self.awaiting_unfence)) if self.unfence_at_heartbeat else (),
            tuple(sorted(self.in_controlled_shutdown)),
        )
        if fields != self._last_state[0]:  # unchanged: the same object (readers compare by identity first)
            self._last_state = (fields, ControllerState(*fields))
        return self._last_state[1]

    def eligible_leader(self, partition: int = 0) -> int:
        """The replica ``elect`` would pick, or -1 (see ``_election``)."""
        choice = self._election(self.partitions[partition])
        return -1 if choice is None else choice[0]

    def _election(self, p: PartitionRegistration) -> tuple[int, tuple[int, ...], tuple[int, ...]] | None:
        """(leader, ISR, ELR) of PartitionChangeBuilder.electLeader: the clean choice
        (``_clean_election``), else with unclean election the first active replica, the ISR
        restarting from it (and the ELR emptied: it need not hold what the ELR vouched for)."""
        choice = self._clean_election(p)
        if choice is not None:
            return choice
        if self.unclean:
            for r in p.replicas:
                if self.active(r):
                    return r, (r,), ()
        return None

    def _clean_election(self, p: PartitionRegistration) -> tuple[int, tuple[int, ...], tuple[int, ...]] | None:
        """The first active ISR member in replica order; with KIP-966 then the first active ELR
        member, then, ISR and ELR both empty, the last known leader if active."""
        for r in p.replicas:
            if r in p.isr and self.active(r):
                return r, p.isr, p.elr
        if self.elr_enabled:
            for r in p.replicas:
                if r in p.elr and self.active(r):
                    isr = tuple(sorted(p.isr + (r,)))
                    return r, isr, self._elr_after(p, isr)
            lkl = p.last_known_leader
            if not p.isr and not p.elr and lkl >= 0 and self.active(lkl):
                return lkl, (lkl,), self._elr_after(p, (lkl,))
        return None

    def active(self, broker: int) -> bool:
        """Neither fenced nor, with unfence_at_heartbeat, awaiting unfence, nor in controlled shutdown: a broker
        that may lead or join an ISR (KRaft's ClusterControlManager.isActive, which isAcceptableLeader and
        ineligibleReplicasForIsr ask)."""
        return not self.registration_fenced(broker) and broker not in self.in_controlled_shutdown

    def registration_fenced(self, broker: int) -> bool:
        """Its registration is fenced (KRaft's BrokerRegistration.fenced): fenced or, with unfence_at_heartbeat,
        awaiting unfence."""
        return broker in self.fenced or (self.unfence_at_heartbeat and broker in self.awaiting_unfence)

    def _elr_after(
        self, p: PartitionRegistration, isr: tuple[int, ...], unclean: tuple[int, ...] = ()
    ) -> tuple[int, ...]:
        """maybePopulateTargetElr (KIP-966): empty once ``isr`` reaches min ISR; else the members the
        ISR loses join the ELR, minus brokers back from an unclean shutdown."""
        min_isr = p.min_insync_replicas if p.min_insync_replicas > 0 else self.min_insync_replicas
        if not self.elr_enabled or len(isr) >= min_isr:
            return ()
        return tuple(sorted((set(p.elr) | set(p.isr)) - set(isr) - set(unclean)))

    # -- controller actions -------------------------------------------------------------------
    def elect(self, partition: int = 0) -> int:
        """PartitionChangeBuilder leader election for a leaderless partition; returns the leader."""
        p = self.partitions[partition]
        choice = self._election(p)
        if p.leader != -1 or choice is None:
            return -1
        check(
            self.unclean or choice[0] in p.isr + p.elr or choice[0] == p.last_known_leader,
            "controller: elected %d for partition %d outside ISR %s and ELR %s with unclean election off",
            choice[0],
            p.partition_id,
            p.isr,
            p.elr,
        )
        leader, p.isr, p.elr = choice
        self._new_leader(p, "elect", leader)
        return leader

    def move_leader(self, target: int, partition: int = 0) -> None:
        """Preferred replica election / controlled shutdown: ``target``, an active ISR member other
        than the leader, leads in a new leader epoch; the ISR stays."""
        p = self.partitions[partition]
        if not self.active(target) or target not in p.isr or target == p.leader:
            raise ValueError(f"broker {target} cannot take over leadership")
        self._new_leader(p, "move_leader", target)

    def _new_leader(self, p: PartitionRegistration, event: str, leader: int) -> None:
        """A leader change: new leader and partition epochs, told to every unfenced broker."""
        p.leader = leader
        p.leader_epoch += 1
        p.partition_epoch += 1
        p.last_known_leader = -1
        self.elections += 1
        self._event(event, leader, p.leader_epoch, *self._which(p))
        if self.events is not None:
            self.events.controller(self, "elect", {"replica": -1 if event == "elect" else leader}, partition=p)
        self._changed(p)

    def fence(self, broker: int) -> None:
        """The broker's session expired (BrokerHeartbeatManager): out of every ISR and leadership. A
        registration awaiting unfence (unfence_at_heartbeat) is fenced already: its session's end writes nothing."""
        if self.registration_fenced(broker):
            return
        self.fenced.add(broker)
        self.in_controlled_shutdown.discard(broker)  # KRaft fences a broker in controlled shutdown at SHUTDOWN_NOW
        changed = self._take_out(broker)
        self._event("fence", broker)
        if self.events is not None:
            self.events.controller(self, "fence", {"replica": broker})
        self._registrations_changed()
        for p in self.partitions:
            if p.partition_id in changed:
                self._changed(p)
            elif self.kafka_metadata and not p.deleted:
                self._send_leader_and_isr(p, self._unfenced())  # the live brokers changed
            if self.auto and p.leader == -1:
                self.elect(p.partition_id)

    def unfence(self, broker: int, request: tuple[int, int] | None = None) -> None:
        """BrokerHeartbeatManager.calculateNextBrokerState FENCED -> UNFENCED, at the heartbeat (``request``,
        its sender and correlation id) that shows ``broker`` caught up with its registration, then
        ReplicationControlManager.handleBrokerUnfenced: its broker epoch kept; one that was fenced (not one
        awaiting unfence, sent every change) is sent every partition's state; a self-driven run then elects
        the leaderless partitions."""
        was_fenced = broker in self.fenced
        if was_fenced:  # (without the switch one still catching up stays so in the caches)
            self.fenced.discard(broker)
        else:
            self.awaiting_unfence.discard(broker)
        self._event("unfence", broker)
        if self.events is not None:
            self.events.controller(self, "unfence", {"replica": broker}, request)
        self._registrations_changed()
        if was_fenced:
            for p in self.partitions:
                self._send_leader_and_isr(p, self._unfenced() if self.kafka_metadata else (broker,))
        for p in self.partitions:
            if self.auto and p.leader == -1:
                self.elect(p.partition_id)

    def _take_out(self, broker: int, elect: bool = False) -> set[int]:
        """The partition changes of ``broker``'s fencing (ReplicationControlManager.handleBrokerFenced,
        generateLeaderAndIsrUpdates with it to remove): the ids of the partitions changed. With ``elect``
        (a controlled shutdown) a partition it led gets a clean election in the same change."""
        changed = set()
        for p in self.partitions:
            # before KIP-966 the last ISR member stays; with the ELR the ISR may go empty
            keep_last = not self.elr_enabled and len(p.isr) == 1
            led = p.leader == broker
            if self._remove_broker(p, broker, p.isr if keep_last else tuple(r for r in p.isr if r != broker)):
                changed.add(p.partition_id)
                choice = self._clean_election(p) if elect and led else None
                if choice is not None:  # one leader epoch and one partition epoch for both
                    (p.leader, p.isr, p.elr), p.last_known_leader = choice, -1
                    self.elections += 1
        return changed

    def controlled_shutdown(self, broker: int) -> None:
        """A broker's heartbeat asks to shut down (BrokerHeartbeatManager.calculateNextBrokerState,
        UNFENCED to CONTROLLED_SHUTDOWN): ReplicationControlManager.handleBrokerInControlledShutdown
        takes it out of every ISR and elects a new leader where it led, in one partition change each;
        it is no longer active until its fence or registration."""
        self.in_controlled_shutdown.add(broker)
        changed = self._take_out(broker, elect=True)
        self._event("controlled_shutdown", broker)
        if self.events is not None:
            self.events.controller(self, "controlled_shutdown", {"replica": broker})
        self._registrations_changed()
        for p in self.partitions:
            if p.partition_id in changed:
                self._changed(p)

    def expire_session(self, broker: int) -> None:
        """``broker``'s heartbeat session has expired; the next session check fences it, unless a
        registration of its new incarnation comes first (step mode: ``register`` says the session expired)."""
        self.session_deadline[broker] = self.scheduler.now_ms() - 1

    def _remove_broker(
        self, p: PartitionRegistration, broker: int, isr: tuple[int, ...], unclean: tuple[int, ...] = ()
    ) -> bool:
        """A partition change taking ``broker`` out of leadership and the ISR (now ``isr``), the ELR
        following; a new partition epoch (and leader epoch if it led). True if anything changed."""
        elr = self._elr_after(p, isr, unclean)
        leads = p.leader == broker
        if not leads and isr == p.isr and elr == p.elr:
            return False
        if isr != p.isr:
            self.isr_changes += 1
        p.isr, p.elr = isr, elr
        if leads:
            p.leader = -1
            p.leader_epoch += 1
            p.last_known_leader = broker if self.elr_enabled else -1
        p.partition_epoch += 1
        return True

    def check_new_topic(
        self, name: str, partitions: int, replication_factor: int = -1, min_insync_replicas: int = -1
    ) -> tuple[int, str]:
        """(error, why) of CreateTopics for ``name`` with these settings (-1: the default), in
        Kafka's words (ReplicationControlManager.createTopic); (NONE, "") if it may be created."""
        n = len(self.replicas)
        if name in self.topics:
            return Errors.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists."
        if not valid_topic_name(name):
            return Errors.INVALID_TOPIC_EXCEPTION, (
                f"Topic name '{name}' is illegal: 1 to 249 characters of [a-zA-Z0-9._-], not '.' or '..'."
            )
        if partitions < 1:
            return Errors.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value."
        live = sum(len(ids) for ids in self.topics.values())
        if partitions > MAX_PARTITIONS - live:
            return Errors.INVALID_PARTITIONS, (
                f"{partitions} partitions would exceed the cluster's limit of {MAX_PARTITIONS} ({live} exist)."
            )
        if replication_factor < 1 and replication_factor != -1:
            return Errors.INVALID_REPLICATION_FACTOR, (
                "Replication factor must be larger than 0, or -1 to use the default value."
            )
        if replication_factor > n:
            return Errors.INVALID_REPLICATION_FACTOR, (
                f"Unable to replicate the partition {replication_factor} time(s): The target replication factor "
                f"of {replication_factor} cannot be reached because only {n} broker(s) are registered."
            )
        if replication_factor not in (-1, n):
            return Errors.INVALID_REPLICATION_FACTOR, (
                f"isrcheck replicates every partition on each of the cluster's {n} brokers: the replication "
                f"factor must be {n} (or -1 for the default)."
            )
        if min_insync_replicas != -1 and not 1 <= min_insync_replicas <= n:
            return Errors.INVALID_CONFIG, (
                f"Invalid value {min_insync_replicas} for configuration "
                f"min.insync.replicas: isrcheck needs 1..{n} (the replication factor)."
            )
        return Errors.NONE, ""

    def create_topic(
        self, name: str, partitions: int, replication_factor: int = -1, min_insync_replicas: int = -1
    ) -> int:
        """CreateTopics: ``partitions`` new partitions of ``name``, partition i's replicas starting
        at broker i mod N (Kafka's replica assignment), each led by its first replica with every
        replica in the ISR; ``min_insync_replicas`` the topic's (-1: the cluster's). Returns the
        error (``check_new_topic`` says why)."""
        error, _ = self.check_new_topic(name, partitions, replication_factor, min_insync_replicas)
        if error != Errors.NONE:
            return error
        n, ids = len(self.replicas), []
        for index in range(partitions):
            replicas = tuple(self.replicas[(index + k) % n] for k in range(n))
            p = PartitionRegistration(
                len(self.partitions), name, index, replicas, replicas[0], min_insync_replicas=min_insync_replicas
            )
            self.partitions.append(p)
            ids.append(p.partition_id)
        self.topics[name] = tuple(ids)
        if self.kafka_metadata:
            self._event("create_topic", name, partitions)
            for pid in ids:
                self._changed(self.partitions[pid])
        return Errors.NONE

    def delete_topic(self, name: str) -> int:
        """DeleteTopics: each partition of ``name`` becomes a tombstone (no leader, replicas, ISR or
        ELR; new leader and partition epochs), kept and sent to every live broker, which drops the
        partition and deletes its log. Returns the error."""
        ids = self.topics.pop(name, None)
        if ids is None:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION
        self._event("delete_topic", name)
        for pid in ids:
            p = self.partitions[pid]
            p.deleted, p.leader, p.replicas, p.isr, p.elr, p.last_known_leader = True, -1, (), (), (), -1
            p.leader_epoch += 1
            p.partition_epoch += 1
            self._changed(p)
        return Errors.NONE

    # -- request handlers ---------------------------------------------------------------------
    def _handle_registration(self, src: int, header: Header, req: BrokerRegistrationRequest) -> Any:
        broker = req.broker_id
        if broker not in self.replicas or broker != src:
            return BrokerRegistrationResponse(Errors.INVALID_REQUEST, -1)
        valid_session = self.scheduler.now_ms() <= self.session_deadline[broker]  # BrokerHeartbeatManager
        if broker not in self.fenced and (
            req.incarnation <= self.incarnations[broker]
            or (self.registration_waits_for_session and req.incarnation > self.incarnations[broker] and valid_session)
        ):  # an old process's, or (KRaft) a new one's while the old session lives: it retries
            return BrokerRegistrationResponse(Errors.DUPLICATE_BROKER_REGISTRATION, -1)
        retry = req.incarnation == self.incarnations[broker]  # the answer to this process's last one was lost
        unclean = self.elr_enabled and not retry and req.previous_broker_epoch != self.broker_epochs[broker]
        if self.registration_waits_for_session and broker not in self.fenced and not retry and not unclean:
            # the session expired before a session check fenced it: ClusterControlManager.registerBroker's
            # addRecordsForShutdown takes it out first, as its fencing would (handleBrokerShutdown)
            for pid in sorted(self._take_out(broker)):
                self._changed(self.partitions[pid], tuple(r for r in self._unfenced() if r != broker))
        if unclean:
            # an unclean shutdown: the broker may have lost what it vouched for (a retried registration
            # carries the previous epoch of its first try, not a sign of one: ClusterControlManager
            # handles a shutdown only for a new incarnation)
            changed = [
                p
                for p in self.partitions
                if self._remove_broker(p, broker, tuple(r for r in p.isr if r != broker), (broker,))
            ]
            if changed:
                self._event("unclean_shutdown", broker)
            for p in changed:
                self._changed(p, tuple(r for r in self._unfenced() if r != broker))
        epoch = self._register(broker, req.incarnation)
        if self.events is not None:
            self.events.controller(self, "register", {"replica": broker}, (src, header.correlation_id))
        self.endpoint.respond(src, header, BrokerRegistrationResponse(Errors.NONE, epoch))
        self._registrations_changed()
        for p in self.partitions:
            self._send_leader_and_isr(p, self._unfenced() if self.kafka_metadata else (broker,))
        for p in self.partitions:
            if self.auto and p.leader == -1:
                self.elect(p.partition_id)
        return None

    def _handle_heartbeat(self, src: int, header: Header, req: BrokerHeartbeatRequest) -> Any:
        broker = req.broker_id
        if broker not in self.replicas or broker != src:
            return BrokerHeartbeatResponse(Errors.INVALID_REQUEST, True)
        if self.broker_epochs[broker] != req.broker_epoch:
            return BrokerHeartbeatResponse(Errors.STALE_BROKER_EPOCH, True)
        self.session_deadline[broker] = self.scheduler.now_ms() + self.session_timeout_ms
        if broker in self.fenced:  # alive again after a partition: unfence and resend its state
            self.unfence(broker, (src, header.correlation_id))
        elif header.api_version >= 1:  # every partition whose change it missed (a lost LeaderAndIsr)
            applied = req.partition_epochs
            for p in self.partitions:
                if p.partition_id >= len(applied) or applied[p.partition_id] < p.partition_epoch:
                    self._send_leader_and_isr(p, (broker,))
        elif (req.leader_epoch, req.partition_epoch) < (self.leader_epoch, self.partition_epoch):
            self._send_leader_and_isr(self.partitions[0], (broker,))  # it missed an update (a lost LeaderAndIsr)
            if self.events is not None:
                self.events.controller(self, "resend_leader_and_isr", {"replica": broker}, (src, header.correlation_id))
        # v0 names the one partition's epoch the broker applied, v1 every partition's
        caught_up = self._caught_up(broker, req.partition_epochs if header.api_version >= 1 else (req.partition_epoch,))
        if caught_up and broker in self.awaiting_unfence:  # KRaft unfences a registration once it caught up
            if self.unfence_at_heartbeat:
                self.unfence(broker, (src, header.correlation_id))
            else:  # only the metadata caches held it fenced: no step of the model's
                self.awaiting_unfence.discard(broker)
                self._registrations_changed()
        if header.api_version < 1:
            return BrokerHeartbeatResponse(Errors.NONE, False)
        return BrokerHeartbeatResponse(Errors.NONE, False, self._unfenced(), caught_up)

    def _handle_alter_partition(self, src: int, header: Header, req: AlterPartitionRequest) -> Any:
        """AlterPartition (KIP-497): a leader's ISR change, fenced by leader and partition epochs."""
        if not 0 <= req.partition < len(self.partitions) or self.partitions[req.partition].deleted:
            return AlterPartitionResponse(Errors.UNKNOWN_TOPIC_OR_PARTITION, req.partition)
        p = self.partitions[req.partition]
        if (
            req.broker_id != src
            or not set(req.new_isr) <= set(p.replicas)
            or src not in req.new_isr
            or len(req.new_isr_epochs) not in (0, len(req.new_isr))
        ):
            error = Errors.INVALID_REQUEST  # not from the broker it names, or not an ISR it could have
        elif req.broker_id != p.leader or req.leader_epoch != p.leader_epoch:
            error = Errors.FENCED_LEADER_EPOCH
        elif req.partition_epoch != p.partition_epoch:
            error = Errors.INVALID_UPDATE_VERSION
        elif any(
            not self.active(r) or e not in (-1, self.broker_epochs[r])
            for r, e in zip(req.new_isr, req.new_isr_epochs or (-1,) * len(req.new_isr))
        ):
            error = Errors.INELIGIBLE_REPLICA  # inactive, or (KIP-903) proposed from another incarnation
        else:
            error = Errors.NONE
            p.elr = self._elr_after(p, tuple(sorted(req.new_isr)))
            p.isr = tuple(sorted(req.new_isr))
            p.partition_epoch += 1
            self.isr_changes += 1
            self._event("isr", p.isr, p.partition_epoch, *self._which(p))
            if self.kafka_metadata:
                self._changed(p, tuple(r for r in self._unfenced() if r != src))
        if self.events is not None:
            self.events.controller(
                self,
                "handle_alter_partition",
                {"replica": src, "error": Errors(error).name},
                (src, header.correlation_id),
                partition=p,
            )
        return AlterPartitionResponse(error, p.partition_id, p.leader, p.leader_epoch, p.partition_epoch, p.isr)

    def _handle_create_topics(self, src: int, header: Header, req: CreateTopicsRequest) -> Any:
        if header.api_version < 1:  # a broker's auto-creation
            return CreateTopicsResponse(self.create_topic(req.topic, req.partitions))
        error, why = self.check_new_topic(req.topic, req.partitions, req.replication_factor, req.min_insync_replicas)
        if error != Errors.NONE or req.validate_only:
            return CreateTopicsResponse(error, why)
        error = self.create_topic(req.topic, req.partitions, req.replication_factor, req.min_insync_replicas)
        return CreateTopicsResponse(error, why, self.topics[req.topic][0])

    def _handle_delete_topics(self, src: int, header: Header, req: DeleteTopicsRequest) -> Any:
        return DeleteTopicsResponse(self.delete_topic(req.topic))

    def _handle_allocate_producer_ids(self, src: int, header: Header, req: AllocateProducerIdsRequest) -> Any:
        """ProducerIdControlManager: the next block, kept before it is handed out, so that no id is
        ever given twice, across controller restarts too."""
        if req.broker_id != src or req.broker_id not in self.replicas:
            return AllocateProducerIdsResponse(Errors.INVALID_REQUEST)
        if req.broker_epoch != self.broker_epochs[req.broker_id] or req.broker_id in self.fenced:
            return AllocateProducerIdsResponse(Errors.STALE_BROKER_EPOCH)
        start = self.next_producer_id
        self.next_producer_id += PRODUCER_ID_BLOCK_SIZE
        self._save()
        return AllocateProducerIdsResponse(Errors.NONE, start, PRODUCER_ID_BLOCK_SIZE)

    # -- internals ----------------------------------------------------------------------------
    def _register(self, broker: int, incarnation: int) -> int:
        epoch = self._next_broker_epoch
        self._next_broker_epoch += 1
        self.broker_epochs[broker] = epoch
        self.registrations[broker].append(epoch)
        self.registration_epochs[broker] = tuple(p.partition_epoch for p in self.partitions)
        if self.auto or self.unfence_at_heartbeat:  # a driven run's caches read who is starting (Cluster)
            self.awaiting_unfence.add(broker)  # KRaft's RegisterBrokerRecord with fenced set
        self.incarnations[broker] = incarnation
        self.fenced.discard(broker)
        self.in_controlled_shutdown.discard(broker)  # a new RegisterBrokerRecord is not in controlled shutdown
        self.session_deadline[broker] = self.scheduler.now_ms() + self.session_timeout_ms
        self._event("register", broker, epoch)
        self._save()
        return epoch

    def _caught_up(self, broker: int, applied: tuple[int, ...]) -> bool:
        """The broker applied every partition state the controller had when it registered
        (ReplicationControlManager.processBrokerHeartbeat: ``isCaughtUp`` once the broker's metadata
        offset reached its registration record's)."""
        registered = self.registration_epochs[broker]
        return all(i < len(applied) and applied[i] >= epoch for i, epoch in enumerate(registered))

    def alive_broker_epochs(self, catching_up: Collection[int] | None = None) -> tuple[int, ...]:
        """Per broker its broker epoch (0 before KIP-903, which compares none), -1 while inactive (fenced,
        awaiting unfence, or in controlled shutdown: KRaftMetadataCache.isBrokerShuttingDown) or registered
        and not yet caught up with its registration (``catching_up``, by default those awaiting the heartbeat
        that unfences them: KRaft registers a broker fenced, BrokerHeartbeatManager unfences it once caught
        up): what a broker's metadata cache holds."""
        behind = self.awaiting_unfence if catching_up is None else catching_up
        return tuple(
            -1 if not self.active(b) or b in behind else self.broker_epochs[b] if self.compared_broker_epochs else 0
            for b in self.replicas
        )

    def _registrations_changed(self) -> None:
        """A registration, fence or unfencing: with metadata_cache a self-driven run tells every
        broker (a KRaft broker, fenced or not, replays the metadata log's registration records)."""
        if not (self.metadata_cache and self.auto):
            return
        # grows across this controller's restarts too (the run's clock), so no broker ignores a restarted one's
        self.metadata_version = max(self.metadata_version + 1, self.scheduler.now_ms() << 10)
        req = UpdateMetadataRequest(self.metadata_version, self.alive_broker_epochs())
        for broker in self.replicas:
            self.endpoint.send_request(broker, ApiKey.UPDATE_METADATA, 0, req)

    def _unfenced(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.fenced)

    def _changed(self, p: PartitionRegistration, brokers: tuple[int, ...] | None = None) -> None:
        """A partition change is committed: kept, and sent to ``brokers`` (every unfenced one)."""
        self._save()
        self._send_leader_and_isr(p, self._unfenced() if brokers is None else brokers)

    def _send_leader_and_isr(self, p: PartitionRegistration, brokers: tuple[int, ...]) -> None:
        version = 2 if self.kafka_metadata else 0
        for broker in brokers:
            self.endpoint.send_request(broker, ApiKey.LEADER_AND_ISR, version, self.leader_and_isr(p, broker))

    def leader_and_isr(self, p: PartitionRegistration, broker: int) -> LeaderAndIsrRequest:
        """Partition ``p``'s current state as the LeaderAndIsr for ``broker``."""
        return LeaderAndIsrRequest(
            self.broker_epochs[broker],
            p.partition_id,
            p.leader,
            p.leader_epoch,
            p.partition_epoch,
            p.isr,
            p.replicas,
            p.topic,
            p.index,
            self._unfenced() if self.kafka_metadata else (),
            p.min_insync_replicas,
            p.deleted,
        )

    def metadata(self, broker: int) -> list[LeaderAndIsrRequest]:
        """What a starting broker replays of the metadata log: every live partition's current
        state, as LeaderAndIsrs for ``broker`` (KRaft's BrokerServer.startup applies it before the
        controller accepts its registration)."""
        return [self.leader_and_isr(p, broker) for p in self.partitions if not p.deleted]

    def _check_sessions(self) -> None:
        now = self.scheduler.now_ms()
        for broker in self.replicas:
            if broker not in self.fenced and now > self.session_deadline[broker]:
                self.fence(broker)
        for p in self.partitions:
            if p.leader == -1:
                self.elect(p.partition_id)
        self.scheduler.schedule(self.check_interval_ms, self._check_sessions)

    def _which(self, p: PartitionRegistration) -> tuple[str, ...]:
        """What an event line adds to name the partition, when there are several."""
        return (f"{p.topic}-{p.index}",) if self.kafka_metadata else ()

    def _event(self, *fields: Any) -> None:
        if self.on_event is not None:
            self.on_event("controller", *fields)

    # -- the metadata log's snapshot ----------------------------------------------------------
    def _save(self) -> None:
        if self.metadata_store is not None and self.partitions:
            self.metadata_store.save(
                {
                    "version": 0,
                    "next_broker_epoch": self._next_broker_epoch,
                    "next_producer_id": self.next_producer_id,
                    "broker_epochs": list(self.broker_epochs),
                    "registrations": self.registrations,
                    "partitions": [p.to_json() for p in self.partitions],
                }
            )

    def _restore(self, stored: dict) -> None:
        """Start from a snapshot: every broker gets a fresh session (one that does not register or
        heartbeat within the session timeout is fenced as usual); new incarnations may register."""
        try:
            if stored.get("version") != 0 or len(stored["broker_epochs"]) != len(self.replicas):
                raise ValueError(
                    f"version {stored.get('version')!r} with {len(stored['broker_epochs'])} "
                    f"brokers, expected version 0 with {len(self.replicas)}"
                )
            self._next_broker_epoch = int(stored["next_broker_epoch"])
            self.next_producer_id = int(stored["next_producer_id"])
            self.broker_epochs = [int(e) for e in stored["broker_epochs"]]
            self.registrations = [[int(e) for e in r] for r in stored["registrations"]]
            self.partitions = [PartitionRegistration.from_json(f) for f in stored["partitions"]]
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"cluster metadata: {exc}") from None
        for p in self.partitions:
            if not p.deleted:
                self.topics[p.topic] = self.topics.get(p.topic, ()) + (p.partition_id,)
        now = self.scheduler.now_ms()
        self.session_deadline = [now + self.session_timeout_ms] * len(self.replicas)
