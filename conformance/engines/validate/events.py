"""Reading an event log (isrcheck.impl.eventlog): the nodes' files, checked and merged in causal order.

A log is a directory of ``*.jsonl`` files, one per node, or one ``.jsonl`` file. Each file starts
with a header line (format, version, protocol, cluster config); every other line is one event.
Anything malformed is a ``UsageError`` naming the file and line (exit code 2), except a last line
left unfinished (no newline, not JSON): the process writing it was killed there, and its log ends
before it, as a crash ends it. The events of all nodes are merged by their time ``t`` (one clock
for every node of a run), ties by their clock ``lc`` (the simulation's global event counter, or
each process's Lamport clock), then by node and sequence: each order puts a send before its
receive, and the time order is also the one the nodes' timers saw.

A log of many partitions (a Kafka cluster: events name their partition ``tp``, the controller's
header names each one's replicas) is read as one trace per partition (``partition_traces``), as
the model is one partition: its events and the events of no partition (a broker's crash), with
the brokers renamed so that the partition's first replica is the model's broker 0, its second
broker 1, and so on (the order in which Kafka's election prefers them).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace

from isrcheck.conformance.vocabulary import UsageError, read_lines
from isrcheck.model import ConfigError, ModelConfig
from isrcheck.model.alphabet import (
    CHECKPOINT_HW,
    CONSUME,
    CONTROLLED_SHUTDOWN,
    CRASH,
    DELIVER_LEADER_AND_ISR,
    DISK_IO,
    ELECT,
    EXPAND_ISR,
    FAIL_DISK,
    FENCE,
    FLUSH,
    HANDLE_ALTER_PARTITION,
    HANDLE_ALTER_PARTITION_RESPONSE,
    HANDLE_FETCH,
    HANDLE_FETCH_RESPONSE,
    LOSE_DISK,
    PRODUCE,
    READ_FETCH,
    READ_FETCH_HW,
    REGISTER,
    REMOVE_FETCHER,
    RESTART,
    SEND_FETCH,
    SHRINK_ISR,
    UNFENCE,
    UPDATE_METADATA_CACHE,
)

FORMAT = "isrcheck-events"  # the writer's (isrcheck.impl.eventlog.FORMAT), read, not imported: a log is data
VERSION = 1
# step -> the fields it needs besides the common ones
STEP_FIELDS = {
    PRODUCE: ("replica", "acks", "records"),
    CONSUME: ("replica",),
    SEND_FETCH: ("replica", "max_batches"),  # a stale fetcher's also names its tag, stale_fetcher
    READ_FETCH: ("replica",),  # split_fetch_handling: a leader's read of a fetch, its handle_fetch later
    READ_FETCH_HW: ("replica",),  # split_fetch_handling: its HW alone, read_fetch its LEO and batches
    HANDLE_FETCH: ("replica",),
    HANDLE_FETCH_RESPONSE: ("replica",),
    DELIVER_LEADER_AND_ISR: ("replica", "message"),
    REMOVE_FETCHER: ("replica",),  # split_become_follower: a new follower's old fetcher replaced
    UPDATE_METADATA_CACHE: ("replica",),  # metadata_cache: its state holds the cached_broker_epochs set
    SHRINK_ISR: ("replica",),
    EXPAND_ISR: ("replica",),
    HANDLE_ALTER_PARTITION: ("replica", "error"),
    HANDLE_ALTER_PARTITION_RESPONSE: ("replica",),
    "lost_alter_partition": ("replica", "leader_epoch"),
    ELECT: ("replica",),
    FENCE: ("replica",),
    UNFENCE: ("replica",),
    "resend_leader_and_isr": ("replica",),
    REGISTER: ("replica",),
    RESTART: ("replica",),
    CRASH: ("replica", "kind"),
    LOSE_DISK: ("replica",),
    FAIL_DISK: ("replica", "io"),
    FLUSH: ("replica",),
    CHECKPOINT_HW: ("replica",),
    CONTROLLED_SHUTDOWN: ("replica",),
}
_COMMON = ("node", "seq", "lc", "t", "step", "state")
# lines that are no step (docs/steps.md), read apart from the events (``Trace.marks``) for
# timeliness.py: a real node's ``timers`` line (its timers ran up to ``due``), a broker's
# ``log_dir_offline`` (its log directory went offline with ``error``), a leader's
# ``produce_expired`` (its parked acks=all batch ending at ``leo`` expired); kind -> its own field
TIMERS = "timers"
LOG_DIR_OFFLINE = "log_dir_offline"
PRODUCE_EXPIRED = "produce_expired"
MARKS = {TIMERS: "due", LOG_DIR_OFFLINE: "error", PRODUCE_EXPIRED: "leo"}
HALTS = (CRASH, FAIL_DISK)  # the events that stop a broker process


@dataclass(frozen=True)
class Event:
    """One logged event and where it was read."""

    where: str  # "FILE:LINE"
    node: int
    seq: int
    lc: int
    t: int
    step: str
    fields: dict = field(hash=False)
    state: dict = field(hash=False)
    msg: tuple | None = None
    corr: int | None = None
    tp: str | None = None  # the partition, in a log of many

    @property
    def crash_kind(self) -> str:
        """The kind of crash a halt amounts to: a ``crash``'s own; a disk failure is ``fail_disk``'s
        halt without its fence (docs/steps.md, "Runs nobody drove"), a process crash, or a power
        loss after a failed fsync, whose dirty pages the kernel dropped."""
        if self.step == FAIL_DISK:
            return "power" if self.fields["io"].startswith("fsync") else "process"
        return self.fields["kind"]

    def describe(self) -> str:
        shown = {k: v for k, v in self.fields.items()}
        args = ", ".join(f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in shown.items())
        who = "controller" if self.node >= 1000 else f"broker {self.node}"
        on = f" of {self.tp}" if self.tp is not None else ""
        return f"{who} #{self.seq} at {self.t} ms: {self.step}{on}({args}) [{self.where}]"


@dataclass
class Trace:
    """A run's merged events and the model config its header names."""

    config: ModelConfig
    protocol: str
    events: list[Event]
    files: list[str]
    partitions: dict = field(default_factory=dict)  # tp -> its replicas in order (a log of many partitions)
    renamed: dict | None = None  # broker id -> model broker, in one partition's trace
    apache_kafka: bool = False  # Apache Kafka's translated events: KRaft's composites (unlogged.py) apply
    settings: dict = field(default_factory=dict)  # the header's cluster config as logged (ms), for timeliness.py
    marks: list[Event] = field(default_factory=list)  # the lines that are no step (MARKS), merged as the events


