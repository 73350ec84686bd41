"""Protocol variants: one class per step in Kafka's lineage, overriding only what changed.

The base class is pre-0.11 Kafka (truncate to the high watermark on becoming follower); each
subclass replaces the methods its KIP changed, so a new variant (e.g. KIP-966) is a new subclass.
"""

from __future__ import annotations

from .alphabet import NONE
from .losses import (
    BOUNCED_LEADER_PROPOSAL,
    DEPOSED_LEADER_HW,
    FAST_BOUNCE_AFTER_LOSS,
    KNOWN_LOSSES,
    LAST_REPLICA_STANDING,
    STALE_ISR_EXPANSION,
    UNREGISTERED_STALE_ISR_EXPANSION,
)
from .state import Replica, active, end_offset_for, end_offset_for_kip101, latest_epoch, truncate_to, updated


class Protocol:
    """Kafka < 0.11: followers truncate to their own HW; fetches are not fenced."""

    name = "hw-truncation"
    uses_epoch_queries = False
    # histories that lose acknowledged writes in Kafka itself within the fault budget, which the
    # explorer's exclude_known_losses and the random walks' budget leave out: KIP-966's Last
    # Replica Standing and fast bounce after a data loss, and KIP-903's stale ISR expansion (the
    # form KIP-903 leaves open, a Fetch sent before a registration, only where Fetches carry epochs)
    known_losses = frozenset(KNOWN_LOSSES) - {UNREGISTERED_STALE_ISR_EXPANSION.name}
    # ReplicaManager.makeFollowers before KIP-101 changed partition state only "when the leader is
    # available": a LeaderAndIsr naming no leader (-1) left the follower as it was
    follows_leaderless = False
    # KRaft's restart (docs/steps.md, restart and register): the broker starts on the replayed
    # metadata log (BrokerServer.startup installs the metadata publishers before it waits for its
    # registration), unregistered with broker epoch -1, and the controller accepts its registration
    # (register) only once the old session ended: ClusterControlManager.registerBroker refuses the new
    # incarnation while it lives (DUPLICATE_BROKER_REGISTRATION). Before, restart registers at once
    # and a fast bounce keeps leadership in the same leader epoch (no KIP-380 here)
    start_before_registration = False
    # KRaft's partition state (docs/steps.md, deliver_leader_and_isr and the AlterPartition manager):
    # Partition.makeLeader applies a change of the same partition epoch too and puts a
    # CommittedPartitionState, forgetting the leader's ISR proposal, whose answer it then ignores; and
    # DefaultAlterPartitionManager holds one AlterPartition per partition until it is answered
    committed_partition_state = False

    def new_fetcher(self, rep: Replica) -> Replica:
        """The fetcher a new follower starts (ReplicaFetcherManager.addFetcherForPartitions), before
        KIP-101: ReplicaManager.makeFollowers first truncates the log to the local HW."""
        rep = truncate_to(rep, rep.hw)
        return rep if rep.truncating_epoch == -1 else updated(rep, truncating_epoch=-1)

    def answer_epoch_query(self, log: tuple, epoch: int) -> tuple[int, int]:
        """OffsetsForLeaderEpoch does not exist before KIP-101."""
        raise AssertionError(f"{self.name} sends no OffsetsForLeaderEpoch")

    def handle_epoch_answer(self, rep: Replica, epoch: int, end: int) -> Replica:
        """OffsetsForLeaderEpoch does not exist before KIP-101."""
        raise AssertionError(f"{self.name} sends no OffsetsForLeaderEpoch")

    def check_fetch(self, leader: Replica, request) -> tuple[str, int, int] | None:
        """Before KIP-320 a leader serves any Fetch addressed to it: no epoch validation."""
        return None

    def in_sync(self, leader: Replica, leo: int) -> bool:
        """Partition.maybeExpandIsr before KIP-320: a follower whose LEO reached the HW is in sync.
        An unknown LEO (-1, UNKNOWN_OFFSET_METADATA: no Fetch from it in this leader epoch) never
        is, the HW being at least 0; every variant's rule keeps this comparison."""
        return leo >= leader.hw

    def consume_error(self, leader: Replica) -> str | None:
        """Before KIP-207/KIP-320 a new leader serves its (possibly lagging) HW at once."""
        return None

    # -- broker epochs (KIP-903) and the ELR (KIP-966): what the older variants do -------------------
    def next_broker_epoch(self, epoch: int) -> int:
        """Broker epochs are not compared before KIP-903: the model keeps them at 0."""
        return epoch

    def fetch_broker_epoch(self, follower: Replica) -> int:
        """A Fetch before KIP-903 (v15) carries no ReplicaState broker epoch."""
        return -1

    def proposal_epoch(self, epoch: int) -> int:
        """An AlterPartition before KIP-903 (v3) names no broker epochs: -1 for every member."""
        return -1

    def hw_blocked(self, leader: Replica, min_isr: int) -> bool:
        """Before KIP-966 min.insync.replicas only gates acks=all appends, never the HW."""
        return False

    def unclean_shutdown(self, kind: str, detection: str = "page-cache", registered: bool = True) -> bool:
        """Before KIP-966 the controller is not told how a broker shut down."""
        return False

    def last_known_leader(self, leader: int) -> int:
        """Before KIP-966 the controller keeps no last known leader."""
        return -1

    def isr_after_fence(self, isr: tuple, r: int) -> tuple:
        """KRaft before KIP-966: a fenced broker leaves the ISR, but the last member stays."""
        return tuple(i for i in isr if i != r) if r in isr and len(isr) > 1 else isr

    def elr_after(self, c, isr: tuple, min_isr: int, unclean: tuple = ()) -> tuple:
        """No Eligible Leader Replicas before KIP-966."""
        return ()

    def elect_clean(self, c) -> tuple[int, tuple] | None:
        """Clean election (PartitionChangeBuilder.electLeader): the first active ISR member (isAcceptableLeader:
        not fenced, not awaiting unfence, not in controlled shutdown)."""
        for r in c.isr:
            if active(c, r):
                return r, c.isr
        return None


