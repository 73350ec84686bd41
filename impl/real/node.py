"""One node of a cluster of real processes: ``python -m isrcheck.impl.real.node``.

    python -m isrcheck.impl.real.node --node 1 --config '{"protocol": "kip-320", ...}' \\
        --ports '{"0": 9001, "1": 9002, "2": 9003, "1000": 9000}' --data-dir DIR [--incarnation N] \\
        [--kafka '{"listeners": {"0": 9092, ...}, "topics": [["orders", 3]], ...}'] [--net-file DIR/net.json] \\
        [--events DIR --clock-origin SECONDS]

A broker (``--node`` a broker id) or the controller (``--node controller``), on its own asyncio
loop with wall-clock timers and TCP on localhost; every node's port is given, so processes find
each other. A broker's log lives in ``DIR`` on the OS file system, journaled (``durable``) so that a
power loss can be played after a SIGKILL. A broker's first start (``DIR`` without a log) joins the
newly created partition as the simulation's initial state does (broker 0 leads epoch 0, every
replica in the ISR); a later start (a data directory that has a log, or ``--incarnation`` above 0:
a restart, e.g. on an empty disk after the old one was lost) recovers its log and registers again.

With ``--kafka`` the cluster is one Kafka clients use (``isrcheck serve``): each broker also
listens for the Kafka protocol on its ``listeners`` port, hosts the partitions of every topic, and
keeps its logs on the plain OS file system (no journal: no power loss can be played), or with the
setting ``"journal": true`` on the journaled one (a soak that plays power losses); the controller
creates ``topics``, auto-creates on request and keeps its metadata in ``DIR/metadata.json``.

Network partitions and held requests (``--net-file``): every node polls the file every 100 ms (one
``stat``; it reads the file only when that changed), cuts its links (``TcpTransport.cut``) to the
peers the file names, healing the others, and holds the requests it names
(``TcpTransport.set_holds``): ``netfile`` describes the file and the status file a node that holds
requests writes beside it; and delays the frames of the links it names (``TcpTransport.set_delays``).
Only the links between nodes are cut or delayed: Kafka clients reach every broker whatever the file
says. A file that is no net file when the node starts stops it (exit 2, naming the file and entry).

Event log (``--events``): the node writes its protocol events to ``DIR/broker-N.jsonl`` or
``DIR/controller.jsonl`` (``isrcheck.impl.eventlog``; docs/validate.md), a restarted broker
(``--incarnation`` above 0) going on with its file; ``t`` is in ms since ``--clock-origin``, a
``time.monotonic()`` reading that every node of the run is given, so all read one clock. With it
the node logs ``timers`` lines (``witness.TimerWitness``): its evidence that its timers ran.

Signals: SIGTERM and SIGINT are a clean shutdown (HW checkpoint, flush, close; exit 0); SIGKILL
is a process crash. SIGUSR1 makes a broker's disk fail: the failure named in
``DIR/.disk-failure`` (``write:EIO``, ``fsync:ENOSPC``, ``read:EIO``, ...; docs/steps.md, "Disk
faults") hits the broker's next such operation, which it then runs (``Broker.disk_io``); its log
directory goes offline and, being its only one, the broker halts with exit code 1 as Kafka's
``LogManager.handleLogDirFailure`` does (the controller fences it when its session expires). ``ready`` is printed on
stdout once the node listens.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import json
import logging
import os
import signal
import sys

from ..controller import CONTROLLER_ID, Controller, FileMetadataStore
from ..eventlog import EventLog, run_header
from ..invariants import halt_on_broken_invariant
from ..protocol import LeaderAndIsrRequest
from ..replication import ClusterConfig
from ..replication.broker import Broker
from ..storage import OsFileSystem
from .durable import JournaledFileSystem
from .failing import DISK_FAILURE_FILE, FailingFileSystem
from .netfile import NetWatcher
from .runtime import AsyncioScheduler, TcpTransport
from .witness import TimerWitness

KAFKA_HOST = "127.0.0.1"
METADATA_FILE = "metadata.json"  # the controller's, in its data directory

_STARTED = ".started"  # written once the broker joined the created partition


_log = logging.getLogger("isrcheck.node")


# per-batch events: at DEBUG, or a busy broker's log grows by lines per batch
_ROUTINE = frozenset({"append", "replicate", "hw"})


def _event(*fields) -> None:
    """Elections, fencing, registrations, ISR changes, truncations: one log line each."""
    routine = any(f in _ROUTINE for f in fields[1:3])  # (node, [partition,] event, ...)
    _log.log(logging.DEBUG if routine else logging.INFO, " ".join(map(str, fields)))


def journal_path(data_dir: str) -> str:
    return data_dir.rstrip("/") + ".journal"


def node_events(
    directory: str, config: ClusterConfig, scheduler: AsyncioScheduler, transport: TcpTransport, incarnation: int
) -> EventLog:
    """This process's event log, its Lamport clock carried by ``transport``'s frames; each line
    reaches the OS as it is written (a SIGKILL loses none), a restart goes on with the file."""
    events = EventLog(
        directory, run_header(config), CONTROLLER_ID, scheduler.now_ms, resume=incarnation > 0, line_buffered=True
    )
    transport.clock = events
    return events


async def run_node(
    node: str,
    config: ClusterConfig,
    ports: dict[int, int],
    data_dir: str,
    incarnation: int,
    kafka: dict | None = None,
    net_file: str | None = None,
    events_dir: str | None = None,
    clock_origin: float | None = None,
) -> None:
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(halt_on_broken_invariant)
    scheduler, transport = AsyncioScheduler(loop, clock_origin), TcpTransport(loop, ports=ports)
    events = node_events(events_dir, config, scheduler, transport, incarnation) if events_dir else None
    stopped = loop.create_future()
    watcher = None
    if net_file:  # cut before the first frame: a node restarted inside a partition stays in it
        watcher = NetWatcher(net_file, CONTROLLER_ID if node == "controller" else int(node), transport)
        watcher.poll(strict=True)  # a file that is no net file stops the node: exit 2
    if node == "controller":
        extra = {}
        if kafka is not None:
            os.makedirs(data_dir, exist_ok=True)
            extra = dict(
                kafka_metadata=True,
                topics=tuple((name, int(n)) for name, n in kafka.get("topics", ())),
                metadata_store=FileMetadataStore(OsFileSystem(), os.path.join(data_dir, METADATA_FILE)),
            )
        Controller.for_cluster(config, scheduler, transport, True, _event, events=events, **extra)

        def shutdown() -> None:
            if not stopped.done():
                stopped.set_result(None)
    else:
        broker_id = int(node)
        os.makedirs(data_dir, exist_ok=True)
        journaled = kafka is None or bool(kafka.get("journal", False))
        fs = FailingFileSystem(JournaledFileSystem(journal_path(data_dir)) if journaled else OsFileSystem())
        broker = Broker(
            broker_id,
            config,
            fs,
            scheduler,
            transport,
            auto=True,
            incarnation=incarnation,
            data_dir=data_dir,
            on_event=_event,
            kafka=kafka is not None,
            events=events,
        )
        broker.on_log_dir_offline = lambda error: _halt_offline(broker, data_dir, error)
        marker = os.path.join(data_dir, _STARTED)
        if os.path.exists(marker) or incarnation > 0:  # a restart, maybe on a new empty disk
            broker.register()
            if not os.path.exists(marker):
                fs.write_file_atomically(marker, b"started\n")
        else:
            everyone = tuple(range(config.replicas))
            epoch = broker_id + 1  # the controller registers the created partition's brokers in id order from 1
            broker.bootstrap(
                epoch,
                None if kafka is not None else LeaderAndIsrRequest(epoch, 0, 0, 0, 0, everyone, everyone),
                # every created broker's registration (broker epochs are compared from KIP-903 on)
                tuple(b + 1 if config.variant.broker_epochs else 0 for b in everyone),
            )
            fs.write_file_atomically(marker, b"started\n")
        server = None
        if kafka is not None:  # clients are served once the broker caught up (BrokerServer.startup)
            server = await _kafka_listener(broker, kafka)
            broker.on_caught_up = server.enable_request_processing
            if broker.caught_up:
                server.enable_request_processing()
        loop.add_signal_handler(signal.SIGUSR1, lambda: fail_disk(broker, fs, data_dir))

        def shutdown() -> None:
            if server is not None:
                server.close()
            if broker.alive:
                broker.shutdown()
            if not stopped.done():
                stopped.set_result(None)

    witness = None
    if events is not None:  # the evidence the timeliness properties judge the node's timers by
        witness = TimerWitness(scheduler, events, CONTROLLER_ID if node == "controller" else int(node))
        witness.start()

    def stop() -> None:
        if witness is not None:  # before the shutdown cancels what the node owed
            witness.stop()
        shutdown()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop)
    watching = loop.create_task(watcher.run()) if watcher is not None else None
    print("ready", flush=True)
    await stopped
    if watching is not None:
        watching.cancel()


def fail_disk(broker: Broker, fs: FailingFileSystem, data_dir: str) -> None:
    """The disk fails as ``DIR/.disk-failure`` says (``OPERATION:ERRNO``): the broker runs that
    operation at once, and if it failed its log directory is offline and it halts. With a third
    part, ``OPERATION:ERRNO:next``, the failure is only armed: whatever the broker does next of
    that operation fails (the append of a produce, say) and ``Broker.handle_log_dir_failure``
    halts it the same way."""
    try:
        with open(os.path.join(data_dir, DISK_FAILURE_FILE), encoding="utf-8") as f:
            operation, code, *mode = f.read().strip().split(":")
        if mode not in ([], ["next"]):
            raise ValueError(f"expected OPERATION:ERRNO or OPERATION:ERRNO:next, got a mode {':'.join(mode)!r}")
        fs.failures.fail_next(operation, getattr(errno, code))
    except (OSError, ValueError, AttributeError) as exc:
        _log.error("cannot read the disk failure to inject: %s", exc)
        return
    if mode:
        _log.warning("the disk's next %s fails with %s", operation, code)
        return
    if broker.disk_io(operation):
        fs.failures.disarm()
        _log.warning("the injected %s failure hit nothing", operation)
        return
    _halt_offline(broker, data_dir, broker.log_dir_failure_channel.offline[data_dir], operation)


def _halt_offline(broker: Broker, data_dir: str, error: OSError, operation: str = "io") -> None:
    """The broker's only log directory is offline: halt (exit 1) at once, nothing flushed, as
    Kafka's LogManager.handleLogDirFailure does with Exit.halt. ``operation``: what failed, where
    the broker knows it (``io``: an error inside a request or a timer)."""
    code = errno.errorcode.get(error.errno, str(error.errno))
    _event("log_dir_offline", broker.broker_id, operation, code)
    _log.error("log directory %s offline (%s); no log directory left: halting", data_dir, error)
    os._exit(1)


async def _kafka_listener(broker: Broker, kafka: dict):
    """The broker's Kafka listener (isrcheck.impl.kafka), started."""
    # kafka-python's protocol classes load only for a node with a Kafka listener
    from ..kafka import KafkaApis, KafkaServer, KafkaSettings

    listeners = {int(b): (KAFKA_HOST, int(port)) for b, port in kafka["listeners"].items()}
    settings = KafkaSettings(
        listeners,
        kafka.get("cluster_id", "isrcheck"),
        kafka.get("auto_create_topics", True),
        int(kafka.get("num_partitions", 1)),
    )
    server = KafkaServer(
        KafkaApis(broker.broker_id, broker.replica_manager, settings),
        *listeners[broker.broker_id],
        kafka.get("max_request_bytes", 104_857_600),
    )
    await server.start(processing=False)
    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m isrcheck.impl.real.node", description=__doc__.splitlines()[0])
    parser.add_argument("--node", required=True, help="a broker id, or controller")
    parser.add_argument("--config", required=True, help="ClusterConfig fields as a JSON object")
    parser.add_argument("--ports", required=True, help="node id -> port, as JSON (the controller is node 3000)")
    parser.add_argument("--data-dir", default="", help="the broker's log directory")
    parser.add_argument("--incarnation", type=int, default=0)
    parser.add_argument("--kafka", default=None, help="Kafka listener and topic settings, as JSON (serve)")
    parser.add_argument("--net-file", default=None, help="the network partition file to watch (net.json)")
    parser.add_argument("--events", default=None, help="the run's event log directory (docs/validate.md)")
    parser.add_argument(
        "--clock-origin",
        type=float,
        default=None,
        help="the run's time origin, a time.monotonic() reading (event times are ms since it)",
    )
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
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format=f"%(asctime)s node {args.node} %(name)s %(levelname)s %(message)s"
    )
    try:
        asyncio.run(
            run_node(
                args.node,
                config,
                ports,
                args.data_dir,
                args.incarnation,
                kafka,
                args.net_file,
                args.events,
                args.clock_origin,
            )
        )
    except (OSError, ValueError) as exc:  # a port in use, unreadable metadata
        print(f"node {args.node}: {exc}", file=sys.stderr)
        return 2
    for sig in (signal.SIGTERM, signal.SIGINT):  # shut down already: a second signal must not cut the exit
        signal.signal(sig, signal.SIG_IGN)
    return 0


if __name__ == "__main__":
    sys.exit(main())
