"""Apache Kafka's own replication events, recorded in its JVMs by isrcheck's Java agent.

``KafkaCluster(..., events=DIR)`` starts every node with the agent (``engines/apache/agent``), which
appends the node's events to ``DIR/<node>.jsonl`` (``broker-B.jsonl``, ``controller.jsonl``); the
harness appends what a dead JVM cannot record, once the process is gone (``harness.crash`` with its
kind, ``harness.lose_disk``), in the same format, and ``DIR/recording.json`` names the run (Kafka's
version, ELR, the settings, the clock's origin).

A line (docs/validate.md, "Apache Kafka's own events"): ``{"seq", "us", "ev", "at", "thread", "p",
"args", "ret", "thrown"}``; ``ev`` is the hooked method (``Partition.makeLeader``), ``at`` whether it
was recorded as it was entered or as it returned, ``p`` the partition's state then, ``us`` microseconds
on the host's monotonic clock since the run's origin. Each incarnation of a node starts with a header
line (``"agent": "isrcheck-kafka-agent"``).

``read_recording(DIR)`` reads and checks them: a malformed line, an unknown event, a file without its
header, is a ``UsageError`` naming file and line (exit 2), except a last line left unfinished, where
a killed JVM's log ends (as for isrcheck's own processes, docs/validate.md).
"""

from __future__ import annotations

import heapq
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from isrcheck.conformance.engines.apache.agent import agent_jar, jvm_options
from isrcheck.conformance.vocabulary import UsageError

FORMAT = "isrcheck-kafka-recording"
AGENT = "isrcheck-kafka-agent"
AGENT_VERSIONS = (1, 2)  # 2 records the brokers' metadata caches (KRaftMetadataCache.setImage)
VERSION = 1
RUN_FILE = "recording.json"

# every event the agent records (jvm/agent's Agent.HOOKS, by simple class name) and the harness's
EVENTS = frozenset(
    {
        *(
            f"Partition.{m}"
            for m in (
                "makeLeader",
                "makeFollower",
                "updateFollowerFetchState",
                "appendRecordsToLeader",
                "appendRecordsToFollowerOrFutureReplica",
                "maybeIncrementLeaderHW",
                "submitAlterPartition",
                "handleAlterPartitionUpdate",
                "handleAlterPartitionError",
                "truncateTo",
                "truncateFullyAndStartAt",
                "delete",
                "markOffline",
            )
        ),
        *(f"UnifiedLog.{m}" for m in ("truncateTo", "truncateFullyAndStartAt", "maybeUpdateHighWatermark", "flush")),
        *(
            f"AbstractFetcherThread.{m}"
            for m in ("processFetchRequest", "truncateOnFetchResponse", "truncateToHighWatermark")
        ),
        *(f"ReplicaFetcherThread.{m}" for m in ("processPartitionData", "truncate", "truncateFullyAndStartAt")),
        *(
            f"ReplicaManager.{m}"
            for m in ("fetchMessages", "applyDelta", "checkpointHighWatermarks", "handleLogDirFailure")
        ),
        "DelayedProduce.onComplete",
        "DelayedProduce.onExpiration",
        *(f"DefaultAlterPartitionManager.{m}" for m in ("submit", "sendRequest", "handleAlterPartitionResponse")),
        *(
            f"ReplicationControlManager.{m}"
            for m in (
                "replay",
                "alterPartition",
                "handleBrokerFenced",
                "handleBrokerUnfenced",
                "electLeader",
                "maybeBalancePartitionLeaders",
            )
        ),
        "ClusterControlManager.replay",
        "ClusterControlManager.registerBroker",
        "KRaftMetadataCache.setImage",
        "agent.hooked",
        "agent.error",
        "harness.crash",
        "harness.lose_disk",
    }
)
CRASH_KINDS = ("clean", "process", "power")
REORDER_US = 2_000_000  # how far out of time order one file's lines may be (see _in_time_order)


def node_file(node) -> str:
    return f"{node.name}.jsonl"


