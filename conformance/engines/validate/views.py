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
        "cached_broker_epochs": list(rep.cached_broker_epochs),
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


def cache_fenced(epochs) -> list[int] | None:
    """The brokers a logged or modelled ``cached_broker_epochs`` holds fenced (-1), what the two
    compare by: a run numbers broker epochs its own way (the implementation's controller counts them
    across brokers, Kafka's are metadata offsets), the model counts each broker's registrations."""
    if not isinstance(epochs, list) or not all(type(e) is int for e in epochs):
        return None
    return [b for b, e in enumerate(epochs) if e < 0]


def mismatch(view: dict, logged: dict) -> str | None:
    for key, value in logged.items():
        if key not in view:
            continue
        ours, theirs = view[key], value
        if key == "cached_broker_epochs":
            ours, theirs = cache_fenced(ours), cache_fenced(value)
            if ours != theirs:
                return f"the metadata cache holds {ours or 'none'} fenced in the model, {theirs or 'none'} in the log"
        elif ours != theirs:
            return f"{key} is {ours} in the model, {theirs} in the log"
    return None
