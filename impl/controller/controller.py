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


class Controller:
    """The cluster's controller for the one partition (see the module docstring)."""

    def __init__(self, replicas: int, unclean_leader_election_enable: bool, scheduler: Scheduler,
                 transport: Transport, auto: bool = False, session_timeout_ms: int = 60,
                 check_interval_ms: int = 10,
                 on_event: Callable[..., None] | None = None) -> None:
        self.replicas = tuple(range(replicas))
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
        self.fenced: set[int] = set()
        self.broker_epochs = [-1] * replicas
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

    # -- queries ------------------------------------------------------------------------------
    def state(self) -> ControllerState:
        return ControllerState(self.leader, self.leader_epoch, self.isr, self.partition_epoch,
                               tuple(sorted(self.fenced)), tuple(self.broker_epochs))

    def eligible_leader(self) -> int:
        """The replica ``elect`` would pick, or -1: first unfenced ISR member, else (unclean) any."""
        for r in self.isr:
            if r not in self.fenced:
                return r
        if self.unclean:
            for r in self.replicas:
                if r not in self.fenced:
                    return r
        return -1

    # -- controller actions -------------------------------------------------------------------
    def elect(self) -> int:
        """PartitionChangeBuilder leader election for a leaderless partition; returns the leader."""
        leader = self.eligible_leader()
        if self.leader != -1 or leader == -1:
            return -1
        if leader not in self.isr:
            self.isr = (leader,)  # unclean: the ISR restarts from the new leader
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
        self.elections += 1
        self._event(event, leader, self.leader_epoch)
        self._send_leader_and_isr(self._unfenced())

    def fence(self, broker: int) -> None:
        """The broker's session expired (BrokerHeartbeatManager): out of the ISR and leadership."""
        if broker in self.fenced:
            return
        self.fenced.add(broker)
        changed = False
        if broker in self.isr and len(self.isr) > 1:
            self.isr = tuple(r for r in self.isr if r != broker)
            self.isr_changes += 1
            changed = True
        if self.leader == broker:
            self.leader = -1
            self.leader_epoch += 1
            changed = True
        self._event("fence", broker)
        if changed:
            self.partition_epoch += 1
            self._send_leader_and_isr(self._unfenced())
        if self.auto and self.leader == -1:
            self.elect()

    # -- request handlers ---------------------------------------------------------------------
    def _handle_registration(self, src: int, header: Header, req: BrokerRegistrationRequest) -> Any:
        broker = req.broker_id
        if broker not in self.replicas or broker != src:
            return BrokerRegistrationResponse(Errors.INVALID_REQUEST, -1)
        if broker not in self.fenced and req.incarnation <= self.incarnations[broker]:
            return BrokerRegistrationResponse(Errors.DUPLICATE_BROKER_REGISTRATION, -1)
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
        if req.broker_id != src or not set(req.new_isr) <= set(self.replicas) or src not in req.new_isr:
            error = Errors.INVALID_REQUEST  # not from the broker it names, or not an ISR it could have
        elif req.broker_id != self.leader or req.leader_epoch != self.leader_epoch:
            error = Errors.FENCED_LEADER_EPOCH
        elif req.partition_epoch != self.partition_epoch:
            error = Errors.INVALID_UPDATE_VERSION
        elif any(r in self.fenced for r in req.new_isr):
            error = Errors.INELIGIBLE_REPLICA
        else:
            error = Errors.NONE
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
