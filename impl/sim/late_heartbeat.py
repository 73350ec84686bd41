"""A broker's heartbeat delayed across its restart (auto mode): the case KIP-903's broker epochs fence.

A BrokerHeartbeat on the wire when its broker crashes is taken off the network (``hold``) and
delivered to the controller later, once the broker has registered again with a new broker epoch
and has then been fenced (``fenced``): the moment a stale heartbeat accepted would do harm, by
unfencing a broker that is down. The controller must refuse it with STALE_BROKER_EPOCH (Kafka:
``ClusterControlManager`` and ``BrokerHeartbeatManager`` compare the request's broker epoch with
the registration's), which changes nothing and logs nothing. Its connection died with the old
process, so its answer goes nowhere (``SimNetwork.deliver_stale``). No random draw is made here:
the run is the one it would be without the late heartbeat, but for the controller's refusal.
"""

from __future__ import annotations

from ..protocol import ApiKey
from ..runtime import Scheduler
from .network import SimNetwork


class LateHeartbeats:
    """The heartbeats held back from crashed brokers, each with the broker epoch it carries."""

    def __init__(self, network: SimNetwork, clock: Scheduler, controller_id: int) -> None:
        self.network, self.clock, self.controller_id = network, clock, controller_id
        self.held: dict[int, tuple[list, int]] = {}  # broker -> (its heartbeats in flight, its epoch)

    def hold(self, broker: int, broker_epoch: int) -> None:
        """``broker`` crashes: its heartbeats in flight stay on the wire, late."""
        envelopes = self.network.take(broker, self.controller_id, ApiKey.BROKER_HEARTBEAT)
        if envelopes:
            self.held[broker] = (envelopes, broker_epoch)

    def fenced(self, broker: int, broker_epoch: int) -> None:
        """The controller fenced ``broker``, whose registration now has ``broker_epoch``: a held
        heartbeat of an earlier registration arrives now (after the step under way)."""
        held = self.held.get(broker)
        if held is None or held[1] == broker_epoch:
            return
        del self.held[broker]
        for envelope in held[0]:
            self.clock.schedule(0, lambda e=envelope: self.network.deliver_stale(e))
