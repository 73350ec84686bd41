"""Schedule steps: a compact hashable ``Step`` and its JSON form (docs/steps.md, "Steps")."""
from __future__ import annotations

from typing import NamedTuple

from .state import MESSAGE_FIELDS

ACKS = (0, 1, -1)
CRASH_KINDS = ("clean", "process", "power")
MESSAGES = tuple(MESSAGE_FIELDS)

# step name -> the JSON fields it takes besides "step"
STEP_FIELDS: dict[str, tuple[str, ...]] = {
    "produce": ("replica", "acks"),
    "consume": ("replica",),
    "send_fetch": ("replica",),
    "handle_fetch": ("replica",),
    "handle_fetch_response": ("replica",),
    "deliver_leader_and_isr": ("replica", "index"),
    "shrink_isr": ("replica",),
    "expand_isr": ("replica",),
    "handle_alter_partition": ("replica",),
    "handle_alter_partition_response": ("replica",),
    "drop": ("message", "replica", "index"),
    "elect": (),
    "fence": ("replica",),
    "crash": ("replica", "kind"),
    "restart": ("replica",),
    "flush": ("replica",),
    "tick": (),
}
_OPTIONAL = {"index": 0}


class InvalidStep(ValueError):
    """A step that is not of the schedule format (unknown name, missing or bad field)."""


class Step(NamedTuple):
    """One schedule step. ``arg`` is the acks (produce), the crash kind, or the message kind (drop)."""

    name: str
    replica: int = -1
    arg: object = None
    index: int = 0

    def to_json(self) -> dict:
        out: dict = {"step": self.name}
        for f in STEP_FIELDS[self.name]:
            if f == "replica":
                out["replica"] = self.replica
            elif f == "index":
                out["index"] = self.index
            else:  # acks, kind, message
                out[f] = self.arg
        return out

    @classmethod
    def from_json(cls, step: dict) -> "Step":
        """Parse and validate a step dict; raises InvalidStep naming what is wrong."""
        if isinstance(step, Step):
            return step
        if not isinstance(step, dict):
            raise InvalidStep(f"a step must be an object, got {type(step).__name__}")
        name = step.get("step")
        if name not in STEP_FIELDS:
            raise InvalidStep(f"unknown step {name!r}; known: {', '.join(STEP_FIELDS)}")
        fields = STEP_FIELDS[name]
        extra = sorted(set(step) - set(fields) - {"step"})
        if extra:
            raise InvalidStep(f"{name}: unexpected field(s) {', '.join(extra)}")
        values = {}
        for f in fields:
            if f not in step:
                if f in _OPTIONAL:
                    values[f] = _OPTIONAL[f]
                    continue
                raise InvalidStep(f"{name}: missing field {f!r}")
            values[f] = step[f]
        for f in ("replica", "index", "acks"):
            if f in values and (not isinstance(values[f], int) or isinstance(values[f], bool)):
                raise InvalidStep(f"{name}: {f} must be an integer, got {values[f]!r}")
        if "index" in values and values["index"] < 0:
            raise InvalidStep(f"{name}: index must be >= 0, got {values['index']}")
        if "acks" in values and values["acks"] not in ACKS:
            raise InvalidStep(f"{name}: acks must be 0, 1 or -1, got {values['acks']}")
        if "kind" in values and values["kind"] not in CRASH_KINDS:
            raise InvalidStep(f"{name}: kind must be one of {', '.join(CRASH_KINDS)}, got {values['kind']!r}")
        if "message" in values and values["message"] not in MESSAGES:
            raise InvalidStep(f"{name}: message must be one of {', '.join(MESSAGES)}, got {values['message']!r}")
        arg = values.get("acks", values.get("kind", values.get("message")))
        return cls(name, values.get("replica", -1), arg, values.get("index", 0))
