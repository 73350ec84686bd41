"""Fault budgets: the faults within which Kafka promises each property, from its docs, KIPs or code.

A budget is judged on the fault ledger of a run (``isrcheck.model.budget.FaultLedger``, read by
duck typing: ``losers``, ``stale_reads``, ``known``), the run's config and the variant's known
losses. ``Budget.exceeded`` names what took the run outside it, or returns None. A property that
fails outside its budget is reported as such: Kafka does not promise it there, so it is no bug of
the protocol, and it is never passed over in silence either.
"""

from __future__ import annotations

from dataclasses import dataclass

ANY = "any"  # the property holds under every fault of the alphabet
NONE_LOST = "none"  # no broker may lose data
MIN_ISR = "min-isr"  # at most min.insync.replicas - 1 brokers may lose data


@dataclass(frozen=True)
class Budget:
    """``losers``: how many distinct brokers may have an unclean shutdown that loses data (a power
    loss or a lost disk): ``any``, ``none`` or ``min-isr`` (at most min.insync.replicas - 1).
    ``clean_elections``: unclean leader election must be disabled. ``fenced_reads``: consumers read
    only the leader of the controller's current leader epoch. ``known_losses``: the names (of
    ``isrcheck.model.losses.KNOWN_LOSSES``) of the losses the run must not enter where the variant
    suffers them by design (``Protocol.known_losses``). ``statement`` says it in words, ``source``
    where Kafka says so."""

    statement: str
    source: str
    losers: str = ANY
    clean_elections: bool = False
    fenced_reads: bool = False
    known_losses: tuple[str, ...] = ()

    def exceeded(self, ledger, config, known_losses=frozenset()) -> str | None:
        """What takes a run with ``ledger`` and ``config`` outside this budget, or None; the
        variant suffers ``known_losses`` (names of ``losses.KNOWN_LOSSES``) by design."""
        lost = ledger.losers
        if self.losers == NONE_LOST and lost:
            return f"{_brokers(lost)} lost data (power loss or lost disk); the budget allows none"
        if self.losers == MIN_ISR and len(lost) > config.min_insync_replicas - 1:
            return (
                f"{_brokers(lost)} lost data (power loss or lost disk); the budget allows at most "
                f"min.insync.replicas - 1 = {config.min_insync_replicas - 1}"
            )
        if self.clean_elections and config.unclean_leader_election_enable:
            return "unclean leader election is enabled"
        if self.fenced_reads and ledger.stale_reads:
            return "a consumer read a deposed leader, which Kafka's consumer is fenced from (KIP-320)"
        entered = [name for name in ledger.known if name in known_losses and name in self.known_losses]
        if entered:
            return f"the run entered {', '.join(entered)}, a loss this variant suffers by design"
        return None


def _brokers(ids: tuple) -> str:
    return ("broker " if len(ids) == 1 else "brokers ") + ", ".join(map(str, ids))


EVERY_FAULT = Budget(
    "none: it holds under every fault of the alphabet, unclean election included",
    "Kafka's controller and ReplicaManager keep it whatever fails",
)

QUORUM = Budget(
    "every fault of the alphabet, unclean election included; before kip-903, the run enters no "
    "bounced-leader-proposal (a leader restarted faster than the controller noticed never hears "
    "that its previous process's ISR expansion was committed: nothing tells it, and its own view "
    "names fewer members than the controller's)",
    "Vanlightly/kafka-tlaplus (v3.5 replication quorum); KIP-380 (bounced broker detection)",
    known_losses=("bounced-leader-proposal",),
)

