"""Schedules: the one JSON format every generator writes and every runner replays.

A schedule is ``{"format": "isrcheck-schedule", "version": 1, "protocol", "config", "steps",
"expected"?, "name"?, "description"?}``. Steps use the shared alphabet of docs/steps.md, as dicts
like ``{"step": "produce", "replica": 0, "acks": -1}``. Loading validates every field and names
the offending one (``steps[3].acks: ...``), so a hand-written schedule fails before it runs.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from isrcheck.conformance.vocabulary import MAX_FILE_BYTES, read_text
from isrcheck.model import PROTOCOLS as _MODEL_PROTOCOLS
from isrcheck.model.alphabet import InvalidStep, Step, shown, shown_key
from isrcheck.model.config import ConfigError, ScheduleConfig, check_protocol
from isrcheck.specs import BY_ID

FORMAT = "isrcheck-schedule"
VERSION = 1
MAX_BYTES = MAX_FILE_BYTES  # a schedule file larger than this is refused unread (10**6 steps take ~60 MB)
MAX_STEPS = 1_000_000  # as the longest random walk; parsing a step costs ~250 bytes of memory
PROTOCOLS = tuple(_MODEL_PROTOCOLS)  # what model and implementation run

VERDICT_KINDS = ("pass", "violation", "divergence", "sut-failure", "invalid-schedule")


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
        raise _at(where, exc) from None


def check_config_protocol(protocol: str, config: ScheduleConfig, where: str = "config") -> None:
    """ScheduleError unless ``config``'s switches go with ``protocol`` (unfence_at_heartbeat: kip-903 on)."""
    try:
        check_protocol(protocol, config)
    except ConfigError as exc:
        raise _at(where, exc) from None


def _at(where: str, exc: ConfigError) -> ScheduleError:
    return ScheduleError(f"{where}.{exc.field}: {exc.detail}" if exc.field else f"{where}: {exc.detail}")


@dataclass(frozen=True)
class Expected:
    """The verdict a schedule should give on one protocol (``property`` only for violations);
    ``beyond_budget``: a property the run must break outside its fault budget (a loss Kafka itself
    has there, which the schedule demonstrates)."""

    verdict: str
    property: str | None = None
    beyond_budget: str | None = None

    def matches(self, verdict) -> bool:
        """Does a run's Verdict give what is expected (a violation of the property, if named)?"""
        return (
            self.verdict == verdict.kind
            and self.property in (None, verdict.property)
            and (self.beyond_budget is None or any(p == self.beyond_budget for p, _, _ in verdict.beyond_budget))
        )

    def to_json(self) -> dict:
        out = {"verdict": self.verdict}
        if self.property is not None:
            out["property"] = self.property
        if self.beyond_budget is not None:
            out["beyond_budget"] = self.beyond_budget
        return out

    def summary(self) -> str:
        """As a verdict's summary names it: ``violation of P``, ``pass (P broken outside its budget)``."""
        text = self.verdict + (f" of {self.property}" if self.property else "")
        return text + (f" ({self.beyond_budget} broken outside its fault budget)" if self.beyond_budget else "")


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
        raise ScheduleError(f"expected: expected an object mapping protocol to verdict, got {shown(data)}")
    out: dict[str, Expected] = {}
    for proto in sorted(data, key=str):
        entry = data[proto]
        where = f"expected.{shown_key(proto)}"
        if proto not in PROTOCOLS:
            raise ScheduleError(f"{where}: unknown protocol (known: {', '.join(PROTOCOLS)})")
        if isinstance(entry, str):
            entry = {"verdict": entry}
        if not isinstance(entry, Mapping):
            raise ScheduleError(f'{where}: expected {{"verdict": ..., "property": ...}}, got {shown(entry)}')
        for key in sorted(entry, key=str):
            if key not in ("verdict", "property", "beyond_budget"):
                raise ScheduleError(
                    f"{where}.{shown_key(key)}: unknown field (known: verdict, property, beyond_budget)"
                )
        verdict = entry.get("verdict")
        if verdict not in VERDICT_KINDS:
            raise ScheduleError(f"{where}.verdict: expected one of {', '.join(VERDICT_KINDS)}, got {shown(verdict)}")
        prop = entry.get("property")
        if prop is not None and not (isinstance(prop, str) and prop in BY_ID):
            raise ScheduleError(f"{where}.property: unknown property {shown(prop)} (known: {', '.join(BY_ID)})")
        if prop is not None and verdict != "violation":
            raise ScheduleError(f"{where}.property: only a violation names a property")
        beyond = entry.get("beyond_budget")
        if beyond is not None and not (isinstance(beyond, str) and beyond in BY_ID):
            raise ScheduleError(f"{where}.beyond_budget: unknown property {shown(beyond)} (known: {', '.join(BY_ID)})")
        out[proto] = Expected(verdict, prop, beyond)
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
        for key in sorted(data, key=str):
            if key not in known:
                raise ScheduleError(f"{shown_key(key)}: unknown top-level field (known: {', '.join(known)})")
        if data.get("format", FORMAT) != FORMAT:
            raise ScheduleError(f"format: expected {FORMAT!r}, got {shown(data.get('format'))}")
        if "version" not in data:
            raise ScheduleError(f"version: missing (this build reads version {VERSION})")
        if data["version"] != VERSION or not _is_int(data["version"]):
            raise ScheduleError(f"version: this build reads version {VERSION}, got {shown(data['version'])}")
        protocol = data.get("protocol")
        if protocol not in PROTOCOLS:
            raise ScheduleError(f"protocol: expected one of {', '.join(PROTOCOLS)}, got {shown(protocol)}")
        config = load_config(data.get("config"))
        check_config_protocol(protocol, config)
        raw_steps = data.get("steps")
        if not isinstance(raw_steps, list):
            raise ScheduleError(f"steps: expected a list of step objects, got {shown(raw_steps)}")
        if len(raw_steps) > MAX_STEPS:
            raise ScheduleError(f"steps: {len(raw_steps):,} steps, more than a schedule holds ({MAX_STEPS:,})")
        steps = tuple(validate_step(s, config.replicas, f"steps[{i}]") for i, s in enumerate(raw_steps))
        for key in ("name", "description"):
            text = data.get(key)
            if text is not None and not isinstance(text, str):
                raise ScheduleError(f"{key}: expected a string, got {shown(text)}")
            bad = _lone_surrogate(text or "")
            if bad is not None:
                raise ScheduleError(
                    f"{key}: not Unicode text: a lone surrogate \\u{ord(text[bad]):04x} at character {bad}"
                )
        return cls(
            protocol, config, steps, _validate_expected(data.get("expected")), data.get("name"), data.get("description")
        )

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
            raise ScheduleError(f"protocol: expected one of {', '.join(PROTOCOLS)}, got {shown(protocol)}")
        check_config_protocol(protocol, self.config)
        return Schedule(protocol, self.config, self.steps, self.expected, self.name, self.description)


