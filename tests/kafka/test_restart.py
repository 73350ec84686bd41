"""A restarted broker and the clients that reach it first."""

from __future__ import annotations

NOT_LEADER_OR_FOLLOWER = 6


def test_a_restarted_broker_serves_clients_only_once_it_hosts_every_partition(cluster, kit, topic_name):
    """Kafka's broker enables request processing on its client listener only once it caught up
    with the controller's metadata (BrokerServer.startup: ``lifecycleManager.initialCatchUpFuture``,
    then ``socketServer.enableRequestProcessing``). A client whose first request reaches a restarted
    broker (its port open again) must not be told that a partition of the topic does not exist:
    librdkafka takes a Metadata answer with fewer partitions for a shrunken topic and fails the
    sends queued for the others with ``_UNKNOWN_PARTITION``, a produce answered
    UNKNOWN_TOPIC_OR_PARTITION fails on the spot."""
    topic = cluster.create_topic(topic_name)
    for p in range(kit.PARTITIONS):  # something in every log, so the restart recovers each
        with cluster.connect(cluster.leader(topic, p)) as conn:
            assert conn.produce(topic, p, kit.record_batch(b"before"), acks=1)[0] == kit.NONE
    cluster.kill(1)
    cluster.restart(1)  # back once its process listens: a client's Metadata, then its sends, at once
    md = cluster.metadata(1, [topic])
    with cluster.connect(1) as conn:
        produced = {
            p: conn.produce(topic, p, kit.record_batch(f"at once {p}".encode()), acks=1)[0]
            for p in range(kit.PARTITIONS)
        }
    [listed] = [t for t in md.topics if t.name == topic]
    assert listed.error_code == kit.NONE, f"broker 1's first Metadata answer: topic error {listed.error_code}"
    assert sorted(p.partition_index for p in listed.partitions) == list(range(kit.PARTITIONS)), (
        f"broker 1's first Metadata answer lists partitions {[p.partition_index for p in listed.partitions]}"
    )
    assert all(p.leader_id >= 0 for p in listed.partitions), listed.partitions
    # each answered as its leader or as a follower that knows it (never UNKNOWN_TOPIC_OR_PARTITION)
    assert set(produced.values()) <= {kit.NONE, NOT_LEADER_OR_FOLLOWER}, f"produce errors by partition: {produced}"
