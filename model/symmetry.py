"""Symmetry reduction for the explorer: states that differ only by a renaming of brokers the
protocol treats alike are explored once, as one canonical representative (as TLC's SYMMETRY).

Kafka treats brokers alike except where the partition's replica assignment orders them: the
controller's election without a target picks the first eligible replica in assignment order
(PartitionChangeBuilder.electLeader; docs/steps.md, ``elect``), here broker 0 first. Every other
step, every property and the fault ledger only name brokers, so renaming the brokers of a state
renames its successors, as long as no such election is ahead. That is the case once the scope's
epoch budget leaves no room for one (``no_election_ahead``): only there are states merged, so
verdicts and shortest counterexample depths are those of the unreduced search.

The canonical representative of a state is the renaming with the smallest fingerprint among
those that sort the brokers by a signature that renaming cannot change (``signature``): brokers
with equal signatures are tried in every order, the others need one. Renaming itself is
``state.permuted`` (every broker-indexed field, in one place) and ``FaultLedger.permuted``.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import permutations, product
from typing import Any

from .alphabet import Step
from .state import State, permuted


def no_election_ahead(max_epoch: int, s: State) -> bool:
    """No election without a target can happen from ``s`` on within the scope: the controller's
    leader epoch reached ``max_epoch`` (``elect`` is out of scope), or it is one below with a
    leader, whom only a step that raises the epoch (fence, an unclean restart, a targeted election)
    can remove. Leader epochs never decrease, so every successor of such a state is one too."""
    c = s.controller
    return c.leader_epoch >= max_epoch or (c.leader_epoch == max_epoch - 1 and c.leader >= 0)


def signature(s: State, ledger, b: int) -> tuple:
    """What broker ``b`` is in ``s``, in terms no renaming changes, to order brokers before trying
    renamings: its log, and while it lives its HW, epochs and role in its own view; its place in
    the controller's view and the ledger. Only what ``explorer.state_key`` keeps (a down broker's
    memory, the fsynced length and ignored LeaderAndIsr requests may be blanked there), so states
    the explorer stores as one have one signature."""
    r, c = s.replicas[b], s.controller
    own = (r.hw, r.leader_epoch, r.partition_epoch, r.leader == b, r.leader < 0) if r.alive else (r.power_lost,)
    controller = (b == c.leader, b in c.isr, b in c.fenced, b in c.awaiting_unfence, c.broker_epochs[b])
    return (r.alive, r.log) + controller + (b in ledger.losers,) + own + (b in c.in_controlled_shutdown,)


@lru_cache(maxsize=8)
def all_permutations(n: int) -> tuple[tuple, ...]:
    """Every renaming of ``n`` brokers, the identity first (its index is what the explorer stores)."""
    return tuple(permutations(range(n)))


def candidates(s: State, ledger) -> list[tuple]:
    """The renamings that sort the brokers by ``signature``, ties in every order."""
    n = len(s.replicas)
    sigs = [signature(s, ledger, b) for b in range(n)]
    groups: list[list[int]] = []
    for b in sorted(range(n), key=sigs.__getitem__):
        if groups and sigs[groups[-1][0]] == sigs[b]:
            groups[-1].append(b)
        else:
            groups.append([b])
    out = []
    for orders in product(*(permutations(g) for g in groups)):
        perm = [0] * n
        position = 0
        for order in orders:
            for b in order:
                perm[b] = position
                position += 1
        out.append(tuple(perm))
    return out


def canonical(s: State, ledger, fingerprint) -> tuple[State, object, int, tuple, int]:
    """``(state, ledger, fingerprint, renaming, orbit)``: the representative of ``s`` with the
    smallest ``fingerprint(state, ledger)`` among the ``candidates``, the renaming that gives it,
    and how many distinct states renaming ``s`` gives (n! over the renamings that leave it as is).
    A state whose brokers' signatures are distinct and already in order is its own
    representative, found without renaming it (the common case)."""
    perms = candidates(s, ledger)
    if len(perms) == 1 and perms[0] == _identity(len(perms[0])):
        return s, ledger, fingerprint(s, ledger), perms[0], _factorial(len(perms[0]))
    best: Any = None
    same = 0
    for perm in perms:
        identity = perm == _identity(len(perm))
        t, led = (s, ledger) if identity else (permuted(s, perm), ledger.permuted(perm))
        fp = fingerprint(t, led)
        if best is None or fp < best[2]:
            best, same = (t, led, fp, perm), 1
        elif fp == best[2]:
            same += 1
    return (*best, _factorial(len(s.replicas)) // same)


@lru_cache(maxsize=8)
def _identity(n: int) -> tuple:
    return tuple(range(n))


@lru_cache(maxsize=8)
def _factorial(n: int) -> int:
    size = 1
    for k in range(2, n + 1):
        size *= k
    return size


def compose(outer: tuple, inner: tuple) -> tuple:
    """The renaming ``inner`` then ``outer``."""
    return tuple(outer[b] for b in inner)


def inverse(perm: tuple) -> tuple:
    inv = [0] * len(perm)
    for b, p in enumerate(perm):
        inv[p] = b
    return tuple(inv)


def renamed_step(st: Step, perm: tuple) -> Step:
    """A step with its broker renamed (``replica`` is a step's only broker field; -1 names none)."""
    return st if st.replica < 0 else st._replace(replica=perm[st.replica])
