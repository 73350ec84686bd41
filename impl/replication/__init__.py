"""Replication: brokers (ReplicaManager, Partition, ReplicaFetcher, DelayedProduce) and the Cluster
facade that runs them with a controller on the deterministic simulation."""
from ..clients import ConsumeResult, ProduceResult
from ..sim.network import NetworkFaults
from .cluster import CRASH_KINDS, MESSAGE_KINDS, Cluster, ClusterError
from .config import ClusterConfig, InvalidConfigError
from .snapshot import BrokerSnapshot, ClusterSnapshot, LogEntry, PendingProduce

__all__ = [
    "Cluster", "ClusterConfig", "ClusterError", "InvalidConfigError", "NetworkFaults", "MESSAGE_KINDS",
    "CRASH_KINDS", "ProduceResult", "ConsumeResult", "BrokerSnapshot", "ClusterSnapshot", "LogEntry",
    "PendingProduce",
]
