"""The explorer's scope as constraints (TLC's state and action constraints): which steps a state
may take inside a ``Scope``, checked once per step kind where every step of it is alike, per step
where not. Fault counters, records produced, the controller's leader epoch and the clock only
grow, so a kind past its bound in one state is past it in every later one."""

from __future__ import annotations

from functools import lru_cache

from .alphabet import (
    CRASH,
    ELECT,
    FENCE,
    HANDLE_ALTER_PARTITION,
    PRODUCE,
    REJOIN,
    SEND_FETCH,
    STEPS,
    TICK,
    Step,
    configured_kinds,
)
from .config import ModelConfig, Scope
from .losses import STALE_ISR_EXPANSION
from .state import State

# per step kind, its fault classes that every step of it is (checked once per kind) and those
# only some steps are (checked per step)
_ALWAYS = {n: tuple(f for f in k.faults if f.when == "always") for n, k in STEPS.items()}
_SOMETIMES = {n: tuple(f for f in k.faults if f.when != "always") for n, k in STEPS.items()}


def in_scope(config: ModelConfig, scope: Scope, s: State, st: Step) -> bool:
    """Whether taking ``st`` keeps the exploration inside ``scope`` (a state constraint)."""
    return group_in_scope(scope, s, st.name) and step_in_scope(config, scope, s, st)


def group_in_scope(scope: Scope, s: State, name: str) -> bool:
    """Whether some step of kind ``name`` may be taken in ``s``: the bounds that hold for every
    step of the kind (a fault every step of it is, record and epoch budgets, kinds left out)."""
    for fault in _ALWAYS.get(name, ()):
        if getattr(s, fault.counter) >= getattr(scope, fault.bound):
            return False
    if name == PRODUCE:
        return s.records_produced < scope.max_records
    if name == ELECT:
        return s.controller.leader_epoch < scope.max_epoch
    if name == TICK:
        return s.now < scope.max_clock
    switch = STEPS[name].switch
    if switch is not None:
        return getattr(scope, switch)
    if name == REJOIN:
        return scope.max_zombies > 0
    return True


def step_in_scope(config: ModelConfig, scope: Scope, s: State, st: Step) -> bool:
    name = st.name
    for fault in _SOMETIMES[name]:
        if getattr(s, fault.counter) >= getattr(scope, fault.bound) and fault.counts(st, s):
            return False
    if name == PRODUCE:
        # A rejected produce changes nothing but the next record id, and every property is blind
        # to renaming record ids: leaving rejected produces out loses no reachable situation.
        rep = s.replicas[st.replica]
        return (
            rep.leader == st.replica
            and st.arg in scope.acks
            and (st.arg != -1 or len(rep.isr) >= config.min_insync_replicas)
            and (st.records <= scope.max_batch_records and s.records_produced + st.records <= scope.max_records)
        )
    if name == CRASH:
        if st.arg != "power":
            return st.arg in scope.crash_kinds
        return (scope.torn_writes or not (st.survive or st.torn)) and (scope.garbage_tails or st.tail == "cut")
    if name == SEND_FETCH:
        return st.max_batches == 0 or (scope.partial_fetches and st.max_batches == 1)
    if (
        name == HANDLE_ALTER_PARTITION
        and scope.exclude_known_losses
        and STALE_ISR_EXPANSION.name in config.rules.known_losses
    ):
        # KIP-903: the controller would reject a member whose LEO the leader learnt from an
        # earlier incarnation; here: a new member holding less than the leader counts for it
        if not s.alter_partition[st.replica]:
            return True  # not enabled anyway
        m = s.alter_partition[st.replica][0]
        lead = s.replicas[st.replica]
        return all(f in s.controller.isr or lead.remote_leo[f] <= len(s.replicas[f].log) for f in m.isr)
    if name == FENCE:
        return st.replica != s.controller.leader or s.controller.leader_epoch < scope.max_epoch
    return True


# with a per-step scope condition
FINE = frozenset(
    (
        PRODUCE,
        CRASH,
        FENCE,
        HANDLE_ALTER_PARTITION,
        SEND_FETCH,
        *(name for name, faults in _SOMETIMES.items() if faults),
    )
)


@lru_cache(maxsize=64)
def scoped_kinds(config: ModelConfig, scope: Scope) -> tuple:
    """``step_kinds`` without the steps no state of ``scope`` takes (acks, batch sizes, fetch limits
    and crash variants it leaves out), so the per-state checks see only what may be taken."""

    def static(st: Step) -> bool:
        if any(f.static and getattr(scope, f.bound) == 0 and f.counts(st, None) for f in _SOMETIMES[st.name]):
            return False  # a fault class the scope leaves out
        if st.name == PRODUCE:
            return st.arg in scope.acks and st.records <= scope.max_batch_records
        if st.name == SEND_FETCH:
            return st.max_batches == 0 or (scope.partial_fetches and st.max_batches == 1)
        if st.name == CRASH:
            if st.arg != "power":
                return st.arg in scope.crash_kinds
            return (scope.torn_writes or not (st.survive or st.torn)) and (scope.garbage_tails or st.tail == "cut")
        return True

    return tuple(
        (kind, None if steps is None else tuple(st for st in steps if static(st)))
        for kind, steps in configured_kinds(config)
    )
