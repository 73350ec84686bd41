"""The deterministic simulation runtime: a simulated clock with timers, a simulated network, the
SimWorld that builds brokers and a controller on them, and the Cluster that drives that world step
by step or on auto; the simulated file system comes from the storage engine. ``isrcheck sim``
lives in ``cli``.

Besides its own names it exports what a Cluster's user needs alongside: the config it is built from
and the results clients receive."""

from ..clients import ConsumeResult, ProduceResult
from ..replication import CRASH_KINDS, ClusterConfig, InvalidConfigError
from .clock import SimClock
from .cluster import Cluster, ClusterError
from .network import NetworkFaults, SimNetwork
from .snapshot import BrokerSnapshot, ClusterSnapshot, LogEntry, PendingProduce
from .world import MESSAGE_KINDS, SimWorld

__all__ = [
    "Cluster",
    "ClusterError",
    "CRASH_KINDS",
    "MESSAGE_KINDS",
    "ClusterSnapshot",
    "BrokerSnapshot",
    "LogEntry",
    "PendingProduce",
    "NetworkFaults",
    "SimClock",
    "SimNetwork",
    "SimWorld",
    "ClusterConfig",
    "InvalidConfigError",
    "ProduceResult",
    "ConsumeResult",
]
