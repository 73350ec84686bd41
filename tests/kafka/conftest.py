"""Real Kafka clients against real clusters of both implementations: nothing is mocked.

Every cluster fixture runs each test twice, once per implementation (the ``IMPLEMENTATIONS``
parameter, in the test id: ``-k isrcheck``, ``-k apache``):

* "isrcheck": ``ProcessCluster`` in Kafka mode, what ``isrcheck serve`` runs: the controller and 3
  broker OS processes on 127.0.0.1, each broker listening for Kafka clients on a free port;
* "apache": Apache Kafka 4.4.0 (``engines.apache.cluster``: one KRaft controller and 3 brokers,
  JVMs), on a base port with 4 free consecutive ports; its jars come from the cache, fetched once
  with Maven. If they cannot be had, the test FAILS with the reason (it is never skipped).

Both have broker ids 0..2, min.insync.replicas 2, num.partitions 3, topics auto-created, and short
timings, so that a killed broker is fenced (and its partitions' leadership moves) in about 1.5 s.
``shared_cluster`` (one per test module, implementation and xdist worker) serves the tests that
leave every broker up, each on a topic of its own; ``cluster`` is a cluster of the test's own, for
tests that kill brokers. Against Apache Kafka the default run keeps one test (the leader SIGKILLed
under an idempotent acks=all producer); the others are ``slow`` (``pytest_collection_modifyitems``).

Helpers reach the test modules as fixtures (tests/ is not a package: a test module cannot import
this file): ``client`` runs a test once per Kafka client (kafka-python, confluent-kafka), both
behind one small interface (``produce``, ``consumer``); ``kit`` holds the rest (sample records,
``read_all``, ``assert_same_records``, error codes); ``cluster.connect(broker)`` is a raw
``KafkaConnection`` (kafka-python's schema classes encode the requests).
"""

from __future__ import annotations

import dataclasses
import functools
import random
import re
import socket
import struct
import time
import types
import uuid
from collections import Counter, defaultdict
from pathlib import Path
from typing import Callable, Iterable

import pytest
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import KafkaError
from confluent_kafka import Producer as ConfluentProducer
from confluent_kafka import TopicPartition as ConfluentTopicPartition
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.metadata.api_versions import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse
from kafka.protocol.producer.transaction import InitProducerIdRequest, InitProducerIdResponse
from kafka.record.memory_records import MemoryRecordsBuilder

from isrcheck.impl.real.processes import ProcessCluster
from isrcheck.impl.real.serve import SERVE_DEFAULTS
from isrcheck.impl.replication import ClusterConfig

HOST = "127.0.0.1"
BROKERS = 3
PARTITIONS = 3  # num.partitions: every topic a test creates has 3
MAX_REQUEST_BYTES = 1 << 20  # socket.request.max.bytes of every test cluster (1 MiB)
FAST_TIMINGS = dict(
    broker_session_timeout_ms=1500,
    broker_heartbeat_interval_ms=250,
    replica_lag_time_max_ms=3000,
    replica_fetch_wait_max_ms=200,
    request_timeout_ms=5000,
)

# Kafka error codes the tests expect (the protocol's numbers, as both clients report them)
NONE, NOT_ENOUGH_REPLICAS, UNSUPPORTED_VERSION, OUT_OF_ORDER_SEQUENCE_NUMBER = 0, 19, 35, 45
COORDINATOR_LOAD_IN_PROGRESS = 14


# -- records --------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Rec:
    """One record as a producer sends it and a consumer must get it back, byte for byte."""

    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()


@dataclasses.dataclass(frozen=True)
class Stored:
    """A record at its place in a partition's log."""

    partition: int
    offset: int
    rec: Rec


