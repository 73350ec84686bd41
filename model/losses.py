"""The losses of acknowledged data that Kafka itself suffers within the fault budget, named once.

Each protocol variant lists the ones it has (``Protocol.known_losses``); the fault budget
(``budget.FaultBudget``), the explorer's ``exclude_known_losses`` and its SMT encoding leave
them out by these names.
"""

from __future__ import annotations

from typing import NamedTuple

from .alphabet import HANDLE_ALTER_PARTITION, RESTART


class KnownLoss(NamedTuple):
    """A loss Kafka documents and a later KIP closes: what happens, where it is described, and
    the first variant of the lineage without it."""

    name: str
    statement: str
    source: str
    closed_by: str


LAST_REPLICA_STANDING = KnownLoss(
    "last-replica-standing",
    "the ISR is left with only members that lost unflushed data in a power loss; the one elected "
    "from it lacks acknowledged writes",
    "KIP-966 (Last Replica Standing)",
    "kip-966",
)
FAST_BOUNCE_AFTER_LOSS = KnownLoss(
    "fast-bounce-after-loss",
    "a replica that lost unflushed data restarts before the controller noticed it went away and "
    "stays in the ISR without that data",
    "KIP-966 (unclean shutdown detection)",
    "kip-966",
)
STALE_ISR_EXPANSION = KnownLoss(
    "stale-isr-expansion",
    "an ISR expansion counts a follower's log end offset from before it lost data and restarted",
    "KIP-903, KAFKA-14139 (broker epochs in Fetch and AlterPartition)",
    "kip-903",
)

DEPOSED_LEADER_HW = KnownLoss(
    "deposed-leader-hw",
    "a leader the controller has replaced still presumes leadership with an HW the controller's ISR "
    "does not hold: it advanced it over its own stale, smaller ISR view (its ISR expansion's answer "
    "lost, its resend fenced), or the ISR lost what it held (Last Replica Standing while the deposed "
    "leader lives on as a zombie); Kafka's consumer and followers are fenced from it by KIP-320",
    "KIP-966 (the HW advances only while the ISR has min.insync.replicas members); isrcheck scenario "
    "deposed-leader-lost-isr-answer",
    "kip-966",
)

BOUNCED_LEADER_PROPOSAL = KnownLoss(
    "bounced-leader-proposal",
    "a leader restarts before the controller noticed and leads again in the same leader epoch; the "
    "controller then commits the ISR expansion its previous process had sent, which the new process "
    "never hears of: it advances its HW over the smaller ISR it knows, past the member added",
    "KIP-380 (the controller detects a bounced broker and moves leadership away first); KRaft refuses "
    "the new process's registration while the old session lives (DUPLICATE_BROKER_REGISTRATION)",
    "kip-903",
)

RESTART_WITHIN_SESSION_AFTER_LOSS = KnownLoss(
    "restart-within-session-after-loss",
    "a replica that lost unflushed data restarts before the controller ended its previous session: "
    "KRaft's broker starts on the replayed metadata log and, until the session expires and its "
    "registration is accepted, the controller keeps it in the ISR (electable) without that data, "
    "under its old broker epoch, so an ISR expansion built on its previous incarnation's fetches is "
    "accepted too; KIP-966's unclean shutdown handling comes only with the registration",
    "Apache Kafka 4.x BrokerServer.startup (metadata publishers installed before "
    "lifecycleManager.initialCatchUpFuture), ClusterControlManager.registerBroker "
    "(DUPLICATE_BROKER_REGISTRATION while the old session is valid), "
    "ReplicationControlManager.handleBrokerUncleanShutdown",
    "none (Kafka 4.x has it)",
)

UNREGISTERED_STALE_ISR_EXPANSION = KnownLoss(
    "unregistered-stale-isr-expansion",
    "an ISR expansion counts a follower's log end offset that an earlier incarnation fetched before "
    "it registered, from before it lost data: that Fetch carried broker epoch -1, which both KIP-903 "
    "checks let pass; Kafka proposes an expansion only while handling a Fetch, so it takes a Fetch of "
    "the lost incarnation handled after the new one registered (a request outliving its sender's "
    "session, which the model bounds by no clock)",
    "Apache Kafka 4.x Partition.isBrokerEpochIsrEligible (a stored broker epoch of -1 bypasses the "
    "comparison), ReplicationControlManager.ineligibleReplicasForIsr (-1 bypasses it too), "
    "BrokerServer.startup (fetchers start on the replayed metadata before the registration; "
    "BrokerLifecycleManager.brokerEpoch is -1 until then)",
    "none (Kafka 4.x has it)",
)
KNOWN_LOSSES: dict[str, KnownLoss] = {
    loss.name: loss
    for loss in (
        LAST_REPLICA_STANDING,
        FAST_BOUNCE_AFTER_LOSS,
        STALE_ISR_EXPANSION,
        DEPOSED_LEADER_HW,
        BOUNCED_LEADER_PROPOSAL,
        RESTART_WITHIN_SESSION_AFTER_LOSS,
        UNREGISTERED_STALE_ISR_EXPANSION,
    )
}


