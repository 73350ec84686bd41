"""``isrcheck soak``: real Kafka clients against a Kafka cluster under faults, checked as Jepsen does.

    isrcheck soak --protocol kip-966 --duration 600 --faults all --dir runs/kip-966
    isrcheck soak --cluster kafka:4.4.0 --faults all --duration 600 --dir runs/kafka
    isrcheck soak --bootstrap kafka1:9092,kafka2:9092 --hooks hooks.json --faults kill,partition --duration 300

Without ``--bootstrap`` the cluster is isrcheck's own (``isrcheck serve``'s brokers, as processes on
this machine), or with ``--cluster kafka[:VERSION]`` Apache Kafka started on this machine, every
fault played on its JVM processes; with ``--bootstrap``, any Kafka-compatible cluster, its faults
played through ``--hooks``. The run
folder gets ``history.jsonl``, ``results.json`` and ``index.html`` (the plots); on isrcheck's own
cluster also ``events/``, its processes' event log, validated against the model at the end
(``--no-validate``: neither). Exit 0 no anomaly and the log explained, 1 an anomaly (or a final
read that did not finish, or an event log the model does not explain), 2 bad input (arguments, a hooks file or a hook
that fails, a cluster that does not start).
"""

from __future__ import annotations

import json
import os
import shlex
import sys

from isrcheck.conformance.cli.kafka import add_kafka_arguments, kafka_options
from isrcheck.conformance.core.schedule import PROTOCOLS
from isrcheck.conformance.engines.soak.faults import EXTRA_KINDS, FAULT_KINDS, HooksExecutor, parse_fault_kinds
from isrcheck.conformance.vocabulary import SECONDS, SEED, Number, UsageError, output_path

CLIENTS = Number(int, 1, 64)
REPLICAS = Number(int, 1, 5)
PARTITIONS = Number(int, 1, 64)


def add_arguments(parser) -> None:
    parser.add_argument(
        "--cluster",
        default="isrcheck",
        metavar="isrcheck|kafka[:VERSION]",
        help="the cluster the soak starts: isrcheck's own (default) or Apache Kafka, of the "
        "release VERSION (default: isrcheck kafka's); its options below",
    )
    parser.add_argument(
        "--protocol",
        default="kip-320",
        choices=PROTOCOLS,
        help="the replication protocol of isrcheck's own cluster (default kip-320)",
    )
    parser.add_argument(
        "--duration",
        type=SECONDS,
        required=True,
        metavar="SECONDS",
        help=f"how long the workload and the faults run ({SECONDS.describe()})",
    )
    parser.add_argument(
        "--faults",
        default="none",
        metavar="KIND[,KIND...]",
        help=f"fault kinds to rotate: {', '.join(FAULT_KINDS)}; all (those); "
        f"{', '.join(EXTRA_KINDS)} (by name only); none (default)",
    )
    parser.add_argument("--seed", type=SEED, default=0, help="seed of the fault plan and the workload")
    parser.add_argument("--dir", default="soak", metavar="DIR", help="the run folder (default ./soak)")
    parser.add_argument(
        "--bootstrap",
        default=None,
        metavar="HOST:PORT[,...]",
        help="check this Kafka-compatible cluster instead of starting isrcheck's own",
    )
    parser.add_argument(
        "--hooks",
        default=None,
        metavar="FILE",
        help="with --bootstrap: a JSON file mapping fault actions to shell commands "
        "(docs/processes.md); without it only the workload runs",
    )
    parser.add_argument(
        "--topic",
        default="soak",
        help="the topic (created by isrcheck's own cluster; "
        "with --bootstrap made with CreateTopics, or an existing "
        "one of --partitions, --replicas and --min-insync-replicas)",
    )
    parser.add_argument("--partitions", type=PARTITIONS, default=3)
    parser.add_argument("--replicas", type=REPLICAS, default=3)
    parser.add_argument("--min-insync-replicas", type=REPLICAS, default=2)
    parser.add_argument("--unclean-election", action="store_true", help="unclean.leader.election.enable=true")
    parser.add_argument("--producers", type=CLIENTS, default=4, help="acks=all producers, one send at a time each")
    parser.add_argument("--consumers", type=CLIENTS, default=2, help="consumers assigned every partition")
    parser.add_argument(
        "--no-idempotence",
        action="store_true",
        help="producers without idempotence (a duplicate is then reported, not an anomaly)",
    )
    parser.add_argument("--max-down", type=REPLICAS, default=1, help="brokers down at once at most (default 1)")
    parser.add_argument(
        "--no-validate",
        action="store_true",
        help="isrcheck's own cluster: do not log its protocol events nor validate them "
        "against the model at the end (docs/validate.md)",
    )
    parser.add_argument("--json", action="store_true", help="print results.json instead of text")
    group = parser.add_argument_group("with --cluster kafka")
    group.add_argument(
        "--events",
        action="store_true",
        help="record Apache Kafka's replication events into DIR/events with isrcheck's Java agent "
        "(docs/validate.md); checked well-formed at the end",
    )
    add_kafka_arguments(group)


