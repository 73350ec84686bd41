"""Request handling, driven through the step-mode Cluster: the controller fences AlterPartition by
partition epoch and fenced replicas; a leader checks a fetch's leader epoch (KIP-320) and refuses an
oversized record; a consumer waits for a new leader's HW; flush.messages fsyncs the log only."""

import pytest

from isrcheck.impl.protocol import CODEC, REQUEST, ApiKey, Errors, FetchRequest
from isrcheck.impl.sim import Cluster, ClusterConfig


def cluster(protocol="kip-320", replicas=3, min_isr=2, **kw):
    return Cluster(ClusterConfig(protocol=protocol, replicas=replicas, min_insync_replicas=min_isr, **kw))


def fetch_round(c, *followers):
    for f in followers:
        c.send_fetch(f)
        c.handle_fetch(f)
        c.handle_fetch_response(f)


def test_alter_partition_is_fenced_by_partition_epoch_and_fenced_replicas():
    c = cluster(replica_lag_time_max_ms=2)
    c.advance(3)
    c.shrink_isr(0)  # proposes {0} at partition epoch 0
    c.crash(2, "process")
    c.fence(2)  # the controller moves to partition epoch 1
    c.handle_alter_partition(0)
    (_, _, _, resp), *_ = [m for m in c.in_flight() if m[0] == "alter_partition_response"]
    assert resp.error == Errors.INVALID_UPDATE_VERSION and resp.partition_epoch == 1
    c.handle_alter_partition_response(0)
    leader = c.snapshot().brokers[0]
    assert leader.pending_isr is None and leader.isr == (0, 1) and leader.partition_epoch == 1
    fetch_round(c, 1)
    c.restart(2)  # unfenced again, but not in the ISR
    c.crash(2, "process")
    c.fence(2)
    c.send_fetch(1)
    c.handle_fetch(1)
    # follower 2 is fenced: an expansion naming it is refused by the controller
    c.brokers[0].partition.followers[2].log_end_offset = 0
    c.expand_isr(0)
    c.handle_alter_partition(0)
    (_, _, _, resp), *_ = [m for m in c.in_flight() if m[0] == "alter_partition_response"]
    assert resp.error == Errors.INELIGIBLE_REPLICA


def test_kip320_leader_fences_a_fetch_from_an_older_leader_epoch():
    c = cluster(min_isr=1, replica_lag_time_max_ms=2)
    c.crash(0, "process")
    c.fence(0)
    c.elect()  # broker 1 leads epoch 2
    for b in (1, 2, 1, 2):
        c.deliver_leader_and_isr(b)
    c.advance(3)
    c.shrink_isr(1)
    c.handle_alter_partition(1)
    c.handle_alter_partition_response(1)  # ISR {1}
    c.crash(1, "process")
    c.fence(1)
    c.restart(1)
    c.elect()  # broker 1 leads again, epoch 4; broker 2 has not heard
    c.deliver_leader_and_isr(1)
    c.deliver_leader_and_isr(1)
    assert c.snapshot().brokers[1].leader_epoch == 4 and c.snapshot().brokers[2].leader_epoch == 2
    c.send_fetch(2)
    c.handle_fetch(2)
    responses = [m[3] for m in c.in_flight() if m[0] == "fetch_response"]
    assert [r.error for r in responses] == [Errors.FENCED_LEADER_EPOCH]
    c.handle_fetch_response(2)  # nothing changes on the follower
    assert c.snapshot().brokers[2].leader_epoch == 2


class Recorder:
    def __init__(self):
        self.frames = []

    def receive(self, src, frame):
        self.frames.append(CODEC.decode_body(CODEC.decode_header(frame), frame))

    def connection_lost(self, peer, correlation_id):
        pass


@pytest.mark.parametrize(
    "protocol,epoch,error",
    [
        ("kip-320", 5, Errors.UNKNOWN_LEADER_EPOCH),
        ("kip-320", 0, Errors.NONE),
        ("kip-279", 5, Errors.NONE),  # before KIP-320 fetches carry no epoch to check
    ],
)
def test_leader_checks_the_current_leader_epoch_of_a_fetch(protocol, epoch, error):
    c = cluster(protocol)
    rec = Recorder()
    c.network.register(4999, rec)
    version = c.config.variant.fetch_version
    c.network.send(4999, 0, CODEC.encode(REQUEST, ApiKey.FETCH, version, 1, FetchRequest(1, 0, 0, epoch, -1)))
    while c.network.deliver_instant():
        pass
    assert [f.error for f in rec.frames] == [error]


def test_kip320_consumer_gets_offset_not_available_until_the_new_leader_hw_catches_up():
    c = cluster(min_isr=1)
    c.produce(0, b"1", 1)
    fetch_round(c, 1, 2)
    c.crash(0, "process")
    c.fence(0)
    c.elect()
    for b in (1, 2, 1, 2):
        c.deliver_leader_and_isr(b)
    c.take_client_responses()
    c.consume(1)
    (resp,) = c.take_client_responses()
    assert resp.error == "OFFSET_NOT_AVAILABLE" and resp.hw == -1
    fetch_round(c, 2)
    c.consume(1)
    (resp,) = c.take_client_responses()
    assert resp.error == "NONE" and resp.records == ((0, b"1"),)


def test_flush_messages_policy_fsyncs_the_log_but_not_the_hw_checkpoint():
    c = cluster(replicas=1, min_isr=1, flush_messages=2)
    c.produce(0, b"1", -1)
    assert c.snapshot().brokers[0].durable == 0
    c.produce(0, b"2", -1)
    snap = c.snapshot().brokers[0]
    assert snap.durable == 2 and snap.hw == 2 and snap.hw_checkpoint == 0


def test_a_record_larger_than_max_message_bytes_is_refused_and_not_appended():
    c = cluster()
    c.produce(0, b"x" * 1_100_000, 1)
    (resp,) = c.take_client_responses()
    assert resp.error == "MESSAGE_TOO_LARGE" and c.snapshot().brokers[0].log == ()
