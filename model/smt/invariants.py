"""Candidate invariants: a small grammar of named formulas over the encoded state, for Houdini.

A candidate is a ``Term`` tree over the keys of ``state.schema`` (the encoding's flat state), so
one formula serves three ends: a z3 formula over an encoded state (``to_z3``), a Python predicate
over ``embed``'s values of a concrete state (``to_python``, for filtering by the explorer's
states) and a readable line in Kafka's words (``show``). ``grammar`` instantiates every family
for every replica, pair of replicas, log offset and message slot the bounds hold; each family
says which Kafka mechanism it expresses. Names are stable: a saved invariant names its conjuncts,
and ``grammar`` rebuilds them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterator

import z3

from ...specs import BY_ID
from ..config import ModelConfig, Scope
from .properties import FORMULAS, _holds_at, _same_prefix
from .state import ERROR, Bounds

# -- terms ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Term:
    """``op`` with ``args``: var (a state key), int, and, or, not, implies, eq, ne, le, lt, add,
    min, agree (replicas x, y hold identical entries below a term), holds (replica r holds a
    record id at an offset) and prop (a property of ``specs/properties.py``)."""

    op: str
    args: tuple


def V(key: str) -> Term:
    return Term("var", (key,))


def I(value: int) -> Term:
    return Term("int", (value,))


def And(*xs: Term) -> Term:
    return xs[0] if len(xs) == 1 else Term("and", xs)


def Or(*xs: Term) -> Term:
    return xs[0] if len(xs) == 1 else Term("or", xs)


def Not(x: Term) -> Term:
    return Term("not", (x,))


def Imp(a: Term, b: Term) -> Term:
    return Term("implies", (a, b))


def Eq(a: Term, b: Term) -> Term:
    return Term("eq", (a, b))


def Ne(a: Term, b: Term) -> Term:
    return Term("ne", (a, b))


def Le(a: Term, b: Term) -> Term:
    return Term("le", (a, b))


def Lt(a: Term, b: Term) -> Term:
    return Term("lt", (a, b))


def Add(a: Term, k: int) -> Term:
    return Term("add", (a, I(k)))


def Min(a: Term, b: Term) -> Term:
    return Term("min", (a, b))


def Agree(x: int, y: int, upto: Term) -> Term:
    return Term("agree", (x, y, upto))


def Holds(r: int, offset: Term, record: Term) -> Term:
    return Term("holds", (r, offset, record))


def Prop(prop: str) -> Term:
    return Term("prop", (prop,))


_Z3_OPS: dict[str, Callable] = {
    "and": lambda *a: z3.And(*a),
    "or": lambda *a: z3.Or(*a),
    "not": z3.Not,
    "implies": z3.Implies,
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "le": lambda a, b: a <= b,
    "lt": lambda a, b: a < b,
    "add": lambda a, b: a + b,
    "min": lambda a, b: z3.If(a <= b, a, b),
}


def to_z3(t: Term, s: dict, b: Bounds):
    """The z3 formula of ``t`` over the encoded state ``s``."""
    op, args = t.op, t.args
    if op == "var":
        return s[args[0]]
    if op == "int":
        return z3.IntVal(args[0])
    if op == "agree":
        return _same_prefix(s, b, args[0], args[1], to_z3(args[2], s, b))
    if op == "holds":
        return _holds_at(s, b, args[0], to_z3(args[1], s, b), to_z3(args[2], s, b))
    if op == "prop":
        return FORMULAS[args[0]](s, b)
    return _Z3_OPS[op](*(to_z3(a, s, b) for a in args))


def _agree(v: dict, x: int, y: int, upto: int) -> bool:
    if v[f"r{x}.len"] < upto or v[f"r{y}.len"] < upto:
        return False  # else upto <= LEO <= the log's slots
    return all(v[f"r{x}.{f}{k}"] == v[f"r{y}.{f}{k}"] for k in range(upto) for f in ("e", "rec", "base"))


def _holds(v: dict, r: int, offset: int, record: int) -> bool:
    return 0 <= offset < v[f"r{r}.len"] and v[f"r{r}.rec{offset}"] == record


def _prop(prop: str, state) -> bool:
    return BY_ID[prop].check(state)


def to_python(t: Term) -> Callable[[dict, object], bool]:
    """``t`` as a Python predicate of (``embed``'s values, the ``State``)."""
    return eval(
        f"lambda v, state: {_render(t, _PYTHON)}",  # noqa: S307 - source built from our own terms
        {"_agree": _agree, "_holds": _holds, "_prop": _prop},
    )


# -- readable formulas -----------------------------------------------------------------------------------

_QUEUE_NAMES = {
    "fetch_requests": "Fetch",
    "fetch_responses": "FetchResponse",
    "leader_and_isr": "LeaderAndIsr",
    "alter_partition": "AlterPartition",
    "alter_partition_responses": "AlterPartitionResponse",
}
_REPLICA_FIELDS = {
    "len": "LEO",
    "hw": "HW",
    "hwc": "HWCheckpoint",
    "durable": "flushedLEO",
    "leader": "leader",
    "lepoch": "leaderEpoch",
    "pepoch": "partitionEpoch",
    "eso": "epochStartOffset",
    "trunc": "truncatingEpoch",
    "bepoch": "brokerEpoch",
    "alive": "alive",
    "pend": "pendingIsrChange",
    "plost": "powerLost",
    "unclean": "uncleanShutdown",
    "bad": "damagedBatch",
}
_PER_PEER = {
    "isr": "{j} ∈ isr({r})",
    "pisr": "{j} ∈ pendingIsr({r})",
    "rleo": "remoteLEO({r},{j})",
    "lcu": "lastCaughtUp({r},{j})",
    "rbe": "remoteBrokerEpoch({r},{j})",
    "pep": "pendingBrokerEpoch({r},{j})",
    "lfl": "lastFetchLeaderLogEndOffset({r},{j})",
    "lft": "lastFetchTime({r},{j})",
    "mc": "cachedBrokerEpoch({r},{j})",
}
_LOG_FIELDS = {"e": "epoch", "rec": "record", "base": "baseOffset"}
_MESSAGE_FIELDS = {
    "leader": "leader",
    "lepoch": "leaderEpoch",
    "pepoch": "partitionEpoch",
    "err": "error",
    "rlepoch": "requestLeaderEpoch",
    "off": "fetchOffset",
    "lfe": "lastFetchedEpoch",
    "hw": "highWatermark",
    "kind": "kind",
    "ep": "epoch",
    "end": "endOffset",
}


def show_key(key: str) -> str:
    """A state key in Kafka's words: ``r1.hw`` is ``HW(1)``, ``c.isr2`` is ``2 ∈ controller.isr``."""
    m = re.fullmatch(r"r(\d+)\.([a-z]+?)(\d*)", key)
    if m:
        r, field, idx = m.groups()
        if field in _REPLICA_FIELDS and not idx:
            return f"{_REPLICA_FIELDS[field]}({r})"
        if field in _PER_PEER:
            return _PER_PEER[field].format(r=r, j=idx)
        if field in _LOG_FIELDS:
            return f"{_LOG_FIELDS[field]}({r})[{idx}]"
        if field in ("pp", "ppoff", "ppn", "ppdl"):
            return {
                "pp": "pendingProduce",
                "ppoff": "pendingProduceOffset",
                "ppn": "pendingProduceRecords",
                "ppdl": "pendingProduceDeadline",
            }[field] + f"({r},record {idx})"
    m = re.fullmatch(r"c\.([a-z]+?)(\d*)", key)
    if m:
        field, j = m.groups()
        named = {
            "leader": "controller.leader",
            "lepoch": "controller.leaderEpoch",
            "pepoch": "controller.partitionEpoch",
            "lkl": "controller.lastKnownLeader",
        }
        if field in named and not j:
            return named[field]
        sets = {
            "isr": "{j} ∈ controller.isr",
            "elr": "{j} ∈ controller.elr",
            "fenced": "fenced({j})",
            "await": "awaitingUnfence({j})",
            "ics": "inControlledShutdown({j})",
            "bep": "controller.brokerEpoch({j})",
        }
        if field in sets:
            return sets[field].format(j=j)
    m = re.fullmatch(r"([a-z_]+?)(\d+)\.(n|(\d+)\.([a-z]+?)(\d*))", key)
    if m and m.group(1) in _QUEUE_NAMES:
        q, r, rest, slot, field, j = m.groups()
        name = (
            f"{_QUEUE_NAMES[q]}→{r}"
            if q in ("leader_and_isr", "fetch_responses", "alter_partition_responses")
            else f"{_QUEUE_NAMES[q]}←{r}"
        )
        if rest == "n":
            return f"|{name}|"
        if field == "isr":
            return f"{j} ∈ {name}[{slot}].isr"
        if field in _LOG_FIELDS:
            return f"{name}[{slot}].{_LOG_FIELDS[field]}[{j}]"
        return f"{name}[{slot}].{_MESSAGE_FIELDS.get(field, field)}{j}"
    m = re.fullmatch(r"acked(\d+)|ackoff(\d+)|cons(\d+)_(\d+)", key)
    if m:
        if m.group(1):
            return f"acked(record {m.group(1)})"
        if m.group(2):
            return f"ackedOffset(record {m.group(2)})"
        return f"consumed(offset {m.group(3)}, record {m.group(4)})"
    return {"produced": "recordsProduced", "now": "now"}.get(key, key)


def _render(t: Term, style: dict) -> str:
    """``t`` as text in ``style``: per op, a function of the node and its rendered arguments."""
    return style[t.op](t, [_render(a, style) if isinstance(a, Term) else a for a in t.args])


def _joined(sep: str, wrap: Callable[[Term, Term, str], str]) -> Callable:
    return lambda t, kids: sep.join(wrap(t, a, k) for a, k in zip(t.args, kids))


_LOGICAL = ("and", "or", "implies")
_PYTHON = {
    "var": lambda t, k: f"v[{k[0]!r}]",
    "int": lambda t, k: repr(k[0]),
    "not": lambda t, k: f"(not {k[0]})",
    "implies": lambda t, k: f"((not {k[0]}) or {k[1]})",
    "min": lambda t, k: f"min({k[0]}, {k[1]})",
    "agree": lambda t, k: f"_agree(v, {k[0]}, {k[1]}, {k[2]})",
    "holds": lambda t, k: f"_holds(v, {k[0]}, {k[1]}, {k[2]})",
    "prop": lambda t, k: f"_prop({k[0]!r}, state)",
    **{
        op: (lambda sep: lambda t, k: "(" + sep.join(k) + ")")(sep)
        for op, sep in (
            ("and", " and "),
            ("or", " or "),
            ("eq", " == "),
            ("ne", " != "),
            ("le", " <= "),
            ("lt", " < "),
            ("add", " + "),
        )
    },
}
# readable: comparisons bind tighter than the connectives, a connective nested in another is
# parenthesized unless it is the same associative one
_SHOWN = {
    "var": lambda t, k: show_key(k[0]),
    "int": lambda t, k: str(k[0]),
    "prop": lambda t, k: k[0],
    "not": lambda t, k: "¬" + (f"({k[0]})" if t.args[0].op in _LOGICAL else k[0]),
    "min": lambda t, k: f"min({k[0]}, {k[1]})",
    "agree": lambda t, k: f"log({k[0]})[..{k[2]}) = log({k[1]})[..{k[2]})",
    "holds": lambda t, k: f"record({k[0]})[{k[1]}] = {k[2]}",
    **{
        op: _joined(
            sep, lambda t, a, k: f"({k})" if a.op in _LOGICAL and not (a.op == t.op and t.op != "implies") else k
        )
        for op, sep in (
            ("and", " ∧ "),
            ("or", " ∨ "),
            ("implies", " ⇒ "),
            ("eq", " = "),
            ("ne", " ≠ "),
            ("le", " ≤ "),
            ("lt", " < "),
            ("add", " + "),
        )
    },
}


def show(t: Term) -> str:
    """``t`` as a readable formula."""
    return _render(t, _SHOWN)


# -- the grammar -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    """A named candidate conjunct of ``family``, its ``term``."""

    name: str
    family: str
    term: Term

    @property
    def formula(self) -> str:
        return show(self.term)


FAMILIES: dict[str, Callable] = {}


def family(fn: Callable) -> Callable:
    """Register a family: ``fn(g)`` yields (parameters, term); its docstring says what Kafka does."""
    FAMILIES[fn.__name__.replace("_", "-")] = fn
    return fn


class _G:
    """What a family needs to instantiate itself: the bounds, config and scope, and state shorthands."""

    def __init__(self, config: ModelConfig, scope: Scope, b: Bounds):
        self.config, self.scope, self.b = config, scope, b
        self.n, self.log = b.replicas, b.log
        self.pairs = [(x, y) for x in range(self.n) for y in range(self.n) if x != y]

    @staticmethod
    def r(i: int, field: str) -> Term:
        return V(f"r{i}.{field}")

    def presumes(self, i: int) -> Term:
        """Replica i is alive and believes it leads."""
        return And(self.r(i, "alive"), Eq(self.r(i, "leader"), I(i)))

    def member(self, j: int) -> Term:
        """j is in the controller's ISR and holds its log (alive, or down without a pending loss)."""
        return And(V(f"c.isr{j}"), Or(self.r(j, "alive"), Not(self.r(j, "plost"))))

    def present(self, q: str, r: int, slot: int) -> Term:
        return Lt(I(slot), V(f"{q}{r}.n"))

    def msg(self, q: str, r: int, slot: int, field: str) -> Term:
        return V(f"{q}{r}.{slot}.{field}")


# Each family yields (parameters, term); the candidate's name is family(parameters).


@family
def hw_bound(g: _G) -> Iterator:
    """Partition.highWatermark never passes the log end offset (HW ≤ LEO)."""
    for r in range(g.n):
        yield (r,), Le(g.r(r, "hw"), g.r(r, "len"))


@family
def hw_checkpoint_bound(g: _G) -> Iterator:
    """replication-offset-checkpoint holds an HW this broker reached (checkpoint ≤ HW ≤ LEO; never
    written where no clean shutdown, flush or checkpoint step is in scope), below which the ISR agrees."""
    for r in range(g.n):
        yield (r, "hw"), Le(g.r(r, "hwc"), g.r(r, "hw"))
        yield (r, "leo"), Le(g.r(r, "hwc"), g.r(r, "len"))
        yield (r, "never-written"), Eq(g.r(r, "hwc"), I(0))
        for y in range(g.n):
            if y != r:
                yield (r, y, "committed"), Imp(g.member(y), Agree(r, y, Min(g.r(r, "hwc"), g.r(r, "len"))))


@family
def epochs_sorted(g: _G) -> Iterator:
    """Leader epochs never go down along a log (the LeaderEpochFileCache is sorted by start offset)."""
    for r in range(g.n):
        for k in range(g.log - 1):
            yield (r, k), Imp(Lt(I(k + 1), g.r(r, "len")), Le(g.r(r, f"e{k}"), g.r(r, f"e{k + 1}")))


@family
def entry_epoch_bound(g: _G) -> Iterator:
    """Every batch was written in a leader epoch the controller has handed out; a leader writes
    only batches of epochs up to its own (no batch comes from the future)."""
    for r in range(g.n):
        for k in range(g.log):
            inside = Lt(I(k), g.r(r, "len"))
            yield (r, k, "controller"), Imp(inside, Le(g.r(r, f"e{k}"), V("c.lepoch")))
            yield (r, k, "leader"), Imp(And(g.presumes(r), inside), Le(g.r(r, f"e{k}"), g.r(r, "lepoch")))
            yield (r, k, "nonnegative"), Imp(inside, Le(I(0), g.r(r, f"e{k}")))
            current = And(inside, Eq(g.r(r, f"e{k}"), V("c.lepoch")))
            yield (r, k, "current-has-leader"), Imp(current, Ne(V("c.leader"), I(-1)))
            for ld in range(g.n):
                yield (
                    (r, k, ld, "current-applied"),
                    Imp(And(current, Eq(V("c.leader"), I(ld))), Eq(g.r(ld, "lepoch"), V("c.lepoch"))),
                )


@family
def epoch_start(g: _G) -> Iterator:
    """A leader's epoch starts at its LEO when elected (LeaderEpochFileCache.assign): below it only
    older epochs, from it on only its own (KIP-101)."""
    for r in range(g.n):
        yield (r, "bound"), Imp(g.presumes(r), And(Le(I(0), g.r(r, "eso")), Le(g.r(r, "eso"), g.r(r, "len"))))
        for k in range(g.log):
            inside = Lt(I(k), g.r(r, "len"))
            yield (
                (r, k, "older"),
                Imp(And(g.presumes(r), Lt(I(k), g.r(r, "eso")), inside), Lt(g.r(r, f"e{k}"), g.r(r, "lepoch"))),
            )
            yield (
                (r, k, "own"),
                Imp(And(g.presumes(r), Le(g.r(r, "eso"), I(k)), inside), Eq(g.r(r, f"e{k}"), g.r(r, "lepoch"))),
            )


@family
def epoch_bound(g: _G) -> Iterator:
    """A broker's leader and partition epochs come from the controller's LeaderAndIsr: never past
    the controller's own."""
    for r in range(g.n):
        yield (r, "leader"), Le(g.r(r, "lepoch"), V("c.lepoch"))
        yield (r, "partition"), Le(g.r(r, "pepoch"), V("c.pepoch"))


@family
def epoch_stamps(g: _G) -> Iterator:
    """Every (leader epoch, partition epoch) pair anywhere is one the controller held at some
    time, and the controller only moves both forward (QuorumController bumps the partition epoch
    on every change, the leader epoch on every leader change): a broker's applied pair, and those
    a LeaderAndIsr, an AlterPartition or its response carry, are ordered alike by both epochs."""
    stamps = [("controller", None, V("c.lepoch"), V("c.pepoch"))]
    stamps += [(f"broker{r}", None, g.r(r, "lepoch"), g.r(r, "pepoch")) for r in range(g.n)]
    for q, short in (("leader_and_isr", "lai"), ("alter_partition", "ap"), ("alter_partition_responses", "apr")):
        for r in range(g.n):
            for s in range(g.b.capacity(q)):
                stamps.append(
                    (f"{short}{r}.{s}", g.present(q, r, s), g.msg(q, r, s, "lepoch"), g.msg(q, r, s, "pepoch"))
                )
    for a in range(len(stamps)):
        for c in range(a + 1, len(stamps)):
            na, ga, la, pa = stamps[a]
            nc, gc, lc, pc = stamps[c]
            ordered = And(Imp(Lt(la, lc), Lt(pa, pc)), Imp(Lt(lc, la), Lt(pc, pa)))
            guards = [x for x in (ga, gc) if x is not None]
            yield (na, nc), Imp(And(*guards), ordered) if guards else ordered


@family
def leadership(g: _G) -> Iterator:
    """Only the controller's elected leader, in the controller's current leader epoch, acts as
    leader (leader epochs fence stale leaders, KIP-101/KIP-320); the controller's leader is
    unfenced and in its ISR; a live broker is registered (unfenced)."""
    for r in range(g.n):
        yield (r, "controller"), Imp(g.presumes(r), Eq(V("c.leader"), I(r)))
        yield (r, "epoch"), Imp(g.presumes(r), Eq(g.r(r, "lepoch"), V("c.lepoch")))
        yield (r, "own-isr"), Imp(g.presumes(r), g.r(r, "isr" + str(r)))
        yield (r, "in-isr"), Imp(Eq(V("c.leader"), I(r)), V(f"c.isr{r}"))
        yield (r, "unfenced"), Imp(Eq(V("c.leader"), I(r)), Not(V(f"c.fenced{r}")))
        yield (r, "alive-unfenced"), Imp(g.r(r, "alive"), Not(V(f"c.fenced{r}")))
        yield (
            (r, "applied"),
            Imp(
                And(Eq(V("c.leader"), I(r)), g.r(r, "alive"), Eq(g.r(r, "lepoch"), V("c.lepoch"))),
                Eq(g.r(r, "leader"), I(r)),
            ),
        )
        yield (
            (r, "follows-current"),
            Imp(And(g.r(r, "alive"), Eq(g.r(r, "lepoch"), V("c.lepoch"))), Eq(g.r(r, "leader"), V("c.leader"))),
        )
        yield (r, "no-epoch-query"), Eq(g.r(r, "trunc"), I(-1))
        yield (r, "no-power-loss"), Not(g.r(r, "plost"))
    yield ("controller-leader-range",), Le(V("c.leader"), I(g.n - 1))
    for x, y in g.pairs:
        if x < y:
            yield (
                (x, y, "one-per-epoch"),
                Imp(
                    And(
                        g.r(x, "alive"),
                        g.r(y, "alive"),
                        Le(I(0), g.r(x, "lepoch")),
                        Eq(g.r(x, "lepoch"), g.r(y, "lepoch")),
                    ),
                    Eq(g.r(x, "leader"), g.r(y, "leader")),
                ),
            )


@family
def isr_view(g: _G) -> Iterator:
    """The leader's ISR view against the controller's: the HW quorum (ISR plus a pending
    AlterPartition) covers the controller's ISR (KIP-497); with the same partition epoch they are
    the same set."""
    for i in range(g.n):
        for j in range(g.n):
            maximal = Or(g.r(i, f"isr{j}"), And(g.r(i, "pend"), g.r(i, f"pisr{j}")))
            yield (i, j, "quorum"), Imp(And(g.presumes(i), V(f"c.isr{j}")), maximal)
            yield (
                (i, j, "same-epoch"),
                Imp(And(g.presumes(i), Eq(g.r(i, "pepoch"), V("c.pepoch"))), Eq(g.r(i, f"isr{j}"), V(f"c.isr{j}"))),
            )
            yield (
                (i, j, "pending-grows"),
                Imp(And(g.presumes(i), g.r(i, "pend"), g.r(i, f"isr{j}")), g.r(i, f"pisr{j}")),
            )


@family
def committed_prefix(g: _G) -> Iterator:
    """Leader completeness, strengthened: below any live broker's HW, every member of the
    controller's ISR (and of the ELR, KIP-966) holds the same batches (what the HW exposed was
    replicated to the whole ISR before it moved)."""
    for x in range(g.n):
        for y in range(g.n):
            if x == y:
                continue
            yield (x, y, "controller-isr"), Imp(And(g.r(x, "alive"), g.member(y)), Agree(x, y, g.r(x, "hw")))
            yield (x, y, "controller-isr-any"), Imp(g.member(y), Agree(x, y, g.r(x, "hw")))
            yield (
                (x, y, "elr"),
                Imp(
                    And(g.r(x, "alive"), V(f"c.elr{y}"), Or(g.r(y, "alive"), Not(g.r(y, "plost")))),
                    Agree(x, y, g.r(x, "hw")),
                ),
            )
            if x < y:
                yield (x, y, "both-hw"), Agree(x, y, Min(g.r(x, "hw"), g.r(y, "hw")))
            for i in range(g.n):
                view = And(g.presumes(i), g.r(x, "alive"))
                yield (x, y, i, "leader-isr"), Imp(And(view, g.r(i, f"isr{y}")), Agree(x, y, g.r(x, "hw")))
                yield (
                    (x, y, i, "pending-isr"),
                    Imp(And(view, g.r(i, "pend"), g.r(i, f"pisr{y}")), Agree(x, y, g.r(x, "hw"))),
                )


@family
def replicated_prefix(g: _G) -> Iterator:
    """What a leader knows of a follower: a follower in its ISR (or proposed for it) holds the
    leader's batches below its HW and below the fetch offset it last sent (Partition.remoteReplicas'
    LEO); the HW is at most that offset once known."""
    for i in range(g.n):
        for y in range(g.n):
            if i == y:
                continue
            in_isr = And(g.presumes(i), g.r(i, f"isr{y}"))
            pending = And(g.presumes(i), g.r(i, "pend"), g.r(i, f"pisr{y}"))
            follows = And(
                g.presumes(i), g.r(y, "alive"), Eq(g.r(y, "leader"), I(i)), Eq(g.r(y, "lepoch"), g.r(i, "lepoch"))
            )
            rleo = g.r(i, f"rleo{y}")
            yield (i, y, "isr-hw"), Imp(in_isr, Agree(i, y, g.r(i, "hw")))
            yield (i, y, "pending-hw"), Imp(pending, Agree(i, y, g.r(i, "hw")))
            yield (i, y, "fetched"), Imp(g.presumes(i), Agree(i, y, rleo))
            yield (i, y, "isr-fetched"), Imp(in_isr, Agree(i, y, rleo))
            yield (i, y, "pending-fetched"), Imp(pending, Agree(i, y, rleo))
            yield (i, y, "follower-fetched"), Imp(follows, Agree(i, y, rleo))
            yield (i, y, "follower-hw"), Imp(follows, Agree(i, y, g.r(y, "hw")))
            yield (i, y, "hw-le-fetched"), Imp(And(in_isr, Le(I(0), rleo)), Le(g.r(i, "hw"), rleo))
            yield (i, y, "fetched-le-leo"), Imp(g.presumes(i), Le(rleo, g.r(i, "len")))
            yield (i, y, "fetched-le-follower"), Imp(And(follows, Le(I(0), rleo)), Le(rleo, g.r(y, "len")))
            yield (
                (i, y, "hw-le-epoch-start"),
                Imp(g.presumes(i), Or(Le(g.r(y, "hw"), g.r(i, "hw")), Le(g.r(y, "hw"), g.r(i, "eso")))),
            )
            yield (i, y, "follower-hw-le-leader"), Imp(follows, Le(g.r(y, "hw"), g.r(i, "hw")))


@family
def log_matching(g: _G) -> Iterator:
    """Log Matching per offset: batches of one leader epoch at one offset are the same batch with
    the same history (the premise of KIP-101/279 truncation by epoch); a leader's current-epoch
    batches are where the leader wrote them."""
    for x, y in g.pairs:
        for k in range(g.log):
            both = And(Lt(I(k), g.r(x, "len")), Lt(I(k), g.r(y, "len")))
            if x < y:
                yield (x, y, k), Imp(And(both, Eq(g.r(x, f"e{k}"), g.r(y, f"e{k}"))), Agree(x, y, I(k + 1)))
            yield (
                (x, y, k, "leader-epoch"),
                Imp(
                    And(g.presumes(y), Lt(I(k), g.r(x, "len")), Eq(g.r(x, f"e{k}"), g.r(y, "lepoch"))),
                    Agree(x, y, I(k + 1)),
                ),
            )


@family
def records(g: _G) -> Iterator:
    """Record ids: each produced record is written once, at one offset, in one batch (the
    producer's batch appended once by the leader and copied by fetches)."""
    for r in range(g.n):
        for k in range(g.log):
            inside = Lt(I(k), g.r(r, "len"))
            yield (
                (r, k, "produced"),
                Imp(inside, And(Le(I(1), g.r(r, f"rec{k}")), Le(g.r(r, f"rec{k}"), V("produced")))),
            )
            yield (r, k, "base"), Imp(inside, Eq(g.r(r, f"base{k}"), I(k)))
    for x in range(g.n):
        for y in range(g.n):
            for k in range(g.log):
                for m in range(g.log):
                    if (x, k) >= (y, m):
                        continue
                    same = And(
                        Lt(I(k), g.r(x, "len")), Lt(I(m), g.r(y, "len")), Eq(g.r(x, f"rec{k}"), g.r(y, f"rec{m}"))
                    )
                    if k != m:
                        yield (x, k, y, m), Not(same)
                    else:
                        yield (x, k, y, m), Imp(same, Eq(g.r(x, f"e{k}"), g.r(y, f"e{m}")))


@family
def acknowledged(g: _G) -> Iterator:
    """acks=all: a write is acknowledged only once the HW passed it, so every member of the
    controller's ISR (and the controller's leader) holds it at its offset; a DelayedProduce
    waits at the leader that appended it; reads happen only when the scope has consumers."""
    for k in range(1, g.b.records + 1):
        acked, off = V(f"acked{k}"), V(f"ackoff{k}")
        yield (k, "produced"), Imp(acked, Le(I(k), V("produced")))
        for j in range(g.n):
            yield (k, j, "isr"), Imp(And(acked, g.member(j)), Holds(j, off, I(k)))
            yield (
                (k, j, "elr"),
                Imp(And(acked, V(f"c.elr{j}"), Or(g.r(j, "alive"), Not(g.r(j, "plost")))), Holds(j, off, I(k))),
            )
            yield (k, j, "leader"), Imp(And(acked, Eq(V("c.leader"), I(j)), g.r(j, "alive")), Holds(j, off, I(k)))
            yield (k, j, "below-hw"), Imp(And(acked, g.presumes(j)), Lt(off, g.r(j, "hw")))
            yield (
                (k, j, "below-hw-or-epoch-start"),
                Imp(And(acked, g.presumes(j)), Or(Lt(off, g.r(j, "hw")), Lt(off, g.r(j, "eso")))),
            )
            for i in range(g.n):
                yield (k, j, i, "leader-isr"), Imp(And(acked, g.presumes(i), g.r(i, f"isr{j}")), Holds(j, off, I(k)))
                yield (
                    (k, j, i, "pending-isr"),
                    Imp(And(acked, g.presumes(i), g.r(i, "pend"), g.r(i, f"pisr{j}")), Holds(j, off, I(k))),
                )
            for r in range(g.n):
                for s in range(g.b.capacity("alter_partition")):
                    m = f"alter_partition{r}.{s}."
                    yield (
                        (k, j, r, s, "proposed"),
                        Imp(
                            And(
                                acked,
                                g.present("alter_partition", r, s),
                                Eq(V("c.leader"), I(r)),
                                Eq(V(m + "lepoch"), V("c.lepoch")),
                                Eq(V(m + "pepoch"), V("c.pepoch")),
                                V(m + f"isr{j}"),
                            ),
                            Holds(j, off, I(k)),
                        ),
                    )
            pp = g.r(j, f"pp{k}")
            yield (k, j, "pending-at-leader"), Imp(pp, g.presumes(j))
            yield (k, j, "pending-held"), Imp(pp, Holds(j, g.r(j, f"ppoff{k}"), I(k)))
            yield (k, j, "pending-not-acked"), Imp(pp, Not(acked))
        if not g.scope.consumes:
            for o in range(g.log):
                yield (k, o, "not-read"), Not(V(f"cons{o}_{k}"))


@family
def controller(g: _G) -> Iterator:
    """The controller's partition state: fenced brokers leave leadership and (but the last) the
    ISR; the ELR (KIP-966) is disjoint from the ISR."""
    for j in range(g.n):
        yield (j, "fenced-not-leader"), Imp(V(f"c.fenced{j}"), Ne(V("c.leader"), I(j)))
        yield (j, "fenced-not-in-isr"), Imp(V(f"c.fenced{j}"), Not(V(f"c.isr{j}")))
        yield (j, "elr-not-isr"), Imp(V(f"c.elr{j}"), Not(V(f"c.isr{j}")))
        yield (j, "no-elr"), Not(V(f"c.elr{j}"))
        yield (
            (j, "fenced-only-if-last"),
            Imp(And(V(f"c.fenced{j}"), V(f"c.isr{j}")), And(*(Not(V(f"c.isr{k}")) for k in range(g.n) if k != j))),
        )
    yield ("isr-nonempty",), Or(*(V(f"c.isr{j}") for j in range(g.n)))
    yield ("isr-or-elr-nonempty",), Or(*(V(f"c.isr{j}") for j in range(g.n)), *(V(f"c.elr{j}") for j in range(g.n)))
    yield ("epochs-nonnegative",), And(Le(I(0), V("c.lepoch")), Le(I(0), V("c.pepoch")))


@family
def follower_state(g: _G) -> Iterator:
    """Partition.makeFollower and a restart drop the leader-only state (the remote replicas' LEOs,
    the epoch start offset, a pending ISR change); a broker that has applied no LeaderAndIsr since
    it restarted knows no leader, epoch or ISR."""
    for r in range(g.n):
        leads = Eq(g.r(r, "leader"), I(r))
        yield (r, "no-pending"), Imp(Not(leads), Not(g.r(r, "pend")))
        yield (r, "no-epoch-start"), Imp(Not(leads), Eq(g.r(r, "eso"), I(-1)))
        for j in range(g.n):
            yield (r, j, "no-remote-leo"), Imp(Not(leads), Eq(g.r(r, f"rleo{j}"), I(-1)))
            yield (r, j, "no-isr-after-restart"), Imp(Eq(g.r(r, "lepoch"), I(-1)), Not(g.r(r, f"isr{j}")))
        yield (
            (r, "restarted"),
            Imp(Eq(g.r(r, "lepoch"), I(-1)), And(Eq(g.r(r, "leader"), I(-1)), Eq(g.r(r, "pepoch"), I(-1)))),
        )
        yield (r, "leaderless-only-restarted"), Imp(Eq(g.r(r, "leader"), I(-1)), Eq(g.r(r, "lepoch"), I(-1)))
        yield (r, "epochs-known"), Imp(Le(I(0), g.r(r, "lepoch")), Le(I(0), g.r(r, "pepoch")))


@family
def fetch_rounds(g: _G) -> Iterator:
    """With a follower's fetch round taken as one transition (the explorer's default), no Fetch
    or fetch response is in flight between transitions."""
    if not g.scope.fetch_rounds:
        return
    for r in range(g.n):
        yield (r, "requests"), Eq(V(f"fetch_requests{r}.n"), I(0))
        yield (r, "responses"), Eq(V(f"fetch_responses{r}.n"), I(0))


@family
def leader_and_isr(g: _G) -> Iterator:
    """A LeaderAndIsr in flight says what the controller decided when it sent it: never an epoch
    past the controller's; in the current leader epoch its leader; with the current partition
    epoch its ISR; sent only to live brokers, oldest first; naming the receiver leader only
    while it still is."""
    q = "leader_and_isr"
    for r in range(g.n):
        for s in range(g.b.capacity(q)):
            here = g.present(q, r, s)
            le, pe, ld = (g.msg(q, r, s, f) for f in ("lepoch", "pepoch", "leader"))
            yield (r, s, "to-live"), Imp(here, g.r(r, "alive"))
            yield (r, s, "epoch"), Imp(here, And(Le(le, V("c.lepoch")), Le(pe, V("c.pepoch"))))
            yield (r, s, "leader"), Imp(And(here, Eq(le, V("c.lepoch"))), Eq(ld, V("c.leader")))
            yield (r, s, "self-current"), Imp(And(here, Eq(ld, I(r))), Eq(le, V("c.lepoch")))
            yield (r, s, "leader-range"), Imp(here, Le(ld, I(g.n - 1)))
            yield (
                (r, s, "leader-in-isr"),
                And(*(Imp(And(here, Eq(ld, I(j))), g.msg(q, r, s, f"isr{j}")) for j in range(g.n))),
            )
            yield (
                (r, s, "isr"),
                Imp(
                    And(here, Eq(le, V("c.lepoch")), Eq(pe, V("c.pepoch"))),
                    And(*(Eq(g.msg(q, r, s, f"isr{j}"), V(f"c.isr{j}")) for j in range(g.n))),
                ),
            )
            yield (r, s, "nonnegative"), Imp(here, And(Le(I(0), le), Le(I(0), pe)))
            for x in range(g.n):
                yield (
                    (r, s, x, "one-leader-per-epoch"),
                    Imp(And(here, g.r(x, "alive"), Eq(le, g.r(x, "lepoch"))), Eq(ld, g.r(x, "leader"))),
                )
            yield (
                (r, s, "current-state"),
                Imp(
                    And(here, Eq(pe, V("c.pepoch"))),
                    And(
                        Eq(le, V("c.lepoch")),
                        Eq(ld, V("c.leader")),
                        *(Eq(g.msg(q, r, s, f"isr{j}"), V(f"c.isr{j}")) for j in range(g.n)),
                    ),
                ),
            )
            newer = Or(Lt(g.r(r, "lepoch"), le), And(Eq(g.r(r, "lepoch"), le), Lt(g.r(r, "pepoch"), pe)))
            for x in range(g.n):
                for k in range(g.log):
                    yield (
                        (r, s, x, k, "epoch-not-written-yet"),
                        Imp(
                            And(here, Eq(ld, I(r)), Lt(g.r(r, "lepoch"), le), Lt(I(k), g.r(x, "len"))),
                            Lt(g.r(x, f"e{k}"), le),
                        ),
                    )
            for y in range(g.n):
                for x in range(g.n):
                    if x != y:
                        yield (
                            (r, s, y, x, "holds"),
                            Imp(
                                And(here, Eq(ld, I(r)), newer, g.msg(q, r, s, f"isr{y}"), g.r(x, "alive")),
                                Agree(x, y, g.r(x, "hw")),
                            ),
                        )
            same_epoch_newer = And(here, g.presumes(r), Eq(le, g.r(r, "lepoch")), Lt(g.r(r, "pepoch"), pe))
            for j in range(g.n):
                yield (
                    (r, s, j, "shrinks-only"),
                    Imp(
                        And(same_epoch_newer, g.msg(q, r, s, f"isr{j}")),
                        Or(g.r(r, f"isr{j}"), And(g.r(r, "pend"), g.r(r, f"pisr{j}"))),
                    ),
                )
                yield (
                    (r, s, j, "new-leader-covers-isr"),
                    Imp(And(here, Eq(ld, I(r)), newer, V(f"c.isr{j}")), g.msg(q, r, s, f"isr{j}")),
                )
            for r2 in range(g.n):
                for s2 in range(g.b.capacity(q)):
                    if (r2, s2) <= (r, s):
                        continue
                    pe2 = g.msg(q, r2, s2, "pepoch")
                    le2 = g.msg(q, r2, s2, "lepoch")
                    yield (
                        (r, s, r2, s2, "one-leader-per-epoch"),
                        Imp(And(here, g.present(q, r2, s2), Eq(le, le2)), Eq(ld, g.msg(q, r2, s2, "leader"))),
                    )
                    yield (
                        (r, s, r2, s2, "same-partition-epoch"),
                        Imp(
                            And(here, g.present(q, r2, s2), Eq(pe, pe2)),
                            And(
                                Eq(le, g.msg(q, r2, s2, "lepoch")),
                                Eq(ld, g.msg(q, r2, s2, "leader")),
                                *(Eq(g.msg(q, r, s, f"isr{j}"), g.msg(q, r2, s2, f"isr{j}")) for j in range(g.n)),
                            ),
                        ),
                    )
            yield (
                (r, s, "not-older-than-applied"),
                Imp(here, Or(Lt(g.r(r, "lepoch"), le), And(Eq(g.r(r, "lepoch"), le), Le(g.r(r, "pepoch"), pe)))),
            )
            for s2 in range(s + 1, g.b.capacity(q)):
                later = And(g.present(q, r, s2), Eq(ld, I(r)), newer, Eq(g.msg(q, r, s2, "lepoch"), le))
                for j in range(g.n):
                    yield (
                        (r, s, s2, j, "later-shrinks"),
                        Imp(And(later, g.msg(q, r, s2, f"isr{j}")), g.msg(q, r, s, f"isr{j}")),
                    )
            if s + 1 < g.b.capacity(q):
                nxt = g.msg(q, r, s + 1, "lepoch"), g.msg(q, r, s + 1, "pepoch")
                yield (r, s, "ordered"), Imp(g.present(q, r, s + 1), And(Le(le, nxt[0]), Le(pe, nxt[1])))


@family
def alter_partition(g: _G) -> Iterator:
    """An AlterPartition in flight is the leader's pending ISR change (KIP-497), proposed in the
    leader's epoch and fenced by the partition epoch: while it can still commit (the controller's
    leader and epochs), the members it proposes hold the committed log."""
    q = "alter_partition"
    for r in range(g.n):
        for s in range(g.b.capacity(q)):
            here = g.present(q, r, s)
            le, pe = g.msg(q, r, s, "lepoch"), g.msg(q, r, s, "pepoch")
            current = And(here, Eq(V("c.leader"), I(r)), Eq(le, V("c.lepoch")), Eq(pe, V("c.pepoch")))
            yield (r, s, "epoch"), Imp(here, And(Le(le, g.r(r, "lepoch")), Le(pe, V("c.pepoch"))))
            yield (r, s, "applied-partition-epoch"), Imp(here, Le(pe, g.r(r, "pepoch")))
            yield (r, s, "from-live"), Imp(here, And(g.r(r, "alive"), Le(I(0), le), Le(I(0), pe)))
            yield (
                (r, s, "pending"),
                Imp(
                    And(here, Eq(le, g.r(r, "lepoch"))),
                    And(g.r(r, "pend"), *(Eq(g.msg(q, r, s, f"isr{j}"), g.r(r, f"pisr{j}")) for j in range(g.n))),
                ),
            )
            yield (r, s, "alone"), Imp(here, Eq(V(f"{q}{r}.n"), I(1))) if s == 0 else Not(here)
            yield (r, s, "current-leader"), Imp(current, g.presumes(r))
            yield (r, s, "self"), Imp(current, g.msg(q, r, s, f"isr{r}"))
            for j in range(g.n):
                for x in range(g.n):
                    if x != j:
                        yield (
                            (r, s, j, x, "holds"),
                            Imp(And(current, g.msg(q, r, s, f"isr{j}"), g.r(x, "alive")), Agree(x, j, g.r(x, "hw"))),
                        )


@family
def alter_partition_response(g: _G) -> Iterator:
    """An AlterPartitionResponse in flight answers the leader's pending change in the epoch it
    was sent; the ISR it carries is the controller's as of its partition epoch."""
    q = "alter_partition_responses"
    for r in range(g.n):
        for s in range(g.b.capacity(q)):
            here = g.present(q, r, s)
            le, pe, rle = (g.msg(q, r, s, f) for f in ("lepoch", "pepoch", "rlepoch"))
            yield (
                (r, s, "epoch"),
                Imp(here, And(Le(rle, g.r(r, "lepoch")), Le(le, V("c.lepoch")), Le(pe, V("c.pepoch")))),
            )
            yield (r, s, "to-live"), Imp(here, g.r(r, "alive"))
            yield (r, s, "answered-later"), Imp(here, Le(rle, le))
            yield (r, s, "nonnegative"), Imp(here, And(Le(I(0), le), Le(I(0), pe)))
            yield (
                (r, s, "fenced-by-newer-epoch"),
                Imp(And(here, Eq(g.msg(q, r, s, "err"), I(ERROR["FENCED_LEADER_EPOCH"]))), Lt(rle, le)),
            )
            yield (r, s, "pending"), Imp(And(here, Eq(rle, g.r(r, "lepoch"))), g.r(r, "pend"))
            yield (r, s, "alone"), Not(here) if s > 0 else Imp(here, Eq(V(f"alter_partition{r}.n"), I(0)))
            yield (
                (r, s, "isr"),
                Imp(
                    And(here, Eq(le, V("c.lepoch")), Eq(pe, V("c.pepoch"))),
                    And(*(Eq(g.msg(q, r, s, f"isr{j}"), V(f"c.isr{j}")) for j in range(g.n))),
                ),
            )
            yield (
                (r, s, "committed"),
                Imp(
                    And(here, Eq(rle, g.r(r, "lepoch")), Eq(g.msg(q, r, s, "err"), I(ERROR["NONE"]))),
                    And(*(Eq(g.msg(q, r, s, f"isr{j}"), g.r(r, f"pisr{j}")) for j in range(g.n))),
                ),
            )
            yield (r, s, "partition-epoch"), Imp(And(here, Eq(rle, g.r(r, "lepoch"))), Le(g.r(r, "pepoch"), pe))
            adoptable = And(here, Eq(rle, g.r(r, "lepoch")), Eq(le, g.r(r, "lepoch")), Le(g.r(r, "pepoch"), pe))
            for j in range(g.n):
                yield (
                    (r, s, j, "within-quorum"),
                    Imp(
                        And(adoptable, g.msg(q, r, s, f"isr{j}")),
                        Or(g.r(r, f"isr{j}"), And(g.r(r, "pend"), g.r(r, f"pisr{j}"))),
                    ),
                )
                yield (r, s, j, "covers-isr"), Imp(And(adoptable, V(f"c.isr{j}")), g.msg(q, r, s, f"isr{j}"))
                for x in range(g.n):
                    if x != j:
                        yield (
                            (r, s, j, x, "holds"),
                            Imp(
                                And(adoptable, g.presumes(r), g.msg(q, r, s, f"isr{j}"), g.r(x, "alive")),
                                Agree(x, j, g.r(x, "hw")),
                            ),
                        )


@family
def isr_updates(g: _G) -> Iterator:
    """The ISR updates in flight to a leader in its epoch (a LeaderAndIsr after a fence, the answer
    to its AlterPartition) newer than what it applied: a later one never adds a member an earlier
    one lacks (the controller expands the ISR only on the leader's own AlterPartition, which it
    refuses while the leader is behind its partition epoch, KIP-497)."""
    msgs = [(q, s) for q in ("leader_and_isr", "alter_partition_responses") for s in range(g.b.capacity(q))]
    for r in range(g.n):

        def newer(q: str, s: int) -> Term:
            tag = "rlepoch" if q == "alter_partition_responses" else "leader"
            own = Eq(g.msg(q, r, s, tag), g.r(r, "lepoch") if tag == "rlepoch" else I(r))
            return And(
                g.present(q, r, s),
                g.presumes(r),
                own,
                Eq(g.msg(q, r, s, "lepoch"), g.r(r, "lepoch")),
                Lt(g.r(r, "pepoch"), g.msg(q, r, s, "pepoch")),
            )

        for a, (qa, sa) in enumerate(msgs):
            for qb, sb in msgs[a + 1 :]:
                both = And(newer(qa, sa), newer(qb, sb))
                pa, pb = g.msg(qa, r, sa, "pepoch"), g.msg(qb, r, sb, "pepoch")
                for j in range(g.n):
                    ja, jb = g.msg(qa, r, sa, f"isr{j}"), g.msg(qb, r, sb, f"isr{j}")
                    name = (r, f"{qa[:3]}{sa}", f"{qb[:3]}{sb}", j)
                    yield name, Imp(both, And(Imp(And(Lt(pa, pb), jb), ja), Imp(And(Lt(pb, pa), ja), jb)))


@family
def news_in_flight(g: _G) -> Iterator:
    """A leader behind the controller's partition epoch has the news in flight: every partition
    change sends the leader a LeaderAndIsr (an election, a fence) or answers its AlterPartition,
    carrying the new partition epoch."""
    for r in range(g.n):
        behind = And(g.presumes(r), Lt(g.r(r, "pepoch"), V("c.pepoch")))
        carried = [
            And(g.present(q, r, s), Eq(g.msg(q, r, s, "pepoch"), V("c.pepoch")))
            for q in ("leader_and_isr", "alter_partition_responses")
            for s in range(g.b.capacity(q))
        ]
        yield (r,), Imp(behind, Or(*carried))


@family
def one_change_in_flight(g: _G) -> Iterator:
    """A leader has one ISR change in flight per leader epoch (Partition's pendingState): in its
    current epoch, one AlterPartition or one response to it, never two; a response carries one of
    the errors the controller answers AlterPartition with."""
    ap, apr = "alter_partition", "alter_partition_responses"
    errors = [ERROR[e] for e in ("NONE", "FENCED_LEADER_EPOCH", "INVALID_UPDATE_VERSION", "INELIGIBLE_REPLICA")]
    for r in range(g.n):
        now = g.r(r, "lepoch")
        asks = [And(g.present(ap, r, s), Eq(g.msg(ap, r, s, "lepoch"), now)) for s in range(g.b.capacity(ap))]
        answers = [And(g.present(apr, r, s), Eq(g.msg(apr, r, s, "rlepoch"), now)) for s in range(g.b.capacity(apr))]
        for s, a in enumerate(asks):
            for s2, b in enumerate(asks[s + 1 :], s + 1):
                yield (r, f"ap{s}", f"ap{s2}"), Not(And(a, b))
            for s2, b in enumerate(answers):
                yield (r, f"ap{s}", f"apr{s2}"), Not(And(a, b))
        for s, a in enumerate(answers):
            for s2, b in enumerate(answers[s + 1 :], s + 1):
                yield (r, f"apr{s}", f"apr{s2}"), Not(And(a, b))
            err = g.msg(apr, r, s, "err")
            yield (r, f"apr{s}", "error"), Imp(g.present(apr, r, s), Or(*(Eq(err, I(e)) for e in errors)))
            yield (r, f"apr{s}", "pending"), Imp(a, g.r(r, "pend"))
        for s, a in enumerate(asks):
            yield (r, f"ap{s}", "pending"), Imp(a, g.r(r, "pend"))


TARGETS = ("StrongIsr", "LogMatching", "LeaderCompleteness", "NoLostAckedWrite")


@family
def target(g: _G) -> Iterator:
    """The safety properties themselves (``specs/properties.py``), as conjuncts."""
    for prop in sorted(FORMULAS):
        yield (prop,), Prop(prop)


def _name(fam: str, params: tuple) -> str:
    return f"{fam}({','.join(map(str, params))})"


def grammar(config: ModelConfig, scope: Scope, b: Bounds) -> list[Candidate]:
    """Every candidate of every family for ``b``, sorted by name (deterministic)."""
    g = _G(config, scope, b)
    out = {}
    for fam, fn in FAMILIES.items():
        for params, term in fn(g):
            name = _name(fam, params)
            out[name] = Candidate(name, fam, term)
    return [out[k] for k in sorted(out)]