def _files(path: str) -> list[str]:
    if os.path.isdir(path):
        names = sorted(n for n in os.listdir(path) if n.endswith(".jsonl"))
        if not names:
            raise UsageError(f"{path}: no event log (*.jsonl) in this directory")
        return [os.path.join(path, n) for n in names]
    if not os.path.exists(path):
        raise UsageError(f"{path}: no such file or directory")
    return [path]


def model_config(header: dict, where: str) -> ModelConfig:
    """The model's config of a run: a tick is a millisecond of the run's clock."""
    c = header.get("config")
    if not isinstance(c, dict):
        raise UsageError(f"{where}: header: 'config' must be an object")
    try:
        return ModelConfig(
            protocol=header.get("protocol"),
            replicas=c["replicas"],
            min_insync_replicas=c["min_insync_replicas"],
            unclean_leader_election_enable=c["unclean_leader_election_enable"],
            replica_lag_time_max_ticks=c["replica_lag_time_max_ms"],
            request_timeout_ticks=c["request_timeout_ms"],
            flush_messages=c["flush_messages"],
            unclean_shutdown_detection=c.get("unclean_shutdown_detection", "page-cache"),
            split_fetch_handling=c.get("split_fetch_handling", False),
            split_become_follower=c.get("split_become_follower", False),
            hw_waits_for_caught_up=c.get("hw_waits_for_caught_up", False),
            catch_up_at_previous_fetch=c.get("catch_up_at_previous_fetch", False),
            metadata_cache=c.get("metadata_cache", False),
            unfence_at_heartbeat=c.get("unfence_at_heartbeat", False),
            kraft_controlled_shutdown=c.get("kraft_controlled_shutdown", False),
        )
    except KeyError as exc:
        raise UsageError(f"{where}: header: config lacks {exc.args[0]!r}") from None
    except (ConfigError, TypeError) as exc:
        raise UsageError(f"{where}: header: {exc}") from None


