"""Bad input on a broker's Kafka port, over a raw socket: what Kafka refuses closes that connection
with one log line and nothing else (other connections go on being served, stored data stays as it
was); a too-new ApiVersions is answered so that clients fall back; a malformed record batch is
refused in the produce response and never stored."""
from __future__ import annotations

import struct
import uuid

import crc32c
import pytest
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer.produce import ProduceRequest

BROKER = 1  # the broker every connection of this module goes to
API_KEYS_SERVED = {0, 1, 2, 3, 18, 22, 23}  # Produce, Fetch, ListOffsets, Metadata, ApiVersions, InitProducerId, OffsetForLeaderEpoch


def frame(api_key: int, version: int, correlation_id: int = 7, body: bytes = b"") -> bytes:
    """A size-prefixed request: header v1 (api key, version, correlation id, null client id)."""
    payload = struct.pack(">hhih", api_key, version, correlation_id, -1) + body
    return struct.pack(">i", len(payload)) + payload


def encoded(request) -> bytes:
    """``request`` (a kafka-python schema class) size-prefixed, with its header."""
    request.with_header(correlation_id=7, client_id="isrcheck-tests")
    return bytes(request.encode(header=True, framed=True))


def metadata_all(version: int = 12):
    return MetadataRequest(version=version, topics=None, allow_auto_topic_creation=False,
                           include_topic_authorized_operations=False)


def produce_request(version: int) -> ProduceRequest:
    return ProduceRequest(version=version, transactional_id=None, acks=-1, timeout_ms=1000, topic_data=[])


_METADATA = encoded(metadata_all())
# name: (the bytes sent, or a function of socket.request.max.bytes giving them; half-close after)
BAD_INPUT = {
    "http-request": (b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n", False),
    "size-zero": (struct.pack(">i", 0), False),
    "size-negative": (struct.pack(">i", -1) + b"\x00" * 16, False),
    "size-past-socket.request.max.bytes": (lambda limit: struct.pack(">i", limit + 1) + b"\x00" * 64, False),
    "size-2**31-1": (struct.pack(">i", 2**31 - 1) + b"\x00" * 64, False),
    "unknown-api-key": (frame(999, 0), False),
    "produce-v2-too-old": (encoded(produce_request(2)), False),
    "produce-v10-too-new": (encoded(produce_request(10)), False),
    "metadata-v0-too-old": (encoded(MetadataRequest(version=0, topics=[])), False),
    "metadata-v13-too-new": (encoded(metadata_all(13)), False),
    "metadata-body-cut-short": (struct.pack(">i", len(_METADATA) - 8) + _METADATA[4:-4], False),
    "closed-inside-the-size": (b"\x00\x00", True),
    "closed-inside-the-request": (_METADATA[:len(_METADATA) // 2], True),
}


@pytest.fixture(scope="module")
def seeded(shared_cluster, kit):
    """(topic, records by partition): data stored before any bad input, which must stay as it is."""
    topic = shared_cluster.create_topic(f"seeded-{uuid.uuid4().hex[:8]}")
    delivery = kit.clients["kafka-python"].produce(shared_cluster.bootstrap, topic,
                                                   kit.spread(kit.sample_records(30, tag=topic)))
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
    kit.assert_same_records(stored, {p: got[p][:len(s)] for p, s in stored.items()})
    assert got[0][new.offset] == new


@pytest.mark.parametrize("data,half_close", BAD_INPUT.values(), ids=BAD_INPUT.keys())
def test_bad_input_closes_only_that_connection(shared_cluster, kit, seeded, data, half_close):
    """What Kafka refuses (a size outside 1..socket.request.max.bytes, an unknown api key, a
    version of Produce or Metadata the broker does not serve, a request that does not decode, a
    connection closed inside a request) closes that connection, the broker logs one line (a
    warning naming the connection, no traceback), and nothing else changes: a connection opened
    before is still answered, the stored records read back the same, clients produce and consume."""
    with shared_cluster.connect(BROKER) as bystander:
        assert bystander.call(metadata_all(), MetadataResponse).brokers
        mark = shared_cluster.log_size(BROKER)
        with shared_cluster.connect(BROKER) as bad:
            bad.send(data(kit.MAX_REQUEST_BYTES) if callable(data) else data)
            if half_close:
                bad.close_write()
            assert bad.closed_by_broker(), "the broker did not close the connection"
        new_lines = shared_cluster.log_lines_since(BROKER, mark)
        about = [line for line in new_lines if f"127.0.0.1:{bad.local_port}" in line]
        assert len(about) == 1 and " WARNING " in about[0], new_lines
        assert not [line for line in new_lines if "Traceback" in line or " ERROR " in line], new_lines
        assert bystander.call(metadata_all(), MetadataResponse).brokers
    assert_still_served(shared_cluster, kit, seeded)


def test_too_new_api_versions_is_answered_with_v0_and_the_api_list(shared_cluster, kit):
    """KIP-511: an ApiVersions request of a version the broker does not know is answered, not
    closed: a v0 response with UNSUPPORTED_VERSION and the broker's api versions, on which the
    client retries with a version from that list, on the same connection."""
    with shared_cluster.connect(BROKER) as conn:
        for too_new in (4, 127):
            conn.send(frame(18, too_new, correlation_id=40 + too_new))
            answer = conn.read_response(ApiVersionsResponse, 0)
            assert (answer.header.correlation_id, answer.error_code) == (40 + too_new, kit.UNSUPPORTED_VERSION)
            advertised = {k.api_key: (k.min_version, k.max_version) for k in answer.api_keys}
            assert API_KEYS_SERVED <= set(advertised)
            assert advertised[18][0] <= 3 <= advertised[18][1] < too_new
        retry = conn.call(ApiVersionsRequest(version=3, client_software_name="isrcheck-tests",
                                             client_software_version="1"), ApiVersionsResponse)
        assert retry.error_code == kit.NONE
        assert {k.api_key: (k.min_version, k.max_version) for k in retry.api_keys} == advertised


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

