"""A Jepsen-style soak: real Kafka clients against a Kafka cluster under faults, then the checker.

On isrcheck's own cluster (``cluster="isrcheck"``, no ``bootstrap``): the controller and the
brokers as OS processes (``ProcessCluster`` in Kafka mode, each broker's file system journaled so
that power losses can be played), a topic of ``partitions`` replicated on every broker, and the
faults of ``faults``. On Apache Kafka (``cluster="kafka"``): a KRaft cluster of JVMs the soak starts
itself (``engines/apache``), with the lazy file system under the brokers' logs when power or I/O
errors are played and a network namespace per node when partitions are, every fault played on
its processes (``engines/apache/faults``). On any other Kafka-compatible cluster (``bootstrap``):
the same workload, the faults through the user's hooks file (none without one). The run, in order: the workload
(``workload``) and the seeded fault
plan (``faults``) for ``duration_s``; every fault ended; the workload stopped; the final read;
the history checked (``checker``) and its anomalies judged by the fault budget (``budget``); on
isrcheck's own cluster, its processes' event log
(``events/``) validated against the model (``validate``; docs/validate.md), unless ``validate`` is
off; ``history.jsonl`` and ``results.json`` written to the run folder (the command adds the page,
``index.html``). Another cluster logs no events: there is nothing to validate.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import shutil
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from isrcheck.conformance.engines.apache.admin import cluster_view, create_topics, topic_configs
from isrcheck.conformance.engines.apache.cluster import KafkaCluster, KafkaSettings, free_port_base
from isrcheck.conformance.engines.apache.distribution import distribution
from isrcheck.conformance.engines.apache.faults import ApacheKafkaFaults
from isrcheck.conformance.engines.soak.budget import budgets, judge
from isrcheck.conformance.engines.soak.checker import INFORMATIONAL, CheckResult, check
from isrcheck.conformance.engines.soak.faults import FaultPlan, HooksExecutor, ProcessClusterFaults, io_error
from isrcheck.conformance.engines.soak.history_index import HistoryIndex
from isrcheck.conformance.engines.soak.workload import History, Workload
from isrcheck.conformance.vocabulary import UsageError
from isrcheck.impl.real.processes import ProcessCluster, free_ports
from isrcheck.impl.real.serve import SERVE_DEFAULTS, wait_until_serving
from isrcheck.impl.replication import ClusterConfig

if TYPE_CHECKING:
    from isrcheck.conformance.engines.validate.validation import LogValidation

TOPIC = "soak"


@dataclass
class SoakOptions:
    protocol: str = "kip-320"
    duration_s: float = 60.0
    faults: tuple[str, ...] = ()
    seed: int = 0
    replicas: int = 3
    min_insync_replicas: int = 2
    unclean_election: bool = False
    partitions: int = 3
    producers: int = 4
    consumers: int = 2
    idempotence: bool = True
    max_down: int = 1
    bootstrap: str | None = None  # another cluster; None: isrcheck's own
    hooks: str | None = None  # the hooks file for another cluster's faults
    topic: str = TOPIC
    directory: str = "soak"
    command: str = ""
    script: tuple = ()  # faults.Fault: a scenario played instead of a drawn plan
    validate: bool = True  # isrcheck's own cluster: log its events, validate them at the end
    cluster: str = "isrcheck"  # or "kafka": an Apache Kafka cluster the soak starts
    kafka_version: str | None = None
    kafka_home: str | None = None
    kafka: dict = field(default_factory=dict)  # further KafkaSettings of an Apache Kafka cluster
    kafka_events: bool = False  # Apache Kafka: its replication events recorded into events/ (a Java agent)


@dataclass
class SoakResult:
    """A soak run's values, typed (JSON only in ``to_json``, for ``results.json`` and ``--json``)."""

    options: SoakOptions
    seconds: float = 0.0
    faults: list = field(default_factory=list)  # the fault plan's records
    final_read: bool = False  # it reached the highest offset anyone saw
    final_read_note: str = ""  # how far it read, or why it stopped short
    client_errors: list = field(default_factory=list)
    check: CheckResult | None = None  # the checker's result (None: not checked yet)
    index: HistoryIndex | None = field(default=None, repr=False)  # the history's index: counts, the page
    validation: LogValidation | None = None  # the event log's verdict (None: not validated)
    budget: dict = field(default_factory=dict)  # anomaly name -> why the run was outside its budget
    kafka: dict | None = None  # Apache Kafka's version and ELR, on such a cluster

    @property
    def counts(self) -> dict:
        """Completions per operation and outcome (``{"send": {"ok": n, ...}, ...}``)."""
        return self.index.by_function() if self.index is not None else {}

    @property
    def anomaly_counts(self) -> dict[str, int]:
        """The checker's instances per anomaly."""
        return self.check.counts if self.check is not None else {}

    @property
    def anomalies(self) -> list[str]:
        """What fails the run: the checker's anomalies within their fault budget, duplicates
        excepted without idempotence (a producer that retries without it may write twice: Kafka's
        documented behaviour), a final read that did not finish, a client that failed."""
        return judge(self._found(), self.budget)[0]

    @property
    def beyond_budget(self) -> list[str]:
        """The anomalies of a run outside their budget: Kafka's (or its client's) own documented
        behaviour (``budget`` says why)."""
        return judge(self._found(), self.budget)[1]

    def _found(self) -> list[str]:
        found = [
            name
            for name, instances in (self.check.anomalies if self.check is not None else {}).items()
            if instances and name not in INFORMATIONAL and not (name == "duplicate" and not self.options.idempotence)
        ]
        if not self.final_read:
            found.append("incomplete-final-read")
        if self.client_errors:
            found.append("client-error")
        if self.validation is not None and not self.validation.explained:
            found.append("event-log-not-explained")
        elif self.validation is not None and self.validation.late:
            found.append("event-log-late")
        return found

    @property
    def exit_code(self) -> int:
        """1 if something fails the run (``anomalies``), else 0."""
        return 1 if self.anomalies else 0

    def exit_reason(self) -> str:
        """Why the run exits as it does, in one line: each anomaly that fails it, with its count or
        what it was; else what it passed."""
        counts = self.anomaly_counts
        why = {
            "incomplete-final-read": f"the final read did not finish ({self.final_read_note})",
            "client-error": "a client failed: " + "; ".join(self.client_errors),
            "event-log-not-explained": "the event log is not explained: "
            + (self.validation.lines[0] if self.validation else ""),
            "event-log-late": "a deadline missed: "
            + next(
                (
                    f"{x.property} at {x.event.where}: {x.why}"
                    for x in (self.validation.late if self.validation else ())
                ),
                "",
            ),
        }
        found = self.anomalies
        if found:
            return "anomalies within their budget: " + "; ".join(why.get(a, f"{a} ({counts.get(a, 1)})") for a in found)
        passed = ["no anomaly within its budget", "the final read complete"]
        if self.beyond_budget:
            passed[0] += f" ({', '.join(self.beyond_budget)} broken outside it: not a finding)"
        if self.validation is not None:
            passed.append("the event log explained")
        return ", ".join(passed)

    def throughput(self) -> dict:
        ok_sends = self.counts.get("send", {}).get("ok", 0)
        return {
            "sends_ok_per_s": round(ok_sends / self.seconds, 1) if self.seconds else 0.0,
            "polls_per_s": round(sum(self.counts.get("poll", {}).values()) / self.seconds, 1) if self.seconds else 0.0,
        }

    def to_json(self) -> dict:
        o = self.options
        return {
            "protocol": o.protocol,
            "cluster": o.cluster,
            "kafka": self.kafka,
            "bootstrap": o.bootstrap,
            "seconds": round(self.seconds, 3),
            "seed": o.seed,
            "fault_kinds": list(o.faults),
            "idempotence": o.idempotence,
            "min_insync_replicas": o.min_insync_replicas,
            "unclean_election": o.unclean_election,
            "counts": self.counts,
            "throughput": self.throughput(),
            "faults": self.faults,
            "final_read": self.final_read,
            "final_read_note": self.final_read_note,
            "client_errors": self.client_errors,
            "anomalies": self.anomalies,
            "beyond_budget": self.beyond_budget,
            "budget": self.budget,
            "check": self.check.to_json() if self.check is not None else {},
            "validation": self.validation.to_json() if self.validation is not None else None,
            "command": o.command,
            "dir": o.directory,
            "exit": {"code": self.exit_code, "reason": self.exit_reason()},
        }