class Recording:
    """The recording of one cluster's run into ``directory`` (a new or empty folder)."""

    def __init__(self, cluster, directory: Path) -> None:
        self.cluster, self.directory = cluster, Path(directory)
        if self.directory.exists() and any(self.directory.iterdir()):
            raise UsageError(
                f"--events {self.directory}: not empty; give a new or empty folder (a recording starts "
                f"with its cluster's run)"
            )
        self.jar = agent_jar(cluster.say)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.origin_ns = time.monotonic_ns()
        s = cluster.settings
        run = {
            "format": FORMAT,
            "version": VERSION,
            "kafka": cluster.dist.version,
            "elr": cluster.elr,
            "origin_ns": self.origin_ns,
            "controller": cluster.controller.id,
            "brokers": s.brokers,
            "min_insync_replicas": s.min_isr(),
            "unclean_election": s.unclean_election,
            "replica_lag_time_max_ms": s.replica_lag_time_max_ms,
            "flush_messages": s.flush_messages,
        }
        (self.directory / RUN_FILE).write_text(json.dumps(run, indent=1) + "\n")

    def jvm_options(self, node) -> tuple[str, ...]:
        return jvm_options(self.jar, self.directory / node_file(node), node.id, self.origin_ns)

    def fault(self, node, fault: str, **fields) -> None:
        """Append the harness's event to ``node``'s file (its JVM is gone: nothing else writes it)."""
        path = self.directory / node_file(node)
        cut_unfinished_line(path)
        us = (time.monotonic_ns() - self.origin_ns) // 1000
        line = {"seq": 0, "us": us, "ev": f"harness.{fault}", "at": "harness", **fields}
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(line, separators=(",", ":")) + "\n")
            f.flush()
            os.fsync(f.fileno())


def cut_unfinished_line(path: Path) -> None:
    """Cut a last line its killed writer left unfinished (the next writer goes on after it)."""
    try:
        with open(path, "rb+") as f:
            data = f.read()
            end = data.rfind(b"\n") + 1
            if end != len(data):
                f.truncate(end)
    except FileNotFoundError:
        pass


@dataclass(frozen=True)
class Recorded:
    """One recorded event, where it was read."""

    where: str  # FILE:LINE
    node: int
    us: int
    ev: str
    at: str
    p: dict | None
    line: dict = field(hash=False)

    @property
    def began(self) -> int:
        """When the hooked method was entered (an exit line's ``in``; an older agent's lines lack it)."""
        return self.line.get("in", self.us)


def is_recording(path: str | os.PathLike) -> bool:
    return (Path(path) / RUN_FILE).is_file()


def read_run(path: str | os.PathLike) -> dict:
    where = Path(path) / RUN_FILE
    try:
        run = json.loads(where.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"{where}: not a recording's description ({exc})") from None
    if not isinstance(run, dict) or run.get("format") != FORMAT or run.get("version") != VERSION:
        raise UsageError(f"{where}: not a recording of format {FORMAT} version {VERSION}")
    return run


def read_recording(path: str | os.PathLike) -> tuple[dict, list[Recorded]]:
    """The run's description and every node's events, merged by time; UsageError on bad input."""
    run, events = iter_recording(path)
    return run, list(events)


def iter_recording(path: str | os.PathLike) -> tuple[dict, Iterator[Recorded]]:
    """The run's description and an iterator of every node's events merged by time, read as they are
    needed (a long soak's recording is gigabytes); the files are checked when the description is
    read, each event when it is reached (UsageError)."""
    run = read_run(path)
    files = sorted(Path(path).glob("*.jsonl"))
    if not files:
        raise UsageError(f"{path}: the recording holds no node's events (*.jsonl)")
    return run, heapq.merge(*(_in_time_order(_read_file(name, run)) for name in files), key=lambda r: r.us)


def _in_time_order(events: Iterator[Recorded]) -> Iterator[Recorded]:
    """One file's events by time: the agent takes an event's time before it takes the file's lock, so
    lines of concurrent threads may be out of order by the little that lies between (REORDER_US bounds
    it), ties kept in file order."""
    held: list[tuple[int, int, Recorded]] = []
    for n, r in enumerate(events):
        heapq.heappush(held, (r.us, n, r))
        while held[0][0] < r.us - REORDER_US:
            yield heapq.heappop(held)[2]
    while held:
        yield heapq.heappop(held)[2]


