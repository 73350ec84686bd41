"""Schedules: the one JSON format every generator writes and every runner replays.

A schedule is ``{"format": "isrcheck-schedule", "version": 1, "protocol", "config", "steps",
"expected"?, "name"?, "description"?}``. Steps use the shared alphabet of docs/steps.md, as dicts
like ``{"step": "produce", "replica": 0, "acks": -1}``. Loading validates every field and names
the offending one (``steps[3].acks: ...``), so a hand-written schedule fails before it runs.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from isrcheck.model import PROTOCOLS as _MODEL_PROTOCOLS
from isrcheck.model.alphabet import InvalidStep, Step
from isrcheck.model.config import ConfigError, ScheduleConfig

FORMAT = "isrcheck-schedule"
VERSION = 1
PROTOCOLS = tuple(_MODEL_PROTOCOLS)  # what model and implementation run

VERDICT_KINDS = ("pass", "violation", "divergence", "invalid-schedule")


class ScheduleError(ValueError):
    """A schedule that cannot run; the message names the field (``steps[3].acks``) and the problem."""


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def load_config(data: Any, where: str = "config") -> ScheduleConfig:
    """A schedule's ``config`` object (None: the defaults) as a ScheduleConfig; the model's
    config type checks the bounds, this only names the place (``config.replicas: ...``)."""
    try:
        return ScheduleConfig.from_json(data)
    except ConfigError as exc:
        raise ScheduleError(f"{where}.{exc.field}: {exc.detail}" if exc.field else f"{where}: {exc.detail}") from None


@dataclass(frozen=True)
class Expected:
    """The verdict a schedule should give on one protocol (``property`` only for violations)."""

    verdict: str
    property: str | None = None

    def to_json(self) -> dict:
        return {"verdict": self.verdict} if self.property is None else {
            "verdict": self.verdict, "property": self.property}


def validate_step(raw: Any, replicas: int, where: str) -> dict:
    """The canonical dict of one step: fields in alphabet order, a missing ``index`` filled in as 0.
    The model's parser is the one definition of the alphabet; this only names the place."""
    try:
        return Step.from_json(raw, replicas).to_json()
    except InvalidStep as exc:
        raise ScheduleError(f"{where}.{exc.field}: {exc.detail}" if exc.field else f"{where}: {exc.detail}") from None


def _validate_expected(data: Any) -> dict[str, Expected]:
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ScheduleError(f"expected: expected an object mapping protocol to verdict, got {data!r}")
    out: dict[str, Expected] = {}
    for proto in sorted(data):
        entry = data[proto]
        where = f"expected.{proto}"
        if proto not in PROTOCOLS:
            raise ScheduleError(f"{where}: unknown protocol (known: {', '.join(PROTOCOLS)})")
        if isinstance(entry, str):
            entry = {"verdict": entry}
        if not isinstance(entry, Mapping):
            raise ScheduleError(f"{where}: expected {{\"verdict\": ..., \"property\": ...}}, got {entry!r}")
        for key in sorted(entry):
            if key not in ("verdict", "property"):
                raise ScheduleError(f"{where}.{key}: unknown field (known: verdict, property)")
        verdict = entry.get("verdict")
        if verdict not in VERDICT_KINDS:
            raise ScheduleError(f"{where}.verdict: expected one of {', '.join(VERDICT_KINDS)}, got {verdict!r}")
        prop = entry.get("property")
        if prop is not None and not isinstance(prop, str):
            raise ScheduleError(f"{where}.property: expected a property id, got {prop!r}")
        if prop is not None and verdict != "violation":
            raise ScheduleError(f"{where}.property: only a violation names a property")
        out[proto] = Expected(verdict, prop)
    return out


@dataclass(frozen=True)
class Schedule:
    """A protocol, a cluster config and a sequence of steps; replays to the same trace anywhere."""

    protocol: str
    config: ScheduleConfig = field(default_factory=ScheduleConfig)
    steps: tuple[dict, ...] = ()
    expected: Mapping[str, Expected] = field(default_factory=dict)
    name: str | None = None
    description: str | None = None

    @classmethod
    def from_json(cls, data: Any) -> "Schedule":
        """Validate a parsed JSON document; raises ScheduleError naming the first bad field."""
        if not isinstance(data, Mapping):
            raise ScheduleError(f"schedule: expected a JSON object, got {type(data).__name__}")
        known = ("format", "version", "protocol", "config", "steps", "expected", "name", "description")
        for key in sorted(data):
            if key not in known:
                raise ScheduleError(f"{key}: unknown top-level field (known: {', '.join(known)})")
        if data.get("format", FORMAT) != FORMAT:
            raise ScheduleError(f"format: expected {FORMAT!r}, got {data.get('format')!r}")
        if "version" not in data:
            raise ScheduleError(f"version: missing (this build reads version {VERSION})")
        if data["version"] != VERSION or not _is_int(data["version"]):
            raise ScheduleError(f"version: this build reads version {VERSION}, got {data['version']!r}")
        protocol = data.get("protocol")
        if protocol not in PROTOCOLS:
            raise ScheduleError(f"protocol: expected one of {', '.join(PROTOCOLS)}, got {protocol!r}")
        config = load_config(data.get("config"))
        raw_steps = data.get("steps")
        if not isinstance(raw_steps, list):
            raise ScheduleError(f"steps: expected a list of step objects, got {raw_steps!r}")
        steps = tuple(validate_step(s, config.replicas, f"steps[{i}]") for i, s in enumerate(raw_steps))
        for key in ("name", "description"):
            if data.get(key) is not None and not isinstance(data[key], str):
                raise ScheduleError(f"{key}: expected a string, got {data[key]!r}")
        return cls(protocol, config, steps, _validate_expected(data.get("expected")),
                   data.get("name"), data.get("description"))

    def to_json(self) -> dict:
        doc: dict = {"format": FORMAT, "version": VERSION}
        if self.name is not None:
            doc["name"] = self.name
        if self.description is not None:
            doc["description"] = self.description
        doc["protocol"] = self.protocol
        doc["config"] = self.config.to_json()
        doc["steps"] = [dict(s) for s in self.steps]
        if self.expected:
            doc["expected"] = {p: self.expected[p].to_json() for p in sorted(self.expected)}
        return doc

    def dumps(self) -> str:
        """JSON text with one step per line: readable in review, stable for diffs."""
        doc = self.to_json()
        steps = doc.pop("steps")
        lines = [f"  {json.dumps(k)}: {json.dumps(v)}," for k, v in doc.items()]
        body = ",\n".join("    " + json.dumps(s) for s in steps)
        return "{\n" + "\n".join(lines) + '\n  "steps": [\n' + body + ("\n" if steps else "") + "  ]\n}\n"

    def with_steps(self, steps) -> "Schedule":
        return Schedule(self.protocol, self.config, tuple(steps), self.expected, self.name, self.description)

    def with_protocol(self, protocol: str) -> "Schedule":
        if protocol not in PROTOCOLS:
            raise ScheduleError(f"protocol: expected one of {', '.join(PROTOCOLS)}, got {protocol!r}")
        return Schedule(protocol, self.config, self.steps, self.expected, self.name, self.description)


def load_schedule(path: str | Path) -> Schedule:
    """Read and validate a schedule file; every problem is a ScheduleError naming the file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScheduleError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ScheduleError(f"{path}: not a text (UTF-8) file: byte {exc.start}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScheduleError(f"{path}: not valid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    try:
        return Schedule.from_json(data)
    except ScheduleError as exc:
        raise ScheduleError(f"{path}: {exc}") from None