# the soak's consumers name a group only to read: one partition of __consumer_offsets, not Kafka's 50,
# each replicated (and, with --events, recorded and validated) for nothing
OFFSETS_TOPIC = {"offsets.topic.num.partitions": 1}

_ADDRESS = re.compile(r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[^\s:\[\],]+)):(?P<port>[0-9]{1,10})")


def bootstrap_addresses(text: str) -> list[tuple[str, int]]:
    """``HOST:PORT[,HOST:PORT...]`` (an IPv6 host in brackets) as (host, port) pairs; UsageError
    naming the first that is not one."""
    out = []
    for item in text.split(","):
        item = item.strip()
        m = _ADDRESS.fullmatch(item)
        if m is None:
            raise UsageError(f"--bootstrap: {item!r} is not HOST:PORT (a list is comma-separated)")
        port = int(m["port"])
        if not 1 <= port <= 65535:
            raise UsageError(f"--bootstrap: {item}: port {port} is not in 1..65535")
        out.append((m["v6"] or m["host"], port))
    return out


def check_reachable(addresses: list[tuple[str, int]], timeout_s: float = 5.0) -> None:
    """Return once one of ``addresses`` accepts a TCP connection; UsageError naming each address
    and its connection error if none does (a run that could not connect is no history to check)."""
    errors = []
    for host, port in addresses:
        try:
            socket.create_connection((host, port), timeout=timeout_s).close()
            return
        except OSError as exc:
            shown = f"[{host}]" if ":" in host else host
            errors.append(f"{shown}:{port} ({exc.strerror or exc or type(exc).__name__})")
    raise UsageError(f"--bootstrap: cannot connect to {', '.join(errors)}; nothing ran")


