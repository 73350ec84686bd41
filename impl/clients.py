"""Producer and consumer clients: they speak the same wire protocol as the brokers.

Results are collected in the order responses arrive. A request whose connection is lost (the
broker crashed) gives no result, as a real client would see only a timeout or disconnect.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from .network import NodeEndpoint
from .protocol import ApiKey, Errors, FetchRequest, FetchResponse, ProduceRequest, ProduceResponse, WireRecord
from .runtime import Transport
from .storage import StorageError, iter_batches

PRODUCER_ID = 4000
CONSUMER_ID = 4001


@dataclass(frozen=True)
class ProduceResult:
    """A produce response for a batch of ``count`` records: the first record's value, the error name
    and the batch's base offset (-1 on error)."""

    replica: int
    value: bytes
    acks: int
    error: str
    offset: int
    count: int = 1


@dataclass(frozen=True)
class ConsumeResult:
    """A consumer fetch response: error name, the HW (-1 on error) and (offset, value) pairs.
    A response holds at most about 1 MiB of batches (fetch.max.bytes), so ``next_offset``, the
    offset after its last batch (a marker's too; the fetch offset if it held none), is where the
    next fetch of the log goes on, as a Kafka consumer's position does."""

    replica: int
    error: str
    hw: int
    records: tuple[tuple[int, bytes], ...]
    next_offset: int = -1


class Producer:
    """A producer client: one ProduceRequest per batch, results to ``sink``."""

    def __init__(
        self, transport: Transport, sink: Callable[[object], None], node_id: int = PRODUCER_ID, key: bytes = b""
    ) -> None:
        self.endpoint = NodeEndpoint(node_id, transport)
        self.sink = sink
        self.key = key
        self.unanswered = 0  # requests whose connection was lost
        transport.register(node_id, self.endpoint)

    def send(self, broker: int, values: bytes | Sequence[bytes], acks: int, timeout_ms: int) -> None:
        """One ProduceRequest carrying the record ``values`` (or one value) as one batch."""
        values = (values,) if isinstance(values, (bytes, bytearray)) else tuple(values)
        if not values:
            raise ValueError("a record batch holds at least one record")
        req = ProduceRequest(acks, timeout_ms, 0, tuple(WireRecord(-1, -1, self.key, v) for v in values))

        def on_response(resp: ProduceResponse | None) -> None:
            if resp is None:
                self.unanswered += 1
                return
            self.sink(
                ProduceResult(
                    broker,
                    values[0],
                    acks,
                    Errors(resp.error).name,
                    resp.base_offset if resp.error == Errors.NONE else -1,
                    len(values),
                )
            )

        self.endpoint.send_request(broker, ApiKey.PRODUCE, 0, req, on_response)


class Consumer:
    """A consumer client: Fetch with replica id -1, committed records to ``sink``."""

    def __init__(
        self, transport: Transport, sink: Callable[[object], None], fetch_version: int, node_id: int = CONSUMER_ID
    ) -> None:
        self.endpoint = NodeEndpoint(node_id, transport)
        self.sink = sink
        self.fetch_version = fetch_version
        self.unanswered = 0
        self._decoded: dict[int, tuple[int, bytes, tuple]] = {}  # broker -> (offset, bytes, their records)
        transport.register(node_id, self.endpoint)

    def fetch(self, broker: int, offset: int = 0) -> None:
        """A consumer Fetch (replica id -1): committed records from ``offset``."""

        def on_response(resp: FetchResponse | None) -> None:
            if resp is None:
                self.unanswered += 1
                return
            error, hw, records, next_offset = Errors(resp.error).name, resp.high_watermark, (), -1
            if resp.error == Errors.NONE:
                try:
                    records, next_offset = self._records(broker, offset, resp.records)
                except StorageError:
                    error, hw = Errors.CORRUPT_MESSAGE.name, -1
            self.sink(ConsumeResult(broker, error, hw, records, next_offset))

        self.endpoint.send_request(broker, ApiKey.FETCH, self.fetch_version, FetchRequest(-1, 0, offset), on_response)

    def _records(self, broker: int, offset: int, data: bytes) -> tuple[tuple[tuple[int, bytes], ...], int]:
        """The (offset, value) of the records in fetched batches, from ``offset`` on, and the offset
        after the last batch. A consumer that reads a partition from the same offset again mostly
        gets the batches of its last read followed by new ones: only the new bytes are decoded (and
        CRC-checked), so rereading a growing log does not decode all of it every time."""
        last_offset, last, records, next_offset = self._decoded.get(broker, (-1, b"", (), offset))
        if last_offset == offset and last and data.startswith(last):
            new = data[len(last) :]
        else:
            new, records, next_offset = data, (), offset
        batches = list(iter_batches(new))
        for batch in batches:  # check.crcs (CompletedFetch.maybeEnsureValid): a damaged batch fails the fetch
            batch.ensure_valid()
        records += tuple(
            (r.offset, r.value)
            for batch in batches
            if not batch.is_control_batch  # markers are not records
            for r in batch.records()
            if r.offset >= offset
        )
        if batches:
            next_offset = batches[-1].next_offset
        self._decoded[broker] = (offset, data, records, next_offset)
        return records, next_offset
