"""The consumer client over a stub broker: what it hands on from a fetched record set."""

from isrcheck.impl.clients import Consumer
from isrcheck.impl.protocol import CODEC, RESPONSE, FetchResponse
from isrcheck.impl.replication.protocol import VARIANTS
from isrcheck.impl.storage import Record, build_batch
from isrcheck.impl.storage.records import end_transaction_marker

BROKER = 1


class StubBroker:
    """A transport whose one broker answers every request with the same FetchResponse."""

    def __init__(self, response: FetchResponse) -> None:
        self.response = response
        self.endpoints = {}

    def register(self, node_id, endpoint):
        self.endpoints[node_id] = endpoint

    def unregister(self, node_id):
        self.endpoints.pop(node_id, None)

    def send(self, src, dst, frame):
        assert dst == BROKER
        header = CODEC.decode_header(frame)
        self.endpoints[src].receive(
            BROKER, CODEC.encode(RESPONSE, header.api_key, header.api_version, header.correlation_id, self.response)
        )


def test_a_consumer_skips_transaction_markers():
    records = b"".join(
        [
            build_batch(0, [Record(b"", b"a"), Record(b"", b"b")], 0, now_ms=0).buffer,
            end_transaction_marker(2, 0, 0, producer_id=3, producer_epoch=0, commit=True).buffer,
            build_batch(3, [Record(b"", b"c")], 0, now_ms=0).buffer,
        ]
    )
    results = []
    consumer = Consumer(
        StubBroker(FetchResponse(high_watermark=4, log_end_offset=4, records=records)),
        results.append,
        VARIANTS["kip-320"].fetch_version,
    )
    consumer.fetch(BROKER, 1)
    (result,) = results
    assert result.error == "NONE" and result.records == ((1, b"b"), (3, b"c"))


def test_a_consumer_fetches_on_after_the_last_batch_a_marker_too():
    """An answer holds at most about 1 MiB of batches: the next fetch starts after its last
    batch, a transaction marker included (it holds no record to count from)."""
    records = b"".join(
        [
            build_batch(0, [Record(b"", b"a"), Record(b"", b"b")], 0, now_ms=0).buffer,
            end_transaction_marker(2, 0, 0, producer_id=3, producer_epoch=0, commit=True).buffer,
        ]
    )
    results = []
    stub = StubBroker(FetchResponse(high_watermark=9, log_end_offset=9, records=records))
    consumer = Consumer(stub, results.append, VARIANTS["kip-320"].fetch_version)
    consumer.fetch(BROKER, 0)
    consumer.fetch(BROKER, 0)  # the same bytes again: from what was decoded last time
    stub.response = FetchResponse(high_watermark=9, log_end_offset=9, records=b"")
    consumer.fetch(BROKER, 3)
    assert [(r.records, r.next_offset) for r in results] == [
        (((0, b"a"), (1, b"b")), 3),
        (((0, b"a"), (1, b"b")), 3),
        ((), 3),
    ]