def prepare_topic(
    bootstrap: str,
    addresses: list[tuple[str, int]],
    topic: str,
    partitions: int,
    replicas: int,
    min_insync_replicas: int,
    say=lambda line: None,
    timeout_s: float = 15.0,
) -> None:
    """Another cluster's topic as the soak needs it (``partitions`` partitions of ``replicas``
    replicas, ``min.insync.replicas``, what the fault budgets are judged by): made with CreateTopics
    if it does not exist; UsageError before any work if it exists with other settings, if the
    cluster has fewer brokers than ``replicas`` or makes none (a setup problem is never an anomaly of
    the cluster)."""
    hosts = [f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in addresses]
    view = cluster_view(hosts, [topic])
    if view is None:
        raise UsageError(f"--bootstrap {bootstrap}: no broker answered Metadata; nothing ran")
    have = view.topic(topic)
    wanted = f"--partitions {partitions} --replicas {replicas} --min-insync-replicas {min_insync_replicas}"
    if have and all(p.error_code == 0 for p in have.values()):
        factors = sorted({len(p.replicas) for p in have.values()})
        min_isr = topic_configs(bootstrap, topic).get("min.insync.replicas")
        differ = [
            f"{what} {got}, the soak needs {need}"
            for what, got, need in (
                ("partitions", len(have), partitions),
                ("replication factor", "/".join(map(str, factors)), replicas),
                ("min.insync.replicas", min_isr, min_insync_replicas),
            )
            if str(got) != str(need)
        ]
        if differ:
            raise UsageError(
                f"--topic {topic}: the cluster's topic has {'; '.join(differ)} (the soak's "
                f"{wanted}; give the topic's, or another --topic); nothing ran"
            )
        return
    if len(view.brokers) < replicas:
        raise UsageError(
            f"--replicas {replicas}: the cluster at {bootstrap} lists {len(view.brokers)} broker(s), "
            f"too few for topic {topic} (give --replicas and --min-insync-replicas at most that); "
            f"nothing ran"
        )
    say(
        f"creating topic {topic} on {bootstrap}: {partitions} partitions, {replicas} replicas, "
        f"min.insync.replicas {min_insync_replicas}"
    )
    try:
        create_topics(
            bootstrap,
            [(topic, partitions)],
            replicas,
            {"min.insync.replicas": str(min_insync_replicas)},
            timeout_s=timeout_s,
        )
    except UsageError as exc:
        raise UsageError(
            f"--topic {topic}: the cluster has no such topic and did not create it ({exc}); create "
            f"it first ({wanted}); nothing ran"
        ) from None


