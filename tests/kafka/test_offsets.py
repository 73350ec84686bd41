"""What ListOffsets and OffsetForLeaderEpoch answer a consumer, on both implementations: the end
offset is the high watermark, not the log end, while a follower is behind; the end of an older
leader epoch is where the next epoch starts (KIP-320's truncation detection). The bugs of
``node_bugs`` planted in isrcheck's brokers fail these checks."""

from __future__ import annotations

import pytest
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.consumer.offsets import (
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
)
from kafka.record import MemoryRecords
from node_bugs import planted

CONSUMER, DEBUGGING = -1, -2
FENCED_LEADER_EPOCH = 74


def latest(conn, topic: str, partition: int, epoch: int, replica: int = CONSUMER) -> int:
    """ListOffsets v4 "latest" of one partition, fenced by ``epoch`` (-1: none)."""
    T = ListOffsetsRequest.ListOffsetsTopic
    response = conn.call(
        ListOffsetsRequest(
            version=4,
            replica_id=replica,
            isolation_level=0,
            topics=[
                T(
                    name=topic,
                    partitions=[
                        T.ListOffsetsPartition(partition_index=partition, current_leader_epoch=epoch, timestamp=-1)
                    ],
                )
            ],
        ),
        ListOffsetsResponse,
    )
    answer = response.topics[0].partitions[0]
    assert answer.error_code == 0, answer
    return answer.offset


def fetch(conn, topic: str, partition: int, epoch: int, offset: int = 0) -> tuple[int, list[tuple[int, int, int]]]:
    """(the HW, [(base offset, last offset, leader epoch) of each batch]) of a consumer's Fetch v12."""
    T = FetchRequest.FetchTopic
    response = conn.call(
        FetchRequest(
            version=12,
            replica_id=CONSUMER,
            max_wait_ms=0,
            min_bytes=0,
            max_bytes=1 << 20,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            forgotten_topics_data=[],
            rack_id="",
            topics=[
                T(
                    topic=topic,
                    partitions=[
                        T.FetchPartition(
                            partition=partition,
                            current_leader_epoch=epoch,
                            fetch_offset=offset,
                            last_fetched_epoch=-1,
                            log_start_offset=-1,
                            partition_max_bytes=1 << 20,
                        )
                    ],
                )
            ],
        ),
        FetchResponse,
    )
    answer = response.responses[0].partitions[0]
    assert answer.error_code == 0, answer
    records, batches = MemoryRecords(answer.records or b""), []
    while records.has_next():
        batch = records.next_batch()
        batches.append((batch.base_offset, batch.last_offset, batch.leader_epoch))
    return answer.high_watermark, batches


def epoch_end(conn, topic: str, partition: int, asked: int, current: int) -> tuple[int, int, int]:
    """(error, epoch, end offset): OffsetForLeaderEpoch v3 for epoch ``asked`` as a consumer asks it."""
    T = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
    response = conn.call(
        OffsetForLeaderEpochRequest(
            version=3,
            replica_id=CONSUMER,
            topics=[
                T(
                    topic=topic,
                    partitions=[
                        T.OffsetForLeaderPartition(
                            partition=partition, current_leader_epoch=current, leader_epoch=asked
                        )
                    ],
                )
            ],
        ),
        OffsetForLeaderEpochResponse,
    )
    answer = response.topics[0].partitions[0]
    return answer.error_code, answer.leader_epoch, answer.end_offset


def leader_epoch(cluster, topic: str, partition: int) -> tuple[int, int]:
    [t] = cluster.metadata(cluster.live()[0], [topic]).topics
    p = next(p for p in t.partitions if p.partition_index == partition)
    return p.leader_id, p.leader_epoch


