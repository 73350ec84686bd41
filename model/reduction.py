"""Partial-order reduction for the explorer: in each state, take the steps of a persistent set
instead of every enabled step, when that keeps every verdict.

A persistent set is built as a stubborn set (Valmari; Godefroid's persistent sets) from the
footprints of ``footprint.py``, over groups of steps (one kind on one broker, ``footprint.group``):
start from one enabled group and add, until nothing changes,

- for an enabled group: every group that may write what it reads or assigns, every group that may
  read or write what it changes, and every group that may read what it adds to (its steps commute
  with every step left out, and stay enabled, or disabled, whatever steps left out run first);
- for a disabled group: every group that may write what its enabling condition reads (none when
  a scope bound it is past keeps it disabled for good: counters, epochs and the clock only grow);
- visibility: for an enabled group that changes a view a checked property reads
  (``observed.py``), every group that may change any view that property reads. So a step that can
  change what a checked property reads never runs ahead of a step left out that could change it
  too; a step that adds to a history view (records acknowledged or read) is exempt, since a
  property failing there fails with more records too;
- a step that changes the fault ledger where a checked property's budget reads it takes every
  group (it could turn a violation into a failure outside the budget).

The smallest such set over the enabled groups is taken, unless it is all of them. The cycle
condition of breadth-first search: a state whose reduced set reaches no state unseen before it is
expanded fully (``explore`` does that), so no step is put off around a cycle.

Why this keeps verdicts: a failure reachable from a state by a path is reachable from the reduced
set too. If the path takes a step of the set, that step commutes to its front; if not, the steps
of the set change nothing the failing property reads (the visibility rule, since some step of the
path changed it), so taking one of them first still ends in a failure, and the cycle condition
means this happens only finitely often. A counterexample may get longer than the shortest one:
``explore(..., reduction=False)`` gives the shortest.
"""

from __future__ import annotations

from ..specs import BY_ID
from ..specs.budgets import ANY
from .alphabet import DELIVER_LEADER_AND_ISR, HANDLE_FETCH, HANDLE_FETCH_RESPONSE, MESSAGE_KINDS
from .constraints import group_in_scope, scoped_kinds
from .footprint import (
    changed,
    context,
    enabling,
    group,
    ledger_changed,
    ledger_reads,
    ledger_step,
    prune_reads,
    pushes,
    reads,
    static_reads,
    writes,
)
from .observed import GROWING, VIEWS_OF, views
from .state import initial_state


def _bits(mask: int):
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


