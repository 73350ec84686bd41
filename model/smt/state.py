"""The model's state as a flat dict of z3 terms, and the maps between it and ``State``.

Every field of ``model/state.py`` has keys here: integers stay z3 Ints (epochs, offsets, clocks,
ids), flags and membership sets (ISR, fenced brokers) are Bools per replica id, and what grows is
bounded by ``Bounds``: a log holds at most ``log`` entries, a FIFO at most its kind's capacity,
record ids run 1..``records``. Unused slots (past a log's end, past a FIFO's count, a pending
produce that is not there) hold 0 / False, so a state has exactly one encoding and the successor
of a transition is a function of its predecessor. Broker epochs (KIP-903) are per broker id: the
epochs a pending ISR change or an AlterPartition names for its members hold -1 (unknown, as in
``remote_broker_epoch``) for the brokers it does not name.
"""

from __future__ import annotations

from dataclasses import dataclass

import z3

from ..alphabet import MESSAGE_KINDS, NONE
from ..history import COUNTERS, History
from ..state import (
    AlterPartition,
    AlterPartitionResponse,
    Controller,
    Entry,
    FetchRequest,
    FetchResponse,
    HeldRead,
    LeaderAndIsr,
    Replica,
    State,
    fetch_state,
    last_fetch,
)

# Error codes and fetch response kinds the model uses, as integers.
ERRORS = (
    NONE,
    "NOT_LEADER_OR_FOLLOWER",
    "FENCED_LEADER_EPOCH",
    "UNKNOWN_LEADER_EPOCH",
    "OFFSET_OUT_OF_RANGE",
    "INVALID_UPDATE_VERSION",
    "INELIGIBLE_REPLICA",
)
KINDS = ("records", "diverging", "epoch_end", "error")
ERROR = {name: i for i, name in enumerate(ERRORS)}
KIND = {name: i for i, name in enumerate(KINDS)}


class OutOfBounds(ValueError):
    """A concrete state does not fit the encoding's bounds (a longer log, a fuller FIFO, a record
    id past the last), or an error code the encoding does not know."""


@dataclass(frozen=True)
class Bounds:
    """What the encoding holds: ``replicas``, log entries, record ids, and per message kind the
    FIFO capacity of each replica's queue."""

    replicas: int
    log: int
    records: int
    batch: int = 1
    fetch_requests: int = 2
    fetch_responses: int = 2
    leader_and_isr: int = 4
    alter_partition: int = 2
    alter_partition_responses: int = 2
    held_reads: bool = False  # a slot per follower for the read its leader holds (split_fetch_handling)
    stale_fetcher: bool = False  # per replica its stale fetcher's tag (split_become_follower)
    # per leader and follower the follower's last Fetch's LEO and time (catch_up_at_previous_fetch)
    prev_fetch: bool = False
    # per broker its metadata cache's broker epoch of each broker, -1 fenced (metadata_cache)
    metadata_cache: bool = False
    # per broker whether its registration awaits unfence, ``c.await<j>`` (unfence_at_heartbeat)
    unfence: bool = False
    # per broker whether it is in controlled shutdown (kraft_controlled_shutdown)
    controlled_shutdown: bool = False

    def capacity(self, field: str) -> int:
        return getattr(self, field)


# Per message kind (State field): its scalar fields, then its per-replica Bool set and, for fetch
# responses, its records. The order is the message NamedTuple's where it has the same field.
SCALARS = {
    "fetch_requests": ("leader", "lepoch", "off", "lfe", "qe", "mb", "be"),
    "fetch_responses": ("leader", "lepoch", "err", "kind", "hw", "ep", "end", "rstart", "rn", "bad1"),
    "leader_and_isr": ("leader", "lepoch", "pepoch", "reg"),
    "alter_partition": ("lepoch", "pepoch"),
    "alter_partition_responses": ("err", "lepoch", "pepoch", "rlepoch"),
}
HAS_ISR = ("leader_and_isr", "alter_partition", "alter_partition_responses")
ORPHANS = ("fetch_requests", "alter_partition")  # requests, orphaned by their sender's crash (a Bool)
QUEUES = tuple(MESSAGE_KINDS.values())
_REPLICA_INTS = ("len", "durable", "hw", "hwc", "leader", "lepoch", "pepoch", "eso", "trunc", "bepoch", "bad")
_REPLICA_BOOLS = ("alive", "pend", "plost", "unclean", "unreg")
HISTORY_COUNTERS = COUNTERS  # the fault counters (alphabet.FAULTS), in History's order
# the read of follower r's Fetch its leader holds (split_fetch_handling), ``held<r>.``: ``at1`` the
# holder + 1 (0 none), the read's fields (``ft`` its fetch_time, ``lr`` its leo_read), its records as
# a fetch response's (``rstart``, ``rn``, ``e<k>``...)
HELD_INTS = ("at1", "lepoch", "off", "be", "ft", "lr", "hw", "rstart", "rn", "bad1", "mb")
HELD_BOOLS = ("orphan", "det", "oo")  # oo: hw_only (read_fetch_hw), mb its max_batches
# a replica's stale fetcher (split_become_follower): ``stale`` and its (leader, leader epoch), 0s when none
STALE_KEYS = {"stale": True, "sfl": False, "sfe": False}


