"""The soak's offsets reader: a consumer that acts on what ListOffsets and OffsetForLeaderEpoch
answer, so that a wrong answer becomes evidence in the history (``answers`` judges it).

librdkafka asks these APIs inside the client, where the history cannot see them; this reader asks
them itself, with kafka-python's protocol classes, as a KIP-320 consumer does. In rounds, for each
partition, on one TCP connection to the leader Metadata names, with the leader epoch Metadata gives
as the current leader epoch (KIP-320's fencing: a broker in another epoch refuses):

1. after a leader change (the leader epoch is above the epoch of the last record it read), it
   validates its position: OffsetForLeaderEpoch for that record's epoch (``f: "epoch"``), every
   round until it reads a record of the new epoch (a leader that has not written in its epoch yet
   answers as its predecessor would: asking again once it has is what tells the epochs apart); an end
   offset below its position is a truncation (KIP-320), and it goes on from that end offset (a new
   assignment in the history: its position tracking restarts);
2. ListOffsets "latest" (``f: "end"``): the end offset a consumer may read up to, the HW;
3. a Fetch from its position on the same connection (``f: "poll"``, with the HW the broker
   answered, each batch's offsets and leader epoch, the connection and epoch): the records it reads.

One broker process and one leader epoch answer both 2 and 3 (one connection, fenced by one epoch),
and a leader's HW never moves back within its epoch: the fetch's HW is at least the end offset
ListOffsets answered before it. Every broker error is a ``fail`` completion, a connection that
breaks or times out an ``info``; the reader then asks Metadata again and goes on.
"""

from __future__ import annotations

import itertools
import socket
import struct
import threading

from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.consumer.offsets import (
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
)
from kafka.record import MemoryRecords

from isrcheck.conformance.engines.apache.admin import cluster_view

FETCH_VERSION, LIST_OFFSETS_VERSION, EPOCH_VERSION = 12, 4, 3  # the first with the current leader epoch, or later
CONSUMER = -1  # a consumer's replica id: answers bounded by the HW
LATEST = -1  # ListOffsets' timestamp for the end offset
MAX_BYTES = 1 << 20
OFFSET_OUT_OF_RANGE = 1


