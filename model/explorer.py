"""Exhaustive breadth-first exploration of a scope (TLC-style) and trace replay.

The visited set holds a 64-bit fingerprint per distinct state (``fingerprint``, as TLC's), the
frontier the states of the next level; per state only its parent's index, the id of the step that
reached it and the renaming that made it canonical are stored, in flat arrays. Two distinct states
with one fingerprint would merge (the second unexplored): ``collision_probability`` bounds the
chance of that for a run's size, and the result reports it. Fingerprints are the same in every
process and hash seed. Breadth-first order makes the first state found violating a property the
end of a shortest counterexample.

With ``symmetry`` (the default), states that differ by a renaming of brokers Kafka treats alike
are one state (``symmetry.py``): what was explored and the states those stand for are both
reported, and a counterexample is still a concrete schedule from the initial state.

A state is stored with the fault ledger of the path that reached it (``budget.FaultLedger``): a
property that fails where the ledger is past the property's fault budget is recorded as broken
outside its budget (``ExploreResult.beyond_budget``, with its shortest trace), not as a violation,
and stays checked, since another path may reach a failure within the budget.
"""

from __future__ import annotations

import time
from array import array
from dataclasses import dataclass, field
from typing import Callable, Iterable

from ..specs import PROPERTIES, Property
from .actions import ACTIONS, HandleFetch, HandleFetchResponse, SendFetch, fetcher_tag
from .alphabet import DELIVER_LEADER_AND_ISR, HANDLE_FETCH, HANDLE_FETCH_RESPONSE, SEND_FETCH, Step, steps_of
from .budget import EMPTY_LEDGER
from .collector import no_cycle_collection
from .config import ModelConfig, Scope, check_scope
from .constraints import FINE, group_in_scope, scoped_kinds, step_in_scope
from .losses import LAST_REPLICA_STANDING, last_replica_standing
from .next_state import NextState
from .reads import EVERYTHING, changed_parts, reads_mask
from .reduction import Reduction
from .semantics import StepRefused, apply, take
from .state import State, initial_state
from .symmetry import all_permutations, canonical, compose, inverse, no_election_ahead, renamed_step


@dataclass
class Violation:
    """The shortest trace found to a state where ``property`` fails (shortest in transitions;
    ``depth`` counts its schedule steps)."""

    property: str
    depth: int
    trace: list[dict]

    def to_json(self) -> dict:
        return {"property": self.property, "depth": self.depth, "trace": self.trace}


@dataclass
class BeyondBudget(Violation):
    """The shortest trace found to a state where ``property`` fails while the path is outside the
    property's fault budget (``reason`` says how): not a violation of the protocol."""

    reason: str = ""

    def to_json(self) -> dict:
        return {**super().to_json(), "reason": self.reason}


@dataclass
class ExploreResult:
    """``states`` explored (distinct fingerprints); ``represented``: the states they stand for
    (each symmetry representative counts the distinct states its renamings give; without symmetry,
    ``states``); ``collision_probability``: an upper bound on the chance that two distinct states
    shared a fingerprint in this run (``collision_probability``); ``symmetric``: the states
    explored where symmetry applies (no election without a target ahead), the others are stored
    as they are; ``reduction``: partial-order reduction on; ``reduced``: the states expanded with a
    persistent set smaller than every enabled transition."""

    config: ModelConfig
    scope: Scope
    states: int
    transitions: int
    depth: int
    complete: bool
    seconds: float
    violations: list[Violation] = field(default_factory=list)
    beyond_budget: list[BeyondBudget] = field(default_factory=list)
    symmetry: bool = False
    represented: int = 0
    collision_probability: float = 0.0
    symmetric: int = 0
    reduction: bool = False
    reduced: int = 0

    def to_json(self) -> dict:
        return {
            "protocol": self.config.protocol,
            "config": self.config.to_schedule(),
            "scope": self.scope.to_json(),
            "states": self.states,
            "transitions": self.transitions,
            "symmetry": self.symmetry,
            "represented": self.represented,
            "collision_probability": self.collision_probability,
            "symmetric": self.symmetric,
            "reduction": self.reduction,
            "reduced": self.reduced,
            "depth": self.depth,
            "complete": self.complete,
            "seconds": round(self.seconds, 3),
            "violations": [v.to_json() for v in self.violations],
            "beyond_budget": [b.to_json() for b in self.beyond_budget],
        }