def _log_keys(p: str, b: Bounds) -> dict[str, bool]:
    """A log's slots under ``p``: each offset's leader epoch, record and batch base (Ints)."""
    return {f"{p}{f}{k}": False for k in range(b.log) for f in ("e", "rec", "base")}


def schema(b: Bounds) -> dict[str, bool]:
    """Every key of an encoded state, mapped to True for a Bool and False for an Int."""
    n, keys = b.replicas, {}
    for r in range(n):
        p = f"r{r}."
        keys.update({p + k: False for k in _REPLICA_INTS})
        keys.update({p + k: True for k in _REPLICA_BOOLS})
        if b.stale_fetcher:
            keys.update({p + k: is_bool for k, is_bool in STALE_KEYS.items()})
        keys.update(_log_keys(p, b))
        for j in range(n):
            keys.update(
                {
                    f"{p}isr{j}": True,
                    f"{p}pisr{j}": True,
                    f"{p}rleo{j}": False,
                    f"{p}lcu{j}": False,
                    f"{p}rbe{j}": False,
                    f"{p}pep{j}": False,
                }
            )
            if b.prev_fetch:  # last_fetch_leo, last_fetch_time
                keys.update({f"{p}lfl{j}": False, f"{p}lft{j}": False})
            if b.metadata_cache:  # cached_broker_epochs
                keys[f"{p}mc{j}"] = False
        for k in range(1, b.records + 1):
            keys.update({f"{p}pp{k}": True, f"{p}ppoff{k}": False, f"{p}ppdl{k}": False, f"{p}ppn{k}": False})
    keys.update({"c.leader": False, "c.lepoch": False, "c.pepoch": False, "c.lkl": False})
    for j in range(n):
        keys.update({f"c.isr{j}": True, f"c.fenced{j}": True, f"c.bep{j}": False, f"c.elr{j}": True})
        if b.unfence:  # awaiting_unfence
            keys[f"c.await{j}"] = True
        if b.controlled_shutdown:  # in_controlled_shutdown
            keys[f"c.ics{j}"] = True
    for q in QUEUES:
        for r in range(n):
            keys[f"{q}{r}.n"] = False
            for slot in range(b.capacity(q)):
                p = f"{q}{r}.{slot}."
                keys.update({p + f: False for f in SCALARS[q]})
                if q in HAS_ISR:
                    keys.update({f"{p}isr{j}": True for j in range(n)})
                if q == "alter_partition":
                    keys.update({f"{p}ep{j}": False for j in range(n)})
                if q in ORPHANS:
                    keys[p + "orphan"] = True
                if q == "fetch_responses":
                    keys.update(_log_keys(p, b))
    if b.held_reads:
        for r in range(n):
            p = f"held{r}."
            keys.update({p + k: False for k in HELD_INTS})
            keys.update({p + k: True for k in HELD_BOOLS})
            keys.update(_log_keys(p, b))
    keys.update({"now": False, "produced": False, "maxhw": False, "regressed": True})
    keys.update({"h." + c: False for c in HISTORY_COUNTERS})
    for k in range(1, b.records + 1):
        keys.update({f"acked{k}": True, f"ackoff{k}": False})
    for o in range(b.log):
        for k in range(1, b.records + 1):
            keys[f"cons{o}_{k}"] = True
    return keys


def fresh(b: Bounds, prefix: str) -> dict:
    """A state of fresh z3 constants named ``prefix`` + key."""
    return {k: (z3.Bool if is_bool else z3.Int)(prefix + k) for k, is_bool in schema(b).items()}


