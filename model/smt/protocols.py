"""The protocol variants of ``model/protocols.py`` over encoded states: one class per variant,
overriding only what its KIP changed, method for method. A variant without a class here is
refused by ``rules_for`` (a new variant of the model needs its override here too)."""
from __future__ import annotations

import z3

from .state import ERROR
from .terms import Next, zmin


class UnsupportedVariant(ValueError):
    """The encoding has no rules for this protocol variant."""


class Protocol:
    """Kafka < 0.11: followers truncate to their own HW; fetches are not fenced."""

    name = "hw-truncation"
    uses_epoch_queries = False
    follows_leaderless = False

    def make_follower(self, nx: Next, r: int) -> None:
        """ReplicaManager.makeFollowers before KIP-101: truncate the log to the local HW."""
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

    def may_expand_isr(self, nx: Next, r: int):
        return z3.BoolVal(True)

    def consume_error(self, nx: Next, r: int):
        """When a leader refuses a consume (OFFSET_NOT_AVAILABLE, KIP-207), or None: never."""
        return None


class Kip101(Protocol):
    """KIP-101: truncate by OffsetsForLeaderEpoch on the follower's latest epoch."""

    name = "kip-101"
    uses_epoch_queries = True
    follows_leaderless = True

    def make_follower(self, nx: Next, r: int) -> None:
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

        nx.branch(epoch < 0, undefined, lambda x: x.branch(
            own_epoch == epoch, agree, lambda y: y.branch(own_epoch != -1, retreat, restart)))


class Kip320(Kip279):
    """KIP-320: fetches carry epochs; the leader fences them and names divergence."""

    name = "kip-320"
    uses_epoch_queries = False

    def make_follower(self, nx: Next, r: int) -> None:
        nx.set_rep(r, trunc=z3.IntVal(-1))

    def check_fetch(self, nx: Next, d: int, req: dict):
        """(refused?, error code, diverging epoch, end offset): fencing by current leader epoch,
        then the diverging epoch of lastFetchedEpoch."""
        le = nx.rep(d, "lepoch")
        last = req["lfe"]
        epoch, end = nx.end_offset_for(f"r{d}.", last)
        diverging = z3.And(last >= 0, z3.Or(epoch != last, end < req["off"]))
        refused = z3.Or(req["lepoch"] != le, diverging)
        error = z3.If(req["lepoch"] < le, ERROR["FENCED_LEADER_EPOCH"],
                      z3.If(req["lepoch"] > le, ERROR["UNKNOWN_LEADER_EPOCH"], ERROR["NONE"]))
        return refused, error, epoch, end

    def may_expand_isr(self, nx: Next, r: int):
        return nx.rep(r, "hw") >= nx.rep(r, "eso")

    def consume_error(self, nx: Next, r: int):
        return nx.rep(r, "hw") < nx.rep(r, "eso")


RULES: dict[str, Protocol] = {p.name: p for p in (Protocol(), Kip101(), Kip279(), Kip320())}


def rules_for(protocol: str) -> Protocol:
    if protocol not in RULES:
        raise UnsupportedVariant(f"protocol {protocol!r} has no SMT encoding (encoded: {', '.join(RULES)})")
    return RULES[protocol]