def run(args) -> int:
    # kafka-python: loaded only when a soak runs, not for --help
    from isrcheck.conformance.engines.soak.driver import (
        SoakOptions,
        bootstrap_addresses,
        check_reachable,
        prepare_topic,
        run_soak,
    )

    if args.min_insync_replicas > args.replicas:
        raise UsageError(f"--min-insync-replicas {args.min_insync_replicas} > --replicas {args.replicas}")
    if args.bootstrap is None and args.max_down > args.replicas:
        raise UsageError(f"--max-down {args.max_down}: more brokers than the cluster's {args.replicas} (--replicas)")
    if args.hooks and not args.bootstrap:
        raise UsageError("--hooks plays faults on another cluster: give its --bootstrap too")
    try:
        kinds = parse_fault_kinds(args.faults)
    except ValueError as exc:
        raise UsageError(f"--faults: {exc}") from None
    addresses = bootstrap_addresses(args.bootstrap) if args.bootstrap is not None else None
    if args.hooks:
        hooks = HooksExecutor.load(args.hooks)
        if args.max_down > len(hooks.brokers):
            raise UsageError(
                f"--max-down {args.max_down}: more brokers than the {len(hooks.brokers)} nodes of {args.hooks}"
            )
    output_path(args.dir, "--dir", directory=True)
    cluster, version, kafka = _cluster(args)
    if args.events and cluster != "kafka":
        raise UsageError(
            "--events records Apache Kafka's own events: give --cluster kafka (isrcheck's own cluster "
            "logs its events unless --no-validate)"
        )
    if addresses is not None:
        check_reachable(addresses)
        prepare_topic(
            args.bootstrap,
            addresses,
            args.topic,
            args.partitions,
            args.replicas,
            args.min_insync_replicas,
            lambda line: print(f"isrcheck soak: {line}", file=sys.stderr),
        )
    options = SoakOptions(
        protocol=args.protocol,
        duration_s=args.duration,
        faults=kinds,
        seed=args.seed,
        replicas=args.replicas,
        min_insync_replicas=args.min_insync_replicas,
        unclean_election=args.unclean_election,
        partitions=args.partitions,
        producers=args.producers,
        consumers=args.consumers,
        idempotence=not args.no_idempotence,
        max_down=args.max_down,
        bootstrap=args.bootstrap,
        hooks=args.hooks,
        topic=args.topic,
        directory=args.dir,
        validate=not args.no_validate,
        cluster=cluster,
        kafka_version=version,
        kafka_home=args.kafka_home,
        kafka=kafka,
        kafka_events=args.events,
        command=shlex.join(["isrcheck", "soak", *sys.argv[2:]]),
    )
    try:
        print(f"isrcheck soak: run folder {args.dir}", file=sys.stderr, flush=True)
        result = run_soak(options, progress=lambda line: print(line, file=sys.stderr, flush=True))
    except RuntimeError as exc:  # a cluster that does not start
        raise UsageError(f"{exc} (run folder {args.dir})") from None
    write_page(result, args.dir)
    if args.json:  # the JSON has the folder and the exit's reason; so has the terminal
        print(json.dumps(result.to_json(), indent=2, default=str))
        print(
            f"isrcheck soak: {args.dir}: exit {result.exit_code}: {result.exit_reason()}", file=sys.stderr, flush=True
        )
    else:
        _summary(result, args.dir)
    return result.exit_code