_FETCH_STEPS = frozenset(action.name for action in (SendFetch, HandleFetch, HandleFetchResponse))


def successors(config: ModelConfig, scope: Scope, s: State):
    """(steps, next state, states inside) for every enabled in-scope transition, in the
    deterministic step order. A transition is one step, or with ``scope.fetch_rounds`` a whole
    fetch round, whose state after handle_fetch is checked too (but not stored)."""
    rounds = scope.fetch_rounds
    n = config.replicas
    for kind, steps in scoped_kinds(config, scope):
        name = kind.name
        action = ACTIONS[name]
        guard = action.guard
        if rounds and name in _FETCH_STEPS:
            if name == SEND_FETCH:
                for st in steps:
                    if step_in_scope(config, scope, s, st) and guard(config, s, st) is None:
                        t = _fetch_round(config, s, st)
                        if t is not None:
                            yield t
            continue
        if not group_in_scope(scope, s, name):
            continue
        fine = name in FINE
        for st in steps if steps is not None else steps_of(kind, n, s):
            if name == DELIVER_LEADER_AND_ISR and _ignored(s, st):
                continue  # leads back to the same state key (state_key drops ignored requests)
            if (not fine or step_in_scope(config, scope, s, st)) and guard(config, s, st) is None:
                yield (st,), take(config, s, st, action)[0], ()


def moves(config: ModelConfig, scope: Scope, s: State, ledger, exclude_lrs: bool, known: frozenset):
    """(steps, successor, inside, ledger after handle_fetch, ledger after, pruned) per enabled
    transition of ``s`` reached with ``ledger``, in ``successors``' order; ``pruned``: it enters
    Last Replica Standing where the scope leaves that out (no ledgers then)."""
    for st, t, inside in successors(config, scope, s):  # st: the steps of one transition
        if exclude_lrs and last_replica_standing(t):
            yield st, t, inside, None, None, True
        elif inside:  # a fetch round: send_fetch changes nothing the ledger reads, handle_fetch may
            mid = ledger.after(s, st[1], inside[0], known)  # (a deposed leader's HW)
            yield st, t, inside, mid, mid.after(inside[0], st[2], t, known), False
        else:
            yield st, t, inside, None, ledger.after(s, st[0], t, known), False


def _ignored(s: State, st: Step) -> bool:
    """The LeaderAndIsr this step delivers is not newer than what the broker applied."""
    m = s.leader_and_isr[st.replica][st.index]
    rep = s.replicas[st.replica]
    return (m.leader_epoch, m.partition_epoch) <= (rep.leader_epoch, rep.partition_epoch)


def _fetch_round(config: ModelConfig, s: State, send: Step):
    """A follower's whole fetch round as one transition (the granularity of the TLA+ specs):
    send_fetch, handle_fetch and handle_fetch_response back to back on one working copy (send_fetch
    enabled, so nothing of the follower is in flight). Returns (steps, state after it, (state after
    handle_fetch,)); None when the request is lost to a dead leader or waits for a leader not yet
    registered (it handles no request: docs/steps.md, restart)."""
    r = send.replica
    if s.replicas[fetcher_tag(s.replicas[r])[0]].unregistered:
        return None
    nx = NextState(config, s)
    nx.take(SendFetch, send)
    if not nx.msgs.get("fetch_requests", s.fetch_requests)[r]:
        return None
    handle = Step(HANDLE_FETCH, r)
    nx.take(HandleFetch, handle)
    served = nx.freeze()
    response = Step(HANDLE_FETCH_RESPONSE, r)
    nx.take(HandleFetchResponse, response)
    return (send, handle, response), nx.freeze(), (served,)


