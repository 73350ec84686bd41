"""One node of a cluster of real processes: ``python -m isrcheck.impl.real.node``.

    python -m isrcheck.impl.real.node --node 1 --config '{"protocol": "kip-320", ...}' \\
        --ports '{"0": 9001, "1": 9002, "2": 9003, "1000": 9000}' --data-dir DIR [--incarnation N] \\
        [--kafka '{"listeners": {"0": 9092, ...}, "topics": [["orders", 3]], ...}']

A broker (``--node`` a broker id) or the controller (``--node controller``), on its own asyncio
loop with wall-clock timers and TCP on localhost; every node's port is given, so processes find
each other. A broker's log lives in ``DIR`` on the OS file system, journaled (``durable``) so that a
power loss can be played after a SIGKILL. A broker's first start (``DIR`` without a log) joins the
newly created partition as the simulation's initial state does (broker 0 leads epoch 0, every
replica in the ISR); a later start recovers its log and registers again.

With ``--kafka`` the cluster is one Kafka clients use (``isrcheck serve``): each broker also
listens for the Kafka protocol on its ``listeners`` port, hosts the partitions of every topic, and
keeps its logs on the plain OS file system (no journal: no power loss is played); the controller
creates ``topics``, auto-creates on request and keeps its metadata in ``DIR/metadata.json``.

Signals: SIGTERM and SIGINT are a clean shutdown (HW checkpoint, flush, close; exit 0); SIGKILL
is a process crash. ``ready`` is printed on stdout once the node listens.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys

from ..controller import Controller, FileMetadataStore
from ..protocol import LeaderAndIsrRequest
from ..replication import ClusterConfig
from ..replication.broker import Broker
from ..storage import OsFileSystem
from .durable import JournaledFileSystem
from .runtime import AsyncioScheduler, TcpTransport

KAFKA_HOST = "127.0.0.1"
METADATA_FILE = "metadata.json"  # the controller's, in its data directory

_STARTED = ".started"  # written once the broker joined the created partition


_log = logging.getLogger("isrcheck.node")


def _event(*fields) -> None:
    """Elections, fencing, registrations, ISR changes, truncations: one log line each."""
    _log.info(" ".join(map(str, fields)))


def journal_path(data_dir: str) -> str:
    return data_dir.rstrip("/") + ".journal"


async def run_node(node: str, config: ClusterConfig, ports: dict[int, int], data_dir: str, incarnation: int,
                   kafka: dict | None = None) -> None:
    loop = asyncio.get_running_loop()
    scheduler, transport = AsyncioScheduler(loop), TcpTransport(loop, ports=ports)
    stopped = loop.create_future()
    if node == "controller":
        extra = {}
        if kafka is not None:
            os.makedirs(data_dir, exist_ok=True)
            extra = dict(kafka_metadata=True, topics=tuple((name, int(n)) for name, n in kafka.get("topics", ())),
                         metadata_store=FileMetadataStore(OsFileSystem(), os.path.join(data_dir, METADATA_FILE)))
        Controller.for_cluster(config, scheduler, transport, True, _event, **extra)

        def shutdown() -> None:
            if not stopped.done():
                stopped.set_result(None)
    else:
        broker_id = int(node)
        os.makedirs(data_dir, exist_ok=True)
        fs = OsFileSystem() if kafka is not None else JournaledFileSystem(journal_path(data_dir))
        broker = Broker(broker_id, config, fs, scheduler, transport, auto=True, incarnation=incarnation,
                        data_dir=data_dir, on_event=_event, kafka=kafka is not None)
        marker = os.path.join(data_dir, _STARTED)
        if os.path.exists(marker):
            broker.register()
        else:
            everyone = tuple(range(config.replicas))
            epoch = broker_id + 1  # the controller registers the created partition's brokers in id order from 1
            broker.bootstrap(epoch, None if kafka is not None else
                             LeaderAndIsrRequest(epoch, 0, 0, 0, 0, everyone, everyone))
            fs.write_file_atomically(marker, b"started\n")
        server = await _kafka_listener(broker, kafka) if kafka is not None else None

        def shutdown() -> None:
            if server is not None:
                server.close()
            if broker.alive:
                broker.shutdown()
            if not stopped.done():
                stopped.set_result(None)
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, shutdown)
    print("ready", flush=True)
    await stopped


async def _kafka_listener(broker: Broker, kafka: dict):
    """The broker's Kafka listener (isrcheck.impl.kafka), started."""
    from ..kafka import KafkaApis, KafkaServer, KafkaSettings

    listeners = {int(b): (KAFKA_HOST, int(port)) for b, port in kafka["listeners"].items()}
    settings = KafkaSettings(listeners, kafka.get("cluster_id", "isrcheck"), kafka.get("auto_create_topics", True),
                             int(kafka.get("num_partitions", 1)))
    server = KafkaServer(KafkaApis(broker.broker_id, broker.replica_manager, settings),
                         *listeners[broker.broker_id], kafka.get("max_request_bytes", 104_857_600))
    await server.start()
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m isrcheck.impl.real.node", description=__doc__.splitlines()[0])
    parser.add_argument("--node", required=True, help="a broker id, or controller")
    parser.add_argument("--config", required=True, help="ClusterConfig fields as a JSON object")
    parser.add_argument("--ports", required=True, help="node id -> port, as JSON (the controller is node 3000)")
    parser.add_argument("--data-dir", default="", help="the broker's log directory")
    parser.add_argument("--incarnation", type=int, default=0)
    parser.add_argument("--kafka", default=None, help="Kafka listener and topic settings, as JSON (serve)")
    args = parser.parse_args(argv)
    try:
        config = ClusterConfig(**json.loads(args.config))
        ports = {int(k): int(v) for k, v in json.loads(args.ports).items()}
        kafka = json.loads(args.kafka) if args.kafka else None
    except (ValueError, TypeError) as exc:
        print(f"node: bad --config, --ports or --kafka: {exc}", file=sys.stderr)
        return 2
    if args.node != "controller" and not args.data_dir:
        print("node: a broker needs --data-dir", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format=f"%(asctime)s node {args.node} %(name)s %(levelname)s %(message)s")
    try:
        asyncio.run(run_node(args.node, config, ports, args.data_dir, args.incarnation, kafka))
    except (OSError, ValueError) as exc:  # a port in use, unreadable metadata
        print(f"node {args.node}: {exc}", file=sys.stderr)
        return 2
    for sig in (signal.SIGTERM, signal.SIGINT):  # shut down already: a second signal must not cut the exit
        signal.signal(sig, signal.SIG_IGN)
    return 0


if __name__ == "__main__":
    sys.exit(main())
