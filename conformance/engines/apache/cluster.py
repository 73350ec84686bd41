"""A KRaft cluster of Apache Kafka on this machine: one controller and N brokers, each a JVM process.

Why a separate controller, not combined broker+controller nodes: isrcheck's model has one
controller that outlives every broker, and the faults that matter most (a Last Replica Standing,
every broker losing power at once) take down brokers while the controller keeps deciding. With
combined nodes, two of three nodes down is a lost quorum and no election happens at all; and a
partition could not cut a broker from the controller without cutting it from the other brokers.
One controller is also one JVM less than a three-voter quorum (docs/apache-kafka.md has the
measured memory and start times).

Layout of ``DIR`` (``KafkaCluster(settings, DIR)``)::

    cluster.json          what makes it this cluster: id, version, brokers, ELR, options; written at
                          the first start, checked at every later one (another cluster's DIR is refused)
    pids.json             the JVMs of the run under way, so the next run can stop what a killed run
                          left behind
    controller/           server.properties, data/ (the metadata log), logs/ (server.log,
                          controller.log, state-change.log), stdout.log (the JVM's own output)
    broker-B/             the same for broker B; with the lazy file system data/ is its mount and
                          backing/ what the disk holds

Node ids: brokers 0..N-1 (as isrcheck's own brokers and the model), the controller ``CONTROLLER_ID``.
Broker B listens for clients on ``port + B``, the controller on ``port + N``; on loopback every
node binds 127.0.0.1, in network namespaces each node binds its own address (``netns``).

Faults (what the soak's executor calls): ``kill(b)`` SIGKILL; ``terminate(b)`` SIGTERM and the wait
for Kafka's controlled shutdown; ``pause(b)`` / ``resume(b)`` SIGSTOP / SIGCONT; ``restart(b)``;
``power_loss(b)`` SIGKILL and the unsynced writes of its file system dropped (lazyfs), then
``restart``; ``lose_disk(b)`` SIGKILL and the data directory emptied and formatted again as Kafka's
operations docs tell an operator replacing a disk (``kafka-storage format`` with the cluster's id:
a broker refuses a log directory without ``meta.properties``); ``fail_io(b, op)`` the broker's next
``write``/``fsync``/``read`` fails with EIO (lazyfs), which takes Kafka's only log directory
offline: the broker halts; ``partition(groups)`` / ``heal()`` cut and restore links (netns);
``hold(b, api_key)`` keeps broker b's requests of one API key from reaching the controller while
everything else flows, ``release`` lets those held pass, ``rearm`` holds later ones (netns);
``delay(a, b, ms)`` gives a link latency, ``undelay`` ends it (netns); ``heal()`` ends all of them.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path

from isrcheck.conformance.engines.apache.distribution import Distribution
from isrcheck.conformance.engines.apache.lazyfs import LazyFS, unmount_stale
from isrcheck.conformance.engines.apache.netns import NodeNetwork, cleanup_stale
from isrcheck.conformance.engines.apache.recording import Recording
from isrcheck.conformance.vocabulary import UsageError
from isrcheck.model.alphabet import CRASH, LOSE_DISK

CONTROLLER_ID = 100
HOST = "127.0.0.1"
STOP_TIMEOUT_S = 60.0  # a clean shutdown moves leadership away first: give it time
START_TIMEOUT_S = 90.0
# Kafka's own JVM options (kafka-run-class.sh's KAFKA_JVM_PERFORMANCE_OPTS), a smaller heap
JVM_OPTIONS = (
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
)
LOG_TAIL_LINES = 15


class KafkaClusterError(UsageError):
    """The cluster cannot be started or used as asked: the message says why and what to do (exit 2)."""


@dataclass
class KafkaSettings:
    """A cluster's settings, isrcheck's names; each becomes the Kafka setting named beside it."""

    brokers: int = 3
    port: int = 9092
    elr: bool | None = None  # eligible.leader.replicas.version=1/0 (None: the version's default)
    min_insync_replicas: int | None = None  # min.insync.replicas (None: 2, or 1 with one broker)
    unclean_election: bool = False  # unclean.leader.election.enable
    replica_lag_time_max_ms: int = 30_000  # replica.lag.time.max.ms (Kafka's default)
    flush_messages: int | None = None  # log.flush.interval.messages (None: Kafka's, never)
    broker_session_timeout_ms: int = 9_000  # broker.session.timeout.ms (Kafka's default)
    broker_heartbeat_interval_ms: int = 2_000  # broker.heartbeat.interval.ms (Kafka's default)
    topics: list = field(default_factory=list)  # [(name, partitions)] created at start, replicated on every broker
    debug_replication: bool = False  # DEBUG for kafka.cluster.Partition, ReplicationControlManager, ...
    network: str = "loopback"  # or "netns": a network namespace per node (partitions)
    lazyfs: bool = False  # each broker's log directory on the lazy file system (power loss)
    heap: str = "768m"  # -Xmx of each JVM
    extra: dict = field(default_factory=dict)  # further Kafka settings, for every node

    def min_isr(self) -> int:
        return self.min_insync_replicas if self.min_insync_replicas is not None else min(2, self.brokers)

    # what identifies the cluster in DIR: another value is another cluster
    IDENTITY = ("brokers", "network", "lazyfs")


class Node:
    """One Kafka process: its id, role, folder, address and the JVM while it runs."""

    def __init__(self, node_id: int, role: str, folder: Path, port: int) -> None:
        self.id, self.role, self.folder, self.port = node_id, role, folder, port
        self.host = HOST
        self.process: subprocess.Popen | None = None
        self.paused = False
        self.fs = None  # its LazyFS, if any

    @property
    def name(self) -> str:
        return "controller" if self.role == "controller" else f"broker-{self.id}"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def data(self) -> Path:
        return self.folder / "data"

    @property
    def logs(self) -> Path:
        return self.folder / "logs"

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def tail(self) -> str:
        """The last lines of the JVM's output and of its server.log: why it did not come up."""
        parts = []
        for path in (self.folder / "stdout.log", self.logs / "server.log"):
            try:
                lines = path.read_text(errors="replace").splitlines()
            except OSError:
                continue
            useful = [line for line in lines if line.strip()][-LOG_TAIL_LINES:]
            if useful:
                parts.append(f"--- last lines of {path} ---\n" + "\n".join(useful))
        return "\n".join(parts) or "(it wrote no log)"


