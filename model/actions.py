"""Schedule steps: a compact hashable ``Step`` and its JSON form (docs/steps.md, "Steps")."""
from __future__ import annotations

from typing import Mapping, NamedTuple

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
    """A step that is not of the schedule format (unknown name, missing or bad field). ``field``
    names the offending field ("step" for the name, None for the whole step); ``detail`` says what
    is wrong with it, so a schedule loader can name the place (``steps[3].acks: ...``)."""

    def __init__(self, name: object, field: str | None, detail: str) -> None:
        super().__init__(f"{name}: {detail}")
        self.field, self.detail = field, detail


def check_replica(name: str, replica: object, replicas: int) -> None:
    """Raise InvalidStep unless ``replica`` is a broker id of a cluster of ``replicas``."""
    if not 0 <= replica < replicas:  # type: ignore[operator]
        raise InvalidStep(name, "replica", f"expected a replica id 0..{replicas - 1}, got {replica!r} (out of range)")


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
    def from_json(cls, step, replicas: int | None = None) -> "Step":
        """Parse and validate a step dict (replica ids too, given ``replicas``); raises InvalidStep
        naming the field and what is wrong with it."""
        if isinstance(step, Step):
            return step
        if not isinstance(step, Mapping):
            raise InvalidStep("step", None, f"expected an object like {{\"step\": \"tick\"}}, got {step!r}")
        name = step.get("step")
        if name not in STEP_FIELDS:
            raise InvalidStep(name, "step", f"unknown step {name!r} (known: {', '.join(STEP_FIELDS)})")
        fields = STEP_FIELDS[name]
        extra = sorted(set(step) - set(fields) - {"step"})
        if extra:
            raise InvalidStep(name, extra[0], f"not a field of step {name!r} (unexpected field; it takes "
                                              f"{', '.join(fields) or 'no fields'})")
        values = {}
        for f in fields:
            if f not in step:
                if f in _OPTIONAL:
                    values[f] = _OPTIONAL[f]
                    continue
                raise InvalidStep(name, f, f"missing field {f!r} (step {name!r} needs {', '.join(fields)})")
            values[f] = step[f]
        for f in ("replica", "index", "acks"):
            if f in values and (not isinstance(values[f], int) or isinstance(values[f], bool)):
                raise InvalidStep(name, f, f"{f} must be an integer, got {values[f]!r}")
        if "index" in values and values["index"] < 0:
            raise InvalidStep(name, "index", f"index must be >= 0, got {values['index']}")
        for f, allowed in (("acks", ACKS), ("kind", CRASH_KINDS), ("message", MESSAGES)):
            if f in values and values[f] not in allowed:
                raise InvalidStep(name, f, f"{f} must be one of {', '.join(map(str, allowed))}, got {values[f]!r}")
        if "replica" in values and replicas is not None:
            check_replica(name, values["replica"], replicas)
        arg = values.get("acks", values.get("kind", values.get("message")))
        return cls(name, values.get("replica", -1), arg, values.get("index", 0))