def run_soak(options: SoakOptions, progress=None) -> SoakResult:
    """The whole run (see the module docstring); ``progress(line)`` hears how it goes."""
    say = progress or (lambda line: None)
    folder = Path(options.directory)
    folder.mkdir(parents=True, exist_ok=True)
    previous = folder / "cluster"
    # isrcheck's own cluster (Apache Kafka's clears a killed run's mounts and JVMs when it starts): its
    # logs would hold records no history of this run has
    if options.cluster != "kafka" and options.bootstrap is None and previous.exists():
        say(f"removing the previous run's cluster {previous}: a soak's brokers start empty")
        shutil.rmtree(previous)
    cluster = None
    if options.cluster == "kafka":
        cluster = _apache_cluster(options, folder, say)
        bootstrap, executor = cluster.bootstrap, ApacheKafkaFaults(cluster, say)
    elif options.bootstrap is None:
        cluster, bootstrap = _own_cluster(options, folder, say)
        executor = ProcessClusterFaults(cluster)
    else:
        bootstrap = options.bootstrap
        executor = HooksExecutor.load(options.hooks) if options.hooks else None
    try:
        if executor is not None and options.script:
            plan = FaultPlan.scripted(executor, options.script, options.duration_s)
        elif executor is not None and options.faults:
            plan = FaultPlan.for_executor(
                executor, options.faults, options.duration_s, options.seed, max_down=options.max_down
            )
        else:
            plan = None
        with open(folder / "history.jsonl", "w", encoding="utf-8") as out:
            history = History(out)
            workload = Workload(
                bootstrap,
                options.topic,
                options.partitions,
                history,
                options.seed,
                options.producers,
                options.consumers,
                options.idempotence,
                client_log=client_log(folder),
            )
            result = SoakResult(options)
            workload.start()
            ticker = _Ticker(history, plan, options.duration_s, say)
            try:
                asyncio.run(_play(plan, executor, history, options.duration_s))
            finally:
                ticker.stop()
                result.seconds = history.now() / 1e9
                result.faults = plan.records if plan is not None else []
                workload.join()
            say("faults over; every node back; the final read")
            result.final_read, result.final_read_note = workload.final_read()
            result.client_errors = workload.errors
        say(f"checking {len(history.events)} events")
        journaled = options.cluster == "kafka" or getattr(cluster, "journaled", False)
        for fault, record in zip(plan.faults if plan else (), result.faults):  # records are in start order
            if fault.kind == "ioerror":
                record["io"] = io_error(fault, journaled)
        result.kafka = {"version": cluster.dist.version, "elr": cluster.elr} if options.cluster == "kafka" else None
        kip966 = cluster.elr if options.cluster == "kafka" else options.protocol == "kip-966"
        result.check = check(history.events)
        result.index = HistoryIndex.of(history.events, result.check)  # one more pass, shared by counts and page
        result.budget = budgets(
            result.faults,
            options.min_insync_replicas,
            options.unclean_election,
            kip966,
            history.now(),
            result.check.anomalies,
            history.events,
            result.client_errors,
        )
        if cluster is not None and (options.kafka_events if options.cluster == "kafka" else options.validate):
            cluster.stop()  # every node's log complete before it is read
            from isrcheck.conformance.engines.validate.validation import validate_run  # loads the model: only then

            try:
                result.validation = validate_run(
                    folder / "events",
                    say,  # Kafka's recording: translated first
                    timely=options.cluster != "kafka",
                )
            except BaseException:  # a log it cannot read, or any failure: the run's results are kept first
                _write(folder, result)
                raise
        _write(folder, result)
        return result
    finally:
        if cluster is not None:
            cluster.stop()


async def _play(plan: FaultPlan | None, executor, history: History, duration_s: float) -> None:
    """The plan from the history's start; the run lasts ``duration_s`` whatever it holds."""
    started_ns = time.monotonic_ns() - history.now()
    sleep = asyncio.sleep(max(0.0, duration_s - history.now() / 1e9))
    if plan is None:
        await sleep
    else:
        await asyncio.gather(plan.run(executor, started_ns), sleep)


def _apache_cluster(options: SoakOptions, folder: Path, say):
    """Apache Kafka with the soak's topic, serving: the lazy file system under the brokers' logs if
    power losses or I/O errors are played, a network namespace per node if partitions are."""
    dist = distribution(options.kafka_version, options.kafka_home, say=say)
    kinds = set(options.faults) | {f.kind for f in options.script}
    settings = KafkaSettings(
        brokers=options.replicas,
        port=free_port_base(options.replicas + 1),
        min_insync_replicas=options.min_insync_replicas,
        unclean_election=options.unclean_election,
        topics=[(options.topic, options.partitions)],
        network="netns" if "partition" in kinds else "loopback",
        lazyfs=bool({"power", "ioerror"} & kinds),
        **{**options.kafka, "extra": {**OFFSETS_TOPIC, **options.kafka.get("extra", {})}},
    )
    events = folder / "events" if options.kafka_events else None
    if events is not None:
        shutil.rmtree(events, ignore_errors=True)  # a run's recording starts anew
    cluster = KafkaCluster(settings, folder / "cluster", dist, say=say, events=events)
    say(f"starting Apache Kafka {dist.version}: {options.replicas} brokers and a controller in {folder / 'cluster'}")
    cluster.start()
    return cluster