_MAX_DEPTH = 100  # arrays and objects; a schedule needs 3 (JSON nested deeper is not one)
NEWLINE = "\n"


class _LongInt(int):
    """Stands for a JSON integer too long to be any value of the format (every integer field is
    bounded far below 10**20): it fails every bound check and shows as its first digits and
    length, and long digit strings are never converted (Python refuses beyond 4300 digits, and
    converting that many is slow)."""

    def __new__(cls, digits: str) -> "_LongInt":
        value = super().__new__(cls, -(10**20) if digits.startswith("-") else 10**20)
        value.digits = digits
        return value

    def __repr__(self) -> str:
        return f"{self.digits[:8]}... ({len(self.digits.lstrip('-'))} digits)"


def _parse_int(digits: str) -> int:
    return int(digits) if len(digits) <= 20 else _LongInt(digits)


def _lone_surrogate(text: str) -> int | None:
    """The position of the first lone surrogate in ``text`` (JSON's ``\\ud800`` escapes can make
    one; it is not Unicode text and cannot be printed), None if there is none."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def _too_deep(text: str) -> str:
    """Where ``text`` first nests more than _MAX_DEPTH arrays and objects (strings skipped)."""
    depth = 0
    for m in re.finditer(r'"(?:[^"\\]|\\.)*"|[\[{]|[\]}]', text):
        token = m.group()
        if token in "[{":
            depth += 1
            if depth > _MAX_DEPTH:
                at = m.start()
                return f" at line {text.count(NEWLINE, 0, at) + 1} column {at - text.rfind(NEWLINE, 0, at)}"
        elif token in "]}":
            depth -= 1
    return ""


def _too_many_objects(text: str) -> bool:
    """Whether ``text`` holds more JSON objects than a schedule can (its steps, the top level,
    ``config``, ``expected`` and one per protocol there), counted outside strings before parsing:
    parsing millions of small objects alone takes gigabytes. Counting every ``{`` first keeps
    the usual case to one fast pass."""
    limit = MAX_STEPS + 3 + len(PROTOCOLS)
    if text.count("{") <= limit:
        return False
    objects = 0
    for m in re.finditer(r'"(?:[^"\\]|\\.)*"|\{', text):
        if m.group() == "{":
            objects += 1
            if objects > limit:
                return True
    return False


def load_schedule(path: str | Path) -> Schedule:
    """Read and validate a schedule file; every problem is a ScheduleError naming the file and
    the place in it: a byte that is not UTF-8, a line and column of bad JSON, a field. A file past
    MAX_BYTES, or holding more objects than MAX_STEPS steps need, is refused before it is parsed."""
    path = Path(path)
    text = read_text(path, "a schedule file", limit=MAX_BYTES, error=ScheduleError)
    if _too_many_objects(text):
        raise ScheduleError(
            f"{path}: not a schedule: more JSON objects than {MAX_STEPS:,} steps need "
            f"(a schedule holds at most {MAX_STEPS:,} steps)"
        )
    try:
        data = json.loads(text, parse_int=_parse_int)
    except json.JSONDecodeError as exc:
        raise ScheduleError(f"{path}: not valid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise ScheduleError(
            f"{path}: not a schedule: arrays and objects nested more than {_MAX_DEPTH} deep{_too_deep(text)}"
        ) from None
    try:
        return Schedule.from_json(data)
    except ScheduleError as exc:
        raise ScheduleError(f"{path}: {exc}") from None
