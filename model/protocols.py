"""Protocol variants: one class per step in Kafka's lineage, overriding only what changed.

The base class is pre-0.11 Kafka (truncate to the high watermark on becoming follower); each
subclass replaces the methods its KIP changed, so a new variant (e.g. KIP-966) is a new subclass.
"""
from __future__ import annotations

from .alphabet import NONE
from .state import Replica, end_offset_for, end_offset_for_kip101, latest_epoch, truncate_to, updated


class Protocol:
    """Kafka < 0.11: followers truncate to their own HW; fetches are not fenced."""

    name = "hw-truncation"
    uses_epoch_queries = False
    # ReplicaManager.makeFollowers before KIP-101 changed partition state only "when the leader is
    # available": a LeaderAndIsr naming no leader (-1) left the follower as it was
    follows_leaderless = False

    def make_follower(self, rep: Replica) -> Replica:
        """ReplicaManager.makeFollowers before KIP-101: truncate the log to the local HW."""
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

    def may_expand_isr(self, leader: Replica) -> bool:
        """Partition.maybeExpandIsr before KIP-320: catching up to the HW is enough."""
        return True

    def consume_error(self, leader: Replica) -> str | None:
        """Before KIP-207/KIP-320 a new leader serves its (possibly lagging) HW at once."""
        return None


class Kip101(Protocol):
    """KIP-101 (Kafka 0.11): truncate by OffsetsForLeaderEpoch on the follower's latest epoch."""

    name = "kip-101"
    uses_epoch_queries = True
    follows_leaderless = True

    def make_follower(self, rep: Replica) -> Replica:
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

    def make_follower(self, rep: Replica) -> Replica:
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

    def may_expand_isr(self, leader: Replica) -> bool:
        """KIP-320: add followers only once the HW reached the current leader epoch's start."""
        return leader.hw >= leader.epoch_start_offset

    def consume_error(self, leader: Replica) -> str | None:
        """KIP-207 rule under KIP-320: a leader whose HW is below its epoch start answers
        OFFSET_NOT_AVAILABLE rather than expose a stale HW."""
        return "OFFSET_NOT_AVAILABLE" if leader.hw < leader.epoch_start_offset else None


PROTOCOLS: dict[str, Protocol] = {p.name: p for p in (Protocol(), Kip101(), Kip279(), Kip320())}