def constant(b: Bounds, values: dict) -> dict:
    """The z3 values of ``embed``'s Python values."""
    return {k: _value(v) for k, v in values.items()}


_VALUES: dict = {}


def _value(v):
    """A z3 value, shared (building one costs more than a state's other work)."""
    key = (type(v), v)
    term = _VALUES.get(key)
    if term is None:
        term = z3.BoolVal(v) if isinstance(v, bool) else z3.IntVal(v)
        if len(_VALUES) < 4096:
            _VALUES[key] = term
    return term


# -- State -> Python values by key ---------------------------------------------------------------------


def embed(b: Bounds, s: State) -> dict:
    """The encoding of ``s`` as Python ints and bools by key; OutOfBounds if it does not fit."""
    n = b.replicas
    if len(s.replicas) != n:
        raise OutOfBounds(f"{len(s.replicas)} replicas, the encoding holds {n}")
    out = {}
    for r, rep in enumerate(s.replicas):
        p = f"r{r}."
        _log(out, p, rep.log, b)
        out.update(
            {
                p + "durable": rep.durable,
                p + "hw": rep.hw,
                p + "hwc": rep.hw_checkpoint,
                p + "leader": rep.leader,
                p + "lepoch": rep.leader_epoch,
                p + "pepoch": rep.partition_epoch,
                p + "eso": rep.epoch_start_offset,
                p + "trunc": rep.truncating_epoch,
                p + "alive": rep.alive,
                p + "pend": rep.pending_isr is not None,
                p + "plost": rep.power_lost,
                p + "bepoch": rep.broker_epoch,
                p + "unclean": rep.unclean_shutdown,
                p + "unreg": rep.unregistered,
                p + "bad": rep.bad_batch,
            }
        )
        if b.stale_fetcher:
            tag = rep.stale_fetcher or (0, 0)
            out.update({p + "stale": bool(rep.stale_fetcher), p + "sfl": tag[0], p + "sfe": tag[1]})
        elif rep.stale_fetcher:
            raise OutOfBounds("a stale fetcher (split_become_follower), the encoding holds none")
        _set(out, p + "isr", rep.isr, n)
        _set(out, p + "pisr", rep.pending_isr or (), n)
        _member_epochs(out, p + "pep", rep.pending_isr or (), rep.pending_epochs, n)
        for j in range(n):
            out[f"{p}rleo{j}"], out[f"{p}lcu{j}"] = rep.remote_leo[j], rep.last_caught_up[j]
            out[f"{p}rbe{j}"] = rep.remote_broker_epoch[j]
            if b.prev_fetch:
                out[f"{p}lfl{j}"], out[f"{p}lft{j}"] = last_fetch(rep, j)
        if rep.last_fetch_leo and not b.prev_fetch:
            raise OutOfBounds("a last Fetch's LEO (catch_up_at_previous_fetch), the encoding holds none")
        if b.metadata_cache != bool(rep.cached_broker_epochs):
            raise OutOfBounds(
                "a metadata cache (metadata_cache): "
                + ("the state holds none" if b.metadata_cache else "the encoding holds none")
            )
        for j, epoch in enumerate(rep.cached_broker_epochs):
            out[f"{p}mc{j}"] = epoch
        for k in range(1, b.records + 1):
            out.update({f"{p}pp{k}": False, f"{p}ppoff{k}": 0, f"{p}ppdl{k}": 0, f"{p}ppn{k}": 0})
        for record, offset, deadline, records in rep.pending_produces:
            _record_id(record + records - 1, b)
            out.update(
                {
                    f"{p}pp{record}": True,
                    f"{p}ppoff{record}": offset,
                    f"{p}ppdl{record}": deadline,
                    f"{p}ppn{record}": records,
                }
            )
    _held_reads(out, s, b)
    c = s.controller
    out.update(
        {"c.leader": c.leader, "c.lepoch": c.leader_epoch, "c.pepoch": c.partition_epoch, "c.lkl": c.last_known_leader}
    )
    _set(out, "c.isr", c.isr, n)
    _set(out, "c.fenced", c.fenced, n)
    _set(out, "c.elr", c.elr, n)
    if b.unfence:
        _set(out, "c.await", c.awaiting_unfence, n)
    elif c.awaiting_unfence:
        raise OutOfBounds("a registration awaiting unfence (unfence_at_heartbeat), the encoding holds none")
    if b.controlled_shutdown:
        _set(out, "c.ics", c.in_controlled_shutdown, n)
    elif c.in_controlled_shutdown:
        raise OutOfBounds("brokers in controlled shutdown (kraft_controlled_shutdown), the encoding holds none")
    for j in range(n):
        out[f"c.bep{j}"] = c.broker_epochs[j]
    for q in QUEUES:
        for r, queue in enumerate(getattr(s, q)):
            cap = b.capacity(q)
            if len(queue) > cap:
                raise OutOfBounds(f"{len(queue)} messages in {q}[{r}], the encoding holds {cap}")
            out[f"{q}{r}.n"] = len(queue)
            for slot in range(cap):
                _message(out, f"{q}{r}.{slot}.", q, queue[slot] if slot < len(queue) else None, b)
    h = s.history
    out.update(
        {"now": s.now, "produced": h.records_produced, "maxhw": h.max_consumer_hw, "regressed": h.consumer_hw_regressed}
    )
    for name in HISTORY_COUNTERS:
        out["h." + name] = getattr(h, name)
    for k in range(1, b.records + 1):
        out[f"acked{k}"], out[f"ackoff{k}"] = False, 0
        for o in range(b.log):
            out[f"cons{o}_{k}"] = False
    for offset, record in h.acked:
        _record_id(record, b)
        out[f"acked{record}"], out[f"ackoff{record}"] = True, offset
    for offset, record in h.consumed:
        _record_id(record, b)
        if not 0 <= offset < b.log:
            raise OutOfBounds(f"a read at offset {offset}, the encoding holds {b.log}")
        out[f"cons{offset}_{record}"] = True
    return out


