"""The protocol variants of ``model/protocols.py`` over encoded states: one class per variant,
overriding only what its KIP changed, method for method. A variant without a class here is
refused by ``rules_for`` (a new variant of the model needs its override here too)."""

from __future__ import annotations

import z3

from .state import ERROR
from .terms import Next, count, pick, zmin


class UnsupportedVariant(ValueError):
    """The encoding has no rules for this protocol variant."""


class Protocol:
    """Kafka < 0.11: followers truncate to their own HW; fetches are not fenced."""

    name = "hw-truncation"
    uses_epoch_queries = False
    follows_leaderless = False

    def new_fetcher(self, nx: Next, r: int) -> None:
        """The fetcher a new follower starts (addFetcherForPartitions); before KIP-101 makeFollowers
        first truncates the log to the local HW."""
        nx.truncate_to(r, nx.rep(r, "hw"))
        nx.set_rep(r, trunc=z3.IntVal(-1))

    def answer_epoch_query(self, nx: Next, p: str, epoch) -> tuple:
        """No OffsetsForLeaderEpoch before KIP-101 (never asked: no query is ever sent)."""
        return z3.IntVal(-1), z3.IntVal(-1)

    def handle_epoch_answer(self, nx: Next, r: int, epoch, end) -> None:
        """No OffsetsForLeaderEpoch before KIP-101 (no answer is ever received)."""

    def check_fetch(self, nx: Next, d: int, req: dict):
        """Before KIP-320 a leader serves any Fetch: None, no validation."""
        return None

    def in_sync(self, nx: Next, r: int, leo):
        """Partition.maybeExpandIsr before KIP-320: a follower whose LEO reached the HW is in sync."""
        return leo >= nx.rep(r, "hw")

    def consume_error(self, nx: Next, r: int):
        """When a leader refuses a consume (OFFSET_NOT_AVAILABLE, KIP-207), or None: never."""
        return None

    # -- broker epochs (KIP-903) and the ELR (KIP-966): what the older variants do ----------------------
    def next_broker_epoch(self, epoch):
        """Broker epochs are not compared before KIP-903: they stay at 0."""
        return epoch

    def fetch_broker_epoch(self, nx: Next, r: int):
        """A Fetch before KIP-903 carries no broker epoch: -1."""
        return z3.IntVal(-1)

    def proposal_epoch(self, epoch):
        """An AlterPartition before KIP-903 names no broker epochs: -1 for every member."""
        return z3.IntVal(-1)

    def hw_blocked(self, nx: Next, r: int):
        """Before KIP-966 min.insync.replicas never blocks the HW."""
        return z3.BoolVal(False)

    def unclean_shutdown(self, kind: str, detection: str = "page-cache", registered: bool = True) -> bool:
        """Before KIP-966 the controller is not told how a broker shut down."""
        return False

    def last_known_leader(self, r: int):
        """Before KIP-966 the controller keeps no last known leader."""
        return z3.IntVal(-1)

    def isr_after_fence(self, nx: Next, r: int) -> list:
        """KRaft before KIP-966: a fenced broker leaves the controller's ISR, but the last member stays."""
        n = nx.b.replicas
        stays = count([nx[f"c.isr{j}"] for j in range(n)]) <= 1
        return [nx[f"c.isr{j}"] if j != r else z3.And(nx[f"c.isr{j}"], stays) for j in range(n)]

    def elr_after(self, nx: Next, isr: list, unclean: tuple = ()) -> list:
        """No Eligible Leader Replicas before KIP-966."""
        return [z3.BoolVal(False)] * nx.b.replicas

    def elect_clean(self, nx: Next) -> tuple:
        """Clean election: (the first active member of the controller's ISR or -1, the new ISR)."""
        n = nx.b.replicas
        return _first(nx, [nx[f"c.isr{j}"] for j in range(n)]), [nx[f"c.isr{j}"] for j in range(n)]


def _first(nx: Next, members: list):
    """The first active broker of ``members`` (Bools by id), -1 if none."""
    out = z3.IntVal(-1)
    for j in range(len(members) - 1, -1, -1):
        out = z3.If(z3.And(members[j], active(nx, j)), j, out)
    return out


