"""EventLog: the protocol events of a run that drives itself, one JSON line each, one file per node.

A run in the simulation's auto mode is driven by its own timers, so no harness knows which steps
it took. Each node writes what it did as the docs/steps.md step it corresponds to ("Runs nobody
drove: event logs" there), with the step's fields, the node, a per-node sequence number ``seq``, a
clock ``lc`` that orders events consistently with causality (the simulation's global event
counter), the node's clock ``t`` in ms, ``msg`` = [sender, correlation id] on an event that
handles a received message (what ties a receive to its send),
``corr`` on an event that sent a request, and ``state``: what the step left on that node (a
broker's LEO, HW, leader, leader epoch, ISR view, partition epoch, last epoch in its log, the ISR
change it has in flight; the controller's leader, epochs, ISR, ELR and fenced brokers), so a
validator checks state as well as order.

Every file starts with a header line naming the protocol variant and the cluster config; the
nodes' files together are one run. ``isrcheck validate`` reads them. Logging is off unless a node is
given an ``EventLog`` (its ``events`` attribute is None otherwise), so step-by-step runs pay one
``is None`` test per hook.

Real processes (``isrcheck.impl.real``) each keep an ``EventLog`` of their own node: ``lc`` is
then a Lamport clock, which the transport carries on every frame (``stamp`` when it writes one,
``receive`` before the receiver handles it), and ``t`` the run's common clock (ms since the run
started, CLOCK_MONOTONIC, which every process of the host reads alike). Each line reaches the OS
as it is written, so a killed process loses no event it logged; a new incarnation of the node
(``resume``) goes on with the same file, its ``seq`` and its clock, after cutting off a line the
killed process left half written.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Callable, TextIO

FORMAT = "isrcheck-events"
VERSION = 1
CONTROLLER_FILE = "controller.jsonl"
# lines that are no step (docs/steps.md): a real node's evidence that its timers ran up to a time,
# a broker's log directory going offline, a parked acks=all produce expiring
TIMERS = "timers"
LOG_DIR_OFFLINE = "log_dir_offline"
PRODUCE_EXPIRED = "produce_expired"


def node_file(node: int, controller_id: int) -> str:
    """The file name of ``node``'s events in a log directory."""
    return CONTROLLER_FILE if node == controller_id else f"broker-{node}.jsonl"


_IDS: dict[tuple, str] = {}  # ISR views are few: each one's text is made once


def _ids(ids: tuple) -> str:
    text = _IDS.get(ids)
    if text is None:
        text = _IDS[ids] = "[" + ",".join(map(str, ids)) + "]"
    return text


def broker_state(p) -> str:
    """What a broker's event leaves on it, its view of the partition (a ``Partition``), as JSON
    text: built by hand, as every event writes one (json.dumps costs a tenth of a run)."""
    log = p.log
    pending = p.pending_isr
    return (
        f'{{"leo":{log.log_end_offset},"hw":{p.high_watermark},"leader":{p.leader},"epoch":{p.leader_epoch},'
        f'"isr":{_IDS.get(p.isr) or _ids(p.isr)},"pe":{p.partition_epoch},"last_epoch":{log.latest_epoch},'
        f'"pending":{"null" if pending is None else _IDS.get(pending) or _ids(pending)}}}'
    )


def controller_state(c, p) -> str:
    """What a controller's event leaves on it: partition ``p``'s registration and the fenced brokers."""
    return (
        f'{{"leader":{p.leader},"epoch":{p.leader_epoch},"isr":{_ids(p.isr)},"pe":{p.partition_epoch},'
        f'"elr":{_ids(p.elr)},"fenced":{_ids(tuple(sorted(c.fenced)))}}}'
    )


DOWN = '{"alive":false}'  # the state a crash leaves


