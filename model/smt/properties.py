"""Every property of ``specs/properties.py`` as a z3 formula over an encoded state (True where the
property holds), each following the predicate of the same id."""

from __future__ import annotations

from typing import Callable

import z3

from .state import Bounds
from .terms import pick


def _entry_equal(s: dict, a: int, c: int, k: int):
    return z3.And(*(s[f"r{a}.{f}{k}"] == s[f"r{c}.{f}{k}"] for f in ("e", "rec", "base")))


def _same_prefix(s: dict, b: Bounds, a: int, c: int, upto):
    return z3.And(
        s[f"r{a}.len"] >= upto,
        s[f"r{c}.len"] >= upto,
        *(z3.Implies(k < upto, _entry_equal(s, a, c, k)) for k in range(b.log)),
    )


def _presumes(s: dict, i: int):  # a broker still starting (unregistered) serves as no leader
    return z3.And(s[f"r{i}.alive"], s[f"r{i}.leader"] == i, z3.Not(s[f"r{i}.unreg"]))


def _leaders_complete(s: dict, b: Bounds, member: Callable[[int, int], object]):
    # a member down with a pending data loss is judged once it restarts (specs: _leaders_complete)
    return z3.And(
        *(
            z3.Implies(
                z3.And(_presumes(s, i), member(i, m), z3.Or(s[f"r{m}.alive"], z3.Not(s[f"r{m}.plost"]))),
                _same_prefix(s, b, i, m, s[f"r{i}.hw"]),
            )
            for i in range(b.replicas)
            for m in range(b.replicas)
        )
    )


def leader_in_isr(s: dict, b: Bounds):
    return z3.Or(s["c.leader"] < 0, z3.Or(*(z3.And(s["c.leader"] == j, s[f"c.isr{j}"]) for j in range(b.replicas))))


def weak_isr(s: dict, b: Bounds):
    return _leaders_complete(s, b, lambda i, m: s[f"r{i}.isr{m}"])


def strong_isr(s: dict, b: Bounds):
    return _leaders_complete(s, b, lambda i, m: s[f"c.isr{m}"])


def log_matching(s: dict, b: Bounds):
    holds = []
    for x in range(b.replicas):
        for y in range(x + 1, b.replicas):
            n = z3.If(s[f"r{x}.len"] <= s[f"r{y}.len"], s[f"r{x}.len"], s[f"r{y}.len"])
            differs = [z3.And(k < n, z3.Not(_entry_equal(s, x, y, k))) for k in range(b.log)]
            for k in range(b.log):
                same_epoch = z3.And(k < n, s[f"r{x}.e{k}"] == s[f"r{y}.e{k}"])
                holds.append(z3.Not(z3.And(same_epoch, z3.Or(*differs[: k + 1]))))
    return z3.And(*holds)


def high_watermark_bound(s: dict, b: Bounds):
    return z3.And(*(s[f"r{r}.hw"] <= s[f"r{r}.len"] for r in range(b.replicas)))


def _established(s: dict, b: Bounds, i: int):
    return z3.And(
        s["c.leader"] == i,
        s[f"r{i}.alive"],
        s[f"r{i}.leader"] == i,
        s[f"r{i}.lepoch"] == s["c.lepoch"],
        z3.Not(s[f"r{i}.unreg"]),
    )


def replication_quorum_superset(s: dict, b: Bounds):
    n = b.replicas
    return z3.And(
        *(
            z3.Implies(
                _established(s, b, i),
                z3.And(
                    *(
                        z3.Implies(
                            s[f"c.isr{j}"], z3.Or(s[f"r{i}.isr{j}"], z3.And(s[f"r{i}.pend"], s[f"r{i}.pisr{j}"]))
                        )
                        for j in range(n)
                    )
                ),
            )
            for i in range(n)
        )
    )


