"""Bad input on a broker's Kafka port, over a raw socket: what Kafka refuses closes that connection
(other connections go on being served, stored data stays as it was) and is logged as each
implementation does; a too-new ApiVersions is answered so that clients fall back; a malformed
record batch is refused in the produce response and never stored."""

from __future__ import annotations

import struct
import time
import types
import uuid

import crc32c
import pytest
from kafka.protocol.consumer.fetch import FetchRequest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer.produce import ProduceRequest

BROKER = 1  # the broker every connection of this module goes to
API_KEYS_SERVED = {
    0,
    1,
    2,
    3,
    18,
    22,
    23,
}  # Produce, Fetch, ListOffsets, Metadata, ApiVersions, InitProducerId, OffsetForLeaderEpoch
PRODUCE, FETCH, METADATA, API_VERSIONS = 0, 1, 3, 18


def frame(api_key: int, version: int, correlation_id: int = 7, body: bytes = b"") -> bytes:
    """A size-prefixed request: header v1 (api key, version, correlation id, null client id)."""
    payload = struct.pack(">hhih", api_key, version, correlation_id, -1) + body
    return struct.pack(">i", len(payload)) + payload


def encoded(request) -> bytes:
    """``request`` (a kafka-python schema class) size-prefixed, with its header."""
    request.with_header(correlation_id=7, client_id="isrcheck-tests")
    return bytes(request.encode(header=True, framed=True))


def metadata_all(version: int = 12):
    return MetadataRequest(
        version=version, topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
    )


def produce_request(version: int) -> ProduceRequest:
    return ProduceRequest(version=version, transactional_id=None, acks=-1, timeout_ms=1000, topic_data=[])


def past_newest(api_key: int):
    """The request of ``api_key`` one version past the newest the broker advertises (a header and
    a few zero bytes: a broker checks the version before the body)."""
    return lambda broker: frame(api_key, broker.versions[api_key][1] + 1, body=b"\x00" * 16)


