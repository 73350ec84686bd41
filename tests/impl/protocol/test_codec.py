"""The wire codec: every message survives encode/decode at every version, and malformed bytes give
a DecodeError (or an error response from a broker), never a crash."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isrcheck.impl.protocol import (
    CODEC,
    REQUEST,
    RESPONSE,
    AlterPartitionRequest,
    AlterPartitionResponse,
    ApiKey,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    DecodeError,
    Errors,
    FetchRequest,
    FetchResponse,
    LeaderAndIsrRequest,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    ProduceRequest,
    ProduceResponse,
    WireRecord,
)
from isrcheck.impl.sim import Cluster, ClusterConfig

SAMPLES = [
    (
        REQUEST,
        ApiKey.PRODUCE,
        0,
        ProduceRequest(-1, 1000, 0, (WireRecord(-1, -1, b"", b"17"), WireRecord(-1, -1, None, b"x" * 300))),
    ),
    (RESPONSE, ApiKey.PRODUCE, 0, ProduceResponse(Errors.NOT_ENOUGH_REPLICAS, 0, -1)),
    (REQUEST, ApiKey.FETCH, 0, FetchRequest(2, 0, 5)),
    (REQUEST, ApiKey.FETCH, 1, FetchRequest(2, 0, 5, 3, 2)),
    (REQUEST, ApiKey.FETCH, 2, FetchRequest(2, 0, 5, max_batches=1)),
    (REQUEST, ApiKey.FETCH, 3, FetchRequest(2, 0, 5, 3, 2, 8)),
    (RESPONSE, ApiKey.FETCH, 0, FetchResponse(0, 0, 4, 0, 6, -1, -1, b"\x00batch bytes")),
    (RESPONSE, ApiKey.FETCH, 1, FetchResponse(0, 0, 4, 0, 6, 1, 3, b"")),
    (RESPONSE, ApiKey.FETCH, 2, FetchResponse(0, 0, 4, 0, 6, -1, -1, b"\x00batch bytes")),
    (RESPONSE, ApiKey.FETCH, 3, FetchResponse(0, 0, 4, 0, 6, 1, 3, b"")),
    (REQUEST, ApiKey.OFFSET_FOR_LEADER_EPOCH, 0, OffsetForLeaderEpochRequest(1, 0, 4)),
    (REQUEST, ApiKey.OFFSET_FOR_LEADER_EPOCH, 2, OffsetForLeaderEpochRequest(1, 0, 4, 7)),
    (RESPONSE, ApiKey.OFFSET_FOR_LEADER_EPOCH, 0, OffsetForLeaderEpochResponse(0, 0, -1, 12)),
    (RESPONSE, ApiKey.OFFSET_FOR_LEADER_EPOCH, 1, OffsetForLeaderEpochResponse(0, 0, 3, 12)),
    (REQUEST, ApiKey.LEADER_AND_ISR, 0, LeaderAndIsrRequest(9, 0, 2, 5, 8, (0, 2), (0, 1, 2))),
    (REQUEST, ApiKey.ALTER_PARTITION, 0, AlterPartitionRequest(0, 3, 0, 2, 4, (0, 1))),
    (RESPONSE, ApiKey.ALTER_PARTITION, 0, AlterPartitionResponse(Errors.INVALID_UPDATE_VERSION, 0, 0, 2, 5, (0,))),
    (REQUEST, ApiKey.BROKER_REGISTRATION, 0, BrokerRegistrationRequest(1, 2)),
    (RESPONSE, ApiKey.BROKER_REGISTRATION, 0, BrokerRegistrationResponse(0, 11)),
    (REQUEST, ApiKey.BROKER_HEARTBEAT, 0, BrokerHeartbeatRequest(1, 11, 3, 4)),
    (RESPONSE, ApiKey.BROKER_HEARTBEAT, 0, BrokerHeartbeatResponse(0, True)),
]


def decode(frame):
    return CODEC.decode_body(CODEC.decode_header(frame), frame)


@pytest.mark.parametrize("frame_type,api,version,msg", SAMPLES)
def test_every_message_round_trips(frame_type, api, version, msg):
    frame = CODEC.encode(frame_type, api, version, 77, msg)
    header = CODEC.decode_header(frame)
    assert (header.frame_type, header.api_key, header.api_version, header.correlation_id) == (
        frame_type,
        api,
        version,
        77,
    )
    assert decode(frame) == msg


def test_older_versions_leave_out_the_newer_fields():
    frame = CODEC.encode(REQUEST, ApiKey.FETCH, 0, 1, FetchRequest(2, 0, 5, 3, 2))
    assert decode(frame) == FetchRequest(2, 0, 5)  # no leader epochs before KIP-320
    assert len(frame) < len(CODEC.encode(REQUEST, ApiKey.FETCH, 1, 1, FetchRequest(2, 0, 5, 3, 2)))
    frame = CODEC.encode(REQUEST, ApiKey.FETCH, 2, 1, FetchRequest(2, 0, 5, 3, 2, 1))
    assert decode(frame) == FetchRequest(2, 0, 5, max_batches=1)  # a batch limit without the epochs


@pytest.mark.parametrize("frame_type,api,version,msg", SAMPLES)
def test_every_truncation_is_a_decode_error(frame_type, api, version, msg):
    frame = CODEC.encode(frame_type, api, version, 1, msg)
    for cut in range(len(frame)):
        with pytest.raises(DecodeError):
            decode(frame[:cut])
    with pytest.raises(DecodeError, match="trailing"):
        decode(frame + b"\x00")


def test_a_flipped_bit_in_a_record_set_fails_its_crc():
    frame = bytearray(CODEC.encode(*SAMPLES[0][:3], 1, SAMPLES[0][3]))
    frame[-1] ^= 0x01
    with pytest.raises(DecodeError, match="CRC"):
        decode(bytes(frame))


def test_unknown_api_and_version_are_named():
    frame = CODEC.encode(REQUEST, ApiKey.FETCH, 1, 1, FetchRequest())
    with pytest.raises(DecodeError, match="api 1 version 9"):
        decode(frame[:3] + b"\x00\x09" + frame[5:])
    with pytest.raises(DecodeError, match="frame type"):
        decode(b"\x07" + frame[1:])


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_decode_or_raise_decode_error(data):
    try:
        decode(data)
    except DecodeError:
        pass


class Recorder:
    """An endpoint that keeps every frame it receives."""

    def __init__(self):
        self.frames = []

    def receive(self, src, frame):
        self.frames.append(decode(frame))

    def connection_lost(self, peer, correlation_id):
        pass


def test_a_broker_answers_malformed_requests_with_errors_and_keeps_serving():
    c = Cluster(ClusterConfig(protocol="kip-320", replicas=2, min_insync_replicas=1))
    rec = Recorder()
    c.network.register(4999, rec)
    good = CODEC.encode(REQUEST, ApiKey.PRODUCE, 0, 5, ProduceRequest(1, 1000, 0, (WireRecord(-1, -1, b"", b"1"),)))
    rng = random.Random(7)
    garbage = [
        good[:12],
        good[:-1],
        good[:3] + b"\x00\x07" + good[5:],
        b"\x00\x00\x2a\x00\x00\x00\x00\x00\x01",
        b"",
        b"\x01",
        rng.randbytes(40),
    ]
    for frame in garbage:
        c.network.send(4999, 0, frame)
        while c.network.deliver_instant():
            pass
    errors = [getattr(m, "error", None) for m in rec.frames]
    assert errors and set(errors) <= {Errors.INVALID_REQUEST, Errors.UNSUPPORTED_VERSION}
    assert c.brokers[0].endpoint.malformed >= 3
    c.network.send(4999, 0, good)
    while c.network.deliver_instant():
        pass
    assert rec.frames[-1] == ProduceResponse(Errors.NONE, 0, 0)
    assert [e.value for e in c.snapshot().brokers[0].log] == [b"1"]


I32 = st.integers(-(2**31), 2**31 - 1)
I64 = st.integers(-(2**40), 2**40)
REQUESTS = st.one_of(
    st.builds(
        lambda acks, t, v: (ApiKey.PRODUCE, 0, ProduceRequest(acks, t, 0, (WireRecord(-1, -1, b"", v),))),
        st.integers(-2, 2),
        I32,
        st.binary(max_size=64),
    ),
    st.builds(
        lambda r, o, e, lim, m, v: (ApiKey.FETCH, v, FetchRequest(r, 0, o, e, lim, m)),
        st.integers(-2, 5),
        I64,
        I32,
        I32,
        st.integers(-2, 9),
        st.integers(0, 3),
    ),
    st.builds(
        lambda r, e, c, v: (ApiKey.OFFSET_FOR_LEADER_EPOCH, v, OffsetForLeaderEpochRequest(r, 0, e, c)),
        st.integers(-2, 5),
        I32,
        I32,
        st.integers(0, 2),
    ),
    st.builds(
        lambda b, le, pe, isr: (ApiKey.ALTER_PARTITION, 0, AlterPartitionRequest(b, 1, 0, le, pe, isr)),
        st.integers(-1, 5),
        I32,
        I32,
        st.lists(I32, max_size=4).map(tuple),
    ),
    st.builds(lambda b, e: (ApiKey.BROKER_HEARTBEAT, 0, BrokerHeartbeatRequest(b, e, 0, 0)), st.integers(-1, 5), I64),
    st.builds(
        lambda leader, le, pe: (ApiKey.LEADER_AND_ISR, 0, LeaderAndIsrRequest(1, 0, leader, le, pe, (0,), (0, 1))),
        st.integers(-1, 5),
        I32,
        I32,
    ),
)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.sampled_from((0, 3000)), REQUESTS), min_size=1, max_size=20))
def test_well_formed_requests_with_any_field_values_never_break_a_broker_or_the_controller(requests):
    c = Cluster(ClusterConfig(protocol="kip-320", replicas=2, min_insync_replicas=1))
    rec = Recorder()
    c.network.register(4999, rec)
    for i, (dst, (api, version, msg)) in enumerate(requests):
        c.network.send(4999, dst, CODEC.encode(REQUEST, api, version, i, msg))
        while c.network.deliver_instant():
            pass
        c.advance(1)
    ctrl = c.snapshot().controller
    assert (ctrl.leader, ctrl.isr) == (0, (0, 1))  # nobody but the leader and the controller changed it
    c.produce(0, b"ok", 1)
    assert c.take_client_responses()[-1].error == "NONE"
