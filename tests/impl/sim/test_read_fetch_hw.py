"""A leader's fetch read in two on the step-mode Cluster (docs/steps.md, ``read_fetch_hw``): the
HW first (Partition.read_high_watermark), the LEO and the batches by ``read_fetch`` (Partition.read_log), as
Kafka's Partition.readRecords reads initialHighWatermark before initialLogEndOffset and its localLog.read."""

import pytest

from isrcheck.impl.sim import Cluster, ClusterConfig, ClusterError


def _cluster(**switches) -> Cluster:
    config = ClusterConfig(protocol="kip-966", replicas=3, min_insync_replicas=2, **switches)
    return Cluster(config)


def _split() -> Cluster:
    return _cluster(split_fetch_handling=True)


def _answer(c: Cluster, follower: int):
    """The fetch response in flight to ``follower`` (the only one)."""
    (resp,) = [m[3] for m in c.in_flight() if m[:2] == ("fetch_response", follower)]
    return resp


def _both_fetched_a(c: Cluster) -> Cluster:
    """Followers 1 and 2 fetched record a; leader 0 knows follower 1 at 1 and follower 2 at 0, HW 0;
    both have a fetch from offset 1 in flight."""
    c.produce(0, b"a", 1)
    for r in (1, 2, 1):
        c.send_fetch(r)
        c.handle_fetch(r)
        c.handle_fetch_response(r)
    c.send_fetch(1)
    c.send_fetch(2)
    return c


def test_the_hw_is_held_without_records_and_the_batches_read_later():
    c = _split()
    c.produce(0, b"a", 1)
    c.send_fetch(1)
    c.read_fetch_hw(1)
    (held,) = c.snapshot().brokers[0].held_reads
    assert held.hw_only and (held.fetch_offset, held.hw, held.records) == (0, 0, ())
    assert (held.fetch_time_ms, held.leo_read) == (0, -1)  # its time; no LEO read yet
    c.produce(0, b"b", 1)
    c.read_fetch(1)
    (held,) = c.snapshot().brokers[0].held_reads
    assert not held.hw_only and [r[2] for r in held.records] == [b"a", b"b"]  # up to the LEO then
    assert (held.fetch_time_ms, held.leo_read) == (0, 2)  # the HW's read's time kept
    c.handle_fetch(1)
    assert _answer(c, 1).high_watermark == 0


def test_a_raise_and_an_append_between_leave_the_answer_the_hw_read_before():
    c = _both_fetched_a(_split())
    c.read_fetch_hw(1)
    c.handle_fetch(2)  # follower 2's update raises the HW to 1
    c.produce(0, b"b", 1)
    c.read_fetch(1)
    c.handle_fetch(1)
    assert c.snapshot().brokers[0].hw == 1
    resp = _answer(c, 1)
    assert resp.high_watermark == 0 and resp.records  # the HW read first, the record appended after the raise
    c.handle_fetch_response(1)
    assert [e.value for e in c.snapshot().brokers[1].log] == [b"a", b"b"]


def test_a_limited_fetch_reads_at_most_its_batches_later():
    c = _split()
    c.produce(0, b"a", 1)
    c.produce(0, b"b", 1)
    c.send_fetch(1, max_batches=1)
    c.read_fetch_hw(1)
    assert c.snapshot().brokers[0].held_reads[0].max_batches == 1
    c.read_fetch(1)
    (held,) = c.snapshot().brokers[0].held_reads
    assert [r[2] for r in held.records] == [b"a"] and held.max_batches == 0


def test_handle_fetch_and_a_leader_and_isr_wait_for_the_batches():
    c = _split()
    c.produce(0, b"a", 1)
    c.send_fetch(1)
    c.read_fetch_hw(1)
    c.elect(1)
    with pytest.raises(ClusterError, match="read only the HW of follower 1"):
        c.handle_fetch(1)
    with pytest.raises(ClusterError, match="broker 0 holds a fetch read of the HW only"):
        c.deliver_leader_and_isr(0, 0)
    with pytest.raises(ClusterError, match="no fetch_request #0 of replica 1"):
        c.read_fetch_hw(1)  # its request is held
    c.deliver_leader_and_isr(1, 0)  # another broker's is not held up
    c.read_fetch(1)
    c.deliver_leader_and_isr(0, 0)
    assert c.snapshot().brokers[0].held_reads[0].detached


def test_the_leaders_crash_forgets_the_hw_read():
    c = _split()
    c.send_fetch(1)
    c.read_fetch_hw(1)
    c.crash(0, "process")
    assert c.snapshot().brokers[0].held_reads == ()
    for step in (c.read_fetch, c.handle_fetch):
        with pytest.raises(ClusterError):
            step(1)


def test_without_the_switch_it_is_refused():
    c = _cluster()
    c.send_fetch(1)
    with pytest.raises(ClusterError, match="split_fetch_handling is off"):
        c.read_fetch_hw(1)