def state_key(scope: Scope, s: State) -> tuple:
    """The state with what cannot matter any more blanked out, so states whose futures and
    property values agree are stored once:
    - a down broker keeps only its disk (log, fsynced length, HW checkpoint, power lost): restart
      rebuilds the rest, and no step or property reads a down broker's memory;
    - the fsynced length, once no power loss is left in scope (and none is pending);
    - the HW checkpoint of a live broker, once no crash is left in scope;
    - LeaderAndIsr requests a broker will ignore (not newer than what it applied; a broker's
      applied epochs only grow while it lives, and a crash discards its queue)."""
    reps, lai = _blanked(scope, s, None)
    return (reps, s.controller, s.fetch_requests, s.fetch_responses, lai) + s[5:]


def _blanked(scope: Scope, s: State, no_proposal) -> tuple[tuple, tuple]:
    """The replicas and LeaderAndIsr queues of ``state_key``, with ``no_proposal`` for a live
    replica's pending ISR change when there is none (None in the key itself)."""
    # the fsynced length matters to a power loss, and to the disk faults that read it: a failed
    # fsync (a power loss that wrote nothing back) and a corruption under a live broker
    power_done = (
        s.power_losses >= scope.max_power_losses
        and s.fsync_failures >= scope.max_fsync_failures
        and s.live_corruptions >= scope.max_live_corruptions
    )
    # the HW checkpoint matters to a restart, after a crash or a failed disk (which halts its broker)
    crash_done = s.crashes >= scope.max_crashes and s.disk_failures >= scope.max_disk_failures
    reps = []
    lai = s.leader_and_isr
    stale = False
    # positional access: Replica fields 0 alive, 1 log, 2 durable, 3 hw, 4 hw_checkpoint,
    # 6 leader_epoch, 8 partition_epoch, 12 pending_isr, 15 power_lost, 19 unclean_shutdown, 20 bad_batch;
    # LeaderAndIsr 1 leader_epoch, 3 partition_epoch
    for b, r in enumerate(s.replicas):
        durable = r[2] if (r[15] or not power_done) else -1
        if not r[0]:
            # a damaged batch stays on a disk that shut down cleanly (its restart skips recovery)
            reps.append((False, r[1], durable, r[4], r[15], r[19]) + ((r[20],) if r[20] >= 0 else ()))
            continue
        head = r[:2] + (durable, r[3], -1 if crash_done else r[4])
        reps.append(
            head + r[5:12] + (no_proposal,) + r[13:] if r[12] is None and no_proposal is not None else head + r[5:]
        )
        if lai[b]:
            le, pe = r[6], r[8]
            for m in lai[b]:
                if m[1] < le or (m[1] == le and m[3] <= pe):
                    stale = True
    if stale:
        lai = tuple(
            tuple(m for m in q if (m[1], m[3]) > (s.replicas[b][6], s.replicas[b][8])) for b, q in enumerate(lai)
        )
    return tuple(reps), lai


# Values whose hash() differs between processes (None hashes by address, str by a random seed)
# are replaced by ints before hashing; the rest of a state is ints, bools and tuples, whose hash()
# is the same in every process. (-2 never occurs in a state: hash(-1) == hash(-2).)
_WORDS: dict[str, int] = {}
_NO_PROPOSAL = (-3,)  # pending_isr None; a proposed ISR holds broker ids >= 0


def _word(w: str) -> int:
    code = _WORDS.get(w)
    if code is None:
        code = _WORDS[w] = int.from_bytes(w.encode(), "big")
    return code