def _held_reads(out: dict, s: State, b: Bounds) -> None:
    """Each follower's slot for the read its leader holds, zeros where none is held."""
    held = {h.follower: (d, h) for d, rep in enumerate(s.replicas) for h in rep.held_reads}
    if not b.held_reads:
        if held:
            raise OutOfBounds("a held read (split_fetch_handling), the encoding holds none")
        return
    for r in range(b.replicas):
        p = f"held{r}."
        d, h = held.get(r, (-1, None))
        h = h or HeldRead(0, 0, 0, 0, 0, 0, 0, ())
        out.update(
            {
                p + "at1": d + 1,
                p + "lepoch": h.leader_epoch,
                p + "off": h.fetch_offset,
                p + "be": h.broker_epoch,
                p + "ft": h.fetch_time,
                p + "lr": h.leo_read,
                p + "hw": h.hw,
                p + "rstart": h.records[0].offset if h.records else 0,
                p + "bad1": h.bad_batch + 1,
                p + "orphan": h.orphan,
                p + "det": h.detached,
                p + "oo": h.hw_only,
                p + "mb": h.max_batches,
            }
        )
        _log(out, p, tuple(Entry(k, e.epoch, e.record, e.base) for k, e in enumerate(h.records)), b)
        out[p + "rn"] = out.pop(p + "len")


def _record_id(record: int, b: Bounds) -> None:
    if not 1 <= record <= b.records:
        raise OutOfBounds(f"record id {record}, the encoding holds 1..{b.records}")


def _log(out: dict, p: str, log: tuple, b: Bounds) -> None:
    if len(log) > b.log:
        raise OutOfBounds(f"a log of {len(log)} entries, the encoding holds {b.log}")
    out[p + "len"] = len(log)
    for k in range(b.log):
        e = log[k] if k < len(log) else Entry(k, 0, 0, 0)
        out[f"{p}e{k}"], out[f"{p}rec{k}"], out[f"{p}base{k}"] = e.epoch, e.record, e.base


def _set(out: dict, p: str, members: tuple, n: int) -> None:
    for j in range(n):
        out[f"{p}{j}"] = j in members


def _member_epochs(out: dict, p: str, members: tuple, epochs: tuple, n: int) -> None:
    """The broker epoch named for each member (KIP-903 NewIsrWithEpochs), -1 for the others."""
    named = dict(zip(members, epochs))
    for j in range(n):
        out[f"{p}{j}"] = named.get(j, -1)