def _holds_at(s: dict, b: Bounds, i: int, offset, record):
    return z3.And(
        offset >= 0,
        offset < s[f"r{i}.len"],
        pick(offset, [s[f"r{i}.rec{k}"] for k in range(b.log)], z3.IntVal(0)) == record,
    )


def no_lost_acked_write(s: dict, b: Bounds):
    return z3.And(
        *(
            z3.Implies(z3.And(_established(s, b, i), s[f"acked{k}"]), _holds_at(s, b, i, s[f"ackoff{k}"], k))
            for i in range(b.replicas)
            for k in range(1, b.records + 1)
        )
    )


def _holds_committed(s: dict, b: Bounds, i: int):
    """Replica i holds, at its offset, every acknowledged and every consumed record."""
    return z3.And(
        *(z3.Implies(s[f"acked{k}"], _holds_at(s, b, i, s[f"ackoff{k}"], k)) for k in range(1, b.records + 1)),
        *(
            z3.Implies(s[f"cons{o}_{k}"], _holds_at(s, b, i, z3.IntVal(o), k))
            for o in range(b.log)
            for k in range(1, b.records + 1)
        ),
    )


def elr_completeness(s: dict, b: Bounds):
    return z3.And(
        *(
            z3.Implies(
                z3.And(s[f"c.elr{i}"], s[f"r{i}.alive"], z3.Not(z3.And(s[f"r{i}.unreg"], s[f"c.fenced{i}"]))),
                _holds_committed(s, b, i),
            )
            for i in range(b.replicas)
        )
    )


def leader_completeness(s: dict, b: Bounds):
    return z3.And(
        *(
            z3.Implies(z3.And(s["c.leader"] == i, s[f"r{i}.alive"]), _holds_committed(s, b, i))
            for i in range(b.replicas)
        )
    )


def no_divergent_read(s: dict, b: Bounds):
    ks = range(1, b.records + 1)
    return z3.And(
        *(z3.Not(z3.And(s[f"cons{o}_{k}"], s[f"cons{o}_{j}"])) for o in range(b.log) for k in ks for j in ks if k < j)
    )


def monotonic_high_watermark(s: dict, b: Bounds):
    return z3.Not(s["regressed"])


def no_uncommitted_read(s: dict, b: Bounds):
    return z3.And(
        *(
            z3.Implies(z3.And(_established(s, b, i), s[f"cons{o}_{k}"]), _holds_at(s, b, i, z3.IntVal(o), k))
            for i in range(b.replicas)
            for o in range(b.log)
            for k in range(1, b.records + 1)
        )
    )


def no_duplicate_offsets(s: dict, b: Bounds):
    read_twice = [
        z3.And(s[f"cons{o}_{k}"], s[f"cons{p}_{k}"])
        for k in range(1, b.records + 1)
        for o in range(b.log)
        for p in range(o + 1, b.log)
    ]
    in_log_twice = [
        z3.And(p < s[f"r{r}.len"], s[f"r{r}.rec{o}"] == s[f"r{r}.rec{p}"])
        for r in range(b.replicas)
        for o in range(b.log)
        for p in range(o + 1, b.log)
    ]
    return z3.Not(z3.Or(*read_twice, *in_log_twice))


FORMULAS: dict[str, Callable[[dict, Bounds], object]] = {
    "LeaderInIsr": leader_in_isr,
    "WeakIsr": weak_isr,
    "StrongIsr": strong_isr,
    "LogMatching": log_matching,
    "HighWatermarkBound": high_watermark_bound,
    "ReplicationQuorumSuperset": replication_quorum_superset,
    "ElrCompleteness": elr_completeness,
    "NoLostAckedWrite": no_lost_acked_write,
    "LeaderCompleteness": leader_completeness,
    "NoDivergentRead": no_divergent_read,
    "MonotonicHighWatermark": monotonic_high_watermark,
    "NoUncommittedRead": no_uncommitted_read,
    "NoDuplicateOffsets": no_duplicate_offsets,
}
