"""Building a successor of an encoded state: the symbolic counterpart of ``model/next_state.py``.

``Next`` holds the state under construction as a dict of z3 terms. Where the model branches on a
value, the encoding takes both branches on copies and merges them with ``If`` (``branch``,
``cases``); what must hold for the successor to fit the encoding's bounds (a FIFO not full, a log
not longer than its slots) is collected in ``fits``, and a message FIFO's room for one more in
``room``, each under the branch it arose in.
"""

from __future__ import annotations

from typing import Callable

import z3

from .state import Bounds


def same(a, b) -> bool:
    return a is b or a.eq(b)


def merge(cond, a: dict, b: dict) -> dict:
    """``If(cond, a, b)`` key by key (keys whose terms are the same stay as they are)."""
    return {k: v if same(v, b[k]) else z3.If(cond, v, b[k]) for k, v in a.items()}


def pick(index, values: list, default=None):
    """``values[index]`` for a symbolic ``index`` (``default``, or the last value, when out of range)."""
    out = values[-1] if default is None else default
    start = len(values) - 2 if default is None else len(values) - 1
    for i in range(start, -1, -1):
        out = z3.If(index == i, values[i], out)
    return out


def count(conds: list):
    return z3.Sum([z3.If(c, 1, 0) for c in conds]) if conds else z3.IntVal(0)


def zmin(a, b):
    return z3.If(a <= b, a, b)