def sample_records(n: int, tag: str = "r", seed: int = 0) -> list[Rec]:
    """``n`` records, the awkward ones first (null key, empty key and value, null value, binary
    bytes, non-ASCII and repeated header names, empty header values, a 100 kB value), then
    numbered ones of assorted sizes; ``tag`` makes them unique to a test."""
    rnd = random.Random(seed)
    awkward = [
        Rec(None, f"{tag} value under a null key".encode()),
        Rec(b"", b""),
        Rec(f"{tag} key of a null value (a tombstone)".encode(), None),
        Rec(
            bytes(range(256)),
            bytes(range(255, -1, -1)) * 3,
            (("h", b"\x00\xff"), ("h", b""), ("\u00fcn\u00efc\u00f8de", b"repeated name")),
        ),
        Rec(f"{tag}-big".encode(), rnd.randbytes(100_000), (("size", b"100000"),)),
    ]
    numbered = [
        Rec(f"{tag}-k{i}".encode(), rnd.randbytes(rnd.randrange(0, 2000)), (("i", str(i).encode()),))
        for i in range(max(0, n - len(awkward)))
    ]
    return (awkward + numbered)[:n]


def record_batch(*values: bytes, producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1) -> bytes:
    """A v2 record batch of ``values`` as a producer writes it (kafka-python's builder), uncompressed."""
    builder = MemoryRecordsBuilder(
        magic=2,
        compression_type=0,
        batch_size=1 << 20,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
    )
    for value in values:
        builder.append(0, None, value, [])
    builder.close()
    return bytes(builder.buffer())


COMPRESSION_CODES = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def batch_codecs(records: bytes) -> list[str]:
    """The compression of each v2 batch in ``records`` (attributes & 7), by name."""
    names = {code: name for name, code in COMPRESSION_CODES.items()}
    codecs, pos = [], 0
    while pos < len(records):
        codecs.append(names[int.from_bytes(records[pos + 21 : pos + 23], "big") & 0x7])
        pos += 12 + int.from_bytes(records[pos + 8 : pos + 12], "big")
    return codecs


def spread(recs: Iterable[Rec], partitions: int = PARTITIONS) -> list[tuple[int, Rec]]:
    """(partition, record): record i to partition i mod ``partitions``."""
    return [(i % partitions, rec) for i, rec in enumerate(recs)]


def by_partition(stored: Iterable[Stored]) -> dict[int, list[Stored]]:
    """Each partition's records in offset order."""
    out: dict[int, list[Stored]] = defaultdict(list)
    for s in sorted(stored, key=lambda s: (s.partition, s.offset)):
        out[s.partition].append(s)
    return dict(out)


def assert_same_records(expected: dict[int, list[Stored]], got: dict[int, list[Stored]]) -> None:
    """Every partition holds exactly ``expected``: same offsets, same bytes, same order, nothing
    missing, nothing twice."""
    for p in sorted(set(expected) | set(got)):
        want, have = expected.get(p, []), got.get(p, [])
        twice = [off for off, n in Counter(s.offset for s in have).items() if n > 1]
        assert not twice, f"partition {p}: offsets read twice: {twice[:10]}"
        repeated = [r for r, n in Counter(s.rec for s in have).items() if n > 1]
        assert not repeated, f"partition {p}: {len(repeated)} records stored twice, e.g. {repeated[0]!r:.200}"
        if have != want:
            first = next((i for i, (a, b) in enumerate(zip(want, have)) if a != b), min(len(want), len(have)))
            raise AssertionError(
                f"partition {p}: expected {len(want)} records, read {len(have)}; first difference at index "
                f"{first}: expected {want[first] if first < len(want) else 'nothing'!r:.300}, "
                f"read {have[first] if first < len(have) else 'nothing'!r:.300}"
            )


# -- the two clients behind one interface ---------------------------------------------------------
@dataclasses.dataclass
class Delivery:
    """What a producer was told: each record acknowledged at its offset, or failed with the Kafka
    error code the client reported (None: no code, e.g. the client's own timeout)."""

    acked: list[Stored] = dataclasses.field(default_factory=list)
    failed: list[tuple[Rec, int | None, str]] = dataclasses.field(default_factory=list)

    def by_partition(self) -> dict[int, list[Stored]]:
        return by_partition(self.acked)

    def counts(self) -> dict[int, int]:
        return {p: len(s) for p, s in self.by_partition().items()}


