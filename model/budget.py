"""The fault budget: what a run did that Kafka's promises depend on, and a guard that keeps a
generated run inside it.

Each property of ``isrcheck.specs`` states its own budget (``Property.budget``): the faults within
which Kafka promises it. ``FaultLedger`` is the bookkeeping those budgets read, kept beside the
model state along a run (the lockstep runner, the explorer): which brokers lost data, whether a
consumer read a deposed leader, which of the known losses (``losses.py``) the run entered. A
property that fails once the ledger is past its budget is reported as broken outside its budget,
never as a violation.

``FaultBudget`` is the guard generators use to stay inside the budget of every property at once
(random walks, the Hypothesis strategies and state machine, the shrinker's budget check and guided
fuzzing's mutants); the explorer and its SMT encoding leave the known losses out with
``Scope.exclude_known_losses``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from .alphabet import (
    CONSUME,
    CONTROLLED_SHUTDOWN,
    CORRUPT,
    CORRUPT_LIVE,
    CRASH,
    DELIVER_LEADER_AND_ISR,
    ELECT,
    EXPAND_ISR,
    FAIL_DISK,
    FENCE,
    HANDLE_ALTER_PARTITION,
    HANDLE_ALTER_PARTITION_RESPONSE,
    HANDLE_FETCH,
    LOSE_DISK,
    PRODUCE,
    REGISTER,
    REJOIN,
    RESTART,
    SHRINK_ISR,
    TICK,
    Step,
)
from .config import ScheduleConfig
from .losses import (
    BOUNCED_LEADER_PROPOSAL,
    DEPOSED_LEADER_HW,
    FAST_BOUNCE_AFTER_LOSS,
    KNOWN_LOSSES,
    LAST_REPLICA_STANDING,
    RESTART_WITHIN_SESSION_AFTER_LOSS,
    STALE_ISR_EXPANSION,
    UNREGISTERED_STALE_ISR_EXPANSION,
    bounced_leader_proposal,
    deposed_leader_hw,
    deposed_leader_lives,
    fast_bounce_after_loss,
    last_replica_standing,
    restart_within_session_after_loss,
    stale_isr_expansion,
    unregistered_stale_isr_expansion,
)
from .protocols import PROTOCOLS
from .semantics import apply
from .state import initial_state


class FaultLedger(NamedTuple):
    """What a run did so far that fault budgets read (``isrcheck.specs.Budget``); a function of
    the steps taken and the model states around them, so two paths to one state may differ in it.

    ``losers``: sorted ids of the brokers that had an unclean shutdown that may lose data they had
    acknowledged, a power loss or a lost disk (KIP-966 counts these events: "MinISR-1 tolerance to
    data loss unclean shutdown events"), whether or not the write-back happened to save it all.
    ``stale_reads``: a consumer read a broker that led in a leader epoch the controller had left
    (Kafka's consumer sends its leader epoch, KIP-320, and is fenced there; the model's does not).
    ``known``: sorted names of the known losses (``losses.KNOWN_LOSSES``) whose situation the run
    entered, among those it watches (the variant's own)."""

    losers: tuple = ()
    stale_reads: bool = False
    known: tuple = ()

    def after(self, before, st, after, watch=frozenset(KNOWN_LOSSES)) -> "FaultLedger":
        """The ledger once step ``st`` took the model from ``before`` to ``after``, recording only
        the known losses in ``watch`` (the variant's own: no budget reads the others, and the
        explorer stores states apart by their ledger)."""
        name = st.name
        if name not in LEDGER_STEPS:
            return self
        ledger = self
        if name == CONSUME:
            rep = before.replicas[st.replica]
            if not self.stale_reads and rep.leader == st.replica and rep.leader_epoch != before.controller.leader_epoch:
                ledger = ledger._replace(stale_reads=True)
            return ledger
        if loses_data(st) and st.replica not in self.losers:
            ledger = ledger._replace(losers=tuple(sorted(self.losers + (st.replica,))))
        if not watch:
            return ledger
        entered = []
        # Last Replica Standing begins when the ISR changes or a member loses data
        lrs = LAST_REPLICA_STANDING.name in ledger.known
        if (before.controller is not after.controller or loses_data(st)) and last_replica_standing(after):
            lrs = True
            if LAST_REPLICA_STANDING.name in watch:
                entered.append(LAST_REPLICA_STANDING.name)
        # a deposed leader living on after Last Replica Standing holds what the ISR lost
        if (
            lrs
            and DEPOSED_LEADER_HW.name in watch
            and DEPOSED_LEADER_HW.name not in ledger.known
            and deposed_leader_lives(after)
        ):
            entered.append(DEPOSED_LEADER_HW.name)
        if name == RESTART and FAST_BOUNCE_AFTER_LOSS.name in watch and fast_bounce_after_loss(before, st):
            entered.append(FAST_BOUNCE_AFTER_LOSS.name)
        if (
            name == RESTART
            and RESTART_WITHIN_SESSION_AFTER_LOSS.name in watch
            and restart_within_session_after_loss(before, st, after)
        ):
            entered.append(RESTART_WITHIN_SESSION_AFTER_LOSS.name)
        if name == HANDLE_ALTER_PARTITION and ledger.losers:
            for loss, stale in (
                (STALE_ISR_EXPANSION, stale_isr_expansion),
                (UNREGISTERED_STALE_ISR_EXPANSION, unregistered_stale_isr_expansion),
            ):
                if loss.name in watch and stale(before, st, after, ledger.losers):
                    entered.append(loss.name)
        if (
            name == HANDLE_ALTER_PARTITION
            and BOUNCED_LEADER_PROPOSAL.name in watch
            and bounced_leader_proposal(before, st, after)
        ):
            entered.append(BOUNCED_LEADER_PROPOSAL.name)
        if name in HW_STEPS and DEPOSED_LEADER_HW.name in watch and deposed_leader_hw(before, after):
            entered.append(DEPOSED_LEADER_HW.name)
        new = set(entered) - set(ledger.known)
        return ledger._replace(known=tuple(sorted(ledger.known + tuple(new)))) if new else ledger

    def permuted(self, perm: tuple) -> "FaultLedger":
        """The ledger with every broker ``b`` renamed ``perm[b]`` (as ``state.permuted``)."""
        return self._replace(losers=tuple(sorted(perm[b] for b in self.losers))) if self.losers else self


EMPTY_LEDGER = FaultLedger()

# The steps that may advance a leader's HW (Partition.maybeIncrementLeaderHW's callers).
HW_STEPS = frozenset(
    (
        PRODUCE,
        HANDLE_FETCH,
        SHRINK_ISR,
        EXPAND_ISR,
        HANDLE_ALTER_PARTITION_RESPONSE,
        TICK,
        DELIVER_LEADER_AND_ISR,
    )
)
# The steps that may change a ledger: a read, a data loss, the steps that change the controller's
# ISR or bring a broker back, and those that move an HW (where a known loss begins); the rest
# leave it as it is.
LEDGER_STEPS = (
    frozenset(
        (
            CONSUME,
            CRASH,
            LOSE_DISK,
            RESTART,
            REGISTER,
            REJOIN,
            FENCE,
            ELECT,
            CONTROLLED_SHUTDOWN,
            HANDLE_ALTER_PARTITION,
            CORRUPT,
            FAIL_DISK,
            CORRUPT_LIVE,
        )
    )
    | HW_STEPS
)


def exceeded(prop, ledger: FaultLedger, cfg) -> str | None:
    """Why a run with ``ledger`` is outside the fault budget of property ``prop`` (``Property.budget``)
    under ``cfg`` (a ``ModelConfig``: its unclean election, min.insync.replicas and the variant's
    known losses), or None: the one judgement of every engine (lockstep, trace validation, BMC)."""
    return prop.budget.exceeded(ledger, cfg, cfg.rules.known_losses)


def leaving(props, cfg, old: FaultLedger, new: FaultLedger) -> list:
    """The properties of ``props`` whose budget a run leaves as its ledger goes from ``old`` to
    ``new`` (the ledger only grows): each is checked once more in the state before, the last
    within its budget, so a run that leaves a budget still had it checked up to there."""
    return [p for p in props if exceeded(p, new, cfg) is not None and exceeded(p, old, cfg) is None]


def outside_budget(config, prop, trace) -> str | None:
    """Why the run of ``trace`` (schedule steps, all taken) from the initial state is outside the
    fault budget of property ``prop`` at its end, or None: how an engine that knows no budget
    (bounded model checking) tells a violation from a loss Kafka itself has there."""
    state, ledger = initial_state(config), EMPTY_LEDGER
    for raw in trace:
        st = Step.from_json(raw)
        after, _ = apply(config, state, st)
        ledger, state = ledger.after(state, st, after, config.rules.known_losses), after
    return exceeded(prop, ledger, config)


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
        self.fast_bounce = FAST_BOUNCE_AFTER_LOSS.name in known or (
            RESTART_WITHIN_SESSION_AFTER_LOSS.name in known and PROTOCOLS[protocol].start_before_registration
        )
        self.stale_expansion = spare_known_gaps and STALE_ISR_EXPANSION.name in known
        # kip-903 on: only a remote LEO a Fetch with broker epoch -1 left (sent before a registration)
        self.unregistered_stale = spare_known_gaps and UNREGISTERED_STALE_ISR_EXPANSION.name in known
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
        if name == RESTART and self.fast_bounce and st.replica not in state.controller.fenced:
            return not state.replicas[st.replica].power_lost
        if name == CONSUME:  # a deposed leader serves its stale HW; see the class docstring
            rep = state.replicas[st.replica]
            return rep.leader != st.replica or rep.leader_epoch == state.controller.leader_epoch
        if name == EXPAND_ISR and self.stale:
            rep = state.replicas[st.replica]
            return not any(
                (st.replica, f) in self.stale
                for f in range(len(state.replicas))
                if f not in rep.isr
                and rep.remote_leo[f] >= rep.hw
                and (self.stale_expansion or rep.remote_broker_epoch[f] == -1)
            )
        if name in (FENCE, FAIL_DISK) and self.lrs:  # a failed disk fences its broker too
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
            if self.stale_expansion or self.unregistered_stale:
                self.stale |= {(i, st.replica) for i in range(len(before.replicas))}
        elif st.name == HANDLE_FETCH and self.stale:
            request = before.fetch_requests[st.replica][0]
            if not request.orphan:  # an orphan was sent before the loss: it tells the leader nothing new
                self.stale.discard((request.leader, st.replica))


@lru_cache(maxsize=4096)  # a function of the step alone, asked for every transition the explorer takes
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