def fingerprint(scope: Scope, s: State, ledger) -> int:
    """A 64-bit fingerprint of ``(state_key(scope, s), ledger)``, the same in every process: the
    hash of the key ``key_for_fingerprint`` gives, built in one pass (the explorer's fast path)."""
    reps, lai = _blanked(scope, s, _NO_PROPOSAL)
    responses, answers = s[3], s[6]
    if any(responses):  # FetchResponse: error and kind are strings
        responses = tuple(tuple(m[:2] + (_word(m[2]), _word(m[3])) + m[4:] for m in q) for q in responses)
    if any(answers):  # AlterPartitionResponse: error is a string
        answers = tuple(tuple((_word(m[0]),) + m[1:] for m in q) for q in answers)
    known = ledger.known
    return hash(
        (reps, s[1], s[2], responses, lai, s[5], answers)
        + s[7:]
        + (ledger.losers, ledger.stale_reads, tuple(_word(k) for k in known) if known else ())
    )


def key_for_fingerprint(scope: Scope, s: State, ledger) -> tuple:
    """What ``fingerprint`` hashes, built from ``state_key`` (the readable path it is tested equal
    to): the key with its strings and Nones replaced by ints that hash alike in every process."""
    key = state_key(scope, s)
    reps = tuple(r[:12] + (_NO_PROPOSAL,) + r[13:] if len(r) > 12 and r[12] is None else r for r in key[0])
    responses = tuple(tuple(m[:2] + (_word(m[2]), _word(m[3])) + m[4:] for m in q) for q in key[3])
    answers = tuple(tuple((_word(m[0]),) + m[1:] for m in q) for q in key[6])
    return (
        (reps, key[1], key[2], responses, key[4], key[5], answers)
        + key[7:]
        + (ledger.losers, ledger.stale_reads, tuple(_word(k) for k in ledger.known))
    )


def collision_probability(states: int) -> float:
    """An upper bound on the chance that some two of ``states`` distinct states share a 64-bit
    fingerprint, for fingerprints spread evenly (the birthday bound n(n-1)/2 / 2^64)."""
    return states * (states - 1) / 2 / 2.0**64


def reachable_states(config: ModelConfig, scope: Scope, max_states: int | None = None):
    """Every distinct state (up to ``state_key``) the explorer reaches within ``scope``, breadth
    first, the initial state first; only states between transitions (not the inside of a fetch
    round). Stops after ``max_states`` if given."""
    check_scope(config, scope)
    exclude_lrs = scope.exclude_known_losses and LAST_REPLICA_STANDING.name in config.rules.known_losses
    init = initial_state(config)
    seen = {state_key(scope, init)}
    frontier = [init]
    yield init
    while frontier:
        next_frontier = []
        for s in frontier:
            for _steps, t, _inside in successors(config, scope, s):
                if exclude_lrs and last_replica_standing(t):
                    continue
                key = state_key(scope, t)
                if key in seen:
                    continue
                seen.add(key)
                yield t
                if max_states is not None and len(seen) >= max_states:
                    return
                next_frontier.append(t)
        frontier = next_frontier