def _int(line: dict, key: str, where: str) -> int:
    value = line.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"{where}: {key!r} must be an integer, got {json.dumps(value)}")
    return value


def _event(line: object, where: str, replicas: int) -> Event:
    """The event of one line. A well-formed line of the common kinds is checked at once; any other
    goes through ``_checked``, which names what is wrong (or reads what is rare)."""
    try:
        step, state = line["step"], line["state"]
        fields = {k: line[k] for k in STEP_FIELDS[step]}
        ints = (line["node"], line["seq"], line["lc"], line["t"], fields["replica"])
    except (KeyError, TypeError):
        return _checked(line, where, replicas)
    if step == PRODUCE and "timeout" in line:  # a parked acks=all batch's request timeout (timeliness.py)
        if type(line["timeout"]) is not int:
            return _checked(line, where, replicas)
        fields["timeout"] = line["timeout"]
    msg, tp = line.get("msg"), line.get("tp")
    if (
        type(state) is not dict
        or not all(type(x) is int for x in ints)
        or not 0 <= ints[4] < replicas
        or (
            msg is not None
            and not (type(msg) is list and len(msg) == 2 and type(msg[0]) is int and type(msg[1]) is int)
        )
        or (tp is not None and type(tp) is not str)
        or (step in (HANDLE_FETCH, READ_FETCH) and ("batches" in line or "upto" in line))
        or (step == SEND_FETCH and "stale_fetcher" in line)
        or (step == EXPAND_ISR and "follower" in line)
        or step == FAIL_DISK
    ):  # rare, and its io is checked against the contract's list
        return _checked(line, where, replicas)
    return Event(
        where,
        ints[0],
        ints[1],
        ints[2],
        ints[3],
        step,
        fields,
        state,
        tuple(msg) if msg else None,
        line.get("corr"),
        tp,
    )


