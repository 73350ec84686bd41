"""Replication: a broker (Broker, ReplicaManager, Partition, ReplicaFetcher, DelayedProduce) and the
settings every broker and the controller share. It runs on the ``runtime`` interfaces only, so the
same code runs on the simulation (``isrcheck.impl.sim``) and on the real runtime."""

from .broker import CRASH_KINDS, DISK_IO, Broker
from .config import MAX_REPLICAS, ClusterConfig, InvalidConfigError
from .delayed_produce import DelayedProduce, DelayedProducePurgatory
from .fetcher import ReplicaFetcher
from .partition import Partition
from .protocol import VARIANTS, ProtocolVariant
from .replica_manager import ReplicaManager

__all__ = [
    "Broker",
    "ReplicaManager",
    "Partition",
    "ReplicaFetcher",
    "DelayedProduce",
    "DelayedProducePurgatory",
    "ClusterConfig",
    "InvalidConfigError",
    "MAX_REPLICAS",
    "CRASH_KINDS",
    "DISK_IO",
    "ProtocolVariant",
    "VARIANTS",
]
