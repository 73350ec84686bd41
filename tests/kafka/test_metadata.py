"""Metadata as a client sees it from any one broker it bootstraps from."""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient


def brokers_seen_from(address: str) -> dict[int, str]:
    """The brokers a librdkafka client bootstrapped from ``address`` alone learns of."""
    metadata = AdminClient({"bootstrap.servers": address}).list_topics(timeout=10)
    return {b.id: f"{b.host}:{b.port}" for b in metadata.brokers.values()}


@pytest.mark.slow  # a cluster of its own
def test_every_broker_lists_the_whole_cluster_before_any_topic_exists(cluster):
    """Kafka's Metadata lists every live broker whether or not a topic exists: a client that
    bootstraps from any one broker of a fresh cluster (``isrcheck serve`` without --topic) learns
    of all three."""
    everyone = {b: cluster.address(b) for b in range(3)}
    seen = {}

    def complete() -> bool:
        seen.update({b: brokers_seen_from(cluster.address(b)) for b in range(3)})
        return all(s == everyone for s in seen.values())

    try:
        cluster.wait_until(complete, "every broker lists all three", timeout=3)
    except AssertionError:
        raise AssertionError(f"brokers listed, by the broker asked: {seen}") from None