def _checked(line: object, where: str, replicas: int) -> Event:
    if not isinstance(line, dict):
        raise UsageError(f"{where}: an event must be a JSON object")
    missing = [k for k in _COMMON if k not in line]
    if missing:
        raise UsageError(f"{where}: event lacks {', '.join(repr(k) for k in missing)}")
    step = line["step"]
    if step not in STEP_FIELDS:
        raise UsageError(f"{where}: unknown step {json.dumps(step)} (known: {', '.join(STEP_FIELDS)})")
    lacks = [k for k in STEP_FIELDS[step] if k not in line]
    if lacks:
        raise UsageError(f"{where}: {step} lacks {', '.join(repr(k) for k in lacks)}")
    if not isinstance(line["state"], dict):
        raise UsageError(f"{where}: 'state' must be an object")
    replica = _int(line, "replica", where)
    if not (0 <= replica < replicas or (step == ELECT and replica == -1)):
        raise UsageError(f"{where}: replica {replica} is not a broker of this {replicas}-broker run")
    msg = line.get("msg")
    if msg is not None and not (isinstance(msg, list) and len(msg) == 2 and all(isinstance(x, int) for x in msg)):
        raise UsageError(f"{where}: 'msg' must be [sender, correlation id]")
    tp = line.get("tp")
    if tp is not None and not isinstance(tp, str):
        raise UsageError(f"{where}: 'tp' must be a partition's name (topic-index)")
    fields = {k: line[k] for k in STEP_FIELDS[step]}
    if step == FAIL_DISK and fields["io"] not in DISK_IO:
        raise UsageError(f"{where}: fail_disk: io {json.dumps(fields['io'])} is none of {', '.join(DISK_IO)}")
    for cut in ("batches", "upto"):  # a response cut by bytes: its whole batches, or the offset they end at
        if step in (HANDLE_FETCH, READ_FETCH) and cut in line:
            fields[cut] = _int(line, cut, where)
    if step == PRODUCE and "timeout" in line:
        fields["timeout"] = _int(line, "timeout", where)
    if step == SEND_FETCH and "stale_fetcher" in line:  # split_become_follower: [leader, leader epoch]
        tag = line["stale_fetcher"]
        if not (isinstance(tag, list) and len(tag) == 2 and all(type(x) is int for x in tag)):
            raise UsageError(f"{where}: 'stale_fetcher' must be [leader, leader epoch]")
        fields["stale_fetcher"] = tag
    if step == EXPAND_ISR and "follower" in line:  # the follower it adds (Kafka's newInSyncReplicaId)
        fields["follower"] = _int(line, "follower", where)
        if not 0 <= fields["follower"] < replicas:
            raise UsageError(f"{where}: follower {fields['follower']} is not a broker of this {replicas}-broker run")
    return Event(
        where,
        _int(line, "node", where),
        _int(line, "seq", where),
        _int(line, "lc", where),
        _int(line, "t", where),
        step,
        fields,
        line["state"],
        tuple(msg) if msg else None,
        line.get("corr"),
        tp,
    )


def read_trace(path: str) -> Trace:
    """The events of the log at ``path``, merged; UsageError on anything malformed."""
    files = _files(path)
    header0, events, partitions, marks = None, [], {}, []
    for name in files:
        header = None
        for number, text, ended in read_lines(name, "an event log"):
            where = f"{name}:{number}"
            if not text.strip():
                continue
            try:
                line = json.loads(text)
            except ValueError as exc:
                if not ended and header is not None:
                    break  # a killed writer's unfinished last line: the log ends before it
                raise UsageError(f"{where}: not a JSON line ({exc.msg})") from None
            except RecursionError:
                raise UsageError(f"{where}: not an event (arrays and objects nested too deep)") from None
            if header is None:
                if not isinstance(line, dict) or line.get("format") != FORMAT:
                    raise UsageError(
                        f"{where}: not an isrcheck event log (the first line must be its header "
                        f'with "format": "{FORMAT}")'
                    )
                if line.get("version") != VERSION:
                    raise UsageError(f"{where}: event log version {line.get('version')!r}, expected {VERSION}")
                header = line
                partitions.update(_partitions(line, where))
                if header0 is None:
                    header0 = (header, where, model_config(header, where))
                elif (header.get("protocol"), header.get("config")) != (
                    header0[0].get("protocol"),
                    header0[0].get("config"),
                ):
                    raise UsageError(f"{where}: header names another run than {header0[1]}")
                continue
            if isinstance(line, dict) and line.get("step") in MARKS:
                marks.append(_mark(line, where))
                continue
            events.append(_event(line, where, header0[2].replicas))
        if header is None:
            raise UsageError(f"{name}: empty event log (no header line)")
    events.sort(key=_order)
    marks.sort(key=_order)
    return Trace(
        header0[2],
        header0[0]["protocol"],
        events,
        files,
        partitions,
        apache_kafka=str(header0[0].get("source", "")).startswith("apache-kafka"),
        settings=header0[0]["config"],
        marks=marks,
    )


def _order(e: Event) -> tuple:
    return (e.t, e.lc, e.node, e.seq)