class EventLog:
    """Writes the events of the nodes it is given to ``directory`` (one ``.jsonl`` per node).

    ``now_ms`` is the nodes' clock (the runtime that builds the nodes may set it later). Every
    event's ``lc`` comes from one counter shared by the nodes written here: in one process, a total
    order consistent with causality; across processes, a Lamport clock (``stamp``, ``receive``).
    ``header`` (protocol, config) starts every file, which a run writes anew; with ``resume`` a
    node's existing file is continued (a restarted process), and with ``line_buffered`` each line
    is written through to the OS at once (a process that may be killed)."""

    def __init__(
        self,
        directory: str,
        header: dict,
        controller_id: int,
        now_ms: Callable[[], int] | None = None,
        *,
        resume: bool = False,
        line_buffered: bool = False,
    ) -> None:
        os.makedirs(directory, exist_ok=True)
        self.directory = directory
        self.header = {"format": FORMAT, "version": VERSION, **header}
        self.now_ms = now_ms
        self.controller_id = controller_id
        self.resume = resume
        self._buffering = 1 if line_buffered else 1 << 16
        self._counter = 0
        self._files: dict[int, TextIO] = {}
        self._seq: dict[int, int] = {}
        self._states: dict[tuple[int, int], tuple] = {}  # (broker, partition) -> its last state and text
        self.events = 0

    # -- the Lamport clock of a node in its own process ---------------------------------------
    def stamp(self) -> int:
        """The clock a frame sent now carries: every event logged so far is at or below it."""
        return self._counter

    def receive(self, stamp: int) -> None:
        """A frame carrying ``stamp`` arrived: what it causes is logged after what caused it."""
        if stamp > self._counter:
            self._counter = stamp

    def _file(self, node: int) -> TextIO:
        f = self._files.get(node)
        if f is None:
            path = os.path.join(self.directory, node_file(node, self.controller_id))
            last = continue_file(path) if self.resume else None
            if last is None:  # a run starts anew
                f = open(path, "w", encoding="utf-8", buffering=self._buffering)
                f.write(json.dumps({**self.header, "node": node}, sort_keys=True) + "\n")
                self._seq[node] = 0
            else:
                f = open(path, "a", encoding="utf-8", buffering=self._buffering)
                self._seq[node] = last[0]
                self._counter = max(self._counter, last[1])
            self._files[node] = f
        return f

    def emit(
        self,
        node: int,
        step: str,
        state: str,
        fields: dict | None = None,
        msg: tuple[int, int] | None = None,
        corr: int | None = None,
    ) -> None:
        """One event of ``node``: docs/steps.md's ``step`` with ``fields``, the ``state`` it left
        (JSON text, see ``broker_state``). Built by hand: every event of a run comes through here."""
        f = self._files.get(node) or self._file(node)
        seq = self._seq[node] + 1
        self._seq[node] = seq
        lc = self._counter = self._counter + 1
        text = f'{{"node":{node},"seq":{seq},"lc":{lc},"t":{self.now_ms()},"step":"{step}"'
        if fields:
            for key, value in fields.items():
                text += (
                    f',"{key}":{value}'
                    if type(value) is int
                    else f',"{key}":{json.dumps(value, separators=(",", ":"))}'
                )
        if msg is not None:
            text += f',"msg":[{msg[0]},{msg[1]}]'
        if corr is not None:
            text += f',"corr":{corr}'
        f.write(f'{text},"state":{state}}}\n')
        self.events += 1

    def timers(self, node: int, due: int) -> None:
        """A ``timers`` line: ``node``'s own timer set for ``due`` ms ran now, so every timer it set
        for before ``due`` has run (its evidence of running on time)."""
        self.mark(node, TIMERS, f'"due":{due}')

    def log_dir_offline(self, node: int, error: str) -> None:
        """A ``log_dir_offline`` line: ``node``'s log directory went offline with ``error`` (an
        errno name) now, before the broker stops serving it."""
        self.mark(node, LOG_DIR_OFFLINE, f'"error":"{error}"')

    def produce_expired(self, p, required_offset: int) -> None:
        """A ``produce_expired`` line: the acks=all batch ending at ``required_offset`` that partition
        ``p``'s leader parked has expired (answered REQUEST_TIMED_OUT), as ``broker`` names ``p``."""
        if p.name is not None:
            self.mark(p.broker_id, PRODUCE_EXPIRED, f'"tp":"{p.name}","leo":{required_offset}')
        elif p.partition_id == 0:
            self.mark(p.broker_id, PRODUCE_EXPIRED, f'"leo":{required_offset}')

    def mark(self, node: int, kind: str, fields: str) -> None:
        """A line of ``node``'s file that is no step (docs/steps.md): what the timeliness
        properties read, ``fields`` as JSON members."""
        f = self._files.get(node) or self._file(node)
        seq = self._seq[node] = self._seq[node] + 1
        lc = self._counter = self._counter + 1
        f.write(f'{{"node":{node},"seq":{seq},"lc":{lc},"t":{self.now_ms()},"step":"{kind}",{fields}}}\n')

    def broker(
        self, p, step: str, fields: dict | None = None, msg: tuple[int, int] | None = None, corr: int | None = None
    ) -> None:
        """An event of the broker hosting partition ``p``: of its first partition in a single-partition
        run; of every partition, named by ``tp``, where the broker hosts many (a Kafka cluster)."""
        if p.name is not None:
            self.emit(p.broker_id, step, self._state(p), {"tp": p.name, **(fields or {})}, msg, corr)
        elif p.partition_id == 0:
            self.emit(p.broker_id, step, self._state(p), fields, msg, corr)

    def _state(self, p) -> str:
        """``broker_state(p)``, its text made again only when it changed since the partition's last
        event (most events of a busy partition leave what the one before left)."""
        log = p.log
        key = (
            log.log_end_offset,
            p.high_watermark,
            p.leader,
            p.leader_epoch,
            p.isr,
            p.partition_epoch,
            log.latest_epoch,
            p.pending_isr,
        )
        where = (p.broker_id, p.partition_id)
        last = self._states.get(where)
        if last is not None and last[0] == key:
            return last[1]
        text = broker_state(p)
        self._states[where] = (key, text)
        return text

    def controller(
        self, c, step: str, fields: dict | None = None, msg: tuple[int, int] | None = None, partition=None
    ) -> None:
        """An event of the controller on ``partition`` (a PartitionRegistration), or on every
        partition (a broker's fencing, registration, unfencing belongs to each one's history)."""
        if not c.kafka_metadata:
            if partition is None or partition.partition_id == 0:
                self.emit(self.controller_id, step, controller_state(c, c.partitions[0]), fields, msg)
            return
        for p in [p for p in c.partitions if not p.deleted] if partition is None else (partition,):
            self.emit(
                self.controller_id, step, controller_state(c, p), {"tp": f"{p.topic}-{p.index}", **(fields or {})}, msg
            )

    def describe_partitions(self, replicas: dict[str, tuple[int, ...]]) -> None:
        """Name each partition's replicas, in order, in the header of files written from now on (the
        controller's, before its first event): a validator reads each partition with them."""
        self.header = {**self.header, "partitions": {tp: list(r) for tp, r in replicas.items()}}
        self._file(self.controller_id)  # its header now, whether or not it logs an event

    def flush(self) -> None:
        for f in self._files.values():
            f.flush()

    def close(self) -> None:
        for f in self._files.values():
            f.close()
        self._files.clear()