class Connection:
    """One TCP connection to a broker, requests and responses one at a time; ``number`` names it
    in the history (one connection: one broker process)."""

    _numbers = itertools.count(1)

    def __init__(self, address: str, timeout_s: float) -> None:
        host, _, port = address.rpartition(":")
        self.sock = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s)
        self.number = next(self._numbers)
        self.correlation = 0

    def call(self, request, response_class):
        self.correlation += 1
        request.with_header(correlation_id=self.correlation, client_id="isrcheck-soak-offsets")
        self.sock.sendall(bytes(request.encode(header=True, framed=True)))
        (size,) = struct.unpack(">i", self._read(4))
        response = response_class.decode(self._read(size), version=request.version, header=True)
        if response.header.correlation_id != self.correlation:
            raise ConnectionError(f"correlation id {response.header.correlation_id}, expected {self.correlation}")
        return response

    def _read(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            data += chunk
        return data

    def close(self) -> None:
        self.sock.close()


class _Position:
    """Where the reader is in one partition: the next offset and the epoch of the last record read."""

    def __init__(self) -> None:
        self.offset, self.last_epoch = 0, -1


class OffsetsReader:
    """The reader of ``topic``'s ``partitions`` on the cluster at ``bootstrap``, recording into
    ``history`` as ``process``, one round every ``interval_s`` until ``stop`` is set."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        partitions: int,
        history,
        key,
        process: str = "offsets",
        interval_s: float = 0.2,
        timeout_s: float = 3.0,
    ) -> None:
        self.addresses = [a.strip() for a in bootstrap.split(",")]
        self.topic, self.partitions, self.history, self.key = topic, partitions, history, key
        self.process, self.interval_s, self.timeout_s = process, interval_s, timeout_s
        self.positions = [_Position() for _ in range(partitions)]
        self.connections: dict[str, Connection] = {}

    def run(self, stop: threading.Event) -> None:
        try:
            while not stop.wait(self.interval_s):
                view = cluster_view(self.addresses, [self.topic])
                if view is None:
                    continue
                for p in range(self.partitions):
                    leader = view.partitions.get((self.topic, p))
                    if leader is None or leader.leader < 0 or leader.leader not in view.brokers or stop.is_set():
                        continue
                    self._partition(p, view.brokers[leader.leader], leader.leader_epoch)
        finally:
            for conn in self.connections.values():
                conn.close()

    def _partition(self, p: int, address: str, epoch: int) -> None:
        try:
            conn = self.connections.get(address)
            if conn is None:
                conn = self.connections[address] = Connection(address, self.timeout_s)
        except OSError:
            return  # nothing asked yet: nothing to record
        at = self.positions[p]
        moved = at.last_epoch >= 0 and epoch > at.last_epoch  # a leader change since the last record it read
        steps = [("epoch", self._validate)] * moved + [("end", self._end), ("poll", self._fetch)]
        for f, step in steps:
            try:
                if not step(conn, p, epoch):
                    return
            except (OSError, ConnectionError, struct.error, ValueError) as exc:
                conn.close()
                self.connections.pop(address, None)
                self.history.record(self.process, "info", f, **self._key_field(f, p), error=repr(exc))
                return

    def _key_field(self, f: str, p: int) -> dict:
        return {"partitions": [self.key(p)]} if f == "poll" else {"partition": self.key(p)}

    # -- OffsetForLeaderEpoch: KIP-320's validation of the position after a leader change ----------
    def _validate(self, conn: Connection, p: int, epoch: int) -> bool:
        at, key = self.positions[p], self.key(p)
        asked = dict(
            partition=key,
            leader_epoch=at.last_epoch,
            current_leader_epoch=epoch,
            position=at.offset,
            connection=conn.number,
        )
        self.history.record(self.process, "invoke", "epoch", **asked)
        T = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
        response = conn.call(
            OffsetForLeaderEpochRequest(
                version=EPOCH_VERSION,
                replica_id=CONSUMER,
                topics=[
                    T(
                        topic=self.topic,
                        partitions=[
                            T.OffsetForLeaderPartition(
                                partition=p, current_leader_epoch=epoch, leader_epoch=at.last_epoch
                            )
                        ],
                    )
                ],
            ),
            OffsetForLeaderEpochResponse,
        )
        answer = response.topics[0].partitions[0]
        if answer.error_code:
            self.history.record(self.process, "fail", "epoch", **asked, error=answer.error_code)
            return False
        self.history.record(
            self.process, "ok", "epoch", **asked, answer_epoch=answer.leader_epoch, end_offset=answer.end_offset
        )
        if 0 <= answer.end_offset < at.offset:  # truncated below the position: go on from the end offset
            self.history.record(self.process, "invoke", "assign", partitions=[key])
            at.offset, at.last_epoch = answer.end_offset, answer.leader_epoch
            self.history.record(self.process, "ok", "assign", partitions=[key])
        return True

    # -- ListOffsets latest, then a Fetch on the same connection --------------------------------------
    def _end(self, conn: Connection, p: int, epoch: int) -> bool:
        key = self.key(p)
        self.history.record(
            self.process, "invoke", "end", partition=key, current_leader_epoch=epoch, connection=conn.number
        )
        T = ListOffsetsRequest.ListOffsetsTopic
        response = conn.call(
            ListOffsetsRequest(
                version=LIST_OFFSETS_VERSION,
                replica_id=CONSUMER,
                isolation_level=0,
                topics=[
                    T(
                        name=self.topic,
                        partitions=[
                            T.ListOffsetsPartition(partition_index=p, current_leader_epoch=epoch, timestamp=LATEST)
                        ],
                    )
                ],
            ),
            ListOffsetsResponse,
        )
        answer = response.topics[0].partitions[0]
        fields = dict(partition=key, current_leader_epoch=epoch, connection=conn.number)
        if answer.error_code:
            self.history.record(self.process, "fail", "end", **fields, error=answer.error_code)
            return False
        self.history.record(self.process, "ok", "end", **fields, offset=answer.offset)
        return True

    def _fetch(self, conn: Connection, p: int, epoch: int) -> bool:
        at, key = self.positions[p], self.key(p)
        fields = dict(partitions=[key], current_leader_epoch=epoch, connection=conn.number)
        self.history.record(self.process, "invoke", "poll", **fields)
        T = FetchRequest.FetchTopic
        response = conn.call(
            FetchRequest(
                version=FETCH_VERSION,
                replica_id=CONSUMER,
                max_wait_ms=0,
                min_bytes=0,
                max_bytes=MAX_BYTES,
                isolation_level=0,
                session_id=0,
                session_epoch=-1,
                forgotten_topics_data=[],
                rack_id="",
                topics=[
                    T(
                        topic=self.topic,
                        partitions=[
                            T.FetchPartition(
                                partition=p,
                                current_leader_epoch=epoch,
                                fetch_offset=at.offset,
                                last_fetched_epoch=-1,
                                log_start_offset=-1,
                                partition_max_bytes=MAX_BYTES,
                            )
                        ],
                    )
                ],
            ),
            FetchResponse,
        )
        answer = response.responses[0].partitions[0]
        if answer.error_code:
            self.history.record(self.process, "fail", "poll", **fields, error=answer.error_code)
            if answer.error_code == OFFSET_OUT_OF_RANGE:  # beyond the log: read it again from the start
                self.history.record(self.process, "invoke", "assign", partitions=[key])
                at.offset = 0
                self.history.record(self.process, "ok", "assign", partitions=[key])
            return False
        records, batches = _decode(answer.records or b"", at.offset, answer.high_watermark)
        if records:
            at.offset, at.last_epoch = records[-1][0] + 1, batches[-1][2]
        self.history.record(
            self.process,
            "ok",
            "poll",
            **fields,
            records={key: records} if records else {},
            high_watermark={key: answer.high_watermark},
            batches={key: batches} if batches else {},
        )
        return True


def _decode(data: bytes, position: int, high_watermark: int) -> tuple[list, list]:
    """The records at or after ``position`` and below ``high_watermark`` in a Fetch's batches, as
    [offset, value], and each batch's [first, last, leader epoch] (clipped to them)."""
    records, batches = [], []
    memory = MemoryRecords(data)
    while memory.has_next():
        batch = memory.next_batch()
        if batch is None:  # a batch cut at the end of the response
            break
        kept = [[r.offset, value_of(r.value)] for r in batch if position <= r.offset < high_watermark]
        if kept and not batch.is_control_batch:
            records += kept
            batches.append([kept[0][0], kept[-1][0], batch.leader_epoch])
    return records, batches


def value_of(raw: bytes | None) -> int | str:
    """A record's value as the integer a producer sent; as text if it is not one (the checker
    reports it as unexpected)."""
    try:
        return int(raw)
    except (TypeError, ValueError):
        return repr(raw)
