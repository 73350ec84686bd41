"""The cluster ``isrcheck serve`` runs (conformance/cli/serve.py holds its options and output): a
local Kafka cluster of real processes that Kafka clients and tools can use. ``prepare`` checks the
settings and gives the cluster's config, its data directory and the nodes' Kafka settings;
``served_topics`` and ``wait_until_serving`` tell what it serves and when.
"""

from __future__ import annotations

import argparse
import base64
import os
import socket
import struct
import tempfile
import time
import uuid

from kafka.protocol.metadata.metadata import MetadataRequest, MetadataResponse

from ..controller import FileMetadataStore, valid_topic_name
from ..replication import VARIANTS, ClusterConfig, InvalidConfigError
from ..storage import OsFileSystem
from .node import KAFKA_HOST, METADATA_FILE

# Kafka's defaults where a local cluster is served well by them, shorter where a developer would
# otherwise wait (a dead broker is fenced after 3 s, not 9 s)
SERVE_DEFAULTS = dict(
    replica_lag_time_max_ms=10_000,
    request_timeout_ms=30_000,
    replica_fetch_backoff_ms=100,
    replica_fetch_wait_max_ms=500,
    broker_heartbeat_interval_ms=500,
    broker_session_timeout_ms=3_000,
    replica_high_watermark_checkpoint_interval_ms=5_000,
)


INT32_MAX = 2**31 - 1  # Kafka's int settings
MAX_PARTITIONS = 10_000
# Each integer setting's valid range: what the cluster still works with (a request bound below
# 64 KiB refuses clients' ordinary requests; a zero timeout or interval spins or fences at once).
SETTING_BOUNDS = dict(
    replica_lag_time_max_ms=(1, INT32_MAX),
    request_timeout_ms=(1, INT32_MAX),
    replica_fetch_backoff_ms=(0, INT32_MAX),
    replica_fetch_wait_max_ms=(0, INT32_MAX),
    broker_heartbeat_interval_ms=(1, INT32_MAX),
    broker_session_timeout_ms=(1, INT32_MAX),
    replica_high_watermark_checkpoint_interval_ms=(0, INT32_MAX),
    flush_messages=(1, INT32_MAX),
    socket_request_max_bytes=(64 << 10, INT32_MAX),
    partitions=(1, MAX_PARTITIONS),
)


class ServeError(Exception):
    """Why the cluster cannot be served; exit 2."""


def parse_topic(spec: str, default_partitions: int) -> tuple[str, int]:
    name, _, count = spec.partition(":")
    if not valid_topic_name(name):
        raise ServeError(f"--topic {spec!r}: a topic name is 1-249 of [a-zA-Z0-9._-], not '.' or '..'")
    try:
        partitions = int(count) if count else default_partitions
    except ValueError:
        raise ServeError(f"--topic {spec!r}: partitions must be a whole number") from None
    if not 1 <= partitions <= MAX_PARTITIONS:
        raise ServeError(f"--topic {spec!r}: partitions must be 1..{MAX_PARTITIONS}")
    return name, partitions


def _option(name: str) -> str:
    return "--" + name.replace("_", "-")


def check_settings(args: argparse.Namespace) -> list[tuple[str, int]]:
    """Every setting within its range and none in conflict with another; the topics to create.
    ServeError naming the setting and its range, or the two that conflict."""
    for name, (low, high) in SETTING_BOUNDS.items():
        value = getattr(args, name)
        if value is not None and not low <= value <= high:
            raise ServeError(f"{_option(name)}: expected {low:,}..{high:,}, got {value}")
    if args.broker_session_timeout_ms < 2 * args.broker_heartbeat_interval_ms:
        raise ServeError(
            f"--broker-session-timeout-ms {args.broker_session_timeout_ms}: shorter than two heartbeat "
            f"intervals (--broker-heartbeat-interval-ms {args.broker_heartbeat_interval_ms}); a live "
            f"broker would be fenced between its heartbeats"
        )
    if args.replica_fetch_wait_max_ms >= args.replica_lag_time_max_ms:
        raise ServeError(
            f"--replica-fetch-wait-max-ms {args.replica_fetch_wait_max_ms}: not shorter than "
            f"--replica-lag-time-max-ms {args.replica_lag_time_max_ms}; a follower waiting on an "
            f"idle partition would leave the ISR"
        )
    topics: dict[str, int] = {}
    for spec in args.topic:
        name, partitions = parse_topic(spec, args.partitions)
        if name in topics:
            raise ServeError(f"--topic {spec!r}: topic {name} is given twice")
        topics[name] = partitions
    return list(topics.items())


def cluster_id(directory: str) -> str:
    """meta.properties' cluster.id, written on the first start as Kafka's storage format does."""
    path = os.path.join(directory, "meta.properties")
    if os.path.exists(path):
        for line in _properties(path).splitlines():
            if line.startswith("cluster.id="):
                return line.strip().split("=", 1)[1]
        raise ServeError(f"{path}: no cluster.id line")
    cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    with open(path, "w", encoding="utf-8") as f:
        f.write(f"version=1\ncluster.id={cid}\n")
    return cid


META_PROPERTIES_MAX_BYTES = 64 << 10  # Kafka's holds a few short lines


def _properties(path: str) -> str:
    """A properties file of the data directory as text; ServeError naming it if it cannot be
    read, is larger than such a file may be, or is not text."""
    try:
        with open(path, "rb") as f:
            raw = f.read(META_PROPERTIES_MAX_BYTES + 1)
    except OSError as exc:
        raise ServeError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(raw) > META_PROPERTIES_MAX_BYTES:
        raise ServeError(f"{path}: larger than a meta.properties file may be ({META_PROPERTIES_MAX_BYTES >> 10} KiB)")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ServeError(f"{path}: not a text (UTF-8) file: byte {exc.start} (0x{raw[exc.start]:02x})") from None


