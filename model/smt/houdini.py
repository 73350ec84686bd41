"""Inductive invariants by Houdini (Flanagan and Leino, 2001) over the encoding's transitions.

The candidates of ``invariants.grammar`` are first filtered by the explorer: a candidate false in
the initial state or in any state the explorer reaches at a scope is dropped. Houdini then asks,
per transition of the scope (one step, or a follower's whole fetch round), whether a state
satisfying every remaining candidate can step to one where some candidate fails; each such
counterexample to induction (CTI) drops the candidates it falsifies, until no transition does:
the conjunction left is inductive. Each query is one transition from an arbitrary well-formed
state: leader epochs, partition epochs, broker epochs, offsets and the number of crashes,
elections and other faults are unbounded integers there (``Unrolling(unbounded=True)``); what
stays bounded is what the encoding holds: the replicas, a log's length (and so the records
produced) and each message FIFO's capacity (transitions that would overflow one are left out).
A target property is proved when the inductive conjunction implies it.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable

import z3

from ...specs import BY_ID
from ..config import ConfigError, ModelConfig, Scope
from ..explorer import explore, reachable_states, state_key
from ..state import State, initial_state
from .bmc import Unrolling, _jsonable, bounds_for, wellformed
from .invariants import TARGETS, Candidate, grammar, to_python, to_z3
from .state import HISTORY_COUNTERS, QUEUES, Bounds, decode, embed, fresh, values_of

FORMAT = "isrcheck-invariant"
VERSION = 1


class InvariantFileError(ValueError):
    """A saved invariant that cannot be checked: malformed, or naming what the grammar lacks."""


def _unkeyed(scope: Scope, s: State) -> tuple:
    """``state_key`` without the fault counters (ghosts no step reads but the scope's bounds)."""
    return state_key(scope, s)[: -len(HISTORY_COUNTERS)]


@dataclass
class Cti:
    """A counterexample to induction of ``conjunct``: from ``state`` (which satisfies the
    conjunction it was checked against) the transition ``steps`` leads to a state violating it.
    ``reached``: whether the explorer reaches ``state`` at the filter scope (fault counts aside);
    ``explorer_trace``: for a conjunct a reachable state violates, the explorer's shortest trace."""

    conjunct: str
    state: State | None = None
    steps: list[dict] | None = None
    reached: bool | None = None
    explorer_trace: list[dict] | None = None
    beyond_budget: str | None = None

    def to_json(self) -> dict:
        out: dict = {"conjunct": self.conjunct}
        if self.state is not None:
            out.update(state=_jsonable(self.state), steps=self.steps, reached_by_explorer=self.reached)
        if self.explorer_trace is not None:
            out["explorer_trace"] = self.explorer_trace
            if self.beyond_budget:
                out["beyond_budget"] = self.beyond_budget
        return out


@dataclass
class InvariantResult:
    """Houdini's answer (or a saved invariant's re-check): the conjuncts, whether they are
    ``inductive``, the targets they imply, a CTI per target not implied, and the figures."""

    config: ModelConfig
    scope: Scope
    bounds: Bounds
    conjuncts: list[Candidate]
    targets: dict[str, bool]
    ctis: dict[str, Cti] = field(default_factory=dict)
    inductive: bool = True
    broken: list[Cti] = field(default_factory=list)  # --check-invariant: what breaks the saved conjunction
    unknown: list[str] = field(default_factory=list)  # --check-invariant: transitions whose query ran out of time
    timed_out: list[str] = field(default_factory=list)  # Houdini: candidates dropped as undecided in time
    # candidates, after_filter, filter_states, rounds, queries, max_query_seconds, filter_seconds, seconds
    figures: dict = field(default_factory=dict)

    @property
    def proved(self) -> bool:
        return self.inductive and not self.unknown and all(self.targets.values())

    def to_json(self) -> dict:
        return {
            "protocol": self.config.protocol,
            "inductive": self.inductive and not self.unknown,
            "targets": {t: ("implied" if ok else "not implied") for t, ok in self.targets.items()},
            "ctis": {t: c.to_json() for t, c in sorted(self.ctis.items())},
            "broken": [c.to_json() for c in self.broken],
            "unknown": self.unknown,
            "timed_out": self.timed_out,
            "bounds": bounds_json(self.bounds),
            "unbounded": UNBOUNDED,
            "figures": {**self.figures, "conjuncts": len(self.conjuncts)},
            "conjuncts": [{"name": c.name, "formula": c.formula} for c in self.conjuncts],
        }


UNBOUNDED = [
    "leader epochs",
    "partition epochs",
    "broker epochs",
    "offsets within the log bound",
    "crashes, elections, fences and every other fault count of the scope's fault classes",
]


def bounds_json(b: Bounds) -> dict:
    return {
        "replicas": b.replicas,
        "log_entries": b.log,
        "record_ids": b.records,
        "batch_records": b.batch,
        **{f"{q}_per_broker": b.capacity(q) for q in QUEUES},
    }


class OneStep:
    """One transition of the scope from an arbitrary well-formed state ``pre``: per transition a
    solver of its own, asked after preprocessing (each query is one step, so nothing is gained
    from incremental solving and the preprocessing eliminates the successor's terms)."""

    def __init__(self, config: ModelConfig, scope: Scope, b: Bounds, timeout_ms: int):
        self.u = Unrolling(
            config,
            scope,
            bounds=b,
            start=fresh(b, "pre."),
            timeout_ms=timeout_ms,
            name="h",
            within_bounds=True,
            unbounded=True,
        )
        self.b, self.timeout_ms = b, timeout_ms
        self.pre = self.u.states[0]
        self.wellformed = wellformed(config, scope, b, self.pre, unbounded=True)
        self.moves = self.u.transitions(self.pre)
        self.pre_terms: dict[str, object] = {}
        self.post_terms: list[dict[str, object]] = [{} for _ in self.moves]
        self.max_query_s, self.queries = 0.0, 0

    def _pre(self, c: Candidate):
        term = self.pre_terms.get(c.name)
        if term is None:
            term = self.pre_terms[c.name] = to_z3(c.term, self.pre, self.b)
        return term

    def _post(self, c: Candidate, j: int):
        terms = self.post_terms[j]
        term = terms.get(c.name)
        if term is None:
            term = terms[c.name] = to_z3(c.term, self.moves[j].post, self.b)
        return term

    def steps(self, j: int) -> list[dict]:
        return [st.to_json() for st in self.moves[j].steps]

    def _solver(self) -> z3.Solver:
        solver = _TACTIC.solver()
        solver.set("timeout", self.timeout_ms)
        return solver

    def query(self, alive: list[Candidate], j: int, goal: list[Candidate] | None = None):
        """A model stepping by transition ``j`` from a state satisfying ``alive`` to one violating
        some of ``goal`` (default: ``alive``); None if there is none; "unknown" on timeout."""
        t = self.moves[j]
        solver = self._solver()
        solver.add(self.wellformed, t.enabled, t.fits, t.room, *(self._pre(c) for c in alive))
        solver.add(z3.Or([z3.Not(self._post(c, j)) for c in (alive if goal is None else goal)]))
        start = time.process_time()
        verdict = solver.check()
        took = time.process_time() - start
        self.queries += 1
        self.max_query_s = max(self.max_query_s, took)
        if verdict == z3.sat:
            return solver.model()
        return "unknown" if verdict == z3.unknown else None

    def figures(self) -> dict:
        return {"queries": self.queries, "max_query_seconds": round(self.max_query_s, 3)}

    def falsified(self, model, alive: list[Candidate], j: int) -> list[Candidate]:
        return [c for c in alive if not z3.is_true(model.eval(self._post(c, j), model_completion=True))]

    def state(self, model) -> State:
        return decode(self.b, values_of(model, self.pre))

    def implies(self, alive: list[Candidate], target: Candidate) -> bool | None:
        """Whether every well-formed state satisfying ``alive`` satisfies ``target``."""
        solver = self._solver()
        solver.add(self.wellformed, *(self._pre(c) for c in alive), z3.Not(self._pre(target)))
        verdict = solver.check()
        return None if verdict == z3.unknown else verdict == z3.unsat


_TACTIC = z3.Then("simplify", "propagate-values", "solve-eqs", "elim-uncnstr", "simplify", "smt")


def filter_by_states(
    cands: list[Candidate], b: Bounds, states: Iterable[State]
) -> tuple[list[Candidate], int, dict[str, State]]:
    """The candidates true in every state of ``states`` (the first is the initial state), how many
    states were seen, and for each dropped candidate the first state falsifying it."""
    checks = [(c, to_python(c.term)) for c in cands]
    failed: dict[str, State] = {}
    count = 0
    for s in states:
        count += 1
        v = embed(b, s)
        kept = []
        for c, check in checks:
            if check(v, s):
                kept.append((c, check))
            else:
                failed[c.name] = s
        checks = kept
    return [c for c, _ in checks], count, failed


def houdini(
    config: ModelConfig,
    scope: Scope,
    targets: Iterable[str] = TARGETS,
    timeout_ms: int = 10_000,
    explore_filter: bool = True,
    max_states: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> InvariantResult:
    """The largest inductive conjunction of the grammar's candidates that survives the explorer's
    filter (the first ``max_states`` states it reaches at ``scope``, breadth first), with unbounded
    epochs and fault counts in the induction queries, and which ``targets`` it implies; for each
    target it does not, the explorer's trace to a violation at ``scope`` or a CTI."""
    say = progress or (lambda _msg: None)
    start = time.perf_counter()
    b = bounds_for(config, scope)
    cands = grammar(config, scope, b)
    targets = sorted(set(targets))
    states = reachable_states(config, scope, max_states) if explore_filter else iter([initial_state(config)])
    alive, seen, failed = filter_by_states(cands, b, states)
    filter_s = time.perf_counter() - start
    say(f"{len(cands)} candidates, {len(alive)} true in the {seen} states explored ({filter_s:.1f} s)")
    step = OneStep(config, scope, b, timeout_ms)
    ctis: dict[str, Cti] = {}
    wanted = {f"target({t})" for t in targets}
    rounds, unknown = 0, []
    changed = True
    while changed:
        changed = False
        rounds += 1
        for j in range(len(step.moves)):
            while True:
                model, slow = _refute(step, alive, j)
                if slow:  # not shown preserved within the time limit: dropped, which keeps the result sound
                    names = {c.name for c in slow}
                    unknown += [f"{c.name} under {' '.join(json.dumps(st) for st in step.steps(j))}" for c in slow]
                    alive = [c for c in alive if c.name not in names]
                    changed = True
                if model is None:
                    break
                gone = step.falsified(model, alive, j)
                pre = None
                for c in gone:
                    if c.name in wanted and c.name not in ctis:
                        pre = pre or step.state(model)
                        ctis[c.name] = Cti(c.name, pre, step.steps(j))
                names = {c.name for c in gone}
                alive = [c for c in alive if c.name not in names]
                changed = True
        say(f"round {rounds}: {len(alive)} conjuncts left ({time.perf_counter() - start:.1f} s)")
    result = InvariantResult(config, scope, b, alive, {}, timed_out=unknown)
    _judge_targets(result, step, targets, ctis, explore_filter)
    result.figures = {
        "candidates": len(cands),
        "after_filter": len(cands) - len(failed),
        "filter_states": seen,
        "rounds": rounds,
        **step.figures(),
        "filter_seconds": round(filter_s, 3),
        "seconds": round(time.perf_counter() - start, 3),
    }
    return result


def _refute(step: OneStep, alive: list[Candidate], j: int) -> tuple[object, list[Candidate]]:
    """A CTI for transition ``j`` (a model), or None; and the candidates whose preservation the
    solver could not decide in time: a query that times out is split in halves of the candidates
    asked about (the premise stays the whole conjunction) down to single candidates."""
    stack, slow = [alive], []
    while stack:
        goal = stack.pop()
        model = step.query(alive, j, goal)
        if model is None:
            continue
        if model == "unknown":
            if len(goal) == 1:
                slow.append(goal[0])
            else:
                stack += [goal[len(goal) // 2 :], goal[: len(goal) // 2]]
            continue
        return model, slow
    return None, slow


def _judge_targets(result: InvariantResult, step: OneStep, targets: list[str], ctis: dict, explored: bool) -> None:
    """Which targets the conjunction implies; for the others, the explorer's shortest trace to a
    violation at the scope where it reaches one (one exploration for all of them), else the CTI
    that dropped the target, with whether the explorer reaches the CTI's state (fault counts aside)."""
    by_name = {c.name: c for c in grammar(result.config, result.scope, result.bounds)}
    missed = []
    for t in targets:
        result.targets[t] = bool(step.implies(result.conjuncts, by_name[f"target({t})"]))
        if not result.targets[t]:
            missed.append(t)
            result.ctis[t] = ctis.get(f"target({t})") or Cti(f"target({t})")
    if not missed or not explored:
        return
    found = explore(result.config, result.scope, [BY_ID[t] for t in missed])
    for v in found.violations:
        result.ctis[v.property] = Cti(f"target({v.property})", explorer_trace=v.trace)
    for v in found.beyond_budget:
        if result.ctis[v.property].explorer_trace is None:
            result.ctis[v.property] = Cti(f"target({v.property})", explorer_trace=v.trace, beyond_budget=v.reason)
    open_ctis = {t: c for t, c in result.ctis.items() if c.explorer_trace is None and c.state is not None}
    if open_ctis:
        wanted = {t: _unkeyed(result.scope, c.state) for t, c in open_ctis.items()}
        reached = set()
        for s in reachable_states(result.config, result.scope):
            key = _unkeyed(result.scope, s)
            reached.update(t for t, k in wanted.items() if k == key)
        for t, c in open_ctis.items():
            c.reached = t in reached


# -- saved invariants ------------------------------------------------------------------------------------


def save(result: InvariantResult, path: str) -> None:
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "protocol": result.config.protocol,
        "config": result.config.to_schedule(),
        "scope": result.scope.to_json(),
        "bounds": bounds_json(result.bounds),
        "unbounded": UNBOUNDED,
        "targets": {t: ("implied" if ok else "not implied") for t, ok in sorted(result.targets.items())},
        "conjuncts": [{"name": c.name, "formula": c.formula} for c in result.conjuncts],
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write("\n")


def load(path: str, text: str) -> tuple[ModelConfig, Scope, list[Candidate], dict[str, str]]:
    """A saved invariant, ``text`` the contents of the file at ``path`` (read by the caller, which
    bounds what it reads): its config, scope, conjuncts (rebuilt from the grammar by name, each
    formula checked against the grammar's) and targets with their recorded verdict.
    InvariantFileError says what is wrong."""
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise InvariantFileError(f"{path} is not JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise InvariantFileError(f'{path}: not an isrcheck invariant ("format": "{FORMAT}" expected)')
    if doc.get("version") != VERSION:
        raise InvariantFileError(f"{path}: version {doc.get('version')!r}, this isrcheck reads version {VERSION}")
    for key, kind in (("protocol", str), ("config", dict), ("scope", dict), ("conjuncts", list), ("targets", dict)):
        if not isinstance(doc.get(key), kind):
            raise InvariantFileError(
                f'{path}: "{key}" missing or not a{"n object" if kind is dict else " " + kind.__name__}'
            )
    try:
        config = ModelConfig(protocol=doc["protocol"], **doc["config"])
        scope_doc = {k: tuple(v) if isinstance(v, list) else v for k, v in doc["scope"].items()}
        scope = Scope(**scope_doc)
    except ConfigError as exc:
        raise InvariantFileError(f"{path}: {exc}") from None
    except TypeError as exc:
        raise InvariantFileError(f"{path}: config or scope: {exc}") from None
    b = bounds_for(config, scope)
    by_name = {c.name: c for c in grammar(config, scope, b)}
    out = []
    for i, entry in enumerate(doc["conjuncts"]):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise InvariantFileError(f'{path}: conjuncts[{i}] is not an object with a "name"')
        c = by_name.get(entry["name"])
        if c is None:
            raise InvariantFileError(
                f"{path}: conjuncts[{i}]: unknown conjunct {entry['name']!r} "
                "(not in the grammar for this protocol and bounds)"
            )
        if "formula" in entry and entry["formula"] != c.formula:
            raise InvariantFileError(
                f"{path}: conjuncts[{i}] {c.name}: the formula differs from the grammar's ({c.formula!r})"
            )
        out.append(c)
    targets = {t: doc["targets"][t] for t in sorted(doc["targets"])}
    unknown = [t for t in targets if f"target({t})" not in by_name]
    if unknown:
        raise InvariantFileError(f"{path}: unknown target {', '.join(unknown)}")
    odd = [t for t, verdict in targets.items() if verdict not in ("implied", "not implied")]
    if odd:
        raise InvariantFileError(f'{path}: targets: {", ".join(odd)} must be "implied" or "not implied"')
    return config, scope, out, targets


def check_invariant(
    config: ModelConfig, scope: Scope, conjuncts: list[Candidate], targets: Iterable[str], timeout_ms: int = 10_000
) -> InvariantResult:
    """Re-check a conjunction: true in the initial state, inductive under every transition of the
    scope (epochs and fault counts unbounded), and which ``targets`` it implies."""
    start = time.perf_counter()
    b = bounds_for(config, scope)
    result = InvariantResult(config, scope, b, list(conjuncts), {})
    init = initial_state(config)
    v = embed(b, init)
    for c in conjuncts:
        if not to_python(c.term)(v, init):
            result.inductive = False
            result.broken.append(Cti(c.name, init, [], True))
    step = OneStep(config, scope, b, timeout_ms)
    for j in range(len(step.moves)):
        model = step.query(conjuncts, j)
        if model == "unknown":
            result.unknown.append(" ".join(json.dumps(st) for st in step.steps(j)))
        elif model is not None:
            result.inductive = False
            pre = step.state(model)
            for c in step.falsified(model, conjuncts, j):
                result.broken.append(Cti(c.name, pre, step.steps(j)))
    by_name = {c.name: c for c in grammar(config, scope, b)}
    for t in sorted(set(targets)):
        ok = step.implies(conjuncts, by_name[f"target({t})"])
        result.targets[t] = bool(ok)
        if not ok:
            result.ctis[t] = Cti(f"target({t})")
    result.figures = {
        "candidates": len(conjuncts),
        "rounds": 1,
        **step.figures(),
        "seconds": round(time.perf_counter() - start, 3),
    }
    return result
