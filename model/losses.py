"""The losses of acknowledged data that Kafka itself suffers within the fault budget, named once.

Each protocol variant lists the ones it has (``Protocol.known_losses``); the fault budget
(``budget.FaultBudget``), the explorer's ``exclude_known_losses`` and its SMT encoding leave
them out by these names.
"""
from __future__ import annotations

from typing import NamedTuple


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
    "KIP-966 (Last Replica Standing)", "kip-966")
FAST_BOUNCE_AFTER_LOSS = KnownLoss(
    "fast-bounce-after-loss",
    "a replica that lost unflushed data restarts before the controller noticed it went away and "
    "stays in the ISR without that data",
    "KIP-966 (unclean shutdown detection)", "kip-966")
STALE_ISR_EXPANSION = KnownLoss(
    "stale-isr-expansion",
    "an ISR expansion counts a follower's log end offset from before it lost data and restarted",
    "KIP-903, KAFKA-14139 (broker epochs in Fetch and AlterPartition)", "kip-903")

KNOWN_LOSSES: dict[str, KnownLoss] = {loss.name: loss for loss in (
    LAST_REPLICA_STANDING, FAST_BOUNCE_AFTER_LOSS, STALE_ISR_EXPANSION)}