class KafkaPythonClient:
    """kafka-python 3.x with its defaults (an idempotent producer when acks=all)."""

    name = "kafka-python"

    def produce(
        self,
        bootstrap: str,
        topic: str,
        items: list[tuple[int, Rec]],
        *,
        acks="all",
        idempotence: bool = True,
        fail_fast: bool = False,
        compression: str | None = None,
        between: Callable[[int], None] | None = None,
        timeout: float = 60,
    ) -> Delivery:
        """Send every (partition, record), calling ``between(i)`` after the i-th send (nothing
        flushed yet), then wait for every acknowledgement. ``fail_fast``: one retry and a 3 s
        delivery timeout, so that a refusal reaches the application."""
        config = dict(
            bootstrap_servers=bootstrap.split(","),
            acks=acks,
            enable_idempotence=idempotence,
            linger_ms=5,
            compression_type=compression,
        )
        if fail_fast:
            config.update(retries=1, retry_backoff_ms=100, request_timeout_ms=2000, delivery_timeout_ms=3000)
        producer = KafkaProducer(**config)
        try:
            futures = []
            for i, (partition, rec) in enumerate(items):
                futures.append(
                    (
                        rec,
                        producer.send(
                            topic, key=rec.key, value=rec.value, headers=list(rec.headers), partition=partition
                        ),
                    )
                )
                if between is not None:
                    between(i)
            producer.flush(timeout)
        finally:
            producer.close(timeout=5)
        delivery = Delivery()
        for rec, future in futures:
            if future.succeeded():
                delivery.acked.append(Stored(future.value.partition, future.value.offset, rec))
            else:
                exc = future.exception if future.is_done else None
                delivery.failed.append((rec, getattr(exc, "errno", None), repr(exc)))
        return delivery

    def consumer(self, bootstrap: str, topic: str, partitions: Iterable[int], **config) -> "KafkaPythonConsumer":
        return KafkaPythonConsumer(bootstrap, topic, partitions, **config)


class KafkaPythonConsumer:
    """No consumer group: ``assign`` and ``seek_to_beginning``. kafka-python raises its errors
    from ``poll``; ``errors`` stays empty."""

    def __init__(self, bootstrap: str, topic: str, partitions: Iterable[int], **config) -> None:
        self.consumer = KafkaConsumer(
            bootstrap_servers=bootstrap.split(","), group_id=None, enable_auto_commit=False, **config
        )
        tps = [TopicPartition(topic, p) for p in partitions]
        self.consumer.assign(tps)
        self.consumer.seek_to_beginning(*tps)
        self.errors: list[str] = []

    def poll(self, timeout_s: float) -> list[Stored]:
        got = self.consumer.poll(timeout_ms=int(timeout_s * 1000))
        return [
            Stored(tp.partition, r.offset, Rec(r.key, r.value, tuple((k, v) for k, v in r.headers)))
            for tp, records in got.items()
            for r in records
        ]

    def close(self) -> None:
        self.consumer.close(autocommit=False)


class ConfluentClient:
    """confluent-kafka (librdkafka)."""

    name = "confluent-kafka"

    def produce(
        self,
        bootstrap: str,
        topic: str,
        items: list[tuple[int, Rec]],
        *,
        acks="all",
        idempotence: bool = True,
        fail_fast: bool = False,
        compression: str | None = None,
        between: Callable[[int], None] | None = None,
        timeout: float = 60,
    ) -> Delivery:
        """As KafkaPythonClient.produce. ``fail_fast``: message.timeout.ms 3 s and, without
        idempotence, no retries (an idempotent librdkafka producer retries a refusal until the
        message times out, and then reports _MSG_TIMED_OUT, not the broker's error)."""
        config = {"bootstrap.servers": bootstrap, "acks": str(acks), "enable.idempotence": idempotence, "linger.ms": 5}
        if compression:
            config["compression.type"] = compression
        if fail_fast:
            config["message.timeout.ms"] = 3000
            if not idempotence:
                config["retries"] = 0
        producer = ConfluentProducer(config)
        reports: dict[int, tuple] = {}

        def report(i: int, err, msg) -> None:
            reports[i] = (err, msg.partition(), msg.offset())

        for i, (partition, rec) in enumerate(items):
            while True:
                try:
                    producer.produce(
                        topic,
                        key=rec.key,
                        value=rec.value,
                        headers=list(rec.headers) or None,
                        partition=partition,
                        on_delivery=functools.partial(report, i),
                    )
                    break
                except BufferError:  # the local queue is full: let deliveries drain it
                    producer.poll(0.05)
            producer.poll(0)
            if between is not None:
                between(i)
        producer.flush(timeout)
        delivery = Delivery()
        for i, (_, rec) in enumerate(items):
            err, partition, offset = reports.get(i, ("no delivery report", None, None))
            if err is None:
                delivery.acked.append(Stored(partition, offset, rec))
            else:
                delivery.failed.append((rec, err.code() if isinstance(err, KafkaError) else None, str(err)))
        return delivery

    def consumer(self, bootstrap: str, topic: str, partitions: Iterable[int], **config) -> "ConfluentConsumerHandle":
        return ConfluentConsumerHandle(bootstrap, topic, partitions, **config)