class KafkaCluster:
    """``start()`` formats (the first time) and starts the nodes; faults; ``stop()``. See the module
    docstring for the layout and the faults."""

    def __init__(
        self,
        settings: KafkaSettings,
        directory: str | os.PathLike,
        dist: Distribution,
        say=lambda line: None,
        events: str | os.PathLike | None = None,
    ) -> None:
        self.settings, self.dist, self.say = settings, dist, say
        # the folder of the nodes' replication events (a Java agent in every JVM; engines/apache/recording)
        self.events = None if events is None else Path(events).resolve()
        self.recording = None
        self.directory = Path(directory).resolve()
        n = settings.brokers
        self.controller = Node(CONTROLLER_ID, "controller", self.directory / "controller", settings.port + n)
        self.brokers = {b: Node(b, "broker", self.directory / f"broker-{b}", settings.port + b) for b in range(n)}
        self.nodes = [self.controller, *self.brokers.values()]
        self.cluster_id: str | None = None
        self.network = None  # its NodeNetwork in netns mode
        self.elr = dist.default_elr() if settings.elr is None else settings.elr

    # -- addresses ---------------------------------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        return ",".join(node.address for node in self.brokers.values())

    def node(self, node_id: int) -> Node:
        return self.controller if node_id == CONTROLLER_ID else self.brokers[node_id]

    # -- start ------------------------------------------------------------------------------------
    def start(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Format a new DIR (or check the cluster an existing one holds), start every node, wait
        until every broker is registered and every partition of ``settings.topics`` has a leader.
        On any failure every node started is stopped again."""
        self._claim_directory()
        self._stop_leftovers()
        if self.settings.network != "netns":
            self._check_ports()  # before anything is written
        new = self.cluster_id is None
        try:
            self._attach_network()
            self._attach_file_systems()
            self._attach_recording()
            self._write_configs()
            if self.cluster_id is None:
                self._format()
            self._start_node(self.controller)
            for node in self.brokers.values():
                self._start_node(node)
            self._write_pids()
            self.wait_until_ready(timeout_s, topics=())
            self._create_topics()
            self.wait_until_ready(timeout_s)
        except BaseException:
            self.stop()
            if new and self.cluster_id is None:  # the folder was empty: what this run made is removed
                for child in self.directory.iterdir():
                    _remove(child)
                self.say(f"removed the unformatted cluster's files from {self.directory} (it was empty before)")
            raise

    def _claim_directory(self) -> None:
        """A new or empty DIR becomes this cluster's; one holding this cluster is reused; anything
        else is refused, with nothing in it touched."""
        record = self.directory / "cluster.json"
        if record.exists():
            try:
                stored = json.loads(record.read_text())
                identity = {key: stored["settings"][key] for key in KafkaSettings.IDENTITY}
                version, elr, cluster_id = stored["version"], stored["elr"], stored["cluster_id"]
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise KafkaClusterError(
                    f"{record}: not a cluster record isrcheck wrote ({exc}); give a new or empty --dir"
                ) from None
            wanted = {key: getattr(self.settings, key) for key in KafkaSettings.IDENTITY}
            if (
                identity != wanted
                or version != self.dist.version
                or (self.settings.elr is not None and elr != self.settings.elr)
            ):
                raise KafkaClusterError(
                    f"{self.directory} holds another cluster (Kafka {version}, ELR {'on' if elr else 'off'}, "
                    f"{identity}); this run asks for Kafka {self.dist.version}, "
                    f"{'' if self.settings.elr is None else 'ELR ' + ('on' if self.settings.elr else 'off') + ', '}"
                    f"{wanted}: give the same settings, or another --dir"
                )
            self.cluster_id, self.elr = cluster_id, elr
            return
        if self.directory.exists() and any(self.directory.iterdir()):
            raise KafkaClusterError(
                f"{self.directory} is not empty and holds no cluster isrcheck started: "
                f"give a new or empty --dir (nothing in it was changed)"
            )
        self.directory.mkdir(parents=True, exist_ok=True)

    def _record(self) -> None:
        record = {
            "cluster_id": self.cluster_id,
            "version": self.dist.version,
            "elr": self.elr,
            "controller": CONTROLLER_ID,
            "settings": asdict(self.settings),
        }
        (self.directory / "cluster.json").write_text(json.dumps(record, indent=2) + "\n")

    def _stop_leftovers(self) -> None:
        """JVMs a killed run of this DIR left running (pids.json, each checked to be a Kafka node of
        this DIR before it is killed), mounts and namespaces it left behind."""
        path = self.directory / "pids.json"
        try:
            pids = json.loads(path.read_text()).get("pids", [])
        except (OSError, ValueError, AttributeError):
            pids = []
        for pid in pids:
            if _is_our_jvm(pid, self.directory):
                self.say(f"stopping a Kafka node a killed run left running (pid {pid})")
                _kill_and_wait(pid)
        if self.settings.lazyfs:
            for mount in unmount_stale(self.directory):
                self.say(f"unmounted a lazy file system a killed run left behind: {mount}")
        if self.settings.network == "netns":
            for name in cleanup_stale():
                self.say(f"removed a network namespace a killed run left behind: {name}")

    def _attach_network(self) -> None:
        if self.settings.network != "netns":
            return

        self.network = NodeNetwork(f"k{os.getpid()}", [n.id for n in self.nodes], self.directory)
        addresses = self.network.setup()
        for node in self.nodes:
            node.host = addresses[node.id]

    def _attach_file_systems(self) -> None:
        if not self.settings.lazyfs:
            return

        for node in self.brokers.values():
            (node.folder / "backing").mkdir(parents=True, exist_ok=True)
            node.data.mkdir(parents=True, exist_ok=True)
            node.fs = LazyFS(
                node.folder / "backing", node.data, _control_socket(node.folder), node.folder / "lazyfs.log"
            )
            node.fs.start()

    def _attach_recording(self) -> None:
        if self.events is not None and self.recording is None:
            self.recording = Recording(self, self.events)

    def _write_configs(self) -> None:
        s = self.settings
        voters = f"{CONTROLLER_ID}@{self.controller.address}"
        common = {
            "controller.quorum.voters": voters,
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            # the controller decides elections with the cluster's defaults (KRaft reads them from its
            # own static configuration): the brokers and the controller are given the same
            "min.insync.replicas": s.min_isr(),
            "unclean.leader.election.enable": str(s.unclean_election).lower(),
            "default.replication.factor": s.brokers,
            "broker.session.timeout.ms": s.broker_session_timeout_ms,
            "broker.heartbeat.interval.ms": s.broker_heartbeat_interval_ms,
        }
        for node in self.nodes:
            node.folder.mkdir(parents=True, exist_ok=True)
            node.logs.mkdir(exist_ok=True)
            node.data.mkdir(exist_ok=True)
            config = {"process.roles": node.role, "node.id": node.id, **common, "log.dirs": node.data}
            if node.role == "controller":
                config["listeners"] = f"CONTROLLER://{node.address}"
            else:
                config.update(
                    {
                        "listeners": f"PLAINTEXT://{node.address}",
                        "advertised.listeners": f"PLAINTEXT://{node.address}",
                        "inter.broker.listener.name": "PLAINTEXT",
                        "num.partitions": 1,
                        "replica.lag.time.max.ms": s.replica_lag_time_max_ms,
                        "offsets.topic.replication.factor": min(3, s.brokers),
                        "transaction.state.log.replication.factor": min(3, s.brokers),
                        "transaction.state.log.min.isr": min(s.min_isr(), s.brokers),
                        "group.initial.rebalance.delay.ms": 0,
                    }
                )
                if s.flush_messages is not None:
                    config["log.flush.interval.messages"] = s.flush_messages
            config.update(s.extra)
            lines = [f"{key}={value}" for key, value in config.items()]
            (node.folder / "server.properties").write_text(
                "# written by isrcheck kafka at every start; the cluster's settings are in ../cluster.json\n"
                + "\n".join(lines)
                + "\n"
            )

    def _format(self) -> None:
        """``kafka-storage format`` of every node, in parallel, with one new cluster id."""
        cluster_id = random_uuid()
        feature = f"eligible.leader.replicas.version={1 if self.elr else 0}"
        self.say(
            f"formatting a new cluster {cluster_id} (Apache Kafka {self.dist.version}, "
            f"ELR {'on' if self.elr else 'off'}) in {self.directory}"
        )
        with ThreadPoolExecutor(len(self.nodes)) as pool:
            list(pool.map(lambda node: self._format_node(node, feature, cluster_id), self.nodes))
        self.cluster_id = cluster_id  # formatted: the folder holds this cluster now
        self._record()

    def _format_node(self, node: Node, feature: str = "", cluster_id: str | None = None) -> None:
        args = ["format", "-t", cluster_id or self.cluster_id, "-c", str(node.folder / "server.properties")]
        if feature:
            args += ["--feature", feature]
        _run_java(self.dist, "kafka.tools.StorageTool", *args, log_dir=node.logs)

    def _check_ports(self) -> None:
        """Every node's port free on loopback (in namespaces of their own nothing else binds there)."""
        for node in self.nodes:
            with socket.socket() as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Kafka's listeners bind
                try:
                    s.bind((node.host, node.port))
                except OSError as exc:
                    raise KafkaClusterError(
                        f"port {node.port} of {node.name} ({node.address}) is in use "
                        f"({exc.strerror}): stop what listens there or choose another --port"
                    )

    def _start_node(self, node: Node) -> None:
        """Start the node's JVM (its output appended to stdout.log)."""
        jvm = [
            f"-Xmx{self.settings.heap}",
            "-Xms128m",
            *JVM_OPTIONS,
            f"-Dlog4j2.configurationFile={_log4j_config()}",
            f"-Dkafka.logs.dir={node.logs}",
            f"-Disrcheck.replication.level={'DEBUG' if self.settings.debug_replication else 'INFO'}",
            f"-Disrcheck.cluster.dir={self.directory}",
        ]
        if self.recording is not None:
            jvm += self.recording.jvm_options(node)
        argv = self.dist.java("kafka.Kafka", str(node.folder / "server.properties"), jvm=tuple(jvm))
        if self.network is not None:
            argv = [*self.network.exec_prefix(node.id), *argv]
        with open(node.folder / "stdout.log", "ab") as out:
            # a session of its own: Ctrl-C in the terminal reaches isrcheck, which stops the nodes cleanly
            node.process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        node.paused = False

    def _write_pids(self) -> None:
        pids = [n.process.pid for n in self.nodes if n.process is not None]
        (self.directory / "pids.json").write_text(json.dumps({"owner": os.getpid(), "pids": pids}) + "\n")

    # -- readiness --------------------------------------------------------------------------------
    def wait_until_ready(self, timeout_s: float = START_TIMEOUT_S, topics=None) -> None:
        """Until every live broker is registered and unfenced (Metadata lists it) and every partition
        of ``topics`` (default ``settings.topics``) has a leader. KafkaClusterError if a JVM exits
        or time runs out."""
        # the admin client loads kafka-python: only once the JVMs run
        from isrcheck.conformance.engines.apache.admin import cluster_view

        topics = self.settings.topics if topics is None else topics
        deadline = time.monotonic() + timeout_s
        want = {b for b, n in self.brokers.items() if n.alive()}
        while True:
            for node in self.nodes:
                if node.process is not None and node.process.poll() is not None and not node.paused:
                    if node.role == "controller" or node.id in want:
                        raise KafkaClusterError(
                            f"{node.name} of Apache Kafka exited with code "
                            f"{node.process.returncode} while starting:\n{node.tail()}"
                        )
            view = cluster_view(self.live_addresses())
            if view is not None and want <= set(view.brokers) and view.has_leaders(topics):
                return
            if time.monotonic() > deadline:
                lacking = sorted(want - set(view.brokers)) if view else sorted(want)
                raise KafkaClusterError(
                    f"Apache Kafka did not serve within {timeout_s:.0f} s (brokers not registered: "
                    f"{lacking or 'none'}; topics {topics}); see the logs under {self.directory}"
                )
            time.sleep(0.2)

    def live_addresses(self) -> list[str]:
        return [n.address for n in self.brokers.values() if n.alive() and not n.paused]

    def _create_topics(self) -> None:
        # the admin client loads kafka-python: only once the JVMs run
        from isrcheck.conformance.engines.apache.admin import create_topics

        if self.settings.topics:
            create_topics(self.bootstrap, self.settings.topics, self.settings.brokers)

    # -- faults -----------------------------------------------------------------------------------
    @property
    def paused(self) -> set[int]:
        """The nodes SIGSTOPped now."""
        return {n.id for n in self.nodes if n.paused}

    def alive(self, node_id: int) -> bool:
        return self.node(node_id).alive()

    def kill(self, node_id: int, kind: str = "process") -> None:
        """SIGKILL: the process dies, the page cache (and lazyfs's unsynced data) survives; ``kind`` is
        the crash it is part of, for the event log (a power loss kills first)."""
        node = self.node(node_id)
        if node.alive():
            node.process.kill()
            node.process.wait()
            self._log_fault(node, CRASH, kind=kind)
        node.paused = False

    def terminate(self, node_id: int, timeout_s: float = STOP_TIMEOUT_S) -> bool:
        """SIGTERM and Kafka's clean shutdown (a broker's controlled shutdown moves its leaderships
        away first); SIGKILL if it has not exited within ``timeout_s``. True if it stopped cleanly."""
        node = self.node(node_id)
        if not node.alive():
            return True
        if node.paused:
            self.resume(node_id)
        node.process.send_signal(signal.SIGTERM)
        try:
            node.process.wait(timeout_s)
            self._log_fault(node, CRASH, kind="clean")  # Kafka's shutdown hook ran to its end
            return True
        except subprocess.TimeoutExpired:
            self.kill(node_id)
            return False

    def pause(self, node_id: int) -> None:
        node = self.node(node_id)
        if node.alive():
            node.process.send_signal(signal.SIGSTOP)
            node.paused = True

    def resume(self, node_id: int) -> None:
        node = self.node(node_id)
        if node.alive() and node.paused:
            node.process.send_signal(signal.SIGCONT)
        node.paused = False

    def restart(self, node_id: int) -> None:
        """Start a stopped node again (log recovery, registration); does not wait for it."""
        node = self.node(node_id)
        if node.alive():
            return
        if node.fs is not None and not node.fs.running:
            node.fs.start()
        self._start_node(node)
        self._write_pids()

    def power_loss(self, node_id: int) -> None:
        """SIGKILL, then every write the node's file system holds unsynced is gone (lazyfs's drop)."""
        node = self.node(node_id)
        if node.fs is None:
            raise KafkaClusterError("a power loss needs the lazy file system under the brokers' logs (--lazyfs)")
        self.kill(node_id, kind="power")
        node.fs.drop()

    def lose_disk(self, node_id: int) -> None:
        """SIGKILL, the broker's disk replaced by an empty one, formatted again with the cluster's id
        (Kafka 4 refuses a log directory without meta.properties): what an operator does."""
        node = self.node(node_id)
        self.kill(node_id)
        target = node.folder / "backing" if node.fs is not None else node.data
        for child in target.iterdir():
            _remove(child)
        if node.fs is not None:
            node.fs.drop()  # what it held unsynced was on the old disk
        self._format_node(node)
        self._log_fault(node, LOSE_DISK)

    def _log_fault(self, node: Node, fault: str, **fields) -> None:
        """What a dead JVM cannot record, in its event file (a SIGKILL's crash, a power loss, a lost disk)."""
        if self.recording is not None:
            self.recording.fault(node, fault, **fields)

    def fail_io(self, node_id: int, operation: str, errno_name: str = "EIO") -> None:
        """The broker's next ``operation`` (write, fsync, read) on its log directory fails."""
        node = self.node(node_id)
        if node.fs is None:
            raise KafkaClusterError("an I/O error needs the lazy file system under the brokers' logs (--lazyfs)")
        node.fs.fail(operation, errno_name)

    def partition(self, groups) -> None:
        """Cut every link between nodes of different groups (node ids; a node no group names is a
        group of its own). Clients keep reaching every node."""
        if self.network is None:
            raise KafkaClusterError("a network partition needs a network namespace per node (--network netns)")
        named = {n for g in groups for n in g}
        rest = [n.id for n in self.nodes if n.id not in named]
        self.network.partition([list(g) for g in groups] + ([rest] if rest else []))

    def cut(self, a: int, b: int) -> None:
        """Cut the link between nodes ``a`` and ``b`` (both ways), besides any partition."""
        if self.network is None:
            raise KafkaClusterError("cutting a link needs a network namespace per node (--network netns)")
        self.network.cut(a, b)

    def heal(self) -> None:
        """Every link restored, every hold released, every delay ended."""
        if self.network is not None:
            self.network.heal()
            self.network.release_all()
            self.network.undelay()

    def delay(self, a: int, b: int, ms: int) -> None:
        """Give the link between nodes ``a`` and ``b`` ``ms`` milliseconds of latency, both ways (netns)."""
        if self.network is None:
            raise KafkaClusterError("delaying a link needs a network namespace per node (--network netns)")
        self.network.delay(a, b, ms)

    def undelay(self, a: int, b: int | None = None) -> None:
        """End the latency of the link ``a``-``b``, or of every link of ``a``."""
        if self.network is not None:
            self.network.undelay(a, b)

    def _hold_target(self, node_id: int, api_key: int) -> tuple:
        if self.network is None:
            raise KafkaClusterError("holding requests needs a network namespace per node (--network netns)")
        return node_id, CONTROLLER_ID, self.controller.port, api_key

    def hold(self, node_id: int, api_key: int) -> None:
        """The requests of ``api_key`` that ``node_id`` sends the controller are held (netns)."""
        self.network.hold(*self._hold_target(node_id, api_key))

    def release(self, node_id: int, api_key: int) -> None:
        """The requests held so far may pass (``rearm`` holds later ones again)."""
        self.network.release(*self._hold_target(node_id, api_key))

    def rearm(self, node_id: int, api_key: int) -> None:
        self.network.rearm(*self._hold_target(node_id, api_key))

    def hold_counts(self, node_id: int, api_key: int) -> tuple[int, int]:
        """(held, delivered since the last release) of the hold, in TCP segments."""
        target = self._hold_target(node_id, api_key)
        return self.network.hold_counts(*target)[0], self.network.delivered_since_release(*target)

    # -- stop -------------------------------------------------------------------------------------
    def stop(self) -> bool:
        """Every broker shut down cleanly (in parallel), then the controller; file systems unmounted,
        namespaces removed. True if every node stopped cleanly."""
        for node in self.nodes:
            if node.paused:
                self.resume(node.id)
        if self.network is not None:
            self.network.heal()
        with ThreadPoolExecutor(max(1, len(self.brokers))) as pool:
            unclean = [b for b, ok in zip(self.brokers, pool.map(self.terminate, list(self.brokers))) if not ok]
        if not self.terminate(CONTROLLER_ID):
            unclean.append(CONTROLLER_ID)
        for node_id in unclean:
            self.say(f"{self.node(node_id).name} did not stop within {STOP_TIMEOUT_S:.0f} s of SIGTERM: killed")
        for node in self.brokers.values():
            if node.fs is not None:
                node.fs.stop()
        if self.network is not None:
            self.network.teardown()
            self.network = None
        try:
            (self.directory / "pids.json").unlink()
        except FileNotFoundError:
            pass
        return not unclean


def _control_socket(folder: Path) -> Path:
    """The lazy file system's control socket: in the node's folder, or, where that path is longer
    than a Unix socket's address may be (107 bytes: deep test folders), in the temporary folder
    under a name drawn from the node's folder."""
    path = folder / "lazyfs.sock"
    if len(os.fsencode(path)) <= 100:
        return path

    return Path(tempfile.gettempdir()) / f"isrcheck-lazyfs-{hashlib.sha1(os.fsencode(folder)).hexdigest()[:16]}.sock"


def free_port_base(count: int, start: int = 20_000, stop: int = 32_000) -> int:
    """A port from which ``count`` consecutive ports of 127.0.0.1 are free now: below Linux's
    ephemeral range (32768 up), so that no client connection takes one meanwhile, and drawn at
    random, so that runs at once (test workers) rarely try the same ones."""
    rng = random.Random()
    for _ in range(200):
        base = rng.randrange(start, stop - count)
        socks = []
        try:
            for port in range(base, base + count):
                s = socket.socket()
                socks.append(s)
                s.bind((HOST, port))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise KafkaClusterError(f"no {count} consecutive free ports found on {HOST} between {start} and {stop}")


def recorded_version(directory: str | os.PathLike) -> str | None:
    """The Kafka release that formatted the cluster in ``directory`` (None: no cluster there yet)."""
    try:
        return json.loads((Path(directory) / "cluster.json").read_text())["version"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _log4j_config() -> str:
    return str(resources.files("isrcheck.jvm") / "log4j2.properties")


def _run_java(dist: Distribution, main: str, *args: str, log_dir: Path) -> str:
    """Run one of Kafka's tools (its logs into ``log_dir``); its output. KafkaClusterError with that
    output if it fails."""
    jvm = (f"-Dlog4j2.configurationFile={_log4j_config()}", f"-Dkafka.logs.dir={log_dir}")
    proc = subprocess.run(
        dist.java(main, *args, jvm=jvm),
        capture_output=True,
        text=True,
        errors="replace",
        stdin=subprocess.DEVNULL,
        timeout=120,
    )
    if proc.returncode != 0:
        output = (proc.stdout + proc.stderr).strip().splitlines()[-LOG_TAIL_LINES:]
        raise KafkaClusterError(
            f"Kafka's {main.rsplit('.', 1)[-1]} {' '.join(args[:1])} failed "
            f"(exit {proc.returncode}):\n" + "\n".join(output)
        )
    return proc.stdout


def _is_our_jvm(pid: int, directory: Path) -> bool:
    """``pid`` is a Kafka node started for ``directory`` (its command line says so)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
    except OSError:
        return False
    return b"kafka.Kafka" in argv and f"-Disrcheck.cluster.dir={directory}".encode() in argv


def _kill_and_wait(pid: int, timeout_s: float = 10.0) -> None:
    try:
        os.kill(pid, signal.SIGCONT)
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout_s
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def random_uuid() -> str:
    """A cluster id as ``kafka-storage random-uuid`` makes one (Kafka's ``Uuid.randomUuid``: 16 random
    bytes in URL-safe base64 without padding, never starting with '-'), without starting a JVM."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


__all__ = [
    "CONTROLLER_ID",
    "KafkaCluster",
    "KafkaClusterError",
    "KafkaSettings",
    "Node",
    "free_port_base",
    "recorded_version",
]