@no_cycle_collection()  # the frontier holds states by the hundred thousand: 10% of the time
def explore(
    config: ModelConfig,
    scope: Scope = Scope(),
    properties: Iterable[Property] = PROPERTIES,
    stop_at_first: bool = False,
    max_states: int | None = None,
    progress: Callable[[int, int, float], None] | None = None,
    progress_every: float = 2.0,
    budgets: bool = True,
    symmetry: bool = True,
    reduction: bool = False,
) -> ExploreResult:
    """Breadth-first search of every state reachable within ``scope``, checking every property
    in every state. ``progress(states, depth, seconds)`` is called about every ``progress_every`` s.
    ``budgets=False`` takes every failure for a violation, the properties' fault budgets aside
    (what breaks at all, as bounded model checking reports it). ``symmetry=False``: no symmetry
    reduction (needed for a property that names a broker: reduction takes properties to be blind
    to broker renaming, as every property of ``isrcheck.specs`` is). ``reduction=True``:
    partial-order reduction (``reduction.py``), which keeps every verdict but may lengthen a
    counterexample; off by default (it merges almost nothing on the shipped scopes and costs CPU,
    docs/figures.md), so each counterexample is a shortest."""
    check_scope(config, scope)
    start = time.perf_counter()
    exclude_lrs = scope.exclude_known_losses and LAST_REPLICA_STANDING.name in config.rules.known_losses
    pending = list(properties)
    init = initial_state(config)
    known = config.rules.known_losses
    seen = {fingerprint(scope, init, EMPTY_LEDGER)}
    parent = array("q", [-1])
    via = array("l", [-1])
    renamed = array("B", [0])  # per state the renaming (an index of all_permutations) that made it canonical
    perms = all_permutations(config.replicas)
    perm_ids = {p: i for i, p in enumerate(perms)}
    max_epoch = scope.max_epoch
    represented = 1
    symmetric = 0
    step_ids: dict[tuple, int] = {}
    step_list: list[tuple] = []
    violations: list[Violation] = []
    beyond: dict[str, BeyondBudget] = {}
    depth_of_level = max_depth = 0
    transitions = 0
    stopped = False  # bound before visit() names it nonlocal (mypyc needs it)

    index = {p.id: k for k, p in enumerate(pending)}
    reads = [reads_mask(p) for p in pending]

    def check(s: State, i: int, ledger, extra: tuple = (), changed: int = EVERYTHING, held: int = 0) -> int:
        """Check ``s``, reached with ``ledger``: state ``i``, or ``extra`` steps after it (inside a
        fetch round). ``changed``: what differs from its parent (``changed_parts``); ``held``: the
        properties (bits by index) the parent is known to pass, skipped where what they read is
        unchanged. Returns the properties ``s`` is known to pass."""
        passed = 0
        for p in list(pending):
            k = index[p.id]
            bit = 1 << k
            if held & bit and not reads[k] & changed:
                passed |= bit
                continue
            if p.check(s):
                passed |= bit
            else:
                why = p.budget.exceeded(ledger, config, known) if budgets else None
                if why is not None and p.id in beyond:
                    continue
                trace = _trace(i, parent, via, renamed, step_list, perms, extra)
                if why is None:
                    pending.remove(p)
                    violations.append(Violation(p.id, len(trace), trace))
                    if reducer is not None:
                        reducer.set_properties(pending)  # what it no longer checks is no longer visible
                else:
                    beyond[p.id] = BeyondBudget(p.id, len(trace), trace, why)
        return passed

    def fp_of(t: State, led) -> int:
        return fingerprint(scope, t, led)

    def visit(si: int, s: State, held: int, move: tuple) -> bool:
        """Take one transition of state ``si``; True if it reached a state not seen before."""
        nonlocal transitions, represented, symmetric, max_depth, stopped
        st, t, inside, mid, led, pruned = move
        transitions += 1
        if pruned:
            return False
        if inside and pending:  # a round's states are reachable too, though not stored
            check(inside[0], si, mid, st[:2], changed_parts(s, inside[0]), held)  # after handle_fetch
            if violations and stop_at_first:
                stopped = True
                return False
        concrete = t  # before renaming: it shares with s what the step left alone
        sym = symmetry and no_election_ahead(max_epoch, t)
        if sym:
            t, led, key, perm, orbit = canonical(t, led, fp_of)
        else:
            key, perm, orbit = fingerprint(scope, t, led), perms[0], 1
        if key in seen:
            return False
        seen.add(key)
        represented += orbit
        symmetric += sym
        ti = len(parent)
        parent.append(si)
        renamed.append(perm_ids[perm])
        sid = step_ids.get(st)
        if sid is None:
            sid = step_ids[st] = len(step_list)
            step_list.append(st)
        via.append(sid)
        max_depth = depth_of_level
        passed = check(t, ti, led, (), changed_parts(s, concrete), held) if pending else 0
        next_frontier.append((ti, t, led, passed))
        if (violations and stop_at_first) or (max_states is not None and len(parent) >= max_states):
            stopped = True
        return True

    reducer = Reduction(config, scope, pending, budgets) if reduction else None
    reduced = 0
    frontier: list[tuple[int, State, tuple, int]] = [(0, init, EMPTY_LEDGER, check(init, 0, EMPTY_LEDGER))]
    stopped = bool(violations) and stop_at_first
    next_report = start + progress_every
    while frontier and not stopped:
        depth_of_level += 1
        next_frontier: list[tuple[int, State, tuple, int]] = []
        for si, s, ledger, held in frontier:
            taken = moves(config, scope, s, ledger, exclude_lrs, known)
            if reducer is not None:
                taken = list(taken)
                chosen = reducer.persistent(s, ledger, taken)
                if chosen is not None:
                    fresh = False
                    for k in chosen:
                        fresh |= visit(si, s, held, taken[k])
                        if stopped:
                            break
                    if fresh:
                        reduced += 1
                        taken = []
                    else:  # the cycle condition: nothing new from the reduced set, so take every step
                        done = set(chosen)
                        taken = [m for k, m in enumerate(taken) if k not in done]
            for move in taken:
                if stopped:
                    break
                visit(si, s, held, move)
            if stopped:
                break
            if progress is not None and time.perf_counter() >= next_report:
                progress(len(parent), depth_of_level, time.perf_counter() - start)
                next_report = time.perf_counter() + progress_every
        frontier = next_frontier
    return ExploreResult(
        config,
        scope,
        len(parent),
        transitions,
        max_depth,
        not stopped,
        time.perf_counter() - start,
        sorted(violations, key=lambda v: (v.depth, v.property)),
        sorted(beyond.values(), key=lambda v: (v.depth, v.property)),
        symmetry,
        represented,
        collision_probability(len(parent)),
        symmetric,
        reduction,
        reduced,
    )


