"""``isrcheck serve``: a local Kafka cluster of real processes (``isrcheck.impl.real.serve``); with
``--events DIR`` its processes' event log, validated against the model (``engines/validate``) once
the cluster has stopped (Ctrl-C, SIGTERM), as ``isrcheck soak`` validates its own.

The controller and N brokers start as OS processes on localhost (``processes.ProcessCluster``),
broker b listening for Kafka clients on ``--port`` + b. Topics given by ``--topic`` are created at
start, others when a client asks Metadata for them (Kafka's ``auto.create.topics.enable``), each
partition replicated on every broker. Ctrl-C (or SIGTERM) shuts every broker down cleanly; running
again with the same ``--dir`` recovers every log and the controller's metadata. With ``--events DIR``
every node process writes its protocol events to ``DIR`` (docs/validate.md), which takes a new
cluster: a log that a validator can read starts with the cluster's creation.

Exit codes: 0 stopped cleanly (and the event log explained); 1 a node did not stop cleanly, or an
event of the log no behaviour of the model explains; 2 bad arguments or a cluster that cannot start
(a port in use, a directory of another cluster).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

from isrcheck.conformance.engines.validate.validation import validate_run
from isrcheck.impl.controller import CONTROLLER_ID
from isrcheck.impl.invariants import BROKEN_INVARIANT_EXIT
from isrcheck.impl.real.node import KAFKA_HOST
from isrcheck.impl.real.processes import ProcessCluster
from isrcheck.impl.real.serve import SERVE_DEFAULTS, ServeError, prepare, served_topics, wait_until_serving
from isrcheck.impl.replication import MAX_REPLICAS, VARIANTS, ClusterConfig


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--replicas", type=int, default=3, help=f"brokers, 1..{MAX_REPLICAS} (default 3)")
    parser.add_argument("--protocol", default="kip-320", help=f"one of {', '.join(VARIANTS)} (default kip-320)")
    parser.add_argument(
        "--dir",
        default=None,
        metavar="DIR",
        help="the cluster's data directory; an existing one is recovered (default: a new temporary directory, kept)",
    )
    parser.add_argument(
        "--port",
        type=int,
        default=9092,
        metavar="BASE",
        help="broker b listens for Kafka clients on BASE + b (default 9092)",
    )
    parser.add_argument(
        "--topic",
        action="append",
        default=[],
        metavar="NAME[:PARTITIONS]",
        help="a topic to create at start (repeatable; partitions default to --partitions)",
    )
    parser.add_argument(
        "--partitions",
        type=int,
        default=1,
        help="partitions of a topic created without a count (num.partitions, default 1)",
    )
    parser.add_argument(
        "--no-auto-create-topics",
        action="store_true",
        help="Metadata for an unknown topic answers UNKNOWN_TOPIC_OR_PARTITION (auto.create.topics.enable=false)",
    )
    parser.add_argument(
        "--min-insync-replicas", type=int, default=None, help="min.insync.replicas (default: 2, or 1 with one broker)"
    )
    parser.add_argument("--unclean-leader-election", action="store_true", help="unclean.leader.election.enable=true")
    for name, default in SERVE_DEFAULTS.items():
        parser.add_argument(
            "--" + name.replace("_", "-"),
            type=int,
            default=default,
            metavar="MS",
            help=f"{name.replace('_', '.').removesuffix('.ms')}.ms (default {default})",
        )
    parser.add_argument(
        "--flush-messages",
        type=int,
        default=None,
        help="fsync every N messages (flush.messages; default: never, as Kafka)",
    )
    parser.add_argument(
        "--socket-request-max-bytes",
        type=int,
        default=104_857_600,
        help="the largest request a Kafka connection may send (default 104857600)",
    )
    parser.add_argument(
        "--events",
        default=None,
        metavar="DIR",
        help="write every node's protocol events to DIR, a new or empty directory, for a "
        "new cluster (docs/validate.md)",
    )
    parser.add_argument(
        "--no-validate", action="store_true", help="with --events: keep the event log without validating it at the end"
    )


def run(args: argparse.Namespace) -> int:
    code = _serve(args)
    if args.events is None or args.no_validate or code == 2:  # nothing logged, or nothing ran
        return code
    signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C ends the validation too
    validation = validate_run(args.events, lambda line: print(f"isrcheck serve: {line}", flush=True))
    print(f"isrcheck serve: event log ({args.events}): " + "\n  ".join(validation.lines), flush=True)
    if not validation.explained:
        return 1
    return code


def _serve(args: argparse.Namespace) -> int:
    """The cluster, served until Ctrl-C or SIGTERM: 0 stopped cleanly, 1 not, 2 it cannot start."""
    try:
        config, directory, kafka = prepare(args)
    except ServeError as exc:
        print(f"isrcheck serve: error: {exc}", file=sys.stderr)
        return 2
    cluster = ProcessCluster(config, directory, kafka=kafka, events=args.events)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        cluster.start()
        ports = list(kafka["listeners"].values())
        if not wait_until_serving(ports, served_topics(directory)):
            print(
                "isrcheck serve: warning: not every partition has a leader after 30 s; see the node logs",
                file=sys.stderr,
            )
        _banner(config, directory, kafka, ports, args.events)
        _watch(cluster, directory)
    except RuntimeError as exc:  # a node that did not start: its log says why
        _stop(cluster)
        print(f"isrcheck serve: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the shutdown short
        codes = _stop(cluster)
    unclean = {node: code for node, code in codes.items() if code != 0}
    if unclean:
        print(f"isrcheck serve: stopped; not cleanly: {unclean} (exit codes)", file=sys.stderr)
        return 1
    print(f"isrcheck serve: stopped cleanly; data in {directory}")
    return 0


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt  # SIGTERM stops the cluster as Ctrl-C does


def _banner(config: ClusterConfig, directory: str, kafka: dict, ports: list[int], events: str | None) -> None:
    topics = ", ".join(f"{name} ({n} partition{'s' * (n > 1)})" for name, n in served_topics(directory))
    print(
        f"isrcheck serve: {config.replicas} brokers, {config.protocol}, "
        f"min.insync.replicas={config.min_insync_replicas}, cluster id {kafka['cluster_id']}"
    )
    print(f"  bootstrap servers: {','.join(f'{KAFKA_HOST}:{port}' for port in ports)}")
    print(f"  data directory:    {directory} (serve again with --dir {directory} to recover it)")
    print(f"  node logs:         {os.path.join(directory, '<node>.log')}")
    if events is not None:
        print(f"  event log:         {events} (every node's protocol events)")
    print(
        f"  topics:            {topics or 'none yet'}; unknown ones are "
        f"{'created on first use' if kafka['auto_create_topics'] else 'refused'}"
    )
    print("Stop with Ctrl-C: every broker shuts down cleanly.", flush=True)


def _watch(cluster: ProcessCluster, directory: str) -> None:
    """Until interrupted: say so once when a node exits by itself."""
    reported: set[int] = set()
    while True:
        time.sleep(0.5)
        for node, proc in cluster.processes.items():
            if proc is not None and proc.poll() is not None and node not in reported:
                reported.add(node)
                name = "controller" if node == CONTROLLER_ID else str(node)
                why = " (halted on a broken invariant)" if proc.returncode == BROKEN_INVARIANT_EXIT else ""
                print(
                    f"isrcheck serve: node {name} exited with code {proc.returncode}{why} "
                    f"(see {os.path.join(directory, name + '.log')})",
                    file=sys.stderr,
                    flush=True,
                )


def _stop(cluster: ProcessCluster) -> dict[int, int]:
    """Every node's exit code after a clean shutdown (SIGTERM, waited for)."""
    procs = {node: proc for node, proc in cluster.processes.items() if proc is not None}
    cluster.stop()
    return {node: proc.returncode for node, proc in procs.items()}


__all__ = ["add_arguments", "run"]
