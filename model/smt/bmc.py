"""Bounded model checking and k-induction over the encoding, within an exploration scope.

One unrolling serves every depth: depth k+1 adds one transition (a selector naming which of the
scope's candidate transitions is taken, its guard and scope condition, and the successor's keys
as fresh constants equal to the chosen candidate's terms) to the solver, and each property is
asked about the newest state inside ``push``/``pop``. Transitions are the explorer's: one step,
or with ``scope.fetch_rounds`` a follower's whole fetch round, whose inner state (after
handle_fetch) is checked too; so the shortest violation in transitions is the explorer's.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable

import z3

from ...specs import BY_ID, Property
from ..alphabet import (
    CHECKPOINT_HW,
    CONSUME,
    CORRUPT,
    CORRUPT_LIVE,
    DROP,
    ELECT,
    FAIL_DISK,
    FAULTS,
    FENCE,
    FLUSH,
    HANDLE_ALTER_PARTITION,
    HANDLE_FETCH,
    HANDLE_FETCH_RESPONSE,
    LOSE_DISK,
    MESSAGE_KINDS,
    PRODUCE,
    REJOIN,
    SEND_FETCH,
    STEPS,
    TICK,
    Step,
    _combos,
)
from ..budget import outside_budget
from ..config import ModelConfig, Scope, check_scope
from ..constraints import scoped_kinds
from ..explorer import ReplayRefused, explore, replay, state_key
from ..losses import LAST_REPLICA_STANDING, STALE_ISR_EXPANSION
from ..state import State, initial_state
from .actions import Unsupported, fault_counted, successor, unsupported
from .properties import FORMULAS
from .protocols import rules_for
from .state import ERRORS, KINDS, QUEUES, SCALARS, Bounds, constant, decode, embed, fresh, schema, values_of
from .terms import count, same

_FETCH_ROUND = (SEND_FETCH, HANDLE_FETCH, HANDLE_FETCH_RESPONSE)
_PREPROCESS = z3.Then("simplify", "propagate-values", "solve-eqs", "elim-uncnstr", "simplify", "smt")


class EncodingError(AssertionError):
    """A trace the solver found does not do on the model what the solver says: an encoding bug."""


def bounds_for(config: ModelConfig, scope: Scope, leader_and_isr: int = 4) -> Bounds:
    """Bounds that hold every state of ``scope``: a log holds each record at most once (at the
    offset its leader wrote it), record ids stop at ``max_records``."""
    fetch = 1 if scope.fetch_rounds and not scope.max_drops else 2
    return Bounds(
        replicas=config.replicas,
        log=max(scope.max_records, 1),
        records=max(scope.max_records, 1),
        batch=scope.max_batch_records,
        fetch_requests=fetch,
        fetch_responses=fetch,
        leader_and_isr=leader_and_isr,
        held_reads=config.split_fetch_handling,
        stale_fetcher=config.split_become_follower,
        prev_fetch=config.catch_up_at_previous_fetch,
        metadata_cache=config.metadata_cache,
        unfence=config.unfence_at_heartbeat,
        controlled_shutdown=config.kraft_controlled_shutdown,
    )


def candidates(config: ModelConfig, scope: Scope, b: Bounds) -> list[tuple[Step, ...]]:
    """The scope's transitions in the explorer's order: each a step, or a whole fetch round."""
    check_scope(config, scope)
    out: list[tuple[Step, ...]] = []
    n = config.replicas
    static_off = {
        CONSUME: not scope.consumes,
        FLUSH: not scope.flushes,
        CHECKPOINT_HW: not scope.hw_checkpoints,
        REJOIN: scope.max_zombies == 0,
        TICK: scope.max_clock == 0,
        DROP: scope.max_drops == 0,
        LOSE_DISK: scope.max_disk_losses == 0,
        CORRUPT: scope.max_corruptions == 0,
        CORRUPT_LIVE: scope.max_live_corruptions == 0,
        FAIL_DISK: scope.max_disk_failures == 0,
    }
    for kind, steps in scoped_kinds(config, scope):
        name = kind.name
        if static_off.get(name):
            continue
        if scope.fetch_rounds and name in _FETCH_ROUND:
            if name == SEND_FETCH:
                out += [(st, Step(HANDLE_FETCH, st.replica), Step(HANDLE_FETCH_RESPONSE, st.replica)) for st in steps]
            continue
        if steps is None:  # steps with an index: every position the encoding holds
            combos = [st._replace(index=0) for st in _index_free(kind, n)]
            steps = [
                st._replace(index=i) for st in combos for i in range(b.capacity(MESSAGE_KINDS[kind.queue or st.arg]))
            ]
        out += [(st,) for st in steps]
    for steps in out:
        for st in steps:
            reason = unsupported(st)
            if reason:
                raise Unsupported(f"{reason} (a step of the scope: {json.dumps(st.to_json())})")
    return out


def _index_free(kind, n: int) -> list[Step]:
    return [Step(kind.name, **c) for c in _combos(kind, n)]


def in_scope(config: ModelConfig, scope: Scope, s: dict, st: Step, unbounded: bool = False):
    """The explorer's scope condition (``constraints.in_scope``) as a formula. ``unbounded`` keeps
    only what a scope switches off (a fault class whose bound is 0) and the record bound (the
    logs' length): no bound on leader epochs, elections and the number of faults of a class."""
    name, r = st.name, st.replica
    if unbounded:
        ok = [z3.Not(fault_counted(s, st, f)) for f in STEPS[name].faults if getattr(scope, f.bound) == 0]
    else:
        ok = [
            z3.Implies(fault_counted(s, st, f), s[f"h.{f.counter}"] < getattr(scope, f.bound))
            for f in STEPS[name].faults
        ]
    if name == PRODUCE:
        ok.append(z3.And(s["produced"] + st.records <= scope.max_records, s[f"r{r}.leader"] == r))
        if st.arg == -1:
            ok.append(count([s[f"r{r}.isr{j}"] for j in range(config.replicas)]) >= config.min_insync_replicas)
    elif name == ELECT and not unbounded:
        ok.append(s["c.lepoch"] < scope.max_epoch)
    elif name == TICK:
        ok.append(s["now"] < scope.max_clock)
    elif (
        name == HANDLE_ALTER_PARTITION
        and scope.exclude_known_losses
        and STALE_ISR_EXPANSION.name in config.rules.known_losses
    ):
        # KIP-903 left out: no new member whose LEO the leader learnt from an earlier incarnation
        p = f"alter_partition{r}.0."
        ok.append(
            z3.Or(
                s[f"alter_partition{r}.n"] == 0,
                z3.And(
                    [
                        z3.Implies(
                            z3.And(s[f"{p}isr{f}"], z3.Not(s[f"c.isr{f}"])), s[f"r{r}.rleo{f}"] <= s[f"r{f}.len"]
                        )
                        for f in range(config.replicas)
                    ]
                ),
            )
        )
    elif name == FENCE and not unbounded:
        ok.append(z3.Or(s["c.leader"] != r, s["c.lepoch"] < scope.max_epoch))
    return z3.And(ok) if ok else z3.BoolVal(True)


def last_replica_standing(s: dict, n: int):
    """``explorer.last_replica_standing`` as a formula: every controller ISR member lost power."""
    return z3.And([z3.Implies(s[f"c.isr{j}"], s[f"r{j}.plost"]) for j in range(n)])


@dataclass
class Transition:
    """One candidate transition from a state: taken where ``enabled``; ``fits`` the log and record
    bounds (which the scope keeps it within); ``room`` in the message FIFOs for what it sends;
    the successor ``post``; for a fetch round the state after handle_fetch, ``inner``."""

    steps: tuple
    enabled: object
    fits: object
    room: object
    post: dict
    inner: dict | None = None


class Unrolling:
    """States s_0 .. s_k linked by the scope's transitions in one solver."""

    def __init__(
        self,
        config: ModelConfig,
        scope: Scope,
        bounds: Bounds | None = None,
        start: dict | None = None,
        timeout_ms: int = 60_000,
        name: str = "s",
        preprocess: bool = False,
        within_bounds: bool = False,
        unbounded: bool = False,
    ):
        self.config, self.scope = config, scope
        self.unbounded = unbounded  # no scope bound on epochs and fault counts (``in_scope``)
        self.rules = rules_for(config.protocol)
        self.b = bounds or bounds_for(config, scope)
        self.moves = candidates(config, scope, self.b)
        # the explorer drops transitions into KIP-966's Last Replica Standing when told to
        self.exclude_lrs = scope.exclude_known_losses and LAST_REPLICA_STANDING.name in config.rules.known_losses
        self.schema = schema(self.b)
        self.name = name
        self.states = [start if start is not None else constant(self.b, embed(self.b, initial_state(config)))]
        self.selectors: list = []
        self.inner: list[list[tuple[int, dict]]] = []
        # overflowed[k]: the path to s_k sent a message past its FIFO's bounds (its
        # state is then no model state); ``within_bounds`` leaves such transitions out instead
        self.overflowed = [z3.BoolVal(False)]
        self.within_bounds = within_bounds
        self.solver = z3.SolverFor("QF_LIA")
        self.solver.set("timeout", timeout_ms)
        self.timeout_ms, self.preprocess = timeout_ms, preprocess
        self.model, self.last_stats = None, {}

    def transitions(self, s: dict) -> list[Transition]:
        out = []
        for steps in self.moves:
            enabled, fits, room, post, inner = z3.BoolVal(True), [], [], s, None
            for i, st in enumerate(steps):
                guard, nxt, ok, free = successor(self.config, self.rules, self.b, post, st)
                if i == 0:
                    enabled = z3.And(guard, in_scope(self.config, self.scope, s, st, self.unbounded))
                    if len(steps) > 1:  # a round goes on only if its request was not lost to a dead leader
                        enabled = z3.And(
                            enabled, nxt[f"fetch_requests{st.replica}.n"] > post[f"fetch_requests{st.replica}.n"]
                        )
                fits.append(ok)
                room.append(free)
                post = nxt
                if i == 1:
                    inner = post
            if self.exclude_lrs:
                enabled = z3.And(enabled, z3.Not(last_replica_standing(post, self.config.replicas)))
            out.append(Transition(steps, enabled, z3.And(fits), z3.And(room), post, inner))
        return out

    @property
    def depth(self) -> int:
        return len(self.states) - 1

    def extend(self) -> None:
        """Add transition k -> k+1."""
        k = self.depth
        s = self.states[-1]
        moves = self.transitions(s)
        sel = z3.Int(f"{self.name}.sel{k}")
        self.selectors.append(sel)
        self.solver.add(sel >= 0, sel < len(moves))
        for j, t in enumerate(moves):
            self.solver.add(
                z3.Implies(
                    sel == j, z3.And(t.enabled, t.fits, t.room) if self.within_bounds else z3.And(t.enabled, t.fits)
                )
            )
        unfit = [
            z3.And(sel == j, z3.Not(t.room))
            for j, t in enumerate(moves)
            if not self.within_bounds and not z3.is_true(z3.simplify(t.room))
        ]
        overflowed = self.overflowed[-1]
        if unfit:
            overflowed = z3.Bool(f"{self.name}{k + 1}.overflowed")
            self.solver.add(overflowed == z3.Or(self.overflowed[-1], *unfit))
        self.overflowed.append(overflowed)
        nxt = {}
        for key, is_bool in self.schema.items():
            terms = [t.post[key] for t in moves]
            if all(same(v, s[key]) for v in terms):
                nxt[key] = s[key]
                continue
            value = terms[-1]
            for j in range(len(terms) - 2, -1, -1):
                if not same(terms[j], value):
                    value = z3.If(sel == j, terms[j], value)
            var = (z3.Bool if is_bool else z3.Int)(f"{self.name}{k + 1}.{key}")
            self.solver.add(var == value)
            nxt[key] = var
        self.states.append(nxt)
        self.inner.append([(j, t.inner) for j, t in enumerate(moves) if t.inner is not None])

    def violated(self, prop: str, k: int | None = None):
        """The formula: ``prop`` fails in s_k or inside the fetch round that reached it."""
        k = self.depth if k is None else k
        formula = FORMULAS[prop]
        bad = [z3.Not(formula(self.states[k], self.b))]
        if k > 0:
            sel = self.selectors[k - 1]
            bad += [z3.And(sel == j, z3.Not(formula(inner, self.b))) for j, inner in self.inner[k - 1]]
        return z3.Or(bad)

    def check(self, *goals) -> z3.CheckSatResult:
        """Satisfiability of the unrolling with ``goals``: within ``push``/``pop`` of the one
        solver, or with ``preprocess`` on a solver of its own that first eliminates the
        successor constants (z3 does not preprocess in incremental mode)."""
        if self.preprocess:
            solver = _PREPROCESS.solver()
            solver.set("timeout", self.timeout_ms)
            solver.add(*self.solver.assertions(), *goals)
            verdict = solver.check()
            self.model = solver.model() if verdict == z3.sat else None
            self.last_stats = _stats(solver)
            return verdict
        self.solver.push()
        try:
            self.solver.add(*goals)
            verdict = self.solver.check()
            self.model = self.solver.model() if verdict == z3.sat else None
            self.last_stats = _stats(self.solver)
            return verdict
        finally:
            self.solver.pop()

    def trace(self, model: z3.ModelRef, prop: str | None, k: int) -> list[Step]:
        """The steps of the path to s_k in ``model`` (cut inside the last round where ``prop``
        fails there but not after it)."""
        steps: list[Step] = []
        for i in range(k):
            steps += list(self.moves[model.eval(self.selectors[i], model_completion=True).as_long()])
        if prop is not None and k > 0 and len(self.moves[model.eval(self.selectors[k - 1]).as_long()]) > 1:
            if z3.is_true(model.eval(FORMULAS[prop](self.states[k], self.b), model_completion=True)):
                steps = steps[:-1]
        return steps

    def state(self, model: z3.ModelRef, k: int) -> State:
        return decode(self.b, values_of(model, self.states[k]))


@dataclass
class Found:
    """The shortest violation of ``property``: ``transitions`` of the explorer's kind, its schedule steps."""

    property: str
    transitions: int
    trace: list[dict]
    seconds: float

    def to_json(self) -> dict:
        return {
            "property": self.property,
            "transitions": self.transitions,
            "depth": len(self.trace),
            "seconds": round(self.seconds, 3),
            "trace": self.trace,
        }


@dataclass
class Progress:
    depth: int
    seconds: float
    stats: dict


@dataclass
class BmcResult:
    config: ModelConfig
    scope: Scope
    depth: int
    seconds: float
    violations: list[Found] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # properties whose query timed out
    # shortest failures outside the property's fault budget (the encoding knows no budget: each
    # counterexample is replayed through the fault ledger), with why; not searched past them
    beyond_budget: list[tuple[Found, str]] = field(default_factory=list)
    cpu_seconds: float = 0.0
    bounds: Bounds | None = None  # what the encoding held in the end

    def to_json(self) -> dict:
        return {
            "protocol": self.config.protocol,
            "depth": self.depth,
            "seconds": round(self.seconds, 3),
            "cpu_seconds": round(self.cpu_seconds, 3),
            "violations": [v.to_json() for v in self.violations],
            "unknown": self.unknown,
            "beyond_budget": [{**f.to_json(), "reason": why} for f, why in self.beyond_budget],
            "queue_capacities": {q: self.bounds.capacity(q) for q in QUEUES} if self.bounds else None,
        }


def _stats(solver: z3.Solver) -> dict:
    st = solver.statistics()
    return {
        k: st.get_key_value(k)
        for k in st.keys()
        if k in ("conflicts", "decisions", "propagations", "memory", "max memory")
    }


def bmc(
    config: ModelConfig,
    scope: Scope,
    depth: int,
    properties: Iterable[str],
    stop_at_first: bool = False,
    timeout_ms: int = 60_000,
    progress: Callable[[Progress], None] | None = None,
    preprocess: bool = False,
    budget_s: float | None = None,
    bounds: Bounds | None = None,
    grown: Callable[[Bounds], None] | None = None,
) -> BmcResult:
    """The shortest violation (in transitions, up to ``depth``) of each property, each replayed
    on the model to check that it violates the property there too. With ``budget_s``, the
    properties still open when its CPU seconds run out are reported unknown.

    Each depth's query also asks for a path that left the encoding's bounds; where one exists,
    the search starts over with the message queues as long as that path needs (``grown`` is
    told), so the answer covers every path to the depth."""
    for p in properties:
        if p not in FORMULAS:
            raise Unsupported(f"property {p!r} has no SMT formula")
    start, cpu = time.perf_counter(), time.process_time()
    b = bounds or bounds_for(config, scope)
    while True:
        result, wider = _bmc_within(
            config,
            scope,
            b,
            depth,
            list(properties),
            stop_at_first,
            timeout_ms,
            progress,
            preprocess,
            budget_s,
            start,
            cpu,
        )
        if wider is None:
            break
        b = wider
        if grown is not None:
            grown(b)
    result.bounds = b
    result.seconds = time.perf_counter() - start
    result.cpu_seconds = time.process_time() - cpu
    return result


def _bmc_within(
    config, scope, b, depth, pending, stop_at_first, timeout_ms, progress, preprocess, budget_s, start, cpu
) -> tuple[BmcResult, Bounds | None]:
    """``bmc`` within bounds ``b``: the result, and wider bounds if a path it must cover leaves ``b``."""
    u = Unrolling(config, scope, bounds=b, timeout_ms=timeout_ms, preprocess=preprocess)
    result = BmcResult(config, scope, 0, 0.0)
    k = 0
    while True:
        for p in list(pending):
            if budget_s is not None:  # CPU seconds: on a shared machine wall time counts the others
                left = budget_s - (time.process_time() - cpu)
                u.timeout_ms = max(1, min(timeout_ms, int(left * 1000)))
                u.solver.set("timeout", u.timeout_ms)
            verdict = u.check(z3.Or(u.violated(p, k), u.overflowed[k])) if budget_s is None or left > 0 else z3.unknown
            if verdict == z3.sat and z3.is_true(u.model.eval(u.overflowed[k], model_completion=True)):
                return result, _wider(u, k)
            if verdict == z3.sat:
                steps = u.trace(u.model, p, k)
                _confirm(config, p, steps)
                found = Found(p, k, [st.to_json() for st in steps], time.perf_counter() - start)
                why = outside_budget(config, BY_ID[p], found.trace)
                if why is None:
                    result.violations.append(found)
                else:
                    result.beyond_budget.append((found, why))
                pending.remove(p)
            elif verdict == z3.unknown:
                result.unknown.append(p)
                pending.remove(p)
        if result.unknown and not pending:
            break
        result.depth = k
        if progress is not None:
            progress(
                Progress(
                    k, time.perf_counter() - start, {"cpu seconds": round(time.process_time() - cpu, 1), **u.last_stats}
                )
            )
        if not pending or k >= depth or (stop_at_first and result.violations):
            break
        u.extend()
        k += 1
    return result, None


def _wider(u: Unrolling, k: int) -> Bounds:
    """Bounds that hold the first state past the bounds on the solver's path to s_k."""
    i = next(i for i in range(k) if z3.is_true(u.model.eval(u.overflowed[i + 1], model_completion=True)))
    state = u.state(u.model, i)
    steps = u.moves[u.model.eval(u.selectors[i], model_completion=True).as_long()]
    try:
        run = replay(u.config, steps, state)
    except ReplayRefused as exc:
        raise EncodingError(
            f"the solver takes {[st.to_json() for st in steps]} past the bounds after "
            f"{i} transitions, which the model refuses: {exc}"
        ) from None
    need = {q: max(u.b.capacity(q), *(len(queue) for t in run.states for queue in getattr(t, q))) for q in QUEUES}
    wider = replace(u.b, **need)
    if wider == u.b:
        raise EncodingError(
            f"the solver takes {[st.to_json() for st in steps]} past the bounds after {i} "
            "transitions, but the model's successor fits them"
        )
    return wider


def _confirm(config: ModelConfig, prop: str, steps: list[Step]) -> None:
    run = replay(config, steps)
    if BY_ID[prop].check(run.states[-1]):
        raise EncodingError(f"the solver's trace to {prop} ({len(steps)} steps) does not violate it on the model")


# -- k-induction -----------------------------------------------------------------------------------------


def wellformed(config: ModelConfig, scope: Scope, b: Bounds, s: dict, unbounded: bool = False):
    """What every encoded state satisfies by construction (the start of an induction path):
    ids in range, lengths and counts within bounds, unused slots canonical, scope counters within
    the scope (with ``unbounded``, fault counters only non-negative). No property is assumed here."""
    n = b.replicas
    out = []

    def rng(term, low, high):
        out.extend([term >= low, term <= high])

    def log(p: str, length, base_ok: bool) -> None:
        rng(length, 0, b.log)
        for k in range(b.log):
            e, rec, base = s[f"{p}e{k}"], s[f"{p}rec{k}"], s[f"{p}base{k}"]
            out.append(
                z3.If(
                    k < length,
                    z3.And(e >= 0, rec >= 1, base >= 0, base <= k) if base_ok else z3.And(e >= 0, rec >= 1, base >= 0),
                    z3.And(e == 0, rec == 0, base == 0),
                )
            )

    for r in range(n):
        p = f"r{r}."
        log(p, s[p + "len"], True)
        rng(s[p + "durable"], 0, s[p + "len"])
        rng(s[p + "hw"], 0, b.log)
        rng(s[p + "hwc"], 0, b.log)
        rng(s[p + "leader"], -1, n - 1)
        if scope.max_live_corruptions:  # else no batch is ever damaged under a live broker
            out.append(z3.Or(s[p + "bad"] == -1, z3.And(s[p + "bad"] >= 0, s[p + "bad"] < s[p + "len"])))
        else:
            out.append(s[p + "bad"] == -1)
        out += [
            s[p + "lepoch"] >= -1,
            s[p + "pepoch"] >= -1,
            s[p + "eso"] >= -1,
            s[p + "trunc"] >= -1,
            s[p + "bepoch"] >= 0,
        ]
        for j in range(n):
            out += [
                s[f"{p}rleo{j}"] >= -1,
                s[f"{p}lcu{j}"] >= 0,
                z3.Implies(z3.Not(s[p + "pend"]), z3.Not(s[f"{p}pisr{j}"])),
                s[f"{p}rbe{j}"] >= -1,
                z3.If(s[f"{p}pisr{j}"], s[f"{p}pep{j}"] >= -1, s[f"{p}pep{j}"] == -1),
            ]
        for k in range(1, b.records + 1):
            out.append(
                z3.Implies(
                    z3.Not(s[f"{p}pp{k}"]), z3.And(s[f"{p}ppoff{k}"] == 0, s[f"{p}ppdl{k}"] == 0, s[f"{p}ppn{k}"] == 0)
                )
            )
            out.append(
                z3.Implies(
                    s[f"{p}pp{k}"], z3.And(s[f"{p}ppoff{k}"] >= 0, s[f"{p}ppn{k}"] >= 1, s[f"{p}ppn{k}"] <= b.batch)
                )
            )
    rng(s["c.leader"], -1, n - 1)
    rng(s["c.lkl"], -1, n - 1)
    out += [s["c.lepoch"] >= 0, s["c.pepoch"] >= 0, *(s[f"c.bep{j}"] >= 0 for j in range(n))]
    for q in QUEUES:
        for r in range(n):
            length = s[f"{q}{r}.n"]
            rng(length, 0, b.capacity(q))
            for slot in range(b.capacity(q)):
                p = f"{q}{r}.{slot}."
                keys = [k for k in s if k.startswith(p)]
                out.append(
                    z3.Implies(slot >= length, z3.And([s[k] == (False if z3.is_bool(s[k]) else 0) for k in keys]))
                )
                if "leader" in SCALARS[q]:
                    out.append(z3.Implies(slot < length, z3.And(s[p + "leader"] >= -1, s[p + "leader"] < n)))
                if q == "fetch_responses":
                    rn = s[p + "rn"]
                    log(p, rn, False)
                    out.append(
                        z3.Or(
                            s[p + "bad1"] == 0,
                            z3.And(
                                scope.max_live_corruptions > 0,
                                s[p + "bad1"] > s[p + "rstart"],
                                s[p + "bad1"] <= s[p + "rstart"] + rn,
                            ),
                        )
                    )
                    out.append(
                        z3.And(
                            z3.Implies(rn == 0, s[p + "rstart"] == 0),
                            s[p + "rstart"] >= 0,
                            s[p + "kind"] >= 0,
                            s[p + "kind"] < len(KINDS),
                        )
                    )
                if "err" in SCALARS[q]:
                    rng(s[p + "err"], 0, len(ERRORS) - 1)
    rng(s["now"], 0, scope.max_clock)
    rng(s["produced"], 0, scope.max_records)
    out.append(s["maxhw"] >= -1)
    for fault in FAULTS:
        if unbounded:
            out.append(s[f"h.{fault.counter}"] >= 0)
        else:
            rng(s[f"h.{fault.counter}"], 0, getattr(scope, fault.bound))
    for k in range(1, b.records + 1):
        out.append(z3.If(s[f"acked{k}"], z3.And(s[f"ackoff{k}"] >= 0, s[f"ackoff{k}"] < b.log), s[f"ackoff{k}"] == 0))
    return z3.And(out)


@dataclass
class InductionResult:
    """``verdict``: "proved" (k-inductive at ``k``), "violated" (``found``), "not proved" (no k up to
    the limit closes the induction: ``cti`` is the start of a path of states satisfying the property
    that ends in one violating it, ``cti_reachable`` whether the explorer reaches it), or "unknown"
    (a solver call ran out of time)."""

    property: str
    verdict: str
    k: int
    seconds: float
    found: Found | None = None
    cti: State | None = None
    cti_steps: list[dict] | None = None
    cti_reachable: bool | None = None

    def to_json(self) -> dict:
        out = {"property": self.property, "verdict": self.verdict, "k": self.k, "seconds": round(self.seconds, 3)}
        if self.found is not None:
            out["violation"] = self.found.to_json()
        if self.cti is not None:
            out["cti"] = {"state": _jsonable(self.cti), "steps": self.cti_steps, "reachable": self.cti_reachable}
        return out


def _jsonable(value):
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return {k: _jsonable(v) for k, v in zip(value._fields, value)}
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    return value


def induction(
    config: ModelConfig,
    scope: Scope,
    prop: str,
    max_k: int,
    timeout_ms: int = 60_000,
    progress: Callable[[Progress], None] | None = None,
    preprocess: bool = False,
) -> InductionResult:
    """k-induction for ``prop`` at ``scope``, k = 1 .. ``max_k``: the base case is the bounded
    check from the initial state; the step case asks for k+1 states from any well-formed state,
    the property holding in the first k (and inside their fetch rounds) and failing in the last."""
    if prop not in FORMULAS:
        raise Unsupported(f"property {prop!r} has no SMT formula")
    start = time.perf_counter()
    base = Unrolling(config, scope, timeout_ms=timeout_ms, preprocess=preprocess, within_bounds=True)
    b = base.b
    step = Unrolling(
        config,
        scope,
        bounds=b,
        start=fresh(b, "t0."),
        timeout_ms=timeout_ms,
        name="t",
        preprocess=preprocess,
        within_bounds=True,
    )
    step.solver.add(wellformed(config, scope, b, step.states[0]))
    cti = None
    for k in range(max_k + 1):
        verdict = base.check(base.violated(prop, k))
        if verdict == z3.sat:
            steps = base.trace(base.model, prop, k)
            _confirm(config, prop, steps)
            found = Found(prop, k, [st.to_json() for st in steps], time.perf_counter() - start)
            return InductionResult(prop, "violated", k, time.perf_counter() - start, found=found)
        if verdict == z3.unknown:
            return InductionResult(prop, "unknown", k, time.perf_counter() - start)
        if k == max_k:
            break
        step.solver.add(z3.Not(step.violated(prop, k)))
        step.extend()
        verdict = step.check(step.violated(prop))
        if progress is not None:
            progress(Progress(k + 1, time.perf_counter() - start, step.last_stats))
        if verdict == z3.unsat:
            return InductionResult(prop, "proved", k + 1, time.perf_counter() - start)
        if verdict == z3.unknown:
            return InductionResult(prop, "unknown", k + 1, time.perf_counter() - start)
        cti = (step.state(step.model, 0), [st.to_json() for st in step.trace(step.model, None, step.depth)])
        base.extend()
    state, steps = cti if cti is not None else (None, None)
    result = InductionResult(prop, "not proved", max_k, time.perf_counter() - start, cti=state, cti_steps=steps)
    return result


def reachable(config: ModelConfig, scope: Scope, state: State, max_states: int | None = None) -> bool | None:
    """Whether the explorer reaches ``state`` (up to what ``state_key`` blanks out) within
    ``scope``; None if it stopped at ``max_states`` first."""
    key = state_key(scope, state)
    target = Property(
        "Unreached", "the state is not reached", "isrcheck prove", "invariant", lambda s: state_key(scope, s) != key
    )
    result = explore(config, scope, [target], stop_at_first=True, max_states=max_states, symmetry=False)
    if result.violations:
        return True
    return False if result.complete else None
