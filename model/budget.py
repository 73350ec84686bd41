"""The fault budget as a guard over model states: which fault steps a generated run may take so
that it stays within the budget under which Kafka promises its guarantees
(``isrcheck.specs.FAULT_BUDGET``), leaving out the losses each variant suffers by design
(``Protocol.known_losses``, ``losses.py``).

One owner, read by the random walks, the Hypothesis strategies and state machine, the shrinker's
budget check and guided fuzzing's mutants (all through ``FaultBudget``); the explorer and its SMT
encoding leave the same known losses out with ``Scope.exclude_known_losses``.
"""
from __future__ import annotations

from .config import ScheduleConfig
from .losses import FAST_BOUNCE_AFTER_LOSS, LAST_REPLICA_STANDING, STALE_ISR_EXPANSION
from .protocols import PROTOCOLS


class FaultBudget:
    """Guards of the fault budget over the model state, and the accounting they need.

    Unclean election off (checked where a run is configured), at most min.insync.replicas - 1
    distinct replicas ever lose data (a fault class with ``loses_data``: a power loss or a lost
    disk), and for the variants that have them, none of their known losses: a replica that lost
    (or may lose) data is never the sole member of the controller's ISR (Last Replica Standing),
    nor comes back by a fast restart the controller never noticed. Consumers read from a leader
    only in the controller's current leader epoch: a deposed leader that has not heard of its
    successor serves its stale HW, and the model's consumer carries no leader epoch to be fenced
    by (KIP-320's consumer-side validation does that in Kafka).

    With ``spare_known_gaps`` it also avoids two places where docs/steps.md departs from Kafka
    and the protocol loses data for that reason alone: a power loss or a lost disk of a replica
    that is in some ISR view or proposal, and an ISR expansion on a remote LEO from before it lost
    data (KAFKA-14139, on the variants without KIP-903)."""

    def __init__(self, config: ScheduleConfig, protocol: str, spare_known_gaps: bool = True) -> None:
        self.max_losers = config.min_insync_replicas - 1
        self.losers: set[int] = set()
        self.spare_known_gaps = spare_known_gaps
        known = PROTOCOLS[protocol].known_losses
        self.lrs = LAST_REPLICA_STANDING.name in known
        self.fast_bounce = FAST_BOUNCE_AFTER_LOSS.name in known
        self.stale_expansion = spare_known_gaps and STALE_ISR_EXPANSION.name in known
        self.stale: set[tuple[int, int]] = set()  # (leader, r): the leader's remote LEO of r predates r's data loss

    def allows(self, state, st) -> bool:
        """Whether step ``st`` (enabled in ``state``) keeps the run within the budget."""
        name = st.name
        if loses_data(st):
            if st.replica not in self.losers and len(self.losers) >= self.max_losers:
                return False
            if self.spare_known_gaps and in_some_isr(state, st.replica):
                return False
            return not self.lrs or tuple(state.controller.isr) != (st.replica,)
        if name == "restart" and self.fast_bounce and st.replica not in state.controller.fenced:
            return not state.replicas[st.replica].power_lost
        if name == "consume":  # a deposed leader serves its stale HW; see the class docstring
            rep = state.replicas[st.replica]
            return rep.leader != st.replica or rep.leader_epoch == state.controller.leader_epoch
        if name == "expand_isr" and self.stale:
            rep = state.replicas[st.replica]
            return not any((st.replica, f) in self.stale for f in range(len(state.replicas))
                           if f not in rep.isr and rep.remote_leo[f] >= rep.hw)
        if name == "fence" and self.lrs:
            # Fencing another broker must not leave a down, data-losing replica as the sole ISR member.
            rest = tuple(i for i in state.controller.isr if i != st.replica)
            if len(rest) == 1:
                p = state.replicas[rest[0]]
                return p.alive or not p.power_lost
        return True

    def took(self, before, st) -> None:
        """Account for ``st``, taken in state ``before``."""
        if loses_data(st):
            self.losers.add(st.replica)
            if self.stale_expansion:
                self.stale |= {(i, st.replica) for i in range(len(before.replicas))}
        elif st.name == "handle_fetch" and self.stale:
            self.stale.discard((before.fetch_requests[st.replica][0].leader, st.replica))


def loses_data(st) -> bool:
    """Whether step ``st`` is a fault class that loses a broker's data (``Fault.loses_data``)."""
    return any(f.loses_data and f.counts(st, None) for f in st.kind.faults)


def in_some_isr(state, r: int) -> bool:
    """r is in the controller's ISR or ELR, a live leader's ISR or proposed ISR, or the ISR of an
    AlterPartition or LeaderAndIsr in flight. (KIP-966 elects an unfenced ELR member: one that
    lost power is elected before it registers again, and StrongIsr, stated over the controller's
    ISR, holds an empty member until that registration removes it.)"""
    if r in state.controller.isr or r in state.controller.elr:
        return True
    for i, rep in enumerate(state.replicas):
        if rep.alive and rep.leader == i and (r in rep.isr or (rep.pending_isr and r in rep.pending_isr)):
            return True
    # a LeaderAndIsr in flight may yet make its receiver a leader with that ISR view
    return any(r in m.isr for q in state.alter_partition + state.leader_and_isr for m in q)
