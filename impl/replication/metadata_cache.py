"""MetadataCache: a broker's copy of the brokers' registrations (Kafka's KRaftMetadataCache).

A KRaft broker learns every registration, fence and unfencing from the metadata log, later than the
controller made it; a leader reads its copy to decide whether a follower may join the ISR
(``Partition.is_replica_isr_eligible``). Here the controller tells the brokers (UpdateMetadata) or,
in step mode, ``update_metadata_cache`` hands a broker the controller's registrations.
"""

from __future__ import annotations

from typing import Sequence


class MetadataCache:
    """Per broker id the broker epoch of its registration, -1 while it is fenced; empty until the
    first image (then no broker is known, so none is eligible)."""

    __slots__ = ("broker_epochs", "metadata_version")

    def __init__(self) -> None:
        self.broker_epochs: tuple[int, ...] = ()
        self.metadata_version = -1

    def set_image(self, alive_broker_epochs: Sequence[int], metadata_version: int = -1) -> bool:
        """KRaftMetadataCache.setImage: take the registrations (per broker id its broker epoch, -1
        fenced) unless ``metadata_version`` is older than the one held; True if the cache changed."""
        if 0 <= metadata_version < self.metadata_version:
            return False
        self.metadata_version = max(metadata_version, self.metadata_version)
        epochs = tuple(alive_broker_epochs)
        changed = epochs != self.broker_epochs
        self.broker_epochs = epochs
        return changed

    def get_alive_broker_epoch(self, broker: int) -> int | None:
        """The broker epoch of ``broker``'s registration, None if it is fenced or unknown."""
        epochs = self.broker_epochs
        return epochs[broker] if 0 <= broker < len(epochs) and epochs[broker] >= 0 else None

    def is_broker_fenced(self, broker: int) -> bool:
        """Whether ``broker`` is registered and fenced (an unknown broker is not)."""
        epochs = self.broker_epochs
        return 0 <= broker < len(epochs) and epochs[broker] < 0
