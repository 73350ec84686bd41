"""The property catalog: state invariants and client-history properties, as named predicates.

Predicates read a state by duck typing, so the model's State and an implementation's abstract
state (built by the conformance harness) are checked alike. The attributes read:

- ``state.replicas[i]`` for broker id i, each with ``alive`` (bool), ``log`` (sequence of
  ``(offset, leader_epoch, record)``, offset k at index k), ``hw`` (int), ``leader`` (int, -1
  none) and ``isr`` (sorted ids), ``pending_isr`` (proposed ISR in flight, or None);
- ``state.controller`` with ``leader`` (-1 none), ``leader_epoch``, ``isr`` (sorted ids), ``elr``
  (sorted ids of the Eligible Leader Replicas, KIP-966; empty before it);
- ghosts of what clients were told: ``state.acked`` (``(offset, record)`` of acks=all writes
  answered NONE), ``state.consumed`` (distinct ``(offset, record)`` pairs returned to consumers),
  ``state.consumer_hw_regressed`` (a consume returned an HW below an earlier consume's).

A replica "presumes leadership" when it is alive and ``leader`` is its own id; the "established
leader" is the controller's leader once it is alive and presumes leadership in the controller's
leader epoch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .budgets import CONVERGENCE, DURABILITY, DURABLE_LOGS, EVERY_FAULT, QUORUM, READS, Budget

FAULT_BUDGET = DURABILITY.statement  # the budget of acknowledged writes, as words


@dataclass(frozen=True)
class Property:
    """A named safety property; ``check(state)`` is True when it holds in ``state``. Kafka promises
    it within ``budget``: where the run is past it (``budget.exceeded``), a failure is reported as
    outside the budget, not as a violation."""

    id: str
    statement: str
    source: str
    kind: str  # "invariant" (a predicate of the state) or "history" (of what clients were told)
    check: Callable[[object], bool]
    budget: Budget = EVERY_FAULT  # the faults within which Kafka promises it
    # what ``check`` reads: State fields, or "logs" for the replicas' logs alone; the explorer skips
    # the check in a state whose parent passed it with the very same objects there (None: unknown)
    reads: tuple[str, ...] | None = None

    def __call__(self, state) -> bool:
        return self.check(state)


def _presumed_leaders(state):
    """The live brokers that lead in their own view and serve as leaders: a broker still starting
    (kip-903 on: up on its replayed metadata, not yet registered) serves no request and advances no
    HW; it is fenced, and so told a new leader epoch, before it registers (docs/steps.md, restart)."""
    return [(i, r) for i, r in enumerate(state.replicas) if r.alive and r.leader == i and not r.unregistered]


def _established_leader(state):
    c = state.controller
    if c.leader < 0:
        return None
    rep = state.replicas[c.leader]
    if rep.alive and rep.leader == c.leader and rep.leader_epoch == c.leader_epoch and not rep.unregistered:
        return rep
    return None


def _same_prefix(a, b, upto: int) -> bool:
    """Both logs hold identical entries at every offset below ``upto``."""
    return len(a) >= upto and len(b) >= upto and tuple(a[:upto]) == tuple(b[:upto])


def leader_in_isr(state) -> bool:
    """Controller invariant: the leader is elected from, and stays in, the ISR."""
    c = state.controller
    return c.leader < 0 or c.leader in c.isr


def _leaders_complete(state, isr_of) -> bool:
    """Every replica presuming leadership holds, below its HW, the same entries as every member of
    ``isr_of(state, leader)`` that holds its log: a member down with a data loss its restart will
    apply (a power loss, a replaced disk) is judged once it restarts, when Kafka has either taken
    it out of the ISR (KIP-966) or kept it there without the data (a loss of the fault budget)."""
    reps = state.replicas
    for _i, lead in _presumed_leaders(state):
        for m in isr_of(state, lead):
            member = reps[m]
            if not _same_prefix(lead.log, member.log, lead.hw) and (member.alive or not member.power_lost):
                return False
    return True


def weak_isr(state) -> bool:
    """Leader completeness against the leader's own (possibly stale) ISR view."""
    return _leaders_complete(state, lambda _state, lead: lead.isr)