def _mark(line: dict, where: str) -> Event:
    """A line that is no step, as an event with its one field and no state."""
    kind = line["step"]
    node, seq, lc, t = (_int(line, k, where) for k in ("node", "seq", "lc", "t"))
    value = line.get("error") if kind == LOG_DIR_OFFLINE else _int(line, MARKS[kind], where)
    if kind == LOG_DIR_OFFLINE and not isinstance(value, str):
        raise UsageError(f"{where}: {kind} needs 'error', an errno name")
    tp = line.get("tp")
    if tp is not None and not isinstance(tp, str):
        raise UsageError(f"{where}: 'tp' must be a partition's name (topic-index)")
    return Event(where, node, seq, lc, t, kind, {MARKS[kind]: value}, {}, tp=tp)


def _partitions(header: dict, where: str) -> dict:
    named = header.get("partitions", {})
    if not isinstance(named, dict) or not all(
        isinstance(r, list) and all(isinstance(b, int) for b in r) for r in named.values()
    ):
        raise UsageError(f"{where}: header: 'partitions' must map each partition to its replicas")
    return {tp: tuple(r) for tp, r in named.items()}


def partition_traces(trace: Trace) -> list[tuple[str | None, Trace]]:
    """One trace per partition of a log of many (see the module docstring); the trace itself, as
    (None, trace), for a log of one."""
    named = sorted({e.tp for e in trace.events if e.tp is not None})
    if not named:
        return [(None, trace)]
    n = trace.config.replicas
    out = []
    for tp in named:
        replicas = trace.partitions.get(tp)
        if replicas is None or sorted(replicas) != list(range(n)):
            where = next(e.where for e in trace.events if e.tp == tp)
            raise UsageError(f'{where}: partition {tp}: no header names its {n} replicas ("partitions")')
        rename = {b: i for i, b in enumerate(replicas)}
        same = all(b == i for b, i in rename.items())
        events = [e if same else _renamed(e, rename) for e in trace.events if e.tp is None or e.tp == tp]
        marks = [e if same else replace(e, node=rename.get(e.node, e.node)) for e in trace.marks if e.tp in (None, tp)]
        out.append((tp, replace(trace, events=events, renamed=rename, marks=marks)))
    return out


_BROKER_SETS = ("isr", "pending", "elr", "fenced")  # the state's keys that hold brokers (and "leader")


def _renamed(e: Event, rename: dict) -> Event:
    """``e`` with its brokers renamed (the controller and clients keep their ids)."""

    def one(b):
        return rename.get(b, b) if isinstance(b, int) and b >= 0 else b

    def many(bs):
        return sorted(one(b) for b in bs) if isinstance(bs, list) else bs

    fields = dict(e.fields)
    fields["replica"] = one(fields["replica"])
    if "follower" in fields:
        fields["follower"] = one(fields["follower"])
    if isinstance(fields.get("message"), dict):
        m = fields["message"]
        fields["message"] = {**m, "leader": one(m.get("leader")), "isr": many(m.get("isr", []))}
    state = dict(e.state)
    if "leader" in state:
        state["leader"] = one(state["leader"])
    cached = state.get("cached_broker_epochs")
    if isinstance(cached, list) and len(cached) == len(rename):  # per broker id
        state["cached_broker_epochs"] = [cached[b] for b, _ in sorted(rename.items(), key=lambda kv: kv[1])]
    for k in _BROKER_SETS:
        if k in state:
            state[k] = many(state[k])
    msg = (one(e.msg[0]), e.msg[1]) if e.msg else None
    return Event(e.where, one(e.node), e.seq, e.lc, e.t, e.step, fields, state, msg, e.corr, e.tp)


__all__ = [
    "HALTS",
    "TIMERS",
    "LOG_DIR_OFFLINE",
    "PRODUCE_EXPIRED",
    "Event",
    "Trace",
    "read_trace",
    "partition_traces",
    "model_config",
    "STEP_FIELDS",
    "FORMAT",
]