def _trace(
    i: int, parent: array, via: array, renamed: array, step_list: list[tuple], perms: tuple, extra: tuple = ()
) -> list[dict]:
    """The schedule steps from the initial state to state ``i``, then ``extra`` steps taken from
    it. Stored states are canonical representatives: a transition's steps were taken from its
    parent's representative, so each is renamed back into the concrete run, whose renaming to the
    representatives is the composition of those made along the way."""
    path = []
    while i > 0:
        path.append((step_list[via[i]], perms[renamed[i]]))
        i = parent[i]
    to_concrete = perms[0]  # renaming from the current representative back to the concrete state
    concrete: list[dict] = []
    for steps, perm in path[::-1]:  # not reversed(): mypyc 2.4 fails to compile it here
        concrete += [renamed_step(st, to_concrete).to_json() for st in steps]
        to_concrete = compose(to_concrete, inverse(perm))
    return concrete + [renamed_step(st, to_concrete).to_json() for st in extra]


@dataclass
class Replay:
    """States before and after each step (``states[0]`` is the start) and each step's outputs."""

    states: list[State]
    outputs: list[list[dict]]


class ReplayRefused(StepRefused):
    """A step of a replayed trace was refused; ``position`` is its 0-based index in the trace."""

    def __init__(self, position: int, refused: StepRefused):
        super().__init__(refused.step, refused.reason)
        self.position = position
        self.args = (f"step {position} ({refused.step.name}) refused: {refused.reason}",)


def replay(config: ModelConfig, steps: Iterable, state: State | None = None) -> Replay:
    """Run a trace (Step objects or schedule step dicts) on the model from ``state`` (default:
    the initial state). Raises ReplayRefused at the first refused step."""
    s = initial_state(config) if state is None else state
    result = Replay([s], [])
    for pos, step in enumerate(steps):
        try:
            s, out = apply(config, s, step)
        except StepRefused as exc:
            raise ReplayRefused(pos, exc) from None
        result.states.append(s)
        result.outputs.append(out)
    return result
