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
back. A restarted broker whose session has not expired yet registers too, with a newer incarnation:
a fast bounce the controller does not notice, so it keeps its ISR membership and leadership.

With broker epochs checked (KIP-903) an AlterPartition naming a member with a broker epoch other
than its registration's is ``INELIGIBLE_REPLICA``. With Eligible Leader Replicas (KIP-966) the
ISR may become empty; whenever an ISR change leaves it below min.insync.replicas, the members it
lost join the ELR (PartitionChangeBuilder.maybePopulateTargetElr); election takes the ISR, then
an unfenced ELR member, then (ISR and ELR empty) the last known leader; and a broker registering
after an unclean shutdown (no previous broker epoch) first leaves ISR, ELR and leadership
(ReplicationControlManager.handleBrokerUncleanShutdown).

With ``auto`` off nothing happens by itself: sessions never expire and elections happen only when
``elect`` is called. With it on, a session check runs every heartbeat interval and a leaderless
partition is elected as soon as an eligible replica exists.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..network import NodeEndpoint
from ..protocol import (
    AlterPartitionRequest, AlterPartitionResponse, ApiKey, BrokerHeartbeatRequest,
    BrokerHeartbeatResponse, BrokerRegistrationRequest, BrokerRegistrationResponse, Errors, Header,
    LeaderAndIsrRequest,
)
from ..runtime import Scheduler, Transport

CONTROLLER_ID = 3000  # a node id outside the broker range, as KRaft controllers often have