def _own_cluster(options: SoakOptions, folder: Path, say):
    """isrcheck's cluster in Kafka mode with the soak's topic, serving."""
    events = str(folder / "events") if options.validate else None
    if events is not None:
        shutil.rmtree(events, ignore_errors=True)  # a run's log starts anew
    return own_cluster(
        options.protocol,
        options.replicas,
        options.min_insync_replicas,
        options.unclean_election,
        [(options.topic, options.partitions)],
        folder / "cluster",
        events,
        say,
    )


def own_cluster(
    protocol: str,
    replicas: int,
    min_isr: int,
    unclean: bool,
    topics: list,
    directory: Path,
    events: str | None = None,
    say=lambda line: None,
    **config,
):
    """isrcheck's cluster in Kafka mode (journaled brokers: power losses can be played) with
    ``topics`` ([(name, partitions)]), fast timings (a broker down is fenced in about 1.5 s), serving:
    (``ProcessCluster``, bootstrap). ``config``: further ``ClusterConfig`` fields (``flush_messages``)."""
    timings = {
        **SERVE_DEFAULTS,
        "broker_session_timeout_ms": 1500,
        "broker_heartbeat_interval_ms": 250,
        "replica_lag_time_max_ms": 3000,
        "replica_fetch_wait_max_ms": 200,
        "request_timeout_ms": 5000,
    }
    cluster_config = ClusterConfig(
        protocol=protocol,
        replicas=replicas,
        min_insync_replicas=min_isr,
        unclean_leader_election_enable=unclean,
        **{**timings, **config},
    )
    ports = free_ports(replicas)
    partitions = max((n for _, n in topics), default=1)
    kafka = dict(
        listeners={str(b): p for b, p in enumerate(ports)},
        topics=[[t, n] for t, n in topics],
        cluster_id="isrcheck-soak",
        auto_create_topics=False,
        num_partitions=partitions,
        journal=True,
    )
    cluster = ProcessCluster(cluster_config, str(directory), kafka=kafka, events=events)
    say(f"starting {replicas} brokers ({protocol}) in {directory}")
    cluster.start()
    if not wait_until_serving(ports, topics):
        cluster.stop()
        raise RuntimeError(f"the cluster did not serve {topics} within 30 s (see {directory})")
    return cluster, ",".join(f"127.0.0.1:{p}" for p in ports)


class _Ticker:
    """A progress line every few seconds: time, operations by outcome, the faults under way."""

    def __init__(self, history: History, plan: FaultPlan | None, duration_s: float, say, every_s: float = 5.0):
        self.history, self.plan, self.duration_s, self.say = history, plan, duration_s, say
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(every_s,), daemon=True)
        self._thread.start()

    def _run(self, every_s: float) -> None:
        while not self._stop.wait(every_s):
            counts = _counts(self.history.events)
            sends = counts.get("send", {})
            active = [f"{r['kind']} {r['nodes']}" for r in (self.plan.records if self.plan else ()) if r["end"] is None]
            self.say(
                f"{self.history.now() / 1e9:6.1f}/{self.duration_s:.0f} s  sends ok {sends.get('ok', 0)} "
                f"fail {sends.get('fail', 0)} info {sends.get('info', 0)}  polls "
                f"{sum(counts.get('poll', {}).values())}  faults: {', '.join(active) or 'none'}"
            )

    def stop(self) -> None:
        self._stop.set()


def client_log(folder: Path) -> logging.Logger:
    """The clients' own log lines go to ``clients.log`` in the run folder, not the terminal."""
    log = logging.getLogger(f"isrcheck.soak.clients.{folder.resolve()}")
    log.propagate = False
    if not log.handlers:
        handler = logging.FileHandler(folder / "clients.log", encoding="utf-8")
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        log.addHandler(handler)
    log.setLevel(logging.INFO)
    return log


def _counts(events: list[dict]) -> dict:
    counts: dict = {}
    for e in list(events):
        if e["type"] != "invoke":
            by_f = counts.setdefault(e["f"], {})
            by_f[e["type"]] = by_f.get(e["type"], 0) + 1
    return counts


def _write(folder: Path, result: SoakResult) -> None:
    (folder / "results.json").write_text(json.dumps(result.to_json(), indent=2, default=str) + "\n")
