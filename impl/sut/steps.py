"""Schedule steps as the driver protocol carries them, parsed by the implementation itself.

docs/steps.md defines the steps; the implementation keeps its own copy of the fields it reads (it
never asks the model), and docs/sut-protocol.md says how a step travels: ``{"step": NAME, FIELD:
VALUE, ...}``. A field left out takes its documented default.
"""

from __future__ import annotations

from ..sim.disk import CUT

_REQUIRED = object()

# field -> (type, default); bool is not an int here, as in JSON
FIELDS: dict[str, tuple[type, object]] = {
    "replica": (int, _REQUIRED),
    "acks": (int, _REQUIRED),
    "records": (int, 1),
    "max_batches": (int, 0),
    "index": (int, 0),
    "kind": (str, _REQUIRED),
    "message": (str, _REQUIRED),
    "survive": (int, 0),
    "torn": (bool, False),
    "tail": (str, CUT),
    "io": (str, _REQUIRED),
    "follower": (int, _REQUIRED),
}

# step -> its fields, in the order the Cluster method of the same name takes them
STEPS: dict[str, tuple[str, ...]] = {
    "produce": ("replica", "acks", "records"),
    "consume": ("replica",),
    "send_fetch": ("replica", "max_batches"),
    "read_fetch": ("replica",),
    "read_fetch_hw": ("replica",),
    "handle_fetch": ("replica",),
    "handle_fetch_response": ("replica",),
    "deliver_leader_and_isr": ("replica", "index"),
    "remove_fetcher": ("replica",),
    "update_metadata_cache": ("replica",),
    "shrink_isr": ("replica",),
    "expand_isr": ("replica", "follower"),
    "handle_alter_partition": ("replica",),
    "handle_alter_partition_response": ("replica",),
    "elect": ("replica",),
    "fence": ("replica",),
    "rejoin": ("replica",),
    "unfence": ("replica",),
    "controlled_shutdown": ("replica",),
    "crash": ("replica", "kind", "survive", "torn", "tail"),
    "restart": ("replica",),
    "register": ("replica",),
    "lose_disk": ("replica",),
    "flush": ("replica",),
    "checkpoint_hw": ("replica",),
    "tick": (),
    "drop": ("message", "replica", "index"),
    "corrupt": ("replica",),
    "fail_disk": ("replica", "io"),
    "corrupt_live": ("replica",),
}
# an election without a target; an ISR expansion adding every follower in sync
_OPTIONAL = {("elect", "replica"): -1, ("expand_isr", "follower"): -1}


class BadStep(ValueError):
    """A step that is not of the protocol's form; the message names the field."""


def parse_step(doc, replicas: int) -> tuple[str, tuple]:
    """``(name, field values in STEPS order)`` of a step object, or BadStep."""
    if not isinstance(doc, dict):
        raise BadStep(f"step: expected an object, got {type(doc).__name__}")
    name = doc.get("step")
    if name not in STEPS:
        raise BadStep(f"step: unknown step {str(name)[:40]!r}")
    wanted = STEPS[name]
    extra = sorted(k for k in doc if k != "step" and k not in wanted)
    if extra:
        raise BadStep(f"{name}.{extra[0][:40]}: not a field of {name}")
    values = []
    for field in wanted:
        kind, default = FIELDS[field]
        default = _OPTIONAL.get((name, field), default)
        value = doc.get(field, default)
        if value is _REQUIRED:
            raise BadStep(f"{name}.{field}: missing")
        if type(value) is not kind:
            raise BadStep(f"{name}.{field}: expected {kind.__name__}, got {str(value)[:40]!r}")
        if field in ("replica", "follower") and not (0 <= value < replicas or value == default == -1):
            raise BadStep(f"{name}.{field}: {value} is not a broker id 0..{replicas - 1}")
        values.append(value)
    return name, tuple(values)