def continue_file(path: str) -> tuple[int, int] | None:
    """(seq, lc) of the last event of the log at ``path`` ((0, 0) after its header alone), after
    cutting off a last line its killed writer left unfinished; None if there is no log there."""
    try:
        size = os.path.getsize(path)
    except FileNotFoundError:
        return None
    with open(path, "rb+") as f:
        chunk = 1 << 16
        while True:  # the last two newlines: the end of the last whole line, and its start
            start = max(0, size - chunk)
            f.seek(start)
            tail = f.read(size - start)
            end = tail.rfind(b"\n")
            begin = tail.rfind(b"\n", 0, end) if end >= 0 else -1
            if begin >= 0 or start == 0:
                break
            chunk *= 4
        if end < 0:  # not even a whole header line
            f.truncate(0)
            return None
        f.truncate(start + end + 1)
    line = json.loads(tail[begin + 1 : end])
    return (line["seq"], line["lc"]) if "seq" in line else (0, 0)


def run_header(config) -> dict:
    """The header of a run's files: the protocol variant and its ``ClusterConfig``, in ms."""
    return {"protocol": config.protocol, "config": dataclasses.asdict(config)}


__all__ = [
    "EventLog",
    "FORMAT",
    "TIMERS",
    "LOG_DIR_OFFLINE",
    "PRODUCE_EXPIRED",
    "VERSION",
    "node_file",
    "continue_file",
    "run_header",
    "DOWN",
    "broker_state",
    "controller_state",
]
