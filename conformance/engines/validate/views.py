"""What an event's ``state`` says of a node, read off a model state (isrcheck.impl.eventlog writes
the same keys from the implementation), and how the two differ."""

from __future__ import annotations

from isrcheck.model.state import State, latest_epoch


def broker_view(s: State, r: int) -> dict:
    """A broker's state as an event logs it (isrcheck.impl.eventlog.broker_state)."""
    rep = s.replicas[r]
    return {
        "alive": rep.alive,
        "leo": len(rep.log),
        "hw": rep.hw,
        "leader": rep.leader,
        "epoch": rep.leader_epoch,
        "isr": list(rep.isr),
        "pe": rep.partition_epoch,
        "last_epoch": latest_epoch(rep.log),
        "pending": None if rep.pending_isr is None else list(rep.pending_isr),
    }


def controller_view(s: State) -> dict:
    c = s.controller
    return {
        "leader": c.leader,
        "epoch": c.leader_epoch,
        "isr": list(c.isr),
        "pe": c.partition_epoch,
        "elr": list(c.elr),
        "fenced": list(c.fenced),
    }


def mismatch(view: dict, logged: dict) -> str | None:
    for key, value in logged.items():
        if key in view and view[key] != value:
            return f"{key} is {view[key]} in the model, {value} in the log"
    return None