def active(nx: Next, j: int):
    """Broker j may lead and join an ISR (the model's ``is_active``): not fenced and, with
    kraft_controlled_shutdown, not in controlled shutdown."""
    fenced = nx[f"c.fenced{j}"]
    return z3.Not(z3.Or(fenced, nx[f"c.ics{j}"]) if nx.b.controlled_shutdown else fenced)


class Kip101(Protocol):
    """KIP-101: truncate by OffsetsForLeaderEpoch on the follower's latest epoch."""

    name = "kip-101"
    uses_epoch_queries = True
    follows_leaderless = True

    def new_fetcher(self, nx: Next, r: int) -> None:
        nx.set_rep(r, trunc=nx.latest_epoch(f"r{r}."))

    def answer_epoch_query(self, nx: Next, p: str, epoch) -> tuple:
        end = nx.end_offset_for_kip101(p, epoch)
        return z3.If(end >= 0, epoch, -1), end

    def handle_epoch_answer(self, nx: Next, r: int, epoch, end) -> None:
        nx.truncate_to(r, z3.If(end < 0, nx.rep(r, "hw"), end))
        nx.set_rep(r, trunc=z3.IntVal(-1))


class Kip279(Kip101):
    """KIP-279: the answer names its epoch; the follower walks back until they agree."""

    name = "kip-279"

    def answer_epoch_query(self, nx: Next, p: str, epoch) -> tuple:
        return nx.end_offset_for(p, epoch)

    def handle_epoch_answer(self, nx: Next, r: int, epoch, end) -> None:
        own_epoch, own_end = nx.end_offset_for(f"r{r}.", epoch)

        def agree(x: Next) -> None:
            x.truncate_to(r, zmin(end, own_end))
            x.set_rep(r, trunc=z3.IntVal(-1))

        def retreat(x: Next) -> None:
            x.truncate_to(r, own_end)
            x.set_rep(r, trunc=own_epoch)

        def restart(x: Next) -> None:
            x.truncate_to(r, z3.IntVal(0))
            x.set_rep(r, trunc=z3.IntVal(-1))

        def undefined(x: Next) -> None:
            x.truncate_to(r, x.rep(r, "hw"))
            x.set_rep(r, trunc=z3.IntVal(-1))

        nx.branch(
            epoch < 0,
            undefined,
            lambda x: x.branch(own_epoch == epoch, agree, lambda y: y.branch(own_epoch != -1, retreat, restart)),
        )


class Kip320(Kip279):
    """KIP-320: fetches carry epochs; the leader fences them and names divergence."""

    name = "kip-320"
    uses_epoch_queries = False

    def new_fetcher(self, nx: Next, r: int) -> None:
        nx.set_rep(r, trunc=z3.IntVal(-1))

    def check_fetch(self, nx: Next, d: int, req: dict):
        """(refused?, error code, diverging epoch, end offset): fencing by current leader epoch,
        then the diverging epoch of lastFetchedEpoch."""
        le = nx.rep(d, "lepoch")
        last = req["lfe"]
        epoch, end = nx.end_offset_for(f"r{d}.", last)
        diverging = z3.And(last >= 0, z3.Or(epoch != last, end < req["off"]))
        refused = z3.Or(req["lepoch"] != le, diverging)
        error = z3.If(
            req["lepoch"] < le,
            ERROR["FENCED_LEADER_EPOCH"],
            z3.If(req["lepoch"] > le, ERROR["UNKNOWN_LEADER_EPOCH"], ERROR["NONE"]),
        )
        return refused, error, epoch, end

    def in_sync(self, nx: Next, r: int, leo):
        """KIP-320: add followers only once the HW reached the current leader epoch's start."""
        return z3.And(leo >= nx.rep(r, "hw"), nx.rep(r, "hw") >= nx.rep(r, "eso"))

    def consume_error(self, nx: Next, r: int):
        return nx.rep(r, "hw") < nx.rep(r, "eso")