class Kip101(Protocol):
    """KIP-101 (Kafka 0.11): truncate by OffsetsForLeaderEpoch on the follower's latest epoch."""

    name = "kip-101"
    uses_epoch_queries = True
    follows_leaderless = True

    def new_fetcher(self, rep: Replica) -> Replica:
        """KIP-101: no truncation to HW; the fetcher first asks the leader about its latest epoch."""
        return updated(rep, truncating_epoch=latest_epoch(rep.log))

    def answer_epoch_query(self, log: tuple, epoch: int) -> tuple[int, int]:
        """Kafka 0.11 LeaderEpochFileCache.endOffsetFor: an offset only, -1 when undefined."""
        end = end_offset_for_kip101(log, epoch)
        return (epoch if end >= 0 else -1), end

    def handle_epoch_answer(self, rep: Replica, epoch: int, end: int) -> Replica:
        """KIP-101 follower: undefined answer -> truncate to HW, else to min(end offset, LEO)."""
        rep = truncate_to(rep, rep.hw if end < 0 else end)
        return updated(rep, truncating_epoch=-1)


class Kip279(Kip101):
    """KIP-279 (Kafka 2.0): the answer names its epoch; the follower walks back until they agree."""

    name = "kip-279"

    def answer_epoch_query(self, log: tuple, epoch: int) -> tuple[int, int]:
        """KIP-279 OffsetsForLeaderEpoch: (largest epoch <= requested, its end offset)."""
        return end_offset_for(log, epoch)

    def handle_epoch_answer(self, rep: Replica, epoch: int, end: int) -> Replica:
        """KIP-279 truncation: agree on the leader's epoch, or retreat and ask about our own."""
        if epoch < 0:
            return updated(truncate_to(rep, rep.hw), truncating_epoch=-1)
        own_epoch, own_end = end_offset_for(rep.log, epoch)
        if own_epoch == epoch:
            return updated(truncate_to(rep, min(end, own_end)), truncating_epoch=-1)
        if own_epoch != -1:
            return updated(truncate_to(rep, own_end), truncating_epoch=own_epoch)
        return updated(truncate_to(rep, 0), truncating_epoch=-1)


class Kip320(Kip279):
    """KIP-320 (Kafka 2.1+): fetches carry epochs; the leader fences them and names divergence."""

    name = "kip-320"
    uses_epoch_queries = False

    def new_fetcher(self, rep: Replica) -> Replica:
        """KIP-320: the follower keeps its log and lets the first Fetch detect divergence."""
        return rep if rep.truncating_epoch == -1 else updated(rep, truncating_epoch=-1)

    def check_fetch(self, leader: Replica, request) -> tuple[str, int, int] | None:
        """KIP-320 fetch validation: current leader epoch fencing, then diverging epoch
        from lastFetchedEpoch. Returns (error, epoch, end offset) or None to serve records."""
        if request.leader_epoch < leader.leader_epoch:
            return ("FENCED_LEADER_EPOCH", -1, -1)
        if request.leader_epoch > leader.leader_epoch:
            return ("UNKNOWN_LEADER_EPOCH", -1, -1)
        last = request.last_fetched_epoch
        if last >= 0:
            epoch, end = end_offset_for(leader.log, last)
            if epoch != last or end < request.fetch_offset:
                return (NONE, epoch, end)
        return None

    def in_sync(self, leader: Replica, leo: int) -> bool:
        """KIP-320: add followers only once the HW reached the current leader epoch's start."""
        return leo >= leader.hw >= leader.epoch_start_offset

    def consume_error(self, leader: Replica) -> str | None:
        """KIP-207 rule under KIP-320: a leader whose HW is below its epoch start answers
        OFFSET_NOT_AVAILABLE rather than expose a stale HW."""
        return "OFFSET_NOT_AVAILABLE" if leader.hw < leader.epoch_start_offset else None