def _cluster(args) -> tuple[str, str | None, dict]:
    """``--cluster``: (isrcheck or kafka, the Kafka release or None, the Kafka settings)."""
    # loaded when the command runs, not for --help
    from isrcheck.conformance.engines.apache.distribution import check_version

    name, _, version = args.cluster.partition(":")
    if name not in ("isrcheck", "kafka") or (name == "isrcheck" and version):
        raise UsageError(f"--cluster {args.cluster!r}: expected isrcheck, kafka or kafka:VERSION (e.g. kafka:4.0.2)")
    if name == "isrcheck":
        return name, None, {}
    if args.bootstrap or args.hooks:
        raise UsageError(
            "--cluster kafka starts Apache Kafka itself: --bootstrap and --hooks are for a cluster already running"
        )
    if args.max_down > args.replicas:
        raise UsageError(f"--max-down {args.max_down} > the {args.replicas} brokers")
    return name, check_version(version) if version else None, kafka_options(args)


def write_page(result, folder: str) -> None:
    """The run's page, ``index.html``: Jepsen's plots and the anomalies with their operations."""
    from isrcheck.conformance.reports.soak_page import render_soak_page  # only once a run is done

    o = result.options
    cluster = f"Apache Kafka {result.kafka['version']}" if result.kafka else o.bootstrap or "isrcheck's cluster"
    meta = {
        "protocol": o.protocol,
        "seconds": result.seconds,
        "bootstrap": cluster,
        "seed": o.seed,
        "fault_kinds": list(o.faults),
        "command": o.command,
    }
    page = render_soak_page(
        result.index, result.check, result.faults, meta, figures=result.to_json(), budget=result.budget
    )
    with open(os.path.join(folder, "index.html"), "w", encoding="utf-8") as f:
        f.write(page)


def _summary(result, folder: str) -> None:
    o, t = result.options, result.throughput()
    sends = result.counts.get("send", {})
    target = o.bootstrap or (
        f"Apache Kafka {result.kafka['version']} (ELR {'on' if result.kafka['elr'] else 'off'}, {o.replicas} brokers)"
        if result.kafka
        else f"isrcheck's cluster ({o.protocol}, {o.replicas} brokers)"
    )
    print(
        f"soak of {target}: {result.seconds:.1f} s, faults {', '.join(o.faults) or 'none'} "
        f"({len(result.faults)} played)"
    )
    print(
        f"  sends ok {sends.get('ok', 0)} ({t['sends_ok_per_s']}/s), fail {sends.get('fail', 0)}, "
        f"info {sends.get('info', 0)}; polls {t['polls_per_s']}/s; final read "
        f"{'complete' if result.final_read else 'INCOMPLETE'} ({result.final_read_note})"
    )
    counts = result.anomaly_counts
    print("  anomalies: " + (", ".join(f"{a} ({counts.get(a, 1)})" for a in result.anomalies) or "none"))
    if result.beyond_budget:
        print(
            "  broken outside their budget (Kafka's or its client's documented behaviour, not a finding): "
            + ", ".join(f"{a} ({counts.get(a, 1)})" for a in result.beyond_budget)
        )
        for reason in dict.fromkeys(result.budget[a] for a in result.beyond_budget):
            print(f"    why outside: {reason}")
    elif result.budget:
        print(f"  outside the durability budget, nothing broken: {next(iter(result.budget.values()))}")
    if o.cluster == "kafka" and result.validation is None:
        print("  event log: none (Apache Kafka's replication events are not recorded by this run: --events)")
    elif o.bootstrap is not None:
        print("  event log: none (another cluster logs no protocol events: nothing to validate)")
    elif result.validation is None:
        print("  event log: not validated (--no-validate)")
    else:
        first, *rest = result.validation.lines
        print(f"  event log ({folder}/events): " + first)
        for line in rest:
            print("  " + line)
    for error in result.client_errors:
        print(f"  {error}")
    print(f"  results: {folder}/results.json, {folder}/index.html, {folder}/history.jsonl")
    print(f"  exit {result.exit_code}: {result.exit_reason()}")