def strong_isr(state) -> bool:
    """Leader completeness against the controller's ISR, which elections use (KIP-101)."""
    return _leaders_complete(state, lambda state, _lead: state.controller.isr)


def log_matching(state) -> bool:
    """Leader epochs identify log prefixes, the premise of epoch-based truncation (KIP-101/279)."""
    logs = [tuple(r.log) for r in state.replicas]
    for x in range(len(logs)):
        for y in range(x + 1, len(logs)):
            a, b = logs[x], logs[y]
            n = min(len(a), len(b))
            if a[:n] == b[:n]:
                continue
            first_diff = next(k for k in range(n) if a[k] != b[k])
            # from the first difference on, no offset may hold entries of one epoch in both logs
            if any(a[k][1] == b[k][1] for k in range(first_diff, n)):
                return False
    return True


def high_watermark_bound(state) -> bool:
    """Partition HW never exceeds the replica's log end offset."""
    return all(r.hw <= len(r.log) for r in state.replicas)


def replication_quorum_superset(state) -> bool:
    """The HW quorum (maximal ISR) covers every ISR member the controller could elect."""
    c = state.controller
    lead = _established_leader(state)
    if lead is None:
        return True
    maximal = set(lead.isr) | set(lead.pending_isr or ())
    return set(c.isr) <= maximal


def _established_leader_holds(state, pairs) -> bool:
    """The established leader (if any) holds each ``(offset, record)`` of ``pairs`` at its offset."""
    lead = _established_leader(state)
    return lead is None or _holds(lead, pairs)


def _holds(rep, pairs) -> bool:
    log = rep.log
    return all(o < len(log) and log[o][2] == rec for o, rec in pairs)


def elr_completeness(state) -> bool:
    """KIP-966: every live ELR member holds every record clients were told is committed. A member
    started again but fenced and not yet registered is judged once it registers (its registration
    takes it out after an unclean shutdown; it cannot be elected before), as a member down is."""
    reps, c = state.replicas, state.controller
    return all(
        _holds(reps[m], state.acked) and _holds(reps[m], state.consumed)
        for m in c.elr
        if reps[m].alive and not (reps[m].unregistered and m in c.fenced)
    )


def leader_completeness(state) -> bool:
    """The leader the controller elected (from the ISR, or the ELR under KIP-966), once alive,
    holds every record clients were told is committed."""
    leader = state.controller.leader
    if leader < 0 or not state.replicas[leader].alive:
        return True
    rep = state.replicas[leader]
    return _holds(rep, state.acked) and _holds(rep, state.consumed)


def no_lost_acked_write(state) -> bool:
    """acks=all durability: the established leader holds every acknowledged write."""
    return _established_leader_holds(state, state.acked)


def no_divergent_read(state) -> bool:
    """Consumers agree on the record at each offset."""
    seen: dict[int, int] = {}
    for o, rec in state.consumed:
        if seen.setdefault(o, rec) != rec:
            return False
    return True


def monotonic_high_watermark(state) -> bool:
    """The HW consumers see never goes back (KIP-207, OFFSET_NOT_AVAILABLE under KIP-320)."""
    return not state.consumer_hw_regressed


def no_uncommitted_read(state) -> bool:
    """Reads below the HW are committed: the established leader still holds them."""
    return _established_leader_holds(state, state.consumed)


def no_duplicate_offsets(state) -> bool:
    """A produced record exists once per log and is read at one offset only."""
    offsets: dict[int, int] = {}
    for o, rec in state.consumed:
        if offsets.setdefault(rec, o) != o:
            return False
    for r in state.replicas:
        records = [e[2] for e in r.log]
        if len(set(records)) != len(records):
            return False
    return True