class ConfluentConsumerHandle:
    """A group id (librdkafka requires one) but no group: ``assign`` at offset 0, no commits."""

    def __init__(self, bootstrap: str, topic: str, partitions: Iterable[int], **config) -> None:
        self.consumer = ConfluentConsumer(
            {"bootstrap.servers": bootstrap, "group.id": "isrcheck-tests", "enable.auto.commit": False, **config}
        )
        self.consumer.assign([ConfluentTopicPartition(topic, p, 0) for p in partitions])
        self.errors: list[str] = []

    def poll(self, timeout_s: float) -> list[Stored]:
        out = []
        for m in self.consumer.consume(num_messages=1000, timeout=timeout_s):
            if m.error():
                self.errors.append(str(m.error()))
                continue
            out.append(Stored(m.partition(), m.offset(), Rec(m.key(), m.value(), tuple(m.headers() or ()))))
        return out

    def close(self) -> None:
        self.consumer.close()


CLIENTS = {"kafka-python": KafkaPythonClient(), "confluent-kafka": ConfluentClient()}
CLIENT_IDS = list(CLIENTS)


def read_all(
    client, bootstrap: str, topic: str, counts: dict[int, int], timeout: float = 20, **config
) -> dict[int, list[Stored]]:
    """Consume ``topic``'s partitions (the keys of ``counts``) from the beginning until each has
    given at least its count of records; each partition's records in offset order. AssertionError
    if that takes longer than ``timeout``."""
    consumer = client.consumer(bootstrap, topic, counts, **config)
    got: list[Stored] = []
    try:
        deadline = time.monotonic() + timeout
        while True:
            have = Counter(s.partition for s in got)
            if all(have[p] >= n for p, n in counts.items()):
                break
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{client.name} read {dict(have)} of {counts} records of {topic} in {timeout} s; "
                    f"consumer errors: {consumer.errors[-5:]}"
                )
            got += consumer.poll(0.2)
    finally:
        consumer.close()
    out = by_partition(got)
    return {p: out.get(p, []) for p in counts}


