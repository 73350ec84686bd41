"""A cluster of real processes on this host: the controller and one process per broker
(``node``), each on its own localhost port, brokers' logs in real directories.

Faults are what an operator or the machine does to a process: ``crash(b, "process")`` is SIGKILL,
``crash(b, "clean")`` SIGTERM (a clean shutdown, waited for), ``crash(b, "power")`` SIGKILL and
then every file of the broker's directory cut back to what was made durable (``durable``; a Kafka
cluster needs the setting ``"journal": true`` for it); ``restart(b)`` starts the broker again (log
recovery, registration). ``pause(n)`` / ``resume(n)`` are SIGSTOP / SIGCONT (a node that stops
answering and later wakes up, e.g. a zombie leader); ``lose_disk(b)`` is SIGKILL and the broker's
data directory and journal gone (a replaced disk: ``restart(b)`` brings it back empty);
``fail_disk(b, io)`` makes the broker's disk fail one operation (``fsync:EIO``, ...; docs/steps.md,
"Disk faults"): its log directory goes offline and the broker halts; after a failed fsync the
dirty pages are gone too (played from the journal, as a power loss).

Network partitions: ``partition(groups)`` cuts every link between nodes of different groups
(broker ids and the controller, CONTROLLER_ID), ``cut(a, b)`` one link; ``hold(src, dst, request)``
keeps ``src``'s requests of one kind to ``dst`` from going out, ``release`` lets those held so far
go, ``held`` counts them; ``delay(a, b, ms)`` gives a link latency, ``undelay`` ends it; ``heal()``
restores every link and ends every hold and delay. They write the net
file ``DIR/net.json`` that every node watches (``node`` describes it; ``start`` removes a stale
one: no file, no cut): a change takes effect in each node within its poll interval (about 100 ms),
and in nodes started later from their start.

Event log (``events``, a directory): every node process writes its protocol events there
(``node``'s ``--events``; docs/validate.md), all on one clock whose origin is the cluster's start;
``DIR/event-log`` names that directory, so the cluster's directory leads to its log.
What the processes cannot log themselves, the cluster logs into the broker's file as the machine
that did it: a ``crash`` (after the process is gone, with its kind), a ``lose_disk``, and a
``fail_disk`` (with its ``io``, once the broker halted on it).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

from ..clients import CONSUMER_ID, PRODUCER_ID
from ..controller import CONTROLLER_ID
from ..eventlog import DOWN, EventLog, run_header
from ..replication import CRASH_KINDS, DISK_IO, ClusterConfig
from .durable import power_loss
from .failing import DISK_FAILURE_FILE
from .netfile import MAX_DELAY_MS, api_key_of, held_status_path, read_held_status, write_net_file
from .node import journal_path

NET_FILE = "net.json"
EVENT_LOG_FILE = "event-log"  # in the cluster's directory: where its event log is (``isrcheck validate DIR``)
HALTED = 1  # the exit code of a broker that halted on an offline log directory


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class ProcessCluster:
    """``start()`` the controller and the brokers; ``crash``, ``restart``; ``stop()`` them all."""

    def __init__(
        self,
        config: ClusterConfig,
        directory: str,
        ready_timeout_s: float = 30.0,
        kafka: dict | None = None,
        events: str | None = None,
    ) -> None:
        """``kafka``: the nodes' ``--kafka`` settings, for a cluster Kafka clients use (serve);
        ``events``: the directory of the run's event log (None: no log)."""
        self.config, self.directory, self.ready_timeout_s = config, directory, ready_timeout_s
        self.kafka = kafka
        self.events = events
        self.clock_origin = time.monotonic()  # reset by start: event times are ms since it
        # every node's port, clients' too: a response travels on a connection its sender opens
        nodes = [*range(config.replicas), CONTROLLER_ID, PRODUCER_ID, CONSUMER_ID]
        self.ports = dict(zip(nodes, free_ports(len(nodes))))
        self.processes: dict[int, subprocess.Popen | None] = {}
        self.incarnations = [0] * config.replicas
        self.lost_bytes = 0  # what power losses discarded
        self.armed: dict[int, str] = {}  # broker -> the disk failure armed on it (arm_disk_failure)
        self.paused: set[int] = set()
        self.groups: list[list[int]] = []  # the current network partition, [] when healed
        self.links: set[tuple[int, int]] = set()  # links cut one by one (``cut``)
        self.holds: dict[tuple[int, int, str], int] = {}  # (from, to, request) -> released
        self.delays: dict[tuple[int, int], int] = {}  # links with latency (smaller id first) -> ms
        self.net_file = os.path.join(directory, NET_FILE)

    @property
    def nodes(self) -> list[int]:
        """Every node id: the brokers', then the controller's."""
        return [*range(self.config.replicas), CONTROLLER_ID]

    @property
    def journaled(self) -> bool:
        """Whether brokers keep the journal a power loss needs (always, unless Kafka mode without it)."""
        return self.kafka is None or bool(self.kafka.get("journal", False))

    def data_dir(self, broker: int) -> str:
        return os.path.join(self.directory, f"broker-{broker}")

    def _spawn(self, node) -> subprocess.Popen:
        return self._ready(node, self._launch(node))

    def _launch(self, node) -> subprocess.Popen:
        fields = dataclasses.asdict(self.config)
        argv = [
            sys.executable,
            "-m",
            "isrcheck.impl.real.node",
            "--node",
            str(node),
            "--config",
            json.dumps(fields),
            "--ports",
            json.dumps(self.ports),
        ]
        if node != "controller":
            argv += ["--data-dir", self.data_dir(node), "--incarnation", str(self.incarnations[node])]
        elif self.kafka is not None:
            argv += ["--data-dir", os.path.join(self.directory, "controller")]
        if self.kafka is not None:
            argv += ["--kafka", json.dumps(self.kafka)]
        argv += ["--net-file", self.net_file]
        if self.events is not None:
            argv += ["--events", self.events, "--clock-origin", repr(self.clock_origin)]
        log = open(os.path.join(self.directory, f"{node}.log"), "ab")
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL)
        log.close()
        return proc

    def _ready(self, node, proc: subprocess.Popen) -> subprocess.Popen:
        line = proc.stdout.readline()  # "ready", or EOF if it failed to start
        if line.strip() != b"ready":
            proc.kill()
            proc.wait()
            raise RuntimeError(f"node {node} did not start (see {self.directory}/{node}.log)")
        return proc

    def start(self) -> None:
        os.makedirs(self.directory, exist_ok=True)
        if self.events is not None:  # the cluster's directory names its log, for whoever is given only it
            with open(os.path.join(self.directory, EVENT_LOG_FILE), "w", encoding="utf-8") as f:
                f.write(os.path.abspath(self.events) + "\n")
        for node in self.nodes:  # every link up and nothing held, whatever a previous run left
            for path in (self.net_file, held_status_path(self.net_file, node)):
                if os.path.exists(path):
                    os.remove(path)
        self.groups, self.links, self.holds, self.delays = [], set(), {}, {}
        self.clock_origin = time.monotonic()
        # brokers first (their imports overlap), heartbeating into the void until the controller
        # listens: its sessions start when it does, and must not expire before they are up
        launched = [(b, self._launch(b)) for b in range(self.config.replicas)]
        for b, proc in launched:
            self.processes[b] = self._ready(b, proc)
        self.processes[CONTROLLER_ID] = self._spawn("controller")

    def alive(self, broker: int) -> bool:
        proc = self.processes.get(broker)
        return proc is not None and proc.poll() is None

    def crash(self, broker: int, kind: str) -> None:
        if kind not in CRASH_KINDS:
            raise ValueError(f"crash kind: expected one of {', '.join(CRASH_KINDS)}, got {kind!r}")
        if kind == "power" and not self.journaled:
            raise ValueError('a power loss needs the brokers\' journal: Kafka setting "journal": true')
        proc = self.processes[broker]
        if kind == "clean":
            proc.send_signal(signal.SIGTERM)
        else:
            proc.kill()
        if broker in self.paused:  # a stopped process handles SIGTERM only once continued
            proc.send_signal(signal.SIGCONT)
            self.paused.discard(broker)
        proc.wait()
        proc.stdout.close()
        self.processes[broker] = None
        if kind == "power":
            lost = power_loss(self.data_dir(broker), journal_path(self.data_dir(broker)))
            self.lost_bytes += sum(lost.values())
        self._log(broker, "crash", kind=kind)

    def _log(self, broker: int, step: str, **fields) -> None:
        """An event of ``broker``'s machine in its file, after those its last process logged."""
        if self.events is None:
            return
        log = EventLog(
            self.events,
            run_header(self.config),
            CONTROLLER_ID,
            lambda: int((time.monotonic() - self.clock_origin) * 1000),
            resume=True,
        )
        log.emit(broker, step, DOWN, {"replica": broker, **fields})
        log.close()

    def fail_disk(self, broker: int, io: str, timeout_s: float = 30.0) -> bool:
        """The broker's disk fails the operation ``io`` names (one of DISK_IO): True if the broker
        halted on its offline log directory (exit code 1; a failed fsync's dirty pages then played
        gone), False if the operation hit nothing (it still runs; e.g. nothing to fsync)."""
        proc = self.processes[broker]
        self._write_disk_failure(broker, io)
        proc.send_signal(signal.SIGUSR1)
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return False
        self._halted(broker, io)
        return True

    def arm_disk_failure(self, broker: int, io: str) -> None:
        """The broker's disk fails the next operation of the kind ``io`` names (one of DISK_IO) that
        the broker makes by itself, e.g. the append of the next produce for ``write:*``; the broker
        then halts with exit code 1, and ``restart`` plays what the halt left (as ``fail_disk``)."""
        self._write_disk_failure(broker, io + ":next")
        self.armed[broker] = io
        self.processes[broker].send_signal(signal.SIGUSR1)

    def _write_disk_failure(self, broker: int, failure: str) -> None:
        io = failure.removesuffix(":next")
        if io not in DISK_IO:
            raise ValueError(f"io: expected one of {', '.join(DISK_IO)}, got {io!r}")
        if io.startswith("fsync") and not self.journaled:
            raise ValueError('a failed fsync needs the brokers\' journal: Kafka setting "journal": true')
        with open(os.path.join(self.data_dir(broker), DISK_FAILURE_FILE), "w", encoding="utf-8") as f:
            f.write(failure)

    def _halted(self, broker: int, io: str) -> None:
        """After ``broker`` exited on a failed ``io``: check it halted as Kafka does, drop a failed
        fsync's dirty pages, and log the crash it amounts to."""
        proc = self.processes[broker]
        code = proc.wait()
        proc.stdout.close()
        self.processes[broker] = None
        self.armed.pop(broker, None)
        os.remove(os.path.join(self.data_dir(broker), DISK_FAILURE_FILE))
        if code != HALTED:
            raise RuntimeError(f"broker {broker} exited with {code}, not {HALTED}, on a failed {io}")
        if io.startswith("fsync"):
            self.lost_bytes += sum(power_loss(self.data_dir(broker), journal_path(self.data_dir(broker))).values())
        # to the event log in the contract's terms: the disk failure (docs/steps.md, "Runs nobody
        # drove": its halt; the controller's fence follows when the broker's session expires)
        self._log(broker, "fail_disk", io=io)

    def restart(self, broker: int) -> None:
        if broker in self.armed and not self.alive(broker):  # an armed disk failure halted it
            self._halted(broker, self.armed[broker])
        self.incarnations[broker] += 1
        self.processes[broker] = self._spawn(broker)

    def pause(self, node: int) -> None:
        """SIGSTOP: the node (a broker, or the controller) stops on the spot, its connections open."""
        self.processes[node].send_signal(signal.SIGSTOP)
        self.paused.add(node)

    def resume(self, node: int) -> None:
        """SIGCONT: the paused node carries on where it stopped, its timers all late."""
        self.processes[node].send_signal(signal.SIGCONT)
        self.paused.discard(node)

    def lose_disk(self, broker: int) -> None:
        """SIGKILL, then the broker's data directory and its journal removed: a disk replaced by
        an empty one. ``restart`` brings the broker back with nothing (it registers as a restart)."""
        proc = self.processes.get(broker)
        if proc is not None:
            proc.kill()
            proc.wait()
            proc.stdout.close()
            self.processes[broker] = None
            self._log(broker, "crash", kind="process")
        self.paused.discard(broker)
        shutil.rmtree(self.data_dir(broker), ignore_errors=True)
        journal = journal_path(self.data_dir(broker))
        if os.path.exists(journal):
            os.remove(journal)
        self._log(broker, "lose_disk")

    def partition(self, groups) -> list[list[int]]:
        """Cut every link between nodes of different ``groups`` (iterables of node ids: broker ids
        and CONTROLLER_ID); the nodes no group names form one more group. Replaces any previous
        partition. Returns the groups, every node in one."""
        known = self.nodes
        named: list[list[int]] = []
        seen: set[int] = set()
        for group in groups:
            group = sorted({int(n) for n in group})
            unknown = [n for n in group if n not in known]
            if unknown:
                raise ValueError(f"partition: unknown nodes {unknown} (nodes: {known})")
            if seen & set(group):
                raise ValueError(f"partition: nodes {sorted(seen & set(group))} are in two groups")
            seen |= set(group)
            if group:
                named.append(group)
        rest = [n for n in known if n not in seen]
        if rest:
            named.append(rest)
        self.groups = named if len(named) > 1 else []
        self._write_net()
        return named

    def cut(self, a: int, b: int) -> None:
        """Cut the link between nodes ``a`` and ``b``, both ways, besides any partition."""
        self._known(a, b)
        if a == b:
            raise ValueError(f"cut: a link joins two different nodes, got {a} and {b}")
        self.links.add((min(a, b), max(a, b)))
        self._write_net()

    def hold(self, src: int, dst: int, request: str) -> None:
        """Node ``src`` holds the requests ``request`` (``alter_partition``, ...) it sends to ``dst``
        (netfile); the counts are ``held``'s."""
        self._known(src, dst)
        api_key_of(request)  # ValueError for a request the nodes do not know
        self.holds.setdefault((src, dst, request), 0)
        self._write_net()

    def release(self, src: int, dst: int, request: str) -> None:
        """The requests held so far go on; later ones stay held."""
        held, _ = self.held(src, dst, request)
        self.holds[(src, dst, request)] = max(held, self.holds.get((src, dst, request), 0))
        self._write_net()

    def held(self, src: int, dst: int, request: str) -> tuple[int, int]:
        """(held, delivered) of that hold, as ``src`` reports it ((0, 0) before it reported)."""
        return read_held_status(self.net_file, src).get((src, dst, request), (0, 0))

    def delay(self, a: int, b: int, ms: int) -> None:
        """Give the link between nodes ``a`` and ``b`` ``ms`` milliseconds of latency, both ways
        (netfile's ``delay``; replaces the link's earlier one)."""
        self._known(a, b)
        if a == b or not 1 <= ms <= MAX_DELAY_MS:
            raise ValueError(f"delay: a link of two different nodes and 1..{MAX_DELAY_MS} ms, got {a}, {b}, {ms}")
        self.delays[(min(a, b), max(a, b))] = ms
        self._write_net()

    def undelay(self, a: int, b: int | None = None) -> None:
        """End the latency of the link ``a``-``b``; without ``b``, of every link of ``a``."""
        self._known(a, *(() if b is None else (b,)))
        self.delays = {
            link: ms for link, ms in self.delays.items() if a not in link or (b is not None and b not in link)
        }
        self._write_net()

    def _known(self, *nodes: int) -> None:
        unknown = [n for n in nodes if n not in self.nodes]
        if unknown:
            raise ValueError(f"unknown nodes {unknown} (nodes: {self.nodes})")

    def _write_net(self) -> None:
        write_net_file(
            self.net_file,
            self.groups,
            cut=self.links,
            hold=[[*key, released] for key, released in sorted(self.holds.items())],
            delay=[[a, b, ms] for (a, b), ms in sorted(self.delays.items())],
        )

    def heal(self) -> None:
        """Every link restored and every held request sent on (within each node's poll interval)."""
        self.groups, self.links, self.holds, self.delays = [], set(), {}, {}
        self._write_net()

    def stop(self) -> None:
        for broker, io in sorted(self.armed.items()):
            if not self.alive(broker):
                self._halted(broker, io)
        for node in [*range(self.config.replicas), CONTROLLER_ID]:
            proc = self.processes.get(node)
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                if node in self.paused:
                    proc.send_signal(signal.SIGCONT)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            if proc is not None:
                proc.stdout.close()
            self.processes[node] = None
        self.paused.clear()
