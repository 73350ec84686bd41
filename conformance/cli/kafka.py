"""``isrcheck kafka``: a real Apache Kafka 4.x cluster (KRaft, JVM processes) on this machine.

    isrcheck kafka --replicas 3 --dir kafka-cluster --topic orders:3
    isrcheck kafka --kafka-version 4.0.2 --elr on --dir k402
    isrcheck kafka --fetch --kafka-version 4.0.2

The release's jars come from Maven Central once (``engines/apache/distribution``), or from
``--kafka-home``; the cluster is ``engines/apache/cluster``: one controller and N brokers, each a
JVM. It prints the bootstrap servers, the folders and how to stop, then runs until Ctrl-C or
SIGTERM, which shut every node down cleanly; the same ``--dir`` starts the same cluster again.

Exit codes: 0 stopped cleanly (or fetched), 1 a node did not stop cleanly, 2 bad arguments or a
cluster that cannot start (the message says why: a version Maven Central does not serve, a port in
use, a DIR of another cluster, a JVM that exits, with the last lines of its log).
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import time

from isrcheck.conformance.vocabulary import Number, UsageError

BROKERS = Number(int, 1, 9)
PORT = Number(int, 1, 65_000)
MS = Number(int, 1, 86_400_000)
MESSAGES = Number(int, 1, 2**31 - 1)
PARTITIONS = Number(int, 1, 10_000)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kafka-version",
        default=None,
        metavar="V",
        help="the Apache Kafka 4.x release, fetched from Maven Central once (default: the one "
        "that formatted --dir, else " + _default_version() + ")",
    )
    add_kafka_arguments(parser)
    parser.add_argument(
        "--min-insync-replicas",
        type=BROKERS,
        default=None,
        metavar="N",
        help="min.insync.replicas (default 2, or 1 with one broker)",
    )
    parser.add_argument("--unclean-election", action="store_true", help="unclean.leader.election.enable=true")
    parser.add_argument(
        "--network",
        choices=("loopback", "netns"),
        default="loopback",
        help="loopback (default), or a network namespace per node so that links can be cut "
        "(root; docs/apache-kafka.md)",
    )
    parser.add_argument(
        "--lazyfs",
        action="store_true",
        help="each broker's log directory on the lazy file system, which loses unsynced "
        "writes on a power loss (FUSE; docs/apache-kafka.md)",
    )
    parser.add_argument(
        "--replicas", type=BROKERS, default=3, help="brokers, each a replica of every partition (default 3)"
    )
    parser.add_argument(
        "--dir",
        default=None,
        metavar="DIR",
        help="the cluster's folder; the same DIR starts the same cluster again (default: a new temporary folder, kept)",
    )
    parser.add_argument(
        "--port",
        type=PORT,
        default=9092,
        metavar="BASE",
        help="broker b listens for clients on BASE + b, the controller on BASE + replicas (default 9092)",
    )
    parser.add_argument(
        "--topic",
        action="append",
        default=[],
        metavar="NAME[:PARTITIONS]",
        help="a topic to create at start, replicated on every broker (repeatable)",
    )
    parser.add_argument(
        "--events",
        default=None,
        metavar="DIR",
        help="record every node's replication events into DIR (a new or empty folder) with "
        "isrcheck's Java agent, built once with Maven (docs/validate.md)",
    )
    parser.add_argument(
        "--build-agent",
        action="store_true",
        help="only build the event recorder (a Java agent, with Maven) into the cache, then exit",
    )
    parser.add_argument("--fetch", action="store_true", help="only fetch the release's jars into the cache, then exit")


def _default_version() -> str:
    # the Kafka release table, when --help shows the default
    from isrcheck.conformance.engines.apache.distribution import DEFAULT_VERSION, TESTED_VERSIONS

    return f"{DEFAULT_VERSION}; tested: {', '.join(TESTED_VERSIONS)}"


def add_kafka_arguments(parser: argparse.ArgumentParser) -> None:
    """The options every command that starts Apache Kafka shares (``kafka``, ``soak --cluster kafka``)."""
    parser.add_argument(
        "--kafka-home",
        default=None,
        metavar="DIR",
        help="a Kafka distribution already on this machine (its libs/); no Maven needed (also $ISRCHECK_KAFKA_HOME)",
    )
    parser.add_argument(
        "--elr",
        choices=("on", "off"),
        default=None,
        help="KIP-966's Eligible Leader Replicas, eligible.leader.replicas.version=1/0 at "
        "format time (default: the release's, off in 4.0, on from 4.1)",
    )
    parser.add_argument(
        "--replica-lag-time-max-ms",
        type=MS,
        default=30_000,
        metavar="MS",
        help="replica.lag.time.max.ms (default 30000, Kafka's)",
    )
    parser.add_argument(
        "--broker-session-timeout-ms",
        type=MS,
        default=9_000,
        metavar="MS",
        help="broker.session.timeout.ms (default 9000, Kafka's)",
    )
    parser.add_argument(
        "--broker-heartbeat-interval-ms",
        type=MS,
        default=2_000,
        metavar="MS",
        help="broker.heartbeat.interval.ms (default 2000, Kafka's)",
    )
    parser.add_argument(
        "--flush-messages",
        type=MESSAGES,
        default=None,
        metavar="N",
        help="log.flush.interval.messages: fsync every N messages (default: Kafka's, never; the OS writes back)",
    )
    parser.add_argument(
        "--debug-replication",
        action="store_true",
        help="DEBUG logs of kafka.cluster.Partition, the controller's ReplicationControlManager "
        "and the AlterPartition manager",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        dest="kafka_set",
        help="any further Kafka setting, for every node (repeatable)",
    )


def kafka_options(args: argparse.Namespace) -> dict:
    """The KafkaSettings fields of ``add_kafka_arguments``'s options (UsageError naming a wrong one)."""
    if args.broker_session_timeout_ms < 2 * args.broker_heartbeat_interval_ms:
        raise UsageError(
            f"--broker-session-timeout-ms {args.broker_session_timeout_ms} is shorter than two "
            f"heartbeat intervals ({args.broker_heartbeat_interval_ms} ms each): brokers would be "
            f"fenced between heartbeats"
        )
    extra = {}
    for item in args.kafka_set:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or "\n" in item:
            raise UsageError(f"--set {item!r}: expected KEY=VALUE, e.g. --set log.segment.bytes=1048576")
        extra[key.strip()] = value.strip()
    return dict(
        elr=None if args.elr is None else args.elr == "on",
        replica_lag_time_max_ms=args.replica_lag_time_max_ms,
        flush_messages=args.flush_messages,
        broker_session_timeout_ms=args.broker_session_timeout_ms,
        broker_heartbeat_interval_ms=args.broker_heartbeat_interval_ms,
        debug_replication=args.debug_replication,
        extra=extra,
    )


