"""What a broker's Kafka listener needs beyond replication (``KafkaSettings``), in a module of its
own: the API handlers of ``apis`` and ``admin`` both read it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KafkaSettings:
    """What a broker's Kafka listener needs beyond replication: where every broker listens for
    clients, the cluster id, and topic auto-creation (Kafka's ``auto.create.topics.enable`` and
    ``num.partitions``)."""

    listeners: dict[int, tuple[str, int]]
    cluster_id: str = "isrcheck"
    auto_create_topics: bool = True
    num_partitions: int = 1


__all__ = ["KafkaSettings"]