class Reduction:
    """The persistent sets of one search: its config, scope, checked properties and budgets."""

    def __init__(self, config, scope, properties, budgets: bool = True) -> None:
        self.config, self.scope, self.budgets = config, scope, budgets
        self.ctx = ctx = context(config, scope)
        L = ctx.L
        self.groups = _universe(config, scope)
        self.gid = {g: i for i, g in enumerate(self.groups)}
        readers, changers, pushers = [0] * L.size, [0] * L.size, [0] * L.size
        for i, g in enumerate(self.groups):
            for table, mask in ((readers, static_reads(ctx, g)), (changers, writes(ctx, g)), (pushers, pushes(ctx, g))):
                for loc in _bits(mask):
                    table[loc] |= 1 << i
        self.changers, self.pushers = changers, pushers
        self.on_change = [r | c for r, c in zip(readers, changers)]
        self.readers = readers
        self.all = (1 << len(self.groups)) - 1
        self.lrs_reads = L.ctrl["isr"] | L.field("power_lost")
        self._spread: dict[tuple[int, int], int] = {}
        self.set_properties(properties)

    def set_properties(self, properties) -> None:
        """The properties still checked (a violated one no longer is): their views are the visible
        ones. A property this module does not know makes every state expand fully."""
        props = list(properties)
        self.active = all(p.id in VIEWS_OF and BY_ID[p.id].check is p.check for p in props)
        if not self.active:
            return
        L, by_name = self.ctx.L, views(self.ctx.L.n)
        self.views = []  # (view, groups that may change a view its properties read), growing ones left out
        pull: dict[str, int] = {}
        for p in props:
            seen = [v for name in VIEWS_OF[p.id] for v in by_name[name]]
            writers = self.spread(sum(v.base for v in seen), self.changers)
            for v in seen:
                pull[v.name] = pull.get(v.name, 0) | writers
        self.views = [
            (v, pull[v.name]) for vs in by_name.values() for v in vs if v.name in pull and v.name not in GROWING
        ]
        self.ledger_seen = 0  # ledger parts a checked property's budget reads
        if self.budgets:
            watch = self.ctx.watch
            for p in props:
                b = p.budget
                if b.losers != ANY:
                    self.ledger_seen |= sum(L.losers)
                if b.fenced_reads:
                    self.ledger_seen |= L.stale_reads
                self.ledger_seen |= sum(L.known[k] for k in b.known_losses if k in watch)

    def spread(self, mask: int, table: list[int]) -> int:
        """The union of ``table``'s entries at the bits of ``mask`` (memoised: masks repeat)."""
        key = (mask, id(table))
        out = self._spread.get(key)
        if out is None:
            out = 0
            for loc in _bits(mask):
                out |= table[loc]
            self._spread[key] = out
        return out

    def persistent(self, s, ledger, moves: list) -> list[int] | None:
        """Of ``moves`` (``(steps, successor, inside, ledger after handle_fetch, ledger after,
        pruned)`` per enabled transition of ``s``), the indices of a persistent set's, or None to
        take them all."""
        if not self.active or len(moves) < 2:
            return None
        members: dict[int, list[int]] = {}
        enabled = 0
        for k, m in enumerate(moves):
            g = self.gid[group(m[0][0])]
            members.setdefault(g, []).append(k)
            if not m[5]:
                enabled |= 1 << g
        if not enabled & (enabled - 1):
            return None
        weight = {g: sum(1 for k in ks if not moves[k][5]) for g, ks in members.items()}
        total = sum(weight.values())
        conflicts: dict[int, int] = {}
        best, best_size = 0, total
        for seed in _bits(enabled):
            chosen, todo, size = 1 << seed, [seed], weight[seed]
            while todo and size < best_size:
                g = todo.pop()
                c = conflicts.get(g)
                if c is None:
                    c = conflicts[g] = self._conflicts(s, ledger, moves, g, members.get(g, ()), (enabled >> g) & 1)
                new = c & ~chosen
                chosen |= new
                for h in _bits(new):
                    todo.append(h)
                    size += weight.get(h, 0)
            if size < best_size:
                best, best_size = chosen, size
        if not best:
            return None
        return [k for k, m in enumerate(moves) if not m[5] and (best >> self.gid[group(m[0][0])]) & 1]

    def _conflicts(self, s, ledger, moves, g: int, ks, enabled: int) -> int:
        """The groups a persistent set holding group ``g`` must hold too, in ``s``."""
        grp = self.groups[g]
        ctx, L = self.ctx, self.ctx.L
        if not enabled:
            if not group_in_scope(self.scope, s, grp[0]):
                return 0  # past a bound that only grows: disabled for good
            if ks:  # enabled but pruned (Last Replica Standing): that reads the controller's ISR too
                return self.spread(reads(ctx, grp, s) | self.lrs_reads, self.changers)
            locations, queues = enabling(ctx, grp, s)
            return self.spread(locations, self.changers) | self.spread(queues, self.pushers)
        r = reads(ctx, grp, s)
        w = led = 0
        after = []
        name = ledger_step(ctx, grp)
        for k in ks:
            steps, t, inside, mid, led_after, pruned = moves[k]
            if pruned:
                r |= self.lrs_reads
                continue
            r |= prune_reads(ctx, s, t)
            if inside:  # a fetch round: its handle_fetch does the bookkeeping; the state inside is checked too
                r |= ledger_reads(ctx, name, grp[1], s, ledger, steps[1], inside[0])
                w |= changed(L, s, inside[0])
                led |= ledger_changed(L, ledger, mid)
                after.append(inside[0])
            else:
                r |= ledger_reads(ctx, name, grp[1], s, ledger, steps[0], t)
            w |= changed(L, s, t)
            led |= ledger_changed(L, ledger, led_after)
            after.append(t)
        if ctx.rounds:  # the response inside a round is taken within it
            w &= ~(L.queues("fetch_requests") | L.queues("fetch_responses"))
        if led & self.ledger_seen or w & ~L.added & ~r:  # a budget's input, or a change the reads miss
            return self.all
        out = (
            self.spread(r, self.changers)
            | self.spread(w & ~L.added, self.on_change)
            | self.spread((w & L.added) | led, self.readers)
        )
        for v, pull in self.views:
            if v.base & w and (v.base & ~r or any(v.value(t) != v.value(s) for t in after)):
                out |= pull
        return out


def _universe(config, scope) -> list[tuple]:
    """Every group of steps the search may take: the scope's step kinds that its bounds let in at
    the initial state (a bound passed there is passed for good), one group per broker (and
    message kind, or election target)."""
    init = initial_state(config)
    out: dict[tuple, None] = {}
    for kind, steps in scoped_kinds(config, scope):
        name = kind.name
        if scope.fetch_rounds and name in (HANDLE_FETCH, HANDLE_FETCH_RESPONSE):
            continue
        if not group_in_scope(scope, init, name):
            continue
        if steps is not None:
            out.update((group(st), None) for st in steps)
        elif name == DELIVER_LEADER_AND_ISR:
            out.update(((name, b, None), None) for b in range(config.replicas))
        else:  # drop
            out.update(((name, b, arg), None) for arg in MESSAGE_KINDS for b in range(config.replicas))
    return list(out)