PROPERTIES: list[Property] = [
    Property(
        "LeaderInIsr",
        "The controller's leader, when there is one, is a member of the controller's ISR.",
        "hachikuji/kafka-specification (Kip320 invariants)",
        "invariant",
        leader_in_isr,
        reads=("controller",),
    ),
    Property(
        "WeakIsr",
        "Every replica presuming leadership has, below its HW, the same entries as every "
        "member of its own view of the ISR (a member down with a data loss its restart applies is judged "
        "once it restarts).",
        "hachikuji/kafka-specification (KafkaReplication.WeakIsr)",
        "invariant",
        weak_isr,
        DURABLE_LOGS,
        reads=("replicas",),
    ),
    Property(
        "StrongIsr",
        "Every replica presuming leadership has, below its HW, the same entries as every "
        "member of the controller's ISR (leader completeness; a member down with a data loss its restart "
        "applies is judged once it restarts).",
        "hachikuji/kafka-specification (KafkaReplication.StrongIsr); KIP-101",
        "invariant",
        strong_isr,
        CONVERGENCE,
        reads=("replicas", "controller"),
    ),
    Property(
        "LogMatching",
        "If two logs hold an entry of the same leader epoch at the same offset, they are "
        "identical up to and including that offset.",
        "KIP-101 / KIP-279 log divergence; Raft Log Matching",
        "invariant",
        log_matching,
        CONVERGENCE,
        reads=("logs",),
    ),
    Property(
        "HighWatermarkBound",
        "Every replica's HW is at most its LEO.",
        "Kafka replication (HW <= LEO)",
        "invariant",
        high_watermark_bound,
        reads=("replicas",),
    ),
    Property(
        "ReplicationQuorumSuperset",
        "The established leader's maximal ISR (ISR plus a pending "
        "expansion) contains every member of the controller's ISR.",
        "Vanlightly/kafka-tlaplus (v3.5 replication quorum); KIP-497 AlterPartition",
        "invariant",
        replication_quorum_superset,
        QUORUM,
        reads=("replicas", "controller"),
    ),
    Property(
        "ElrCompleteness",
        "Every live member of the controller's Eligible Leader Replicas holds, at "
        "its offset, every acks=all write answered NONE and every record a consumer read.",
        "KIP-966 (ELR members hold the committed log); Vanlightly/kafka-tlaplus kip-966 "
        "(LeaderCandidateCompletenessProperty)",
        "invariant",
        elr_completeness,
        READS,
        reads=("replicas", "controller", "acked", "consumed"),
    ),
    Property(
        "NoLostAckedWrite",
        "Every acks=all write answered NONE is, at its offset, in the log of the established leader.",
        "Kafka durability guarantee (min.insync.replicas); KIP-966",
        "history",
        no_lost_acked_write,
        DURABILITY,
        reads=("replicas", "controller", "acked"),
    ),
    Property(
        "LeaderCompleteness",
        "The controller's leader, once alive, holds at its offset every acks=all "
        "write answered NONE and every record a consumer read.",
        "KIP-966 (election from ISR and ELR); Vanlightly/kafka-tlaplus kip-966 (LeaderCompletenessProperty)",
        "history",
        leader_completeness,
        READS,
        reads=("replicas", "controller", "acked", "consumed"),
    ),
    Property(
        "NoDivergentRead",
        "No two consumer reads of one offset returned different records.",
        "Jepsen queue anomalies (divergent read)",
        "history",
        no_divergent_read,
        READS,
        reads=("consumed",),
    ),
    Property(
        "MonotonicHighWatermark",
        "No consumer was shown an HW lower than one shown before.",
        "KIP-207 / KIP-320 (OFFSET_NOT_AVAILABLE)",
        "history",
        monotonic_high_watermark,
        READS,
        reads=("consumer_hw_regressed",),
    ),
    Property(
        "NoUncommittedRead",
        "Every record a consumer read is, at its offset, in the log of the "
        "established leader (what was read as committed stays committed).",
        "Kafka HW visibility; Jepsen queue anomalies",
        "history",
        no_uncommitted_read,
        READS,
        reads=("replicas", "controller", "consumed"),
    ),
    Property(
        "NoDuplicateOffsets",
        "No record is in one log twice, nor was read at two offsets.",
        "Jepsen queue anomalies (duplicate)",
        "history",
        no_duplicate_offsets,
        reads=("logs", "consumed"),
    ),
]

BY_ID: dict[str, Property] = {p.id: p for p in PROPERTIES}