class Kip903(Kip320):
    """KIP-903 (Kafka 3.5, KAFKA-14139): registrations get broker epochs; a follower's Fetch carries
    its broker epoch and AlterPartition names each proposed member's, which the controller checks,
    so an ISR expansion built on a previous incarnation's fetches is rejected."""

    name = "kip-903"
    known_losses = (Kip320.known_losses - {STALE_ISR_EXPANSION.name, BOUNCED_LEADER_PROPOSAL.name}) | {
        UNREGISTERED_STALE_ISR_EXPANSION.name
    }
    start_before_registration = True
    committed_partition_state = True

    def next_broker_epoch(self, epoch: int) -> int:
        """BrokerRegistrationRequest: every registration gets a new, larger broker epoch."""
        return epoch + 1

    def fetch_broker_epoch(self, follower: Replica) -> int:
        """Fetch v15 ReplicaState.ReplicaEpoch: the follower's current broker epoch."""
        return follower.broker_epoch

    def proposal_epoch(self, epoch: int) -> int:
        """AlterPartition v3 NewIsrWithEpochs: the broker epoch as the leader knows it."""
        return epoch


class Kip966(Kip903):
    """KIP-966 part 1 (Kafka 4.0/4.1): strict min ISR, Eligible Leader Replicas and unclean
    shutdown detection close the Last Replica Standing loss."""

    name = "kip-966"
    known_losses = Kip903.known_losses - {
        LAST_REPLICA_STANDING.name,
        FAST_BOUNCE_AFTER_LOSS.name,
        DEPOSED_LEADER_HW.name,
    }

    def hw_blocked(self, leader: Replica, min_isr: int) -> bool:
        """Strict min ISR: Partition.maybeIncrementLeaderHW does nothing while isUnderMinIsr."""
        return len(leader.isr) < min_isr

    def unclean_shutdown(self, kind: str, detection: str = "page-cache", registered: bool = True) -> bool:
        """KIP-966's unclean shutdown: one that may have lost acknowledged data (a power loss or a
        lost disk; a process crash keeps the page cache), or, detected as Apache Kafka does by its
        clean shutdown file (``clean-shutdown-file``), every shutdown but a clean one of a broker
        registered since its start (the file holds the broker epoch it has, -1 before that)."""
        if detection == "clean-shutdown-file":
            return kind != "clean" or not registered
        return kind in ("power", "lost disk")

    def last_known_leader(self, leader: int) -> int:
        """KIP-966: the leader a partition loses is remembered for the last-resort election."""
        return leader

    def in_sync(self, leader: Replica, leo: int) -> bool:
        """Partition.isFollowerInSync (Kafka 4.x): the follower's LEO reached the HW and the leader
        epoch's start. The HW form of kip-320 would block the ISR for good under strict min ISR:
        below min ISR the HW cannot reach the epoch start."""
        return leo >= leader.hw and leo >= leader.epoch_start_offset

    def isr_after_fence(self, isr: tuple, r: int) -> tuple:
        """KIP-966: the ISR may become empty; the ELR keeps who may still lead."""
        return tuple(i for i in isr if i != r)

    def elr_after(self, c, isr: tuple, min_isr: int, unclean: tuple = ()) -> tuple:
        """PartitionChangeBuilder.maybePopulateTargetElr: empty once the ISR reaches min ISR, else
        the members the ISR lost join the ELR, minus those back from an unclean shutdown."""
        if len(isr) >= min_isr:
            return ()
        return tuple(sorted((set(c.elr) | set(c.isr)) - set(isr) - set(unclean)))

    def elect_clean(self, c) -> tuple[int, tuple] | None:
        """KIP-966 election order: ISR, then an active ELR member, then (ISR and ELR empty) the
        last known leader if active (PartitionChangeBuilder.canElectLastKnownLeader)."""
        choice = super().elect_clean(c)
        if choice is not None:
            return choice
        for r in c.elr:
            if active(c, r):
                return r, tuple(sorted(c.isr + (r,)))
        lkl = c.last_known_leader
        if not c.isr and not c.elr and lkl >= 0 and active(c, lkl):
            return lkl, (lkl,)
        return None


PROTOCOLS: dict[str, Protocol] = {p.name: p for p in (Protocol(), Kip101(), Kip279(), Kip320(), Kip903(), Kip966())}