def served_topics(directory: str) -> list[tuple[str, int]]:
    """(topic, partitions) as the controller's metadata has them, in creation order."""
    try:
        stored = FileMetadataStore(OsFileSystem(), os.path.join(directory, "controller", METADATA_FILE)).load() or {}
    except ValueError:
        return []
    counts: dict[str, int] = {}
    for p in stored.get("partitions", ()):
        counts[p["topic"]] = counts.get(p["topic"], 0) + 1
    return list(counts.items())


def wait_until_serving(ports: list[int], topics: list[tuple[str, int]], timeout_s: float = 30.0) -> bool:
    """Until every broker answers Metadata naming a leader for every partition of ``topics`` (a
    restarted cluster learns them only once its brokers registered again)."""
    request = MetadataRequest(
        version=9,
        topics=[MetadataRequest.MetadataRequestTopic(name=name) for name, _ in topics],
        allow_auto_topic_creation=False,
    )
    request.with_header(correlation_id=1, client_id="isrcheck-serve")
    frame = bytes(request.encode(header=True, framed=True))
    deadline = time.monotonic() + timeout_s
    pending = list(ports)
    while pending and time.monotonic() < deadline:
        try:
            with socket.create_connection((KAFKA_HOST, pending[0]), timeout=2) as s:
                s.sendall(frame)
                size = struct.unpack(">i", _recv(s, 4))[0]
                response = MetadataResponse.decode(_recv(s, size), version=9, header=True)
            leaders = {(t.name, p.partition_index) for t in response.topics for p in t.partitions if p.leader_id >= 0}
            if all((name, i) in leaders for name, n in topics for i in range(n)):
                pending.pop(0)
                continue
        except (OSError, struct.error, ValueError):
            pass
        time.sleep(0.1)
    return not pending


def _recv(s: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = s.recv(size - len(data))
        if not chunk:
            raise OSError("closed")
        data += chunk
    return data


def _check_ports(ports: list[int]) -> None:
    for port in ports:
        if not 1 <= port <= 65535:
            raise ServeError(f"--port: broker ports must lie in 1..65535, {port} does not")
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((KAFKA_HOST, port))
            except OSError as exc:
                raise ServeError(f"port {port} is in use ({exc.strerror}); choose another --port") from None


def _check_events(events: str, directory: str | None) -> None:
    """An event log starts with its cluster: a new one, logged into a directory of its own."""
    wrong = (
        "not a directory"
        if os.path.exists(events) and not os.path.isdir(events)
        else "not empty"
        if os.path.isdir(events) and os.listdir(events)
        else None
    )
    if wrong is not None:
        raise ServeError(
            f"--events {events}: {wrong}; an event log starts with its cluster: give a new or empty directory"
        )
    if directory is not None and os.path.exists(os.path.join(directory, "meta.properties")):
        raise ServeError(
            f"--events: {directory} holds a cluster that ran before, whose history no log "
            f"has; an event log starts with its cluster: give a new --dir"
        )
    try:
        os.makedirs(events, exist_ok=True)
    except OSError as exc:
        raise ServeError(f"--events {events}: cannot create it ({exc.strerror})") from None


def _check_data(directory: str) -> None:
    """Brokers' logs without the controller's metadata would be served as a new cluster's, whose
    partitions start again at epoch 0 and whose leaders truncate what the followers hold: refused."""
    if not os.path.isdir(directory):
        return
    metadata = os.path.join(directory, "controller", METADATA_FILE)
    brokers = sorted(
        name
        for name in os.listdir(directory)
        if name.startswith("broker-")
        and os.path.isdir(os.path.join(directory, name))
        and os.listdir(os.path.join(directory, name))
    )
    if brokers and not os.path.exists(metadata):
        raise ServeError(
            f"--dir {directory}: holds broker data ({os.path.join(directory, brokers[0])}) but no "
            f"cluster metadata ({metadata}); serving it would start a new cluster that truncates "
            f"those logs: give a new --dir, or restore the metadata"
        )


def prepare(args: argparse.Namespace) -> tuple[ClusterConfig, str, dict]:
    """The cluster's config, directory and the nodes' Kafka settings; ServeError if anything is wrong."""
    if args.protocol not in VARIANTS:
        raise ServeError(f"--protocol: unknown variant {args.protocol!r} (known: {', '.join(VARIANTS)})")
    topics = check_settings(args)
    min_isr = args.min_insync_replicas if args.min_insync_replicas is not None else min(2, args.replicas)
    try:
        config = ClusterConfig(
            protocol=args.protocol,
            replicas=args.replicas,
            min_insync_replicas=min_isr,
            unclean_leader_election_enable=args.unclean_leader_election,
            flush_messages=args.flush_messages,
            **{name: getattr(args, name) for name in SERVE_DEFAULTS},
        )
    except InvalidConfigError as exc:
        raise ServeError(str(exc)) from None
    ports = [args.port + b for b in range(args.replicas)]
    _check_ports(ports)
    if args.events is not None:
        _check_events(args.events, args.dir)
    if args.dir is not None:
        _check_data(args.dir)
    directory = args.dir or tempfile.mkdtemp(prefix="isrcheck-serve-")
    os.makedirs(directory, exist_ok=True)
    kafka = dict(
        listeners={str(b): port for b, port in enumerate(ports)},
        topics=topics,
        cluster_id=cluster_id(directory),
        auto_create_topics=not args.no_auto_create_topics,
        num_partitions=args.partitions,
        max_request_bytes=args.socket_request_max_bytes,
    )
    return config, directory, kafka


__all__ = ["prepare", "served_topics", "wait_until_serving", "ServeError", "SERVE_DEFAULTS"]