class Next:
    """The successor under construction: ``s`` (key -> term) and the bound conditions ``fits``
    (logs, record ids) and ``room`` (message FIFOs)."""

    def __init__(self, cfg, b: Bounds, s: dict, rules=None):
        self.cfg, self.b, self.rules = cfg, b, rules
        self.s = dict(s)
        self.fits: list = []
        self.room: list = []

    def __getitem__(self, key: str):
        return self.s[key]

    def __setitem__(self, key: str, value) -> None:
        self.s[key] = value

    def registration_fenced(self, j: int):
        """Broker ``j``'s registration is fenced: fenced, or awaiting unfence (the model's
        ``state.registration_fenced``; the encoding holds the latter only with unfence_at_heartbeat)."""
        fenced = self.s[f"c.fenced{j}"]
        return z3.Or(fenced, self.s[f"c.await{j}"]) if self.b.unfence else fenced

    def inactive(self, j: int):
        """Broker ``j`` may neither lead nor join the ISR: its registration fenced, or in controlled
        shutdown (the model's ``state.active`` negated; the encoding holds the latter only with
        kraft_controlled_shutdown)."""
        fenced = self.registration_fenced(j)
        return z3.Or(fenced, self.s[f"c.ics{j}"]) if self.b.controlled_shutdown else fenced

    def branch(self, cond, then: Callable[["Next"], None], otherwise: Callable[["Next"], None] | None = None) -> None:
        """Run ``then`` where ``cond`` holds and ``otherwise`` where it does not, merging the two."""
        cond = z3.simplify(z3.BoolVal(cond) if isinstance(cond, bool) else cond)
        if z3.is_true(cond):
            then(self)
            return
        if z3.is_false(cond):
            if otherwise is not None:
                otherwise(self)
            return
        a, b = self.fork(), self.fork()
        then(a)
        if otherwise is not None:
            otherwise(b)
        self.s = merge(cond, a.s, b.s)
        for mine, then_, else_ in ((self.fits, a.fits, b.fits), (self.room, a.room, b.room)):
            if then_:
                mine.append(z3.Implies(cond, z3.And(then_)))
            if else_:
                mine.append(z3.Implies(z3.Not(cond), z3.And(else_)))

    def cases(self, index, choices: range, each: Callable[["Next", int], None]) -> None:
        """``each(self, i)`` where ``index == i``, for every ``i`` of ``choices`` (else unchanged)."""

        def at(k: int) -> Callable[["Next"], None]:
            if k == len(choices):
                return lambda nx: None
            return lambda nx: nx.branch(index == choices[k], lambda x: each(x, choices[k]), at(k + 1))

        at(0)(self)

    def fork(self) -> "Next":
        return Next(self.cfg, self.b, self.s, self.rules)

    # -- per replica ---------------------------------------------------------------------------------

    def rep(self, r: int, field: str):
        return self.s[f"r{r}.{field}"]

    def set_rep(self, r: int, **fields) -> None:
        for name, value in fields.items():
            self.s[f"r{r}.{name}"] = value

    def of_replica(self, index, field: str):
        """Field ``field`` of the replica whose id is the term ``index``."""
        return pick(index, [self.rep(i, field) for i in range(self.b.replicas)])

    def isr_count(self, r: int, key: str = "isr"):
        return count([self.rep(r, f"{key}{j}") for j in range(self.b.replicas)])

    # -- logs (per replica; a fetch response's records use the same keys) ------------------------------------

    def entry(self, p: str, k: int) -> tuple:
        return self.s[f"{p}e{k}"], self.s[f"{p}rec{k}"], self.s[f"{p}base{k}"]

    def log_field(self, p: str, field: str, index):
        return pick(index, [self.s[f"{p}{field}{k}"] for k in range(self.b.log)], z3.IntVal(0))

    def latest_epoch(self, p: str):
        """Epoch of the last entry, -1 for an empty log."""
        n = self.s[p + "len"]
        return z3.If(n == 0, -1, self.log_field(p, "e", n - 1))

    def end_offset_for(self, p: str, epoch) -> tuple:
        """LeaderEpochFileCache.endOffsetFor (KIP-279), as the model computes it: the first entry of
        a larger epoch ends the largest epoch <= ``epoch`` before it; (-1, 0) if there is none."""
        n = self.s[p + "len"]
        first = n
        for k in range(self.b.log - 1, -1, -1):
            first = z3.If(z3.And(k < n, self.s[f"{p}e{k}"] > epoch), k, first)
        return z3.If(first == 0, -1, self.log_field(p, "e", first - 1)), z3.If(first == 0, 0, first)

    def end_offset_for_kip101(self, p: str, epoch):
        """Kafka 0.11's answer: LEO for the latest epoch, else the start of the first larger epoch;
        -1 below the earliest epoch, for an empty log or when no larger epoch exists."""
        n = self.s[p + "len"]
        first = z3.IntVal(-1)
        for k in range(self.b.log - 1, -1, -1):
            first = z3.If(z3.And(k < n, self.s[f"{p}e{k}"] > epoch), k, first)
        return z3.If(n == 0, -1, z3.If(epoch == self.latest_epoch(p), n, z3.If(epoch < self.s[p + "e0"], -1, first)))

    def batch_ends(self, p: str, start) -> list:
        """Per offset k whether it ends a batch at or after offset ``start`` (``state.batch_ends``)."""
        n, last = self.s[p + "len"], self.b.log - 1
        return [
            z3.And(
                k >= start,
                k < n,
                z3.Or(k + 1 == n, self.s[f"{p}base{k + 1}"] != self.s[f"{p}base{k}"]) if k < last else k + 1 == n,
            )
            for k in range(self.b.log)
        ]

    def nth_batch_end(self, p: str, start, nth, default):
        """The end offset of the ``nth`` (from 1) batch from ``start``; ``default`` if there is none."""
        ends = self.batch_ends(p, start)
        out = default
        for k in range(self.b.log - 1, -1, -1):
            out = z3.If(z3.And(ends[k], count(ends[: k + 1]) == nth), k + 1, out)
        return out

    def cut_log(self, p: str, length) -> None:
        """Keep the first ``length`` entries (canonical zeros after them)."""
        for k in range(self.b.log):
            for f in ("e", "rec", "base"):
                key = f"{p}{f}{k}"
                self.s[key] = z3.If(k < length, self.s[key], 0)
        self.s[p + "len"] = length

    def truncate_to(self, r: int, offset) -> None:
        """Log.truncateTo: drop every batch whose last offset is >= ``offset``."""
        p = f"r{r}."
        n = self.s[p + "len"]

        def cut(nx: Next) -> None:
            to = z3.If(offset > 0, nx.log_field(p, "base", offset), 0)
            nx.cut_log(p, to)
            bad = nx.rep(r, "bad")
            nx.set_rep(
                r, hw=zmin(nx.rep(r, "hw"), to), durable=zmin(nx.rep(r, "durable"), to), bad=z3.If(bad < to, bad, -1)
            )

        self.branch(offset < n, cut)

    def flush_policy(self, log_len, durable):
        fm = self.cfg.flush_messages
        return durable if fm is None else z3.If(log_len - durable >= fm, log_len, durable)

    # -- message FIFOs --------------------------------------------------------------------------------

    def queue_len(self, q: str, r: int):
        return self.s[f"{q}{r}.n"]

    def slot_keys(self, q: str, r: int, slot: int) -> list[str]:
        p = f"{q}{r}.{slot}."
        return [k for k in self.s if k.startswith(p)]

    def msg(self, q: str, r: int, slot: int, field: str):
        return self.s[f"{q}{r}.{slot}.{field}"]

    def push(self, q: str, r: int, fields: dict, when=True) -> None:
        """Append a message (``fields`` by key suffix; the others 0/False) if ``when``."""
        n = self.queue_len(q, r)
        cap = self.b.capacity(q)
        when = z3.BoolVal(when) if isinstance(when, bool) else when
        self.room.append(z3.Implies(when, n < cap))
        for slot in range(cap):
            here = z3.And(when, n == slot)
            p = f"{q}{r}.{slot}."
            for key in self.slot_keys(q, r, slot):
                value = fields.get(key[len(p) :])
                if value is None:
                    value = z3.BoolVal(False) if z3.is_bool(self.s[key]) else z3.IntVal(0)
                self.s[key] = z3.If(here, value, self.s[key])
        self.s[f"{q}{r}.n"] = z3.If(when, n + 1, n)

    def pop(self, q: str, r: int, index: int = 0) -> dict:
        """Remove message ``index`` (present: the guard says so); its fields by key suffix."""
        cap = self.b.capacity(q)
        if index >= cap:  # past what the encoding holds: the guard is false, the queue stays
            p = f"{q}{r}.0."
            return {
                key[len(p) :]: z3.BoolVal(False) if z3.is_bool(self.s[key]) else z3.IntVal(0)
                for key in self.slot_keys(q, r, 0)
            }
        p = f"{q}{r}.{index}."
        taken = {key[len(p) :]: self.s[key] for key in self.slot_keys(q, r, index)}
        for slot in range(index, cap):
            for key in self.slot_keys(q, r, slot):
                suffix = key[len(f"{q}{r}.{slot}.") :]
                self.s[key] = (
                    self.s[f"{q}{r}.{slot + 1}.{suffix}"]
                    if slot + 1 < cap
                    else (z3.BoolVal(False) if z3.is_bool(self.s[key]) else z3.IntVal(0))
                )
        self.s[f"{q}{r}.n"] = self.queue_len(q, r) - 1
        return taken

    def clear(self, q: str, r: int) -> None:
        for slot in range(self.b.capacity(q)):
            for key in self.slot_keys(q, r, slot):
                self.s[key] = z3.BoolVal(False) if z3.is_bool(self.s[key]) else z3.IntVal(0)
        self.s[f"{q}{r}.n"] = z3.IntVal(0)

    def keep_only(self, q: str, r: int, keep: Callable[[int], object]) -> None:
        """Drop the messages for which ``keep(slot)`` is false, keeping the order of the rest."""
        cap, n = self.b.capacity(q), self.queue_len(q, r)
        kept = [z3.And(slot < n, keep(slot)) for slot in range(cap)]
        before = [count(kept[:slot]) for slot in range(cap)]
        old = {
            slot: {key[len(f"{q}{r}.{slot}.") :]: self.s[key] for key in self.slot_keys(q, r, slot)}
            for slot in range(cap)
        }
        for slot in range(cap):
            for suffix, zero in old[slot].items():
                value = z3.BoolVal(False) if z3.is_bool(zero) else z3.IntVal(0)
                for src in range(cap - 1, slot - 1, -1):
                    value = z3.If(z3.And(kept[src], before[src] == slot), old[src][suffix], value)
                self.s[f"{q}{r}.{slot}.{suffix}"] = value
        self.s[f"{q}{r}.n"] = count(kept)