# -- where each loss happens, as predicates over a step and the states around it -------------------
# The fault ledger (``budget.FaultLedger``) records a run that enters one of these situations; the
# explorer's ``exclude_known_losses`` prunes Last Replica Standing with its predicate.


def last_replica_standing(s) -> bool:
    """Every member of the controller's (non-empty) ISR lost its unflushed data in a power loss or
    its disk and is still down: KIP-966's Last Replica Standing, which Kafka before KIP-966 does not
    survive (the member comes back, is elected from the ISR, and its followers truncate to it)."""
    isr = s.controller.isr
    return bool(isr) and all(s.replicas[m].power_lost for m in isr)


def fast_bounce_after_loss(before, st) -> bool:
    """``st`` restarts a broker that lost data before the controller fenced it: it keeps its ISR
    membership (and leadership) without that data unless KIP-966 detects the unclean shutdown."""
    return st.name == RESTART and before.replicas[st.replica].power_lost and st.replica not in before.controller.fenced


def restart_within_session_after_loss(before, st, after) -> bool:
    """``st`` starts a broker that lost data while the controller still holds its previous
    session (kip-903 on: it comes back unregistered, and only its registration, after the session
    ended, tells the controller of the unclean shutdown)."""
    return fast_bounce_after_loss(before, st) and after.replicas[st.replica].unregistered


def stale_isr_expansion(before, st, after, lost: tuple) -> bool:
    """``st`` commits an ISR expansion that admits a follower of ``lost`` (brokers that lost data)
    whose log is shorter than the leader's HW: the leader proposed it on a LEO it learnt from the
    follower's incarnation before the loss (KAFKA-14139; KIP-903's broker epochs make the controller
    reject it). The proposal may predate a later fetch, so the leader's current view of the LEO
    does not tell; a log shorter for a reason other than a data loss (hw-truncation's truncation
    to the HW) is the variant's own bug, not this loss."""
    if st.name != HANDLE_ALTER_PARTITION or after.controller.isr == before.controller.isr:
        return False
    hw = before.replicas[st.replica].hw
    return any(
        f in lost and f not in before.controller.isr and len(before.replicas[f].log) < hw for f in after.controller.isr
    )


def unregistered_stale_isr_expansion(before, st, after, lost: tuple) -> bool:
    """``st`` commits an ISR expansion naming, with broker epoch -1, a follower of ``lost`` whose log
    is shorter than the leader's HW or its remote LEO of it: the leader counted a Fetch sent before a
    registration, from before the loss, and KIP-903's checks pass -1. Under strict min ISR (kip-966)
    the HW waits for the expansion, so the remote LEO the HW will then count is what tells."""
    if st.name != HANDLE_ALTER_PARTITION or after.controller.isr == before.controller.isr:
        return False
    leader = before.replicas[st.replica]
    proposal = before.alter_partition[st.replica][0]
    epochs = dict(zip(proposal.isr, proposal.broker_epochs))  # one per proposed member, in its order
    return any(
        f in lost
        and f not in before.controller.isr
        and epochs[f] == -1
        and len(before.replicas[f].log) < max(leader.hw, leader.remote_leo[f])
        for f in after.controller.isr
    )


def bounced_leader_proposal(before, st, after) -> bool:
    """``st`` commits an orphan ISR expansion (its leader crashed after sending it) while that leader
    is up again, restarted before the controller noticed (a committed orphan keeps the controller's
    leader and leader epoch): its new process never hears of the commit, as the answer went to the
    old connection and the LeaderAndIsr of its registration predates it, and advances its HW over
    the smaller ISR it knows (docs/steps.md, ``crash`` and ``restart``)."""
    if st.name != HANDLE_ALTER_PARTITION or not set(after.controller.isr) - set(before.controller.isr):
        return False
    queue = before.alter_partition[st.replica]
    return bool(queue) and queue[0].orphan and before.replicas[st.replica].alive


def deposed_leader_hw(before, after) -> bool:
    """A broker presuming leadership in a leader epoch the controller has left advanced its HW."""
    epoch = after.controller.leader_epoch
    return any(
        r.alive and r.leader == i and r.leader_epoch != epoch and r.hw > before.replicas[i].hw
        for i, r in enumerate(after.replicas)
    )


def deposed_leader_lives(s) -> bool:
    """A broker presumes leadership, with a non-zero HW, in a leader epoch the controller has left."""
    epoch = s.controller.leader_epoch
    return any(r.alive and r.leader == i and r.leader_epoch != epoch and r.hw > 0 for i, r in enumerate(s.replicas))