# -- raw Kafka protocol ---------------------------------------------------------------------------
class KafkaConnection:
    """One TCP connection to a broker's Kafka port: raw bytes, or requests of kafka-python's
    schema-generated classes."""

    def __init__(self, port: int, timeout: float = 5) -> None:
        self.sock = socket.create_connection((HOST, port), timeout=timeout)
        self.local_port = self.sock.getsockname()[1]
        self.correlation_id = 0

    def __enter__(self) -> "KafkaConnection":
        return self

    def __exit__(self, *exc) -> None:
        self.sock.close()

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def send_request(self, request) -> int:
        """Frame and send ``request``; its correlation id."""
        self.correlation_id += 1
        request.with_header(correlation_id=self.correlation_id, client_id="isrcheck-tests")
        self.send(bytes(request.encode(header=True, framed=True)))
        return self.correlation_id

    def _read_exactly(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError(f"the broker closed the connection ({len(data)} of {n} bytes read)")
            data += chunk
        return data

    def read_response(self, response_class, version: int):
        """The next response, decoded as ``response_class`` v``version`` (its header too)."""
        (size,) = struct.unpack(">i", self._read_exactly(4))
        return response_class.decode(self._read_exactly(size), version=version, header=True)

    def call(self, request, response_class):
        """Send ``request`` and read its response (same version), checking the correlation id."""
        correlation_id = self.send_request(request)
        response = self.read_response(response_class, request.version)
        assert response.header.correlation_id == correlation_id
        return response

    def produce(self, topic: str, partition: int, records: bytes, acks: int = -1) -> tuple[int, int]:
        """(error code, base offset) of a Produce v9 of ``records`` (one batch) to one partition."""
        Topic = ProduceRequest.TopicProduceData
        response = self.call(
            ProduceRequest(
                version=9,
                transactional_id=None,
                acks=acks,
                timeout_ms=5000,
                topic_data=[
                    Topic(name=topic, partition_data=[Topic.PartitionProduceData(index=partition, records=records)])
                ],
            ),
            ProduceResponse,
        )
        [part] = response.responses[0].partition_responses
        return part.error_code, part.base_offset

    def fetch(self, topic: str, partition: int, offset: int = 0) -> bytes:
        """The record batches a Fetch v12 of one partition from ``offset`` returns, as stored."""
        Topic = FetchRequest.FetchTopic
        response = self.call(
            FetchRequest(
                version=12,
                replica_id=-1,
                max_wait_ms=0,
                min_bytes=1,
                max_bytes=1 << 20,
                isolation_level=0,
                session_id=0,
                session_epoch=-1,
                forgotten_topics_data=[],
                rack_id="",
                topics=[
                    Topic(
                        topic=topic,
                        partitions=[
                            Topic.FetchPartition(
                                partition=partition,
                                current_leader_epoch=-1,
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
        [part] = response.responses[0].partitions
        assert part.error_code == NONE, part
        return part.records or b""

    def init_producer_id(self, timeout: float = 10) -> tuple[int, int, int]:
        """(error code, producer id, epoch): what an idempotent producer asks for first, asked again
        while the broker answers COORDINATOR_LOAD_IN_PROGRESS (it waits for a block of ids from the
        controller), as clients do."""
        deadline = time.monotonic() + timeout
        while True:
            response = self.call(
                InitProducerIdRequest(
                    version=4, transactional_id=None, transaction_timeout_ms=-1, producer_id=-1, producer_epoch=-1
                ),
                InitProducerIdResponse,
            )
            if response.error_code != COORDINATOR_LOAD_IN_PROGRESS or time.monotonic() > deadline:
                return response.error_code, response.producer_id, response.producer_epoch
            time.sleep(0.05)

    def api_versions(self) -> dict[int, tuple[int, int]]:
        """The versions the broker advertises, by api key (ApiVersions v0)."""
        response = self.call(ApiVersionsRequest(version=0), ApiVersionsResponse)
        assert response.error_code == NONE, response
        return {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}

    def close_write(self) -> None:
        """Half-close: the broker sees the end of the stream, we can still see whether it closes."""
        self.sock.shutdown(socket.SHUT_WR)

    def closed_by_broker(self) -> bool:
        """True once the broker closed the connection (recv returns b"") within the timeout; False
        if it sent something or kept it open."""
        try:
            return self.sock.recv(1) == b""
        except socket.timeout:
            return False


# -- the cluster ----------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class PartitionState:
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


class KafkaCluster:
    """A running cluster, whichever implementation: where its brokers listen (broker ids 0..N-1),
    what their Metadata says, their logs, faults. ``IsrcheckCluster`` and ``ApacheCluster`` add
    ``live``, ``kill``, ``restart`` and ``log_path``."""

    implementation = ""

    def __init__(self, directory: Path, ports: dict[int, int]) -> None:
        self.directory, self.ports = directory, ports

    @property
    def bootstrap(self) -> str:
        return ",".join(self.address(b) for b in self.ports)

    def address(self, broker: int) -> str:
        return f"{HOST}:{self.ports[broker]}"

    def live(self) -> list[int]:
        raise NotImplementedError

    def connect(self, broker: int, timeout: float = 5) -> KafkaConnection:
        return KafkaConnection(self.ports[broker], timeout)

    # metadata
    def metadata(self, broker: int, topics: list[str] | None = None, create: bool = False) -> MetadataResponse:
        request = MetadataRequest(
            version=12,
            topics=None
            if topics is None
            else [MetadataRequest.MetadataRequestTopic(topic_id=uuid.UUID(int=0), name=t) for t in topics],
            allow_auto_topic_creation=create,
            include_topic_authorized_operations=False,
        )
        with self.connect(broker) as conn:
            return conn.call(request, MetadataResponse)

    def partitions(self, topic: str, via: int | None = None) -> dict[int, PartitionState]:
        """``topic``'s partitions as broker ``via`` (default: the first live one) knows them."""
        md = self.metadata(self.live()[0] if via is None else via, [topic])
        return {
            p.partition_index: PartitionState(p.leader_id, tuple(p.replica_nodes), tuple(sorted(p.isr_nodes)))
            for t in md.topics
            if t.name == topic and t.error_code == NONE
            for p in t.partitions
        }

    def leader(self, topic: str, partition: int) -> int:
        return self.partitions(topic)[partition].leader

    def wait_until(self, condition: Callable[[], bool], what: str, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                if condition():
                    return
            except OSError:  # a broker not listening yet, or going away
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout} s waiting until {what}")
            time.sleep(0.05)

    def wait_for_partitions(
        self,
        topic: str,
        isr: Iterable[int] | None = None,
        leader: int | None = None,
        count: int = PARTITIONS,
        create: bool = False,
    ) -> None:
        """Until every live broker's Metadata shows ``count`` partitions of ``topic``, each with a
        leader (``leader`` if given) and ISR ``isr`` (default: the live brokers). ``create``: ask
        for the topic's creation on each try, as a client does."""

        def ready() -> bool:
            live = self.live()
            if create:
                self.metadata(live[0], [topic], create=True)
            want_isr = tuple(sorted(live if isr is None else isr))
            for b in live:
                parts = self.partitions(topic, via=b)
                if len(parts) != count or any(
                    p.leader < 0 or p.isr != want_isr or (leader is not None and p.leader != leader)
                    for p in parts.values()
                ):
                    return False
            return True

        self.wait_until(
            ready,
            f"every live broker shows {topic} with {count} partitions, ISR "
            f"{sorted(self.live()) if isr is None else sorted(isr)}"
            f"{'' if leader is None else f', led by {leader}'}",
        )

    def create_topic(self, name: str) -> str:
        """Create ``name`` as a client does (Metadata with auto-creation, num.partitions=3) and wait
        until every broker serves it with full ISRs."""
        self.wait_for_partitions(name, create=True)
        return name

    # faults
    def kill(self, broker: int) -> None:
        """SIGKILL the broker's process."""
        raise NotImplementedError

    def restart(self, broker: int) -> None:
        """Start the broker again; back once its process listens on its Kafka port."""
        raise NotImplementedError

    # logs
    def log_path(self, broker: int) -> Path:
        raise NotImplementedError

    def log_size(self, broker: int) -> int:
        return self.log_path(broker).stat().st_size

    def log_lines_since(self, broker: int, mark: int) -> list[str]:
        with open(self.log_path(broker), "rb") as f:
            f.seek(mark)
            return f.read().decode("utf-8", "replace").splitlines()


class IsrcheckCluster(KafkaCluster):
    """``isrcheck serve``'s cluster: isrcheck's controller and brokers, Python processes
    (``ProcessCluster`` in Kafka mode); a broker's log is ``DIR/<broker>.log``."""

    implementation = "isrcheck"

    def __init__(self, processes: ProcessCluster, directory: Path, ports: dict[int, int]) -> None:
        super().__init__(directory, ports)
        self.processes = processes

    def live(self) -> list[int]:
        return [b for b in self.ports if self.processes.alive(b)]

    def kill(self, broker: int) -> None:
        self.processes.crash(broker, "process")

    def restart(self, broker: int) -> None:
        self.processes.restart(broker)  # returns once the process listens

    def log_path(self, broker: int) -> Path:
        return self.directory / f"{broker}.log"


class ApacheCluster(KafkaCluster):
    """Apache Kafka's cluster (``engines.apache.cluster.KafkaCluster``: one KRaft controller and
    the brokers, JVMs); a broker's log is ``DIR/broker-B/logs/server.log``."""

    implementation = "apache"

    def __init__(self, kafka, directory: Path) -> None:
        super().__init__(directory, {b: node.port for b, node in kafka.brokers.items()})
        self.kafka = kafka

    def live(self) -> list[int]:
        return [b for b in self.ports if self.kafka.alive(b)]

    def kill(self, broker: int) -> None:
        self.kafka.kill(broker)

    def restart(self, broker: int) -> None:
        self.kafka.restart(broker)
        node = self.kafka.brokers[broker]

        def listens() -> bool:
            if not node.alive():
                raise AssertionError(f"broker {broker} of Apache Kafka exited while restarting:\n{node.tail()}")
            with socket.create_connection((HOST, self.ports[broker]), timeout=1):
                return True

        self.wait_until(listens, f"broker {broker} listens again", timeout=60)

    def log_path(self, broker: int) -> Path:
        return self.kafka.brokers[broker].logs / "server.log"


def free_ports(n: int) -> list[int]:
    """``n`` ports the OS hands out as free (bound to port 0, then released)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind((HOST, 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


IMPLEMENTATIONS = ("isrcheck", "apache")
APACHE_VERSION = "4.4.0"  # the newest 4.x (Eligible Leader Replicas on)
APACHE_SETTINGS = {  # Kafka's names of what start_isrcheck gives isrcheck's brokers
    "num.partitions": PARTITIONS,
    "auto.create.topics.enable": "true",
    "socket.request.max.bytes": MAX_REQUEST_BYTES,
    "replica.fetch.wait.max.ms": FAST_TIMINGS["replica_fetch_wait_max_ms"],
    "offsets.topic.num.partitions": 1,  # confluent-kafka's consumers look their group up: one partition is enough
}


def start_isrcheck(directory: Path):
    config = ClusterConfig(
        protocol="kip-320", replicas=BROKERS, min_insync_replicas=2, **{**SERVE_DEFAULTS, **FAST_TIMINGS}
    )
    ports = dict(enumerate(free_ports(BROKERS)))
    kafka = dict(
        listeners={str(b): port for b, port in ports.items()},
        topics=[],
        cluster_id=uuid.uuid4().hex,
        auto_create_topics=True,
        num_partitions=PARTITIONS,
        max_request_bytes=MAX_REQUEST_BYTES,
    )
    processes = ProcessCluster(config, str(directory), kafka=kafka)
    cluster = IsrcheckCluster(processes, directory, ports)
    try:
        processes.start()
        cluster.wait_until(lambda: all(cluster.metadata(b) for b in ports), "every broker answers Metadata")
        yield cluster
    finally:
        processes.stop()


def start_apache(directory: Path):
    """Apache Kafka 4.4.0: its jars from the cache (fetched once with Maven); a test FAILS with the
    distribution's message when they cannot be had, it is never skipped."""
    from isrcheck.conformance.engines.apache.cluster import KafkaCluster as ApacheKafka
    from isrcheck.conformance.engines.apache.cluster import KafkaClusterError, KafkaSettings, free_port_base
    from isrcheck.conformance.engines.apache.distribution import KafkaDistributionError, distribution

    try:
        dist, missing = distribution(APACHE_VERSION), None
    except KafkaDistributionError as exc:
        dist, missing = None, str(exc)
    if missing is not None:
        pytest.fail(f"Apache Kafka {APACHE_VERSION} cannot be had: {missing}", pytrace=False)
    for attempt in range(3):  # a port taken between the check and the JVM's bind: other ports
        settings = KafkaSettings(
            brokers=BROKERS,
            port=free_port_base(BROKERS + 1),
            min_insync_replicas=2,
            broker_session_timeout_ms=FAST_TIMINGS["broker_session_timeout_ms"],
            broker_heartbeat_interval_ms=FAST_TIMINGS["broker_heartbeat_interval_ms"],
            replica_lag_time_max_ms=FAST_TIMINGS["replica_lag_time_max_ms"],
            heap="512m",
            extra=dict(APACHE_SETTINGS),
        )
        kafka = ApacheKafka(settings, directory / f"try-{attempt}", dist)
        try:
            kafka.start()
        except KafkaClusterError as exc:
            if "in use" in str(exc) and attempt < 2:
                continue
            raise
        break
    cluster = ApacheCluster(kafka, kafka.directory)
    try:
        yield cluster
    finally:
        for b in kafka.brokers:  # what a test leaves is thrown away: no controlled shutdown to wait for
            kafka.kill(b)
        kafka.stop()


def start_cluster(directory: Path, implementation: str = "isrcheck"):
    """A generator: yields a running, Metadata-serving KafkaCluster of ``implementation``
    ("isrcheck": ``isrcheck serve``'s brokers; "apache": Apache Kafka) in ``directory``, and stops
    every process afterwards, whatever happened."""
    if implementation == "apache":
        yield from start_apache(directory)
    else:
        yield from start_isrcheck(directory)


@pytest.fixture(scope="module", params=IMPLEMENTATIONS)
def shared_cluster(request, tmp_path_factory):
    """One cluster per implementation for a module's tests that keep every broker up (each uses its
    own topic)."""
    yield from start_cluster(tmp_path_factory.mktemp(f"kafka-{request.param}"), request.param)


@pytest.fixture(params=IMPLEMENTATIONS)
def cluster(request, tmp_path):
    """A cluster of this test's own, of each implementation, for tests that kill brokers."""
    yield from start_cluster(tmp_path, request.param)


@pytest.fixture
def topic_name(request) -> str:
    """A topic name unique to this test (Kafka's legal characters only)."""
    return re.sub(r"[^a-zA-Z0-9._-]", "-", request.node.name)[:200] + "-" + uuid.uuid4().hex[:6]


@pytest.fixture(params=CLIENT_IDS)
def client(request):
    """Each Kafka client in turn: kafka-python, confluent-kafka."""
    return CLIENTS[request.param]


@pytest.fixture(params=CLIENT_IDS)
def writer(request):
    """Each Kafka client in turn, as the one that produces (with ``reader``: every pair)."""
    return CLIENTS[request.param]


@pytest.fixture(params=CLIENT_IDS)
def reader(request):
    """Each Kafka client in turn, as the one that consumes."""
    return CLIENTS[request.param]


APACHE_DEFAULT_TEST = "test_failover.py::test_leader_sigkill_mid_stream_loses_and_duplicates_nothing"


def pytest_collection_modifyitems(items):
    """The default run keeps one client per failover test (confluent-kafka) and one codec per
    client; the other combinations are ``slow`` (``python -m pytest -m slow tests/kafka``). Against
    Apache Kafka (a cluster of JVMs) the default run keeps one test: a 3-broker cluster, an
    idempotent acks=all producer, the leader SIGKILLed mid-stream, every acknowledged record read
    back once (confluent-kafka); every other test against it is ``slow``."""
    for item in items:  # every item of the session comes here: only this folder's are looked at
        if "tests/kafka/" not in item.nodeid:
            continue
        params = getattr(item, "callspec", None)
        params = params.params if params else {}
        failover = "test_failover.py" in item.nodeid and params.get("client") == "kafka-python"
        codec = params.get("compression")
        spare_codec = codec is not None and codec != {"kafka-python": "gzip"}.get(params.get("client"), "zstd")
        apache = "apache" in (params.get("cluster"), params.get("shared_cluster"))
        apache_spare = apache and not (APACHE_DEFAULT_TEST in item.nodeid and params.get("client") == "confluent-kafka")
        if failover or spare_codec or apache_spare:
            item.add_marker(pytest.mark.slow)


class _Kit(types.SimpleNamespace):
    def __repr__(self) -> str:  # what pytest shows in a failed assertion about kit.NONE etc.
        return "kit"


@pytest.fixture(scope="session")
def kit():
    """This file's helpers for the test modules, which cannot import conftest.py: ``kit.Rec``,
    ``kit.sample_records``, ``kit.record_batch``, ``kit.batch_codecs``, ``kit.spread``, ``kit.read_all``,
    ``kit.assert_same_records``,
    ``kit.clients``, ``kit.start_cluster`` (a cluster of one implementation) and the error codes."""
    return _Kit(
        Rec=Rec,
        sample_records=sample_records,
        record_batch=record_batch,
        batch_codecs=batch_codecs,
        spread=spread,
        by_partition=by_partition,
        assert_same_records=assert_same_records,
        read_all=read_all,
        clients=CLIENTS,
        start_cluster=start_cluster,
        NONE=NONE,
        NOT_ENOUGH_REPLICAS=NOT_ENOUGH_REPLICAS,
        UNSUPPORTED_VERSION=UNSUPPORTED_VERSION,
        OUT_OF_ORDER_SEQUENCE_NUMBER=OUT_OF_ORDER_SEQUENCE_NUMBER,
        PARTITIONS=PARTITIONS,
        BROKERS=BROKERS,
        MAX_REQUEST_BYTES=MAX_REQUEST_BYTES,
    )