def _message(out: dict, p: str, q: str, m, b: Bounds) -> None:
    n = b.replicas
    if q == "fetch_requests":
        m = m or FetchRequest(0, 0, 0, 0, 0, 0, 0)
        out.update(zip((p + f for f in SCALARS[q]), m))
        out[p + "orphan"] = m.orphan
    elif q == "fetch_responses":
        m = m or FetchResponse(0, 0, NONE, "records", (), 0, 0, 0)
        if m.error not in ERROR:
            raise OutOfBounds(f"error code {m.error} unknown to the encoding")
        out.update(
            {
                p + "leader": m.leader,
                p + "lepoch": m.leader_epoch,
                p + "err": ERROR[m.error],
                p + "kind": KIND[m.kind],
                p + "hw": m.leader_hw,
                p + "ep": m.epoch,
                p + "end": m.end_offset,
                p + "rstart": m.records[0].offset if m.records else 0,
                p + "bad1": m.bad_batch + 1,
            }
        )  # 0 none: an empty slot's zero
        shifted = tuple(Entry(k, e.epoch, e.record, e.base) for k, e in enumerate(m.records))
        _log(out, p, shifted, b)
        out[p + "rn"] = out.pop(p + "len")
    elif q == "leader_and_isr":
        m = m or LeaderAndIsr(0, 0, (), 0)
        out.update(
            {
                p + "leader": m.leader,
                p + "lepoch": m.leader_epoch,
                p + "pepoch": m.partition_epoch,
                p + "reg": int(m.registration),
            }
        )
        _set(out, p + "isr", m.isr, n)
    elif q == "alter_partition":
        out.update({p + "lepoch": m.leader_epoch if m else 0, p + "pepoch": m.partition_epoch if m else 0})
        _set(out, p + "isr", m.isr if m else (), n)
        if m:
            _member_epochs(out, p + "ep", m.isr, m.broker_epochs, n)
        else:
            out.update({f"{p}ep{j}": 0 for j in range(n)})
        out[p + "orphan"] = bool(m and m.orphan)
    else:
        m = m or AlterPartitionResponse(NONE, 0, (), 0, 0)
        if m.error not in ERROR:
            raise OutOfBounds(f"error code {m.error} unknown to the encoding")
        out.update(
            {
                p + "err": ERROR[m.error],
                p + "lepoch": m.leader_epoch,
                p + "pepoch": m.partition_epoch,
                p + "rlepoch": m.request_leader_epoch,
            }
        )
        _set(out, p + "isr", m.isr, n)


# -- values by key -> State ------------------------------------------------------------------------------


def values_of(model: z3.ModelRef, s: dict) -> dict:
    """The Python values a z3 model gives the terms of an encoded state."""
    out = {}
    for k, term in s.items():
        v = model.eval(term, model_completion=True)
        out[k] = z3.is_true(v) if z3.is_bool(v) else v.as_long()
    return out