def _read_file(name: Path, run: dict) -> Iterator[Recorded]:
    node = None
    with open(name, encoding="utf-8", errors="replace") as f:
        for number, text in enumerate(f, 1):
            where = f"{name}:{number}"
            try:
                line = json.loads(text)
            except ValueError as exc:
                if not text.endswith("\n"):
                    break  # a killed JVM's unfinished last line: its log ends before it
                raise UsageError(f"{where}: not a JSON line ({exc.msg})") from None
            if not isinstance(line, dict):
                raise UsageError(f"{where}: an event must be a JSON object")
            if "agent" in line:
                if line.get("agent") != AGENT or line.get("version") not in AGENT_VERSIONS:
                    raise UsageError(
                        f"{where}: a header of another recorder ({line.get('agent')!r} version "
                        f"{line.get('version')!r}; this isrcheck reads {AGENT} versions "
                        f"{', '.join(map(str, AGENT_VERSIONS))})"
                    )
                if not isinstance(line.get("node"), int):
                    raise UsageError(f"{where}: header: 'node' must be the node's id")
                node = line["node"]
                continue
            if node is None:
                if isinstance(line.get("ev"), str) and line["ev"].startswith("harness."):
                    node = _node_of(name, run)  # a node killed before its agent wrote anything
                else:
                    raise UsageError(f"{where}: an event before the agent's header line")
            ev = line.get("ev")
            if ev not in EVENTS:
                raise UsageError(
                    f"{where}: unknown event {json.dumps(ev)} (the agent records: {', '.join(sorted(EVENTS))})"
                )
            us = line.get("us")
            if isinstance(us, bool) or not isinstance(us, int):
                raise UsageError(f"{where}: 'us' must be an integer, got {json.dumps(us)}")
            began = line.get("in", us)
            if isinstance(began, bool) or not isinstance(began, int) or began > us:
                raise UsageError(
                    f"{where}: 'in' must be the method's entry, an integer at most 'us', got {json.dumps(began)}"
                )
            at = line.get("at")
            if at not in ("enter", "exit", "load", "harness"):
                raise UsageError(f"{where}: 'at' must be enter, exit, load or harness, got {json.dumps(at)}")
            p = line.get("p")
            if p is not None and not (isinstance(p, dict) and isinstance(p.get("tp"), str)):
                raise UsageError(f"{where}: 'p' must be a partition's state naming it (\"tp\")")
            if ev == "harness.crash" and line.get("kind") not in CRASH_KINDS:
                raise UsageError(
                    f"{where}: harness.crash: kind {json.dumps(line.get('kind'))} is none of {', '.join(CRASH_KINDS)}"
                )
            yield Recorded(where, node, us, ev, at, p, line)


def _node_of(name: Path, run: dict) -> int:
    stem = name.stem
    if stem == "controller":
        return run["controller"]
    if stem.startswith("broker-") and stem[7:].isdigit():
        return int(stem[7:])
    raise UsageError(f"{name}: not a node's event file (broker-B.jsonl, controller.jsonl)")


def summary(path: str | os.PathLike) -> str:
    """One line on a recording: its events per node, checked well-formed (UsageError if not)."""
    run, events = iter_recording(path)
    nodes: dict[int, int] = {}
    errors: list[str] = []
    first = last = None
    for r in events:  # read once, kept nowhere: a soak's recording is gigabytes
        first = r.us if first is None else first
        last = r.us
        if r.ev == "agent.error":
            errors.extend(agent_errors([r]))
        elif not r.ev.startswith("agent."):
            nodes[r.node] = nodes.get(r.node, 0) + 1
    per = ", ".join(
        f"{'controller' if n == run['controller'] else f'broker {n}'} {c}" for n, c in sorted(nodes.items())
    )
    span = (last - first) / 1e6 if first is not None else 0.0
    return (
        f"recorded {sum(nodes.values())} events of Apache Kafka {run['kafka']} in {path} over {span:.1f} s "
        f"({per}), well-formed" + (f"; the agent could not hook: {'; '.join(errors)}" if errors else "")
    )


def agent_errors(events: list[Recorded]) -> list[str]:
    """The agent's own failures to hook a class (a release it does not know): each with where it was read."""
    return [f"{r.where}: {r.line.get('class')}: {r.line.get('error')}" for r in events if r.ev == "agent.error"]


__all__ = [
    "AGENT",
    "EVENTS",
    "RUN_FILE",
    "Recorded",
    "Recording",
    "agent_errors",
    "summary",
    "cut_unfinished_line",
    "is_recording",
    "iter_recording",
    "node_file",
    "read_recording",
    "read_run",
]