def check_latest_is_the_high_watermark(cluster, kit, topic: str) -> None:
    """A follower SIGKILLed stays in the ISR until the controller fences it (about 1.5 s): records the
    leader then takes with acks=1 are above its HW. Asked on one connection in one leader epoch,
    between two fetches: ListOffsets "latest" answers the HW (between the two fetches' HWs), below
    the leader's log end (a debugging tool's ListOffsets). Tried again, the follower back, if the
    controller fenced it before the questions were asked."""
    leader, epoch = leader_epoch(cluster, topic, 0)
    follower = next(b for b in range(kit.BROKERS) if b != leader)
    with cluster.connect(leader) as conn:
        assert conn.produce(topic, 0, kit.record_batch(b"a", b"b")) == (kit.NONE, 0)
    for _ in range(3):
        cluster.kill(follower)
        with cluster.connect(leader) as conn:
            assert conn.produce(topic, 0, kit.record_batch(b"c", b"d", b"e"), acks=1)[0] == kit.NONE
            hw_before, _ = fetch(conn, topic, 0, epoch)
            end = latest(conn, topic, 0, epoch)
            hw_after, _ = fetch(conn, topic, 0, epoch)
            leo = latest(conn, topic, 0, -1, replica=DEBUGGING)
        if hw_after < leo:
            break
        cluster.restart(follower)
        cluster.wait_for_partitions(topic)
        leader, epoch = leader_epoch(cluster, topic, 0)
    else:
        pytest.fail("the killed follower was fenced before every try: no follower was behind")
    assert hw_before <= end <= hw_after, f"ListOffsets latest {end}, HW {hw_before} then {hw_after}, LEO {leo}"


def check_an_older_epochs_end(cluster, kit, topic: str) -> None:
    """Five records in the first leader's epoch, the leader SIGKILLed, two records in the next
    leader's: OffsetForLeaderEpoch answers the old epoch with its end, offset 5 (where the new
    epoch's first batch is), the current epoch with the log end; asked with the old epoch as the
    current one it is fenced."""
    old, first = leader_epoch(cluster, topic, 0)
    with cluster.connect(old) as conn:
        assert conn.produce(topic, 0, kit.record_batch(b"a", b"b", b"c")) == (kit.NONE, 0)
        assert conn.produce(topic, 0, kit.record_batch(b"d", b"e")) == (kit.NONE, 3)
    cluster.kill(old)
    cluster.wait_for_partitions(topic, isr=set(range(kit.BROKERS)) - {old})
    new, second = leader_epoch(cluster, topic, 0)
    assert new != old and second > first
    with cluster.connect(new) as conn:
        assert conn.produce(topic, 0, kit.record_batch(b"f", b"g")) == (kit.NONE, 5)
        hw, batches = fetch(conn, topic, 0, second)
        assert hw == 7 and batches == [(0, 2, first), (3, 4, first), (5, 6, second)]
        assert epoch_end(conn, topic, 0, first, second) == (kit.NONE, first, 5)
        assert epoch_end(conn, topic, 0, second, second) == (kit.NONE, second, 7)
        assert epoch_end(conn, topic, 0, first, first)[0] == FENCED_LEADER_EPOCH


def test_list_offsets_latest_is_the_high_watermark_while_a_follower_is_behind(cluster, kit, topic_name):
    check_latest_is_the_high_watermark(cluster, kit, cluster.create_topic(topic_name))


def test_offset_for_leader_epoch_answers_where_an_older_epoch_ends(cluster, kit, topic_name):
    check_an_older_epochs_end(cluster, kit, cluster.create_topic(topic_name))


@pytest.mark.parametrize(
    "bug, check, message",
    [
        ("leo-as-latest", check_latest_is_the_high_watermark, "ListOffsets latest"),
        ("current-epoch-answer", check_an_older_epochs_end, "assert"),
    ],
)
def test_the_planted_bugs_fail_these_checks(kit, tmp_path, topic_name, monkeypatch, bug, check, message):
    """isrcheck's brokers with a bug of the Kafka API layer planted: the check above fails."""
    planted(monkeypatch, bug)
    clusters = kit.start_cluster(tmp_path, "isrcheck")
    cluster = next(clusters)
    try:
        with pytest.raises(AssertionError, match=message):
            check(cluster, kit, cluster.create_topic(topic_name))
    finally:
        clusters.close()
