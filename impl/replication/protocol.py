"""The protocol variants of the replication lineage, as the switches the broker code consults."""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass


@dataclass(frozen=True)
class ProtocolVariant:
    """What one Kafka generation does on leader change, fetch and ISR expansion."""

    name: str
    _: KW_ONLY  # every switch by its name
    truncate_to_hw: bool  # pre-0.11: a new follower truncates to its own HW
    offsets_for_leader_epoch: bool  # KIP-101/KIP-279: a new follower asks the leader first
    walk_back_epochs: bool  # KIP-279: repeat OffsetsForLeaderEpoch until the epochs agree
    fetch_epochs: bool  # KIP-320: fetches carry current and last fetched epoch
    hw_reached_epoch_to_expand: bool  # KIP-320: expand the ISR only once HW reached the epoch start
    # 0.11+: a LeaderAndIsr naming no leader still makes a follower; 0.8-0.10's makeFollowers acted
    # only "when the leader is available" and left the partition as it was
    leaderless_makes_follower: bool = True
    broker_epochs: bool = False  # KIP-903: Fetch and AlterPartition carry broker epochs
    eligible_leader_replicas: bool = False  # KIP-966: strict min ISR, ELR, unclean shutdown detection

    @property
    def follower_reached_epoch_to_expand(self) -> bool:
        """Kafka 4.x Partition.isFollowerInSync: the follower's LEO (not the HW) must reach the
        epoch start; with KIP-966's strict min ISR the HW form would block the ISR below min ISR."""
        return self.eligible_leader_replicas

    @property
    def registration_waits_for_session(self) -> bool:
        """KRaft (and KIP-380 before it): a restarted broker registers only once the controller
        ended its previous process's session; ``ClusterControlManager.registerBroker`` refuses the
        new incarnation with DUPLICATE_BROKER_REGISTRATION until then. Here from KIP-903 on."""
        return self.broker_epochs

    @property
    def start_before_registration(self) -> bool:
        """KRaft's restart: a broker starts on the replayed metadata log (the controller's current
        partition state, applied), serves nothing and fetches with broker epoch -1 until the
        controller accepted its registration (BrokerServer.startup). Here from KIP-903 on."""
        return self.broker_epochs

    @property
    def committed_partition_state(self) -> bool:
        """KRaft's partition state: ``Partition.makeLeader`` applies a change of the same partition
        epoch too and puts a ``CommittedPartitionState``, forgetting the leader's ISR proposal (its
        answer is then ignored); ``DefaultAlterPartitionManager`` holds one AlterPartition per
        partition until it is answered and refuses another (OPERATION_NOT_ATTEMPTED). From KIP-903 on."""
        return self.broker_epochs

    @property
    def fetch_version(self) -> int:
        """Fetch v2 (v0 + max_batches) before KIP-320, v3 (v1 + max_batches) from it, v4 (v3 + the
        follower's broker epoch) from KIP-903."""
        return 4 if self.broker_epochs else 3 if self.fetch_epochs else 2

    @property
    def alter_partition_version(self) -> int:
        """AlterPartition v1 names each proposed member's broker epoch (KIP-903)."""
        return 1 if self.broker_epochs else 0

    @property
    def registration_version(self) -> int:
        """BrokerRegistration v1 says the previous broker epoch of a clean shutdown (KIP-966)."""
        return 1 if self.eligible_leader_replicas else 0

    @property
    def offsets_for_leader_epoch_version(self) -> int:
        return 2 if self.fetch_epochs else 1 if self.walk_back_epochs else 0


VARIANTS: dict[str, ProtocolVariant] = {
    v.name: v
    for v in (
        ProtocolVariant(
            "hw-truncation",
            truncate_to_hw=True,
            offsets_for_leader_epoch=False,
            walk_back_epochs=False,
            fetch_epochs=False,
            hw_reached_epoch_to_expand=False,
            leaderless_makes_follower=False,
        ),
        ProtocolVariant(
            "kip-101",
            truncate_to_hw=False,
            offsets_for_leader_epoch=True,
            walk_back_epochs=False,
            fetch_epochs=False,
            hw_reached_epoch_to_expand=False,
        ),
        ProtocolVariant(
            "kip-279",
            truncate_to_hw=False,
            offsets_for_leader_epoch=True,
            walk_back_epochs=True,
            fetch_epochs=False,
            hw_reached_epoch_to_expand=False,
        ),
        ProtocolVariant(
            "kip-320",
            truncate_to_hw=False,
            offsets_for_leader_epoch=False,
            walk_back_epochs=True,
            fetch_epochs=True,
            hw_reached_epoch_to_expand=True,
        ),
        ProtocolVariant(
            "kip-903",
            truncate_to_hw=False,
            offsets_for_leader_epoch=False,
            walk_back_epochs=True,
            fetch_epochs=True,
            hw_reached_epoch_to_expand=True,
            broker_epochs=True,
        ),
        ProtocolVariant(
            "kip-966",
            truncate_to_hw=False,
            offsets_for_leader_epoch=False,
            walk_back_epochs=True,
            fetch_epochs=True,
            hw_reached_epoch_to_expand=False,
            broker_epochs=True,
            eligible_leader_replicas=True,
        ),
    )
}