@dataclass(frozen=True)
class ControllerState:
    """The controller's partition state, fenced brokers and broker epochs."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int
    fenced: tuple[int, ...]
    broker_epochs: tuple[int, ...]  # per broker id, -1 never registered
    elr: tuple[int, ...] = ()       # Eligible Leader Replicas (KIP-966)
    last_known_leader: int = -1     # the leader the partition last lost (KIP-966)
    # per broker every broker epoch it was given, oldest first (the metadata log's registrations)
    registrations: tuple[tuple[int, ...], ...] = ()


class Controller:
    """The cluster's controller for the one partition (see the module docstring)."""

    def __init__(self, replicas: int, unclean_leader_election_enable: bool, scheduler: Scheduler,
                 transport: Transport, auto: bool = False, session_timeout_ms: int = 60,
                 check_interval_ms: int = 10,
                 on_event: Callable[..., None] | None = None, min_insync_replicas: int = 1,
                 eligible_leader_replicas: bool = False) -> None:
        self.replicas = tuple(range(replicas))
        self.min_insync_replicas = min_insync_replicas
        self.elr_enabled = eligible_leader_replicas
        self.unclean = unclean_leader_election_enable
        self.scheduler = scheduler
        self.auto = auto
        self.session_timeout_ms = session_timeout_ms
        self.check_interval_ms = check_interval_ms
        self.on_event = on_event
        self.leader = 0
        self.leader_epoch = 0
        self.isr: tuple[int, ...] = self.replicas
        self.partition_epoch = 0
        self.elr: tuple[int, ...] = ()
        self.last_known_leader = -1
        self.fenced: set[int] = set()
        self.broker_epochs = [-1] * replicas
        self.registrations: list[list[int]] = [[] for _ in range(replicas)]
        self.incarnations = [-1] * replicas  # of the registered process of each broker
        self.session_deadline = [0] * replicas
        self._next_broker_epoch = 1
        self.elections = 0    # leader elections (each a leader change)
        self.isr_changes = 0  # committed ISR changes (AlterPartition, fencing)
        self.endpoint = NodeEndpoint(CONTROLLER_ID, transport)
        self.endpoint.handlers = {
            ApiKey.BROKER_REGISTRATION: self._handle_registration,
            ApiKey.BROKER_HEARTBEAT: self._handle_heartbeat,
            ApiKey.ALTER_PARTITION: self._handle_alter_partition,
        }
        transport.register(CONTROLLER_ID, self.endpoint)
        for broker in self.replicas:  # the initial brokers registered before the partition was created
            self._register(broker, 0)
        if auto:
            scheduler.schedule(check_interval_ms, self._check_sessions)

    @classmethod
    def for_cluster(cls, config, scheduler: Scheduler, transport: Transport, auto: bool,
                    on_event: Callable[..., None] | None = None) -> "Controller":
        """The controller of a cluster with ``config`` (a ClusterConfig: replication settings, the
        session timeout, the heartbeat interval as session check interval, the protocol variant)."""
        return cls(config.replicas, config.unclean_leader_election_enable, scheduler, transport, auto=auto,
                   session_timeout_ms=config.broker_session_timeout_ms,
                   check_interval_ms=config.broker_heartbeat_interval_ms, on_event=on_event,
                   min_insync_replicas=config.min_insync_replicas,
                   eligible_leader_replicas=config.variant.eligible_leader_replicas)

    # -- queries ------------------------------------------------------------------------------
    def state(self) -> ControllerState:
        return ControllerState(self.leader, self.leader_epoch, self.isr, self.partition_epoch,
                               tuple(sorted(self.fenced)), tuple(self.broker_epochs), self.elr,
                               self.last_known_leader, tuple(tuple(r) for r in self.registrations))

    def eligible_leader(self) -> int:
        """The replica ``elect`` would pick, or -1 (see ``_election``)."""
        choice = self._election()
        return -1 if choice is None else choice[0]

    def _election(self) -> tuple[int, tuple[int, ...], tuple[int, ...]] | None:
        """(leader, ISR, ELR) of PartitionChangeBuilder.electLeader: the first unfenced ISR member;
        with KIP-966 then the first unfenced ELR member, then, ISR and ELR both empty, the last known
        leader if unfenced; else with unclean election the first unfenced replica, the ISR
        restarting from it (and the ELR emptied: it need not hold what the ELR vouched for)."""
        for r in self.isr:
            if r not in self.fenced:
                return r, self.isr, self.elr
        if self.elr_enabled:
            for r in self.elr:
                if r not in self.fenced:
                    isr = tuple(sorted(self.isr + (r,)))
                    return r, isr, self._elr_after(isr)
            lkl = self.last_known_leader
            if not self.isr and not self.elr and lkl >= 0 and lkl not in self.fenced:
                return lkl, (lkl,), self._elr_after((lkl,))
        if self.unclean:
            for r in self.replicas:
                if r not in self.fenced:
                    return r, (r,), ()
        return None

    def _elr_after(self, isr: tuple[int, ...], unclean: tuple[int, ...] = ()) -> tuple[int, ...]:
        """maybePopulateTargetElr (KIP-966): empty once ``isr`` reaches min ISR; else the members the
        ISR loses join the ELR, minus brokers back from an unclean shutdown."""
        if not self.elr_enabled or len(isr) >= self.min_insync_replicas:
            return ()
        return tuple(sorted((set(self.elr) | set(self.isr)) - set(isr) - set(unclean)))

    # -- controller actions -------------------------------------------------------------------
    def elect(self) -> int:
        """PartitionChangeBuilder leader election for a leaderless partition; returns the leader."""
        choice = self._election()
        if self.leader != -1 or choice is None:
            return -1
        leader, self.isr, self.elr = choice
        self._new_leader("elect", leader)
        return leader

    def move_leader(self, target: int) -> None:
        """Preferred replica election / controlled shutdown: ``target``, an unfenced ISR member other
        than the leader, leads in a new leader epoch; the ISR stays."""
        if target in self.fenced or target not in self.isr or target == self.leader:
            raise ValueError(f"broker {target} cannot take over leadership")
        self._new_leader("move_leader", target)

    def _new_leader(self, event: str, leader: int) -> None:
        """A leader change: new leader and partition epochs, told to every unfenced broker."""
        self.leader = leader
        self.leader_epoch += 1
        self.partition_epoch += 1
        self.last_known_leader = -1
        self.elections += 1
        self._event(event, leader, self.leader_epoch)
        self._send_leader_and_isr(self._unfenced())

    def fence(self, broker: int) -> None:
        """The broker's session expired (BrokerHeartbeatManager): out of the ISR and leadership."""
        if broker in self.fenced:
            return
        self.fenced.add(broker)
        # before KIP-966 the last ISR member stays; with the ELR the ISR may go empty
        keep_last = not self.elr_enabled and len(self.isr) == 1
        changed = self._remove_broker(broker, self.isr if keep_last else tuple(r for r in self.isr if r != broker))
        self._event("fence", broker)
        if changed:
            self._send_leader_and_isr(self._unfenced())
        if self.auto and self.leader == -1:
            self.elect()

    def _remove_broker(self, broker: int, isr: tuple[int, ...], unclean: tuple[int, ...] = ()) -> bool:
        """A partition change taking ``broker`` out of leadership and the ISR (now ``isr``), the ELR
        following; a new partition epoch (and leader epoch if it led). True if anything changed."""
        elr = self._elr_after(isr, unclean)
        leads = self.leader == broker
        if not leads and isr == self.isr and elr == self.elr:
            return False
        if isr != self.isr:
            self.isr_changes += 1
        self.isr, self.elr = isr, elr
        if leads:
            self.leader = -1
            self.leader_epoch += 1
            self.last_known_leader = broker if self.elr_enabled else -1
        self.partition_epoch += 1
        return True

    # -- request handlers ---------------------------------------------------------------------
    def _handle_registration(self, src: int, header: Header, req: BrokerRegistrationRequest) -> Any:
        broker = req.broker_id
        if broker not in self.replicas or broker != src:
            return BrokerRegistrationResponse(Errors.INVALID_REQUEST, -1)
        if broker not in self.fenced and req.incarnation <= self.incarnations[broker]:
            return BrokerRegistrationResponse(Errors.DUPLICATE_BROKER_REGISTRATION, -1)
        if self.elr_enabled and req.previous_broker_epoch != self.broker_epochs[broker]:
            # an unclean shutdown: the broker may have lost what it vouched for
            if self._remove_broker(broker, tuple(r for r in self.isr if r != broker), (broker,)):
                self._event("unclean_shutdown", broker)
                self._send_leader_and_isr(tuple(r for r in self._unfenced() if r != broker))
        epoch = self._register(broker, req.incarnation)
        self.endpoint.respond(src, header, BrokerRegistrationResponse(Errors.NONE, epoch))
        self._send_leader_and_isr((broker,))
        if self.auto and self.leader == -1:
            self.elect()
        return None

    def _handle_heartbeat(self, src: int, header: Header, req: BrokerHeartbeatRequest) -> Any:
        broker = req.broker_id
        if broker not in self.replicas or broker != src:
            return BrokerHeartbeatResponse(Errors.INVALID_REQUEST, True)
        if self.broker_epochs[broker] != req.broker_epoch:
            return BrokerHeartbeatResponse(Errors.STALE_BROKER_EPOCH, True)
        self.session_deadline[broker] = self.scheduler.now_ms() + self.session_timeout_ms
        if broker in self.fenced:  # alive again after a partition: unfence and resend its state
            self.fenced.discard(broker)
            self._event("unfence", broker)
            self._send_leader_and_isr((broker,))
            if self.leader == -1:
                self.elect()
        elif (req.leader_epoch, req.partition_epoch) < (self.leader_epoch, self.partition_epoch):
            self._send_leader_and_isr((broker,))  # it missed an update (a lost LeaderAndIsr)
        return BrokerHeartbeatResponse(Errors.NONE, False)

    def _handle_alter_partition(self, src: int, header: Header, req: AlterPartitionRequest) -> Any:
        """AlterPartition (KIP-497): a leader's ISR change, fenced by leader and partition epochs."""
        if req.broker_id != src or not set(req.new_isr) <= set(self.replicas) or src not in req.new_isr or \
                len(req.new_isr_epochs) not in (0, len(req.new_isr)):
            error = Errors.INVALID_REQUEST  # not from the broker it names, or not an ISR it could have
        elif req.broker_id != self.leader or req.leader_epoch != self.leader_epoch:
            error = Errors.FENCED_LEADER_EPOCH
        elif req.partition_epoch != self.partition_epoch:
            error = Errors.INVALID_UPDATE_VERSION
        elif any(r in self.fenced or e not in (-1, self.broker_epochs[r])
                 for r, e in zip(req.new_isr, req.new_isr_epochs or (-1,) * len(req.new_isr))):
            error = Errors.INELIGIBLE_REPLICA  # fenced, or (KIP-903) proposed from another incarnation
        else:
            error = Errors.NONE
            self.elr = self._elr_after(tuple(sorted(req.new_isr)))
            self.isr = tuple(sorted(req.new_isr))
            self.partition_epoch += 1
            self.isr_changes += 1
            self._event("isr", self.isr, self.partition_epoch)
        return AlterPartitionResponse(error, 0, self.leader, self.leader_epoch, self.partition_epoch, self.isr)

    # -- internals ----------------------------------------------------------------------------
    def _register(self, broker: int, incarnation: int) -> int:
        epoch = self._next_broker_epoch
        self._next_broker_epoch += 1
        self.broker_epochs[broker] = epoch
        self.registrations[broker].append(epoch)
        self.incarnations[broker] = incarnation
        self.fenced.discard(broker)
        self.session_deadline[broker] = self.scheduler.now_ms() + self.session_timeout_ms
        self._event("register", broker, epoch)
        return epoch

    def _unfenced(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.fenced)

    def _send_leader_and_isr(self, brokers: tuple[int, ...]) -> None:
        for broker in brokers:
            self.endpoint.send_request(broker, ApiKey.LEADER_AND_ISR, 0, LeaderAndIsrRequest(
                self.broker_epochs[broker], 0, self.leader, self.leader_epoch, self.partition_epoch,
                self.isr, self.replicas))

    def _check_sessions(self) -> None:
        now = self.scheduler.now_ms()
        for broker in self.replicas:
            if broker not in self.fenced and now > self.session_deadline[broker]:
                self.fence(broker)
        if self.leader == -1:
            self.elect()
        self.scheduler.schedule(self.check_interval_ms, self._check_sessions)

    def _event(self, *fields: Any) -> None:
        if self.on_event is not None:
            self.on_event("controller", *fields)
