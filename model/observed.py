"""What each property of ``isrcheck.specs`` observes of a state, as per-broker views: the
visibility side of the explorer's partial-order reduction (``reduction.py``).

A view is a value computed from a few locations of ``footprint.Layout`` (its ``base``), chosen so
that a step a property cannot see leaves every view it reads as it was: a LeaderAndIsr that makes
a follower follow another leader changes no view, since a broker's leader view is None while it
does not presume leadership. Each property is a function of the views ``VIEWS_OF`` names (a test
holds them to that). Three views only ever grow (the acknowledged and consumed records and the
regression flag), and every property reading them holds for all of their members: growing them
never makes a failing property hold again (``GROWING``).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Callable, NamedTuple

from .footprint import Layout, layout
from .state import State


class View(NamedTuple):
    name: str
    base: int  # the locations it is computed from
    value: Callable[[State], object]


def _leader_view(x: int):
    def value(s: State):
        r = s.replicas[x]
        return (r.leader_epoch, r.isr, r.pending_isr, r.log, r.hw) if r.alive and r.leader == x else None

    return value


def _member_view(x: int):
    def value(s: State):
        r = s.replicas[x]
        return r.log, r.alive or not r.power_lost

    return value


def _field_view(x: int, *names: str):
    def value(s: State):
        r = s.replicas[x]
        return tuple(getattr(r, f) for f in names)

    return value


def _controller_view(name: str):
    def value(s: State):
        return getattr(s.controller, name)

    return value


def _history_view(name: str):
    def value(s: State):
        return getattr(s, name)

    return value


GROWING = ("acked", "consumed", "consumer_hw_regressed")

# property id -> the views it is a function of ("leader" etc. per broker; "controller.*"; histories)
VIEWS_OF: dict[str, tuple[str, ...]] = {
    "LeaderInIsr": ("controller.leader", "controller.isr"),
    "WeakIsr": ("leader", "member"),
    "StrongIsr": ("leader", "member", "controller.isr"),
    "LogMatching": ("log",),
    "HighWatermarkBound": ("hw",),
    "ReplicationQuorumSuperset": ("controller.leader", "controller.leader_epoch", "controller.isr", "leader"),
    "ElrCompleteness": ("controller.elr", "alive_log", "acked", "consumed"),
    "NoLostAckedWrite": ("controller.leader", "controller.leader_epoch", "leader", "acked"),
    "LeaderCompleteness": ("controller.leader", "alive_log", "acked", "consumed"),
    "NoDivergentRead": ("consumed",),
    "MonotonicHighWatermark": ("consumer_hw_regressed",),
    "NoUncommittedRead": ("controller.leader", "controller.leader_epoch", "leader", "consumed"),
    "NoDuplicateOffsets": ("log", "consumed"),
}


@lru_cache(maxsize=8)
def views(n: int) -> dict[str, tuple[View, ...]]:
    """Per view name of ``VIEWS_OF``, its views (one per broker for the per-broker ones)."""
    L: Layout = layout(n)
    per_broker = {
        "leader": lambda x: (
            L.fields(x, "alive", "leader", "leader_epoch", "isr", "pending_isr", "log", "hw"),
            _leader_view(x),
        ),
        "member": lambda x: (L.fields(x, "log", "alive", "power_lost"), _member_view(x)),
        "log": lambda x: (L.rep[x]["log"], _field_view(x, "log")),
        "hw": lambda x: (L.fields(x, "hw", "log"), _field_view(x, "hw", "log")),
        "alive_log": lambda x: (L.fields(x, "alive", "log"), _field_view(x, "alive", "log")),
    }
    out = {name: tuple(View(f"{name}[{x}]", *make(x)) for x in range(n)) for name, make in per_broker.items()}
    for f in ("leader", "leader_epoch", "isr", "elr"):
        out[f"controller.{f}"] = (View(f"controller.{f}", L.ctrl[f], _controller_view(f)),)
    for h in GROWING:
        out[h] = (View(h, L.hist[h], _history_view(h)),)
    return out