def settings_from(args: argparse.Namespace, topics: list):
    """``isrcheck kafka``'s KafkaSettings (UsageError naming a wrong option)."""
    # loaded when the command runs, not for --help
    from isrcheck.conformance.engines.apache.cluster import KafkaSettings

    min_isr = args.min_insync_replicas
    if min_isr is not None and min_isr > args.replicas:
        raise UsageError(
            f"--min-insync-replicas {min_isr} > the {args.replicas} brokers: no acks=all write could ever succeed"
        )
    return KafkaSettings(
        brokers=args.replicas,
        port=args.port,
        min_insync_replicas=min_isr,
        unclean_election=args.unclean_election,
        topics=topics,
        network=args.network,
        lazyfs=args.lazyfs,
        **kafka_options(args),
    )


def parse_topics(specs: list[str]) -> list[tuple[str, int]]:
    # loads impl: only when topics are named
    from isrcheck.impl.controller import valid_topic_name

    topics: dict[str, int] = {}
    for spec in specs:
        name, _, count = spec.partition(":")
        if not valid_topic_name(name):
            raise UsageError(f"--topic {spec!r}: a topic name is 1-249 of [a-zA-Z0-9._-], not '.' or '..'")
        try:
            partitions = PARTITIONS(count) if count else 1
        except argparse.ArgumentTypeError as exc:
            raise UsageError(f"--topic {spec!r}: partitions: {exc}") from None
        if name in topics and topics[name] != partitions:
            raise UsageError(f"--topic {name} is given twice, with {topics[name]} and {partitions} partitions")
        topics[name] = partitions
    return list(topics.items())


