"""Power losses of Apache Kafka's brokers through the lazy file system, with Kafka's default flush
policy (no fsync per write): one broker's loss costs nothing acknowledged, every broker's at once
loses what no fsync had written, and the soak's budget calls that outside what Kafka promises."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from isrcheck.conformance.engines.apache.admin import cluster_view
from isrcheck.conformance.engines.apache.cluster import KafkaCluster, KafkaSettings, free_port_base
from isrcheck.conformance.engines.apache.distribution import DEFAULT_VERSION, distribution
from isrcheck.conformance.engines.soak.budget import durability_budget

TOPIC = "power"
FAST = dict(broker_session_timeout_ms=1500, broker_heartbeat_interval_ms=250, replica_lag_time_max_ms=3000)


def produce(bootstrap: str, tag: str, n: int) -> list[bytes]:
    """``n`` values sent with acks=all by an idempotent producer; those acknowledged."""
    acked: list[bytes] = []
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "message.timeout.ms": 30_000,
        }
    )
    for i in range(n):
        producer.produce(
            TOPIC,
            f"{tag}-{i}".encode(),
            partition=0,
            on_delivery=lambda err, msg: acked.append(msg.value()) if err is None else None,
        )
    producer.flush(60)
    return acked


def read_all(bootstrap: str, timeout_s: float = 30.0) -> list[bytes]:
    """Everything partition 0 holds: from offset 0 up to its high watermark."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "isrcheck-tests", "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    got, deadline = [], time.monotonic() + timeout_s
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=timeout_s)
        position = 0
        while position < high:
            assert time.monotonic() < deadline, f"read {position} of {high} records in {timeout_s} s"
            for m in consumer.consume(500, 0.5):
                if not m.error():
                    got.append(m.value())
                    position = m.offset() + 1
    finally:
        consumer.close()
    return got


def wait_until(cluster: KafkaCluster, what: str, condition, timeout_s: float = 90.0) -> None:
    """Until ``condition(view of TOPIC-0, registered brokers)`` holds in a live broker's Metadata."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        view = cluster_view(cluster.live_addresses(), [TOPIC])
        part = view.topic(TOPIC).get(0) if view else None
        if part is not None and condition(part, set(view.brokers)):
            return
        time.sleep(0.2)
    raise AssertionError(f"{TOPIC}-0: not {what} within {timeout_s} s")


def power_cycle(cluster: KafkaCluster, brokers: list[int]) -> None:
    """Power losses of ``brokers`` at once; each restarted once the controller fenced it and took it
    out of the ISR (a broker that returned before would be a fast bounce); back once every broker is
    registered and in the ISR again."""
    for broker in brokers:
        cluster.power_loss(broker)
    survivors = set(cluster.brokers) - set(brokers)
    wait_until(
        cluster,
        f"without {brokers} in its ISR",
        lambda p, registered: not set(brokers) & set(p.isr) and not set(brokers) & registered,
    ) if survivors else time.sleep(FAST["broker_session_timeout_ms"] / 1000 * 2)
    for broker in brokers:
        cluster.restart(broker)
    wait_until(
        cluster,
        "back to a full ISR",
        lambda p, registered: (
            p.leader >= 0 and registered == set(cluster.brokers) and set(p.isr) == set(cluster.brokers)
        ),
    )


@pytest.fixture
def cluster(tmp_path):
    """Apache Kafka 4.4.0, three brokers on the lazy file system, one topic of one partition."""
    cluster = KafkaCluster(
        KafkaSettings(brokers=3, port=free_port_base(4), topics=[(TOPIC, 1)], lazyfs=True, **FAST),
        tmp_path / "cluster",
        distribution(DEFAULT_VERSION),
    )
    cluster.start()
    yield cluster
    assert cluster.stop()


def test_every_brokers_power_lost_at_once_loses_the_unsynced_acknowledged_writes(cluster):
    """Kafka fsyncs no write by default: what every broker acknowledged from its page cache is gone
    when all lose power before a flush, and the soak's budget says that is outside Kafka's promise."""
    acked = produce(cluster.bootstrap, "a", 300)
    assert len(acked) == 300
    assert all(cluster.node(b).fs.status()["unsynced_bytes"] > 0 for b in cluster.brokers)
    power_cycle(cluster, list(cluster.brokers))
    survived = set(read_all(cluster.bootstrap))
    lost = [v for v in acked if v not in survived]
    assert lost, "every broker lost power before an fsync, yet every acknowledged write survived"
    record = {"kind": "power", "nodes": list(cluster.brokers), "start": 0, "end": None}
    reason = durability_budget([record], min_isr=2, unclean=False, kip966=cluster.elr, run_end_ns=1)
    assert reason is not None and "more than min.insync.replicas - 1 = 1" in reason


@pytest.mark.slow
def test_one_brokers_power_loss_costs_nothing_acknowledged(cluster):
    """The leader loses power with the partition's whole log unsynced; the other two hold every
    acknowledged write, and the leader, back, fetches it again (KIP-966: unclean shutdown detected)."""
    acked = produce(cluster.bootstrap, "a", 300)
    assert len(acked) == 300
    leader = cluster_view(cluster.live_addresses(), [TOPIC]).topic(TOPIC)[0].leader
    assert cluster.node(leader).fs.status()["unsynced_bytes"] > 0
    power_cycle(cluster, [leader])
    assert read_all(cluster.bootstrap) == acked, "one broker's power loss lost an acknowledged write"