class Kip903(Kip320):
    """KIP-903: registrations get broker epochs; Fetch and AlterPartition carry them."""

    name = "kip-903"

    def next_broker_epoch(self, epoch):
        """BrokerRegistrationRequest: every registration gets a new, larger broker epoch."""
        return epoch + 1

    def fetch_broker_epoch(self, nx: Next, r: int):
        """Fetch v15 ReplicaState.ReplicaEpoch: the follower's current broker epoch."""
        return nx.rep(r, "bepoch")

    def proposal_epoch(self, epoch):
        """AlterPartition v3 NewIsrWithEpochs: the broker epoch as the leader knows it."""
        return epoch


class Kip966(Kip903):
    """KIP-966 part 1: strict min ISR, Eligible Leader Replicas, unclean shutdown detection and
    the last known leader."""

    name = "kip-966"

    def hw_blocked(self, nx: Next, r: int):
        """Strict min ISR: Partition.maybeIncrementLeaderHW does nothing while isUnderMinIsr."""
        return nx.isr_count(r) < nx.cfg.min_insync_replicas

    def unclean_shutdown(self, kind: str, detection: str = "page-cache", registered: bool = True) -> bool:
        """A power loss or a lost disk may have lost acknowledged data (a process crash keeps the page
        cache); Apache Kafka's clean shutdown file (``clean-shutdown-file``) calls every crash one, and
        a clean shutdown before the broker registered too (it holds broker epoch -1 then)."""
        if detection == "clean-shutdown-file":
            return kind != "clean" or not registered
        return kind in ("power", "lost disk")

    def last_known_leader(self, r: int):
        """The leader a partition loses is remembered for the last-resort election."""
        return z3.IntVal(r)

    def in_sync(self, nx: Next, r: int, leo):
        """Partition.isFollowerInSync (Kafka 4.x): the follower's LEO reached the HW and the epoch start."""
        return z3.And(leo >= nx.rep(r, "hw"), leo >= nx.rep(r, "eso"))

    def isr_after_fence(self, nx: Next, r: int) -> list:
        """The ISR may become empty; the ELR keeps who may still lead."""
        return [nx[f"c.isr{j}"] if j != r else z3.BoolVal(False) for j in range(nx.b.replicas)]

    def elr_after(self, nx: Next, isr: list, unclean: tuple = ()) -> list:
        """Empty once ``isr`` reaches min ISR, else the members the ISR lost join the ELR, minus
        those back from an unclean shutdown."""
        below = count(isr) < nx.cfg.min_insync_replicas
        return [
            z3.BoolVal(False)
            if j in unclean
            else z3.And(below, z3.Or(nx[f"c.elr{j}"], nx[f"c.isr{j}"]), z3.Not(isr[j]))
            for j in range(len(isr))
        ]

    def elect_clean(self, nx: Next) -> tuple:
        """ISR, then an active ELR member (joining the ISR), then the last known leader if the
        ISR and ELR are empty and it is active."""
        n = nx.b.replicas
        isr = [nx[f"c.isr{j}"] for j in range(n)]
        elr = [nx[f"c.elr{j}"] for j in range(n)]
        from_isr, from_elr = _first(nx, isr), _first(nx, elr)
        lkl = nx["c.lkl"]
        last = z3.And(
            z3.Not(z3.Or(isr + elr)),
            lkl >= 0,
            pick(lkl, [active(nx, j) for j in range(n)], z3.BoolVal(False)),
        )
        leader = z3.If(from_isr != -1, from_isr, z3.If(from_elr != -1, from_elr, z3.If(last, lkl, -1)))
        return leader, [
            z3.If(from_isr != -1, isr[j], z3.If(from_elr != -1, z3.Or(isr[j], from_elr == j), lkl == j))
            for j in range(n)
        ]


RULES: dict[str, Protocol] = {p.name: p for p in (Protocol(), Kip101(), Kip279(), Kip320(), Kip903(), Kip966())}


def rules_for(protocol: str) -> Protocol:
    if protocol not in RULES:
        raise UnsupportedVariant(f"protocol {protocol!r} has no SMT encoding (encoded: {', '.join(RULES)})")
    return RULES[protocol]