DURABILITY = Budget(
    "unclean leader election disabled; at most min.insync.replicas - 1 brokers lose data they had "
    "written (a power loss before write-back, or a lost disk); the run enters none of the variant's "
    "known losses: an ISR left with only members that lost data (Last Replica Standing, closed by "
    "KIP-966), a broker that lost data back by a fast restart the controller did not notice (closed "
    "by KIP-966's unclean shutdown detection), an ISR expansion counting a follower's LEO from before "
    "it lost data (KAFKA-14139, closed by KIP-903), a leader restarted faster than the controller "
    "noticed whose previous process's ISR expansion is committed behind its new HW (closed by KIP-380 "
    "and KRaft's registration; here by kip-903), and from kip-903 on such an expansion counting a Fetch "
    "its earlier incarnation sent before it registered (broker epoch -1 passes KIP-903's checks; "
    "unregistered-stale-isr-expansion, open in Kafka 4.x)",
    "Kafka documentation (Replication: a committed message is not lost while one in-sync replica "
    "survives; min.insync.replicas); KIP-966 (MinISR-1 tolerance to data loss unclean shutdown "
    "events; Last Replica Standing); KIP-903 (KAFKA-14139)",
    losers=MIN_ISR,
    clean_elections=True,
    known_losses=(
        "last-replica-standing",
        "fast-bounce-after-loss",
        "stale-isr-expansion",
        "bounced-leader-proposal",
        "unregistered-stale-isr-expansion",
    ),
)

CONVERGENCE = Budget(
    "unclean leader election disabled; no broker that lost data back in the ISR by a fast restart "
    "the controller did not notice (closed by KIP-966) or by an ISR expansion counting its LEO from "
    "before the loss (KAFKA-14139, closed by KIP-903); no deposed leader advancing its HW over its own "
    "stale ISR view or over what a Last Replica Standing lost (closed by KIP-966); no bounced leader's "
    "orphan ISR expansion committed behind its new HW (closed by kip-903 here); from kip-903 on, no "
    "broker that lost data restarted before the controller ended its previous session (KRaft keeps it "
    "in the ISR without that data until its registration: restart-within-session-after-loss), and "
    "no ISR expansion counting a Fetch sent before a registration from before a loss "
    "(unregistered-stale-isr-expansion); any "
    "number of brokers may lose unflushed "
    "data: KIP-101 and KIP-279 promise that the replicas converge on the leader's log after "
    "simultaneous power losses, even where committed writes are lost",
    "KIP-101 (scenario 2: replica divergence after both brokers lose power; it fixes divergence, "
    "not the loss of multiple simultaneous failures); KIP-279 (fast leader changes); KIP-966 and "
    "KIP-903 (KAFKA-14139)",
    clean_elections=True,
    known_losses=(
        "fast-bounce-after-loss",
        "stale-isr-expansion",
        "deposed-leader-hw",
        "bounced-leader-proposal",
        "restart-within-session-after-loss",
        "unregistered-stale-isr-expansion",
    ),
)

READS = Budget(
    DURABILITY.statement + "; consumers read only the leader of the controller's current leader "
    "epoch (a deposed leader serves its stale HW and log; Kafka's consumer sends its leader epoch "
    "and is fenced there, KIP-320); from kip-903 on, no broker that lost data restarted before the "
    "controller ended its previous session: until its registration it is the controller's leader or "
    "ELR member without that data (restart-within-session-after-loss; it serves no read then)",
    DURABILITY.source + "; KIP-320 (consumer-side leader epoch validation); Apache Kafka 4.x "
    "BrokerServer.startup and ClusterControlManager.registerBroker",
    losers=MIN_ISR,
    clean_elections=True,
    fenced_reads=True,
    known_losses=DURABILITY.known_losses + ("restart-within-session-after-loss",),
)

DURABLE_LOGS = Budget(
    "no broker loses data it had written (no power loss before write-back, no lost disk): the "
    "leader learns that a member of its ISR lost data only from the controller's next LeaderAndIsr "
    "(KIP-966 removes the member when it registers again), and until then its own ISR view names a "
    "replica that lacks the committed prefix; before KIP-966, no deposed leader whose HW the ISR "
    "does not hold (the known loss deposed-leader-hw: re-elected, it keeps that HW over the new ISR); "
    "before kip-903, no bounced leader's orphan ISR expansion committed behind its new HW (the known "
    "loss bounced-leader-proposal)",
    "hachikuji/kafka-specification (its brokers keep their logs across restarts); KIP-966 "
    "(ReplicationControlManager.handleBrokerUncleanShutdown)",
    losers=NONE_LOST,
    known_losses=("deposed-leader-hw", "bounced-leader-proposal"),
)