def decode(b: Bounds, v: dict) -> State:
    """The ``State`` whose ``embed`` is ``v``."""
    n = b.replicas
    held: dict[int, list] = {}
    for f in range(n if b.held_reads else 0):
        p = f"held{f}."
        if v[p + "at1"] > 0:
            held.setdefault(v[p + "at1"] - 1, []).append(
                HeldRead(
                    f,
                    v[p + "lepoch"],
                    v[p + "off"],
                    v[p + "be"],
                    v[p + "ft"],
                    v[p + "lr"],
                    v[p + "hw"],
                    _entries(v, p, v[p + "rn"], v[p + "rstart"]),
                    v[p + "bad1"] - 1,
                    v[p + "orphan"],
                    v[p + "det"],
                    v[p + "oo"],
                    v[p + "mb"],
                )
            )
    replicas = []
    for r in range(n):
        p = f"r{r}."
        pending = tuple(
            (k, v[f"{p}ppoff{k}"], v[f"{p}ppdl{k}"], v[f"{p}ppn{k}"]) for k in range(1, b.records + 1) if v[f"{p}pp{k}"]
        )
        fetched = (
            fetch_state(tuple(v[f"{p}lfl{j}"] for j in range(n)), tuple(v[f"{p}lft{j}"] for j in range(n)))
            if b.prev_fetch
            else {}
        )
        replicas.append(
            Replica(
                alive=v[p + "alive"],
                log=_entries(v, p, v[p + "len"], 0),
                durable=v[p + "durable"],
                hw=v[p + "hw"],
                hw_checkpoint=v[p + "hwc"],
                leader=v[p + "leader"],
                leader_epoch=v[p + "lepoch"],
                isr=_members(v, p + "isr", n),
                partition_epoch=v[p + "pepoch"],
                epoch_start_offset=v[p + "eso"],
                remote_leo=tuple(v[f"{p}rleo{j}"] for j in range(n)),
                last_caught_up=tuple(v[f"{p}lcu{j}"] for j in range(n)),
                pending_isr=_members(v, p + "pisr", n) if v[p + "pend"] else None,
                pending_produces=pending,
                truncating_epoch=v[p + "trunc"],
                power_lost=v[p + "plost"],
                broker_epoch=v[p + "bepoch"],
                remote_broker_epoch=tuple(v[f"{p}rbe{j}"] for j in range(n)),
                unclean_shutdown=v[p + "unclean"],
                bad_batch=v[p + "bad"],
                unregistered=v[p + "unreg"],
                held_reads=tuple(held.get(r, ())),
                stale_fetcher=(v[p + "sfl"], v[p + "sfe"]) if b.stale_fetcher and v[p + "stale"] else (),
                pending_epochs=tuple(v[f"{p}pep{j}"] for j in _members(v, p + "pisr", n)) if v[p + "pend"] else (),
                cached_broker_epochs=tuple(v[f"{p}mc{j}"] for j in range(n)) if b.metadata_cache else (),
                **fetched,
            )
        )
    controller = Controller(
        v["c.leader"],
        v["c.lepoch"],
        _members(v, "c.isr", n),
        v["c.pepoch"],
        _members(v, "c.fenced", n),
        tuple(v[f"c.bep{j}"] for j in range(n)),
        _members(v, "c.elr", n),
        v["c.lkl"],
        _members(v, "c.await", n) if b.unfence else (),
        _members(v, "c.ics", n) if b.controlled_shutdown else (),
    )
    queues = []
    for q in QUEUES:
        queues.append(
            tuple(
                tuple(_decode_message(v, f"{q}{r}.{slot}.", q, n) for slot in range(v[f"{q}{r}.n"])) for r in range(n)
            )
        )
    acked = tuple(sorted((v[f"ackoff{k}"], k) for k in range(1, b.records + 1) if v[f"acked{k}"]))
    consumed = tuple(sorted((o, k) for o in range(b.log) for k in range(1, b.records + 1) if v[f"cons{o}_{k}"]))
    history = History(
        records_produced=v["produced"],
        acked=acked,
        consumed=consumed,
        max_consumer_hw=v["maxhw"],
        consumer_hw_regressed=v["regressed"],
        **{c: v["h." + c] for c in HISTORY_COUNTERS},
    )
    return State(tuple(replicas), controller, *queues, v["now"], *history)


def _entries(v: dict, p: str, count: int, start: int) -> tuple:
    return tuple(Entry(start + k, v[f"{p}e{k}"], v[f"{p}rec{k}"], v[f"{p}base{k}"]) for k in range(count))


def _members(v: dict, p: str, n: int) -> tuple:
    return tuple(j for j in range(n) if v[f"{p}{j}"])


def _decode_message(v: dict, p: str, q: str, n: int):
    if q == "fetch_requests":
        return FetchRequest(*(v[p + f] for f in SCALARS[q]), orphan=v[p + "orphan"])
    if q == "fetch_responses":
        return FetchResponse(
            v[p + "leader"],
            v[p + "lepoch"],
            ERRORS[v[p + "err"]],
            KINDS[v[p + "kind"]],
            _entries(v, p, v[p + "rn"], v[p + "rstart"]),
            v[p + "hw"],
            v[p + "ep"],
            v[p + "end"],
            v[p + "bad1"] - 1,
        )
    if q == "leader_and_isr":
        isr = _members(v, p + "isr", n)
        return LeaderAndIsr(v[p + "leader"], v[p + "lepoch"], isr, v[p + "pepoch"], v[p + "reg"] != 0)
    if q == "alter_partition":
        isr = _members(v, p + "isr", n)
        return AlterPartition(
            v[p + "lepoch"], v[p + "pepoch"], isr, tuple(v[f"{p}ep{j}"] for j in isr), orphan=v[p + "orphan"]
        )
    return AlterPartitionResponse(
        ERRORS[v[p + "err"]], v[p + "lepoch"], _members(v, p + "isr", n), v[p + "pepoch"], v[p + "rlepoch"]
    )