def distribution_from(args: argparse.Namespace, say, directory: str | None = None):
    """The jars of ``--kafka-home``, or of ``--kafka-version``, or of the release that formatted the
    cluster in ``directory``, or of the default release."""
    # loaded when the command runs, not for --help
    from isrcheck.conformance.engines.apache.cluster import recorded_version
    from isrcheck.conformance.engines.apache.distribution import distribution

    version = args.kafka_version or (recorded_version(directory) if directory and not args.kafka_home else None)
    return distribution(version, args.kafka_home, say=say)


def run(args: argparse.Namespace) -> int:
    # loaded when the command runs, not for --help
    from isrcheck.conformance.engines.apache.cluster import KafkaCluster

    def say(line: str) -> None:
        print(f"isrcheck kafka: {line}", file=sys.stderr, flush=True)

    if args.build_agent:
        # loaded when the command runs, not for --help
        from isrcheck.conformance.engines.apache.agent import agent_jar

        print(f"isrcheck kafka: the event recorder is {agent_jar(say)}")
        return 0
    topics = parse_topics(args.topic)
    if args.port + args.replicas > 65_535:
        raise UsageError(f"--port {args.port}: the controller's port {args.port + args.replicas} exceeds 65535")
    settings = settings_from(args, topics)
    dist = distribution_from(args, say, args.dir)
    if args.fetch:
        print(f"isrcheck kafka: Apache Kafka {dist.version}'s jars are in {dist.libs}")
        return 0
    directory = args.dir or tempfile.mkdtemp(prefix="isrcheck-kafka-")
    cluster = KafkaCluster(settings, directory, dist, say=say, events=args.events)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        try:
            cluster.start()
        except KeyboardInterrupt:
            say("interrupted while starting; every node stopped")
            return 130
        _banner(cluster)
        _watch(cluster, say)
    except KeyboardInterrupt:
        pass
    for signum in (signal.SIGINT, signal.SIGTERM):  # a second one must not cut the shutdown short
        signal.signal(signum, signal.SIG_IGN)
    say("stopping: every broker shuts down cleanly, then the controller")
    clean = cluster.stop()
    if cluster.events is not None:
        # loaded when the command runs, not for --help
        from isrcheck.conformance.engines.apache.recording import summary

        print(f"isrcheck kafka: {summary(cluster.events)}", flush=True)
    if not clean:
        say("stopped; not every node cleanly (see the logs)")
        return 1
    print(f"isrcheck kafka: stopped cleanly; data in {cluster.directory}", flush=True)
    return 0


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt  # SIGTERM stops the cluster as Ctrl-C does


def _banner(cluster) -> None:
    s = cluster.settings
    topics = ", ".join(f"{n} ({p} partition{'s' * (p > 1)})" for n, p in s.topics) or "none (auto-created on use)"
    print(
        f"isrcheck kafka: Apache Kafka {cluster.dist.version}, {s.brokers} brokers and a controller, "
        f"ELR {'on' if cluster.elr else 'off'}, min.insync.replicas={s.min_isr()}, "
        f"unclean.leader.election.enable={str(s.unclean_election).lower()}, cluster id {cluster.cluster_id}"
    )
    print(f"  bootstrap servers: {cluster.bootstrap}")
    print(f"  controller:        {cluster.controller.address} (node {cluster.controller.id})")
    print(f"  data directories:  {cluster.directory}/broker-<b>/data, {cluster.controller.data}")
    print(f"  logs:              {cluster.directory}/<node>/logs/ (server.log, controller.log, state-change.log)")
    print(f"  topics:            {topics}")
    if cluster.events is not None:
        print(f"  events:            {cluster.events} (recorded by isrcheck's Java agent in every JVM)")
    print(
        f"Stop with Ctrl-C (or SIGTERM): every node shuts down cleanly; --dir {cluster.directory} starts "
        f"this cluster again.",
        flush=True,
    )


def _watch(cluster, say) -> None:
    """Until interrupted: say so once when a node exits by itself."""
    reported: set[int] = set()
    while True:
        time.sleep(0.5)
        for node in cluster.nodes:
            if node.process is not None and node.process.poll() is not None and node.id not in reported:
                reported.add(node.id)
                say(f"{node.name} exited with code {node.process.returncode} (see {node.logs}/server.log)")


__all__ = [
    "add_arguments",
    "add_kafka_arguments",
    "kafka_options",
    "run",
    "settings_from",
    "parse_topics",
    "distribution_from",
]