_METADATA = encoded(metadata_all())
# name: (the bytes sent, or a function of the broker (its socket.request.max.bytes and advertised
# versions) giving them; half-close after). Versions below what the broker serves are ones Kafka 4
# refuses too (KIP-896): Produce v0-v2 (still advertised, KAFKA-18659) and Fetch v0-v3.
BAD_INPUT = {
    "http-request": (b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n", False),
    "size-zero": (struct.pack(">i", 0), False),
    "size-negative": (struct.pack(">i", -1) + b"\x00" * 16, False),
    "size-past-socket.request.max.bytes": (
        lambda broker: struct.pack(">i", broker.max_request_bytes + 1) + b"\x00" * 64,
        False,
    ),
    "size-2**31-1": (struct.pack(">i", 2**31 - 1) + b"\x00" * 64, False),
    "unknown-api-key": (frame(999, 0), False),
    "produce-v2-too-old": (encoded(produce_request(2)), False),
    "produce-past-newest": (past_newest(PRODUCE), False),
    "fetch-v3-too-old": (encoded(FetchRequest(version=3, replica_id=-1, max_wait_ms=0, min_bytes=1, topics=[])), False),
    "metadata-past-newest": (past_newest(METADATA), False),
    "metadata-body-cut-short": (struct.pack(">i", len(_METADATA) - 8) + _METADATA[4:-4], False),
    "closed-inside-the-size": (b"\x00\x00", True),
    "closed-inside-the-request": (_METADATA[: len(_METADATA) // 2], True),
}


@pytest.fixture(scope="module")
def seeded(shared_cluster, kit):
    """(topic, records by partition): data stored before any bad input, which must stay as it is."""
    topic = shared_cluster.create_topic(f"seeded-{uuid.uuid4().hex[:8]}")
    delivery = kit.clients["kafka-python"].produce(
        shared_cluster.bootstrap, topic, kit.spread(kit.sample_records(30, tag=topic))
    )
    assert not delivery.failed
    return topic, delivery.by_partition()


def assert_still_served(cluster, kit, seeded) -> None:
    """A client produces a new record, and a consumer reads it after the stored records, unchanged."""
    topic, stored = seeded
    fresh = kit.Rec(b"after", uuid.uuid4().bytes)
    delivery = kit.clients["confluent-kafka"].produce(cluster.bootstrap, topic, [(0, fresh)])
    assert not delivery.failed
    [new] = delivery.acked
    counts = {p: len(s) for p, s in stored.items()} | {0: new.offset + 1}
    got = kit.read_all(kit.clients["kafka-python"], cluster.bootstrap, topic, counts)
    kit.assert_same_records(stored, {p: got[p][: len(s)] for p, s in stored.items()})
    assert got[0][new.offset] == new


def assert_logged_as_the_implementation_does(cluster, case: str, port: int, new_lines: list[str]) -> None:
    """isrcheck's broker logs one WARNING line naming the connection, no traceback, nothing at
    ERROR. Apache Kafka logs a refused size at WARN (``Selector``: "Unexpected error from ...;
    closing connection") and a request that does not parse at ERROR (``kafka.network.Processor``:
    "Closing socket for ... because of error"), each with the exception's stack trace, and a
    connection its client closed inside a request not at all (docs/kafka.md)."""
    about = [line for line in new_lines if f"127.0.0.1:{port}" in line]
    entries = [line for line in about if line.startswith("[")]  # Kafka's "[time] LEVEL ...", not its stack traces
    if cluster.implementation == "isrcheck":
        assert len(about) == 1 and " WARNING " in about[0], new_lines
        assert not [line for line in new_lines if "Traceback" in line or " ERROR " in line], new_lines
    elif case.startswith("closed-inside"):
        assert not about, new_lines
    else:
        assert entries and all(" WARN " in line or " ERROR " in line for line in entries), new_lines


@pytest.mark.parametrize("case", BAD_INPUT)
def test_bad_input_closes_only_that_connection(shared_cluster, kit, seeded, case):
    """What Kafka refuses (a size outside 1..socket.request.max.bytes, an unknown api key, a
    version of Produce, Fetch or Metadata the broker does not serve, a request that does not
    decode, a connection closed inside a request) closes that connection, the broker logs it as its
    implementation does, and nothing else changes: a connection opened before is still answered,
    the stored records read back the same, clients produce and consume."""
    data, half_close = BAD_INPUT[case]
    with shared_cluster.connect(BROKER) as bystander:
        assert bystander.call(metadata_all(), MetadataResponse).brokers
        if callable(data):
            data = data(
                types.SimpleNamespace(max_request_bytes=kit.MAX_REQUEST_BYTES, versions=bystander.api_versions())
            )
        mark = shared_cluster.log_size(BROKER)
        with shared_cluster.connect(BROKER) as bad:
            bad.send(data)
            if half_close:
                bad.close_write()
            assert bad.closed_by_broker(), "the broker did not close the connection"
        time.sleep(0.2)  # Kafka's log appender: the line written after the close
        assert_logged_as_the_implementation_does(
            shared_cluster, case, bad.local_port, shared_cluster.log_lines_since(BROKER, mark)
        )
        assert bystander.call(metadata_all(), MetadataResponse).brokers
    assert_still_served(shared_cluster, kit, seeded)


def test_too_new_api_versions_is_answered_with_v0_and_its_own_versions(shared_cluster, kit):
    """KIP-511: an ApiVersions request of a version the broker does not know is answered, not
    closed: a v0 response with UNSUPPORTED_VERSION and ApiVersions' own versions (Kafka's
    ``ApiVersionsRequest.getErrorResponse``), on which the client retries with a version from that
    range, on the same connection, and is given every api's versions."""
    with shared_cluster.connect(BROKER) as conn:
        newest = conn.api_versions()[API_VERSIONS][1]
        assert newest >= 3
        for too_new in (newest + 1, 127):
            # as a newer client sends it: a flexible version, so header v2 (its tagged fields: none)
            conn.send(frame(API_VERSIONS, too_new, correlation_id=40 + too_new, body=b"\x00"))
            answer = conn.read_response(ApiVersionsResponse, 0)
            assert (answer.header.correlation_id, answer.error_code) == (40 + too_new, kit.UNSUPPORTED_VERSION)
            assert {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys} == {API_VERSIONS: (0, newest)}
        retry = conn.call(
            ApiVersionsRequest(version=3, client_software_name="isrcheck-tests", client_software_version="1"),
            ApiVersionsResponse,
        )
        assert retry.error_code == kit.NONE
        advertised = {k.api_key: (k.min_version, k.max_version) for k in retry.api_keys}
        assert API_KEYS_SERVED <= set(advertised) and advertised[API_VERSIONS] == (0, newest)


# -- malformed record batches in a well-formed Produce ------------------------------------------
# each spoils a good v2 batch of two uncompressed records (header: base offset 0-7, length 8-11,
# leader epoch 12-15, magic 16, CRC 17-20 over attributes 21-22 .. the end, last offset delta
# 23-26, timestamps, producer id, epoch, base sequence, record count 57-60, records from 61)
def with_crc(data: bytearray) -> bytes:
    """The batch with its CRC-32C computed again: only its content is bad."""
    struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    return bytes(data)


def crc_mismatch(good: bytes) -> bytes:
    return good[:-1] + bytes([good[-1] ^ 0xFF])


def cut_short(good: bytes) -> bytes:
    return good[:-3]


def gzip_flag_on_plain_records(good: bytes) -> bytes:
    data = bytearray(good)
    struct.pack_into(">h", data, 21, 1)  # attributes: gzip, but the records are not compressed
    return with_crc(data)


def garbage_records(good: bytes) -> bytes:
    data = bytearray(good)
    data[61:] = bytes(range(len(data) - 61))  # the records section: not records at all
    return with_crc(data)


def count_below_records(good: bytes) -> bytes:
    data = bytearray(good)
    struct.pack_into(">i", data, 57, 1)  # record count 1, but 2 records and last offset delta 1
    return with_crc(data)


MALFORMED = [
    pytest.param(crc_mismatch, id="crc-mismatch"),
    pytest.param(cut_short, id="batch-cut-short"),
    pytest.param(gzip_flag_on_plain_records, id="gzip-flag-on-uncompressed-records"),
    pytest.param(garbage_records, id="records-that-do-not-decode"),
    pytest.param(count_below_records, id="record-count-disagrees-with-records"),
]


@pytest.mark.parametrize("spoil", MALFORMED)
def test_malformed_batch_is_refused_and_not_stored(shared_cluster, kit, topic_name, spoil):
    """A Produce carrying a malformed v2 batch (a CRC that does not match, a batch cut short, or a
    correct CRC over records that do not decode: a gzip flag on uncompressed records, garbage, a
    record count that disagrees) gets an error for that partition, and nothing is stored: both
    clients read the records around it and the partition goes on."""
    topic = shared_cluster.create_topic(topic_name)
    with shared_cluster.connect(shared_cluster.leader(topic, 0)) as leader:
        assert leader.produce(topic, 0, kit.record_batch(b"before")) == (kit.NONE, 0)
        error, _ = leader.produce(topic, 0, spoil(kit.record_batch(b"hello", b"world")))
        assert error != kit.NONE, "the malformed batch was stored"
        assert leader.produce(topic, 0, kit.record_batch(b"after")) == (kit.NONE, 1)
    for client in kit.clients.values():
        got = kit.read_all(client, shared_cluster.bootstrap, topic, {0: 2}, timeout=5)
        assert [(s.offset, s.rec.value) for s in got[0]] == [(0, b"before"), (1, b"after")], client.name
