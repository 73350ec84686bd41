"""An experiment file (``specs/experiments/*.json``): data, validated on load.

::

    {
      "format": "isrcheck-experiment", "version": 1,
      "name": "last-replica-standing",
      "description": "what it aims at, in Kafka's words",
      "schedule": "specs/scenarios/last-replica-standing.json",
      "cluster": {"brokers": 2, "min_insync_replicas": 2, "unclean_election": false,
                  "flush_messages": null},
      "plan": [
        {"do": "produce", "records": 10},
        {"do": "wait", "until": "isr-full", "timeout_s": 30},
        {"do": "stop", "node": "follower", "as": "F"},
        {"do": "wait", "until": "isr-is-leader", "timeout_s": 30},
        {"do": "power", "node": "leader", "as": "L"},
        ...
      ],
      "expected": {"*": ["not-enough-replicas"]}
    }

``schedule``: the schedule the model checks (relative to the repository's root, or to the file);
its verdict under each variant is the prediction. ``cluster``: the real cluster's settings (one
topic ``experiment`` of one partition, ``p``, replicated on every broker). ``plan``: the steps, in
order (``STEPS`` below). ``expected`` (optional): outcomes per variant (``"*"`` any variant) where the
model's verdict does not name them (a refusal such as NOT_ENOUGH_REPLICAS is no property); the
others are derived from the verdict (``prediction``).

Outcomes (``OUTCOMES``): ``lost-write`` (an acknowledged record missing from the final read),
``divergent-read`` (two reads of one offset gave different records, or the log went back under a
consumer), ``not-enough-replicas`` (a produce step's sends were refused with NOT_ENOUGH_REPLICAS,
none acknowledged), ``unavailable`` (a produce step had none acknowledged, for another reason).

Nodes (``"node"``, ``"from"``): ``"leader"`` (of ``p`` now), ``"follower"`` (a replica of ``p`` that
is not its leader, in its ISR if one is), ``"followers"``, ``"all"`` (every broker), ``"controller"``,
a broker id, or a name an earlier step bound with ``"as"``.

The network's finer faults: ``{"do": "cut", "node": "F", "from": "L"}`` cuts the link between two
nodes, both ways (``partition`` cuts a node from every other); ``{"do": "hold-requests", "node":
"L", "request": "AlterPartition"}`` keeps that broker's requests of one kind (``REQUESTS``: Kafka's
request names) from reaching the controller while everything else flows (its heartbeats, its other
requests); ``{"do": "release-requests", ...}`` lets those held so far arrive, in order, and holds
later ones still; ``{"do": "delay", "node": "L", "ms": 400}`` gives every link of the node (to the
other brokers and the controller; with ``"from"``, to those nodes only) ``ms`` milliseconds of
latency both ways, frames delivered in order, and ``{"do": "undelay", "node": "L"}`` ends it;
``heal`` (and the end of the plan) ends every cut, hold and delay. The states ``held``
(the node's hold kept a request back) and ``delivered`` (a request it held reached the controller
after the release; on Apache Kafka once nothing more passed for a few seconds, so that what the
broker queued behind the held request passed too) tell where a hold is. A request isrcheck's brokers never send
(AssignReplicasToDirs) holds nothing there.

A bad file is a UsageError naming the file and the field (``plan[3].until``): exit 2.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from isrcheck.conformance.core.schedule import PROTOCOLS
from isrcheck.conformance.vocabulary import UsageError

FORMAT, VERSION = "isrcheck-experiment", 1
OUTCOMES = ("lost-write", "divergent-read", "not-enough-replicas", "unavailable")
FAULTS = ("kill", "stop", "pause", "resume", "power", "lose-disk", "restart", "partition", "heal")
# the requests a broker's link to the controller can hold (Kafka's names and API keys)
REQUESTS = {"AlterPartition": 56, "AssignReplicasToDirs": 73}
# the states a wait or a hold can name; "node" is required by those in NODE_STATES
STATES = (
    "isr-full",
    "isr-is-leader",
    "leader",
    "no-leader",
    "leader-is",
    "leader-not",
    "fenced",
    "registered",
    "in-isr",
    "not-in-isr",
    "hw-passed",
    "held",
    "delivered",
)
NODE_STATES = ("leader-is", "leader-not", "fenced", "registered", "in-isr", "not-in-isr", "held", "delivered")
ROLES = ("leader", "follower", "followers", "all", "controller")
# each step kind: its required and optional fields
STEPS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "produce": (("records",), ("retries", "timeout_s")),
    "read": ((), ("timeout_s",)),
    "wait": (("until", "timeout_s"), ("node",)),
    "hold": (("state", "for_s"), ("node",)),
    **{kind: (("node",), ("as",)) for kind in FAULTS if kind != "heal"},
    "heal": ((), ()),
    "cut": (("node", "from"), ("as",)),
    "hold-requests": (("node", "request"), ("as",)),
    "release-requests": (("node", "request"), ()),
    "delay": (("node", "ms"), ("from", "as")),
    "undelay": (("node",), ("from",)),
}
MAX_DELAY_MS = 60_000  # a link's latency in a plan, at most
CLUSTER_FIELDS = {
    "brokers": (int, 1, 5),
    "min_insync_replicas": (int, 1, 5),
    "unclean_election": (bool,),
    "flush_messages": (int, 1, 1_000_000),
    "elr": (bool,),
}


@dataclass(frozen=True)
class ClusterSpec:
    brokers: int = 3
    min_insync_replicas: int = 2
    unclean_election: bool = False
    flush_messages: int | None = None
    elr: bool | None = None  # Apache Kafka: forced on or off where it matters (None: the run's --elr)


@dataclass(frozen=True)
class Step:
    do: str
    fields: dict

    def get(self, name: str, default=None):
        return self.fields.get(name, default)

    def describe(self) -> str:
        shown = " ".join(f"{k}={v}" for k, v in self.fields.items())
        return f"{self.do} {shown}".strip()


@dataclass(frozen=True)
class Experiment:
    name: str
    description: str
    path: Path
    schedule: Path
    cluster: ClusterSpec
    plan: tuple[Step, ...]
    expected: dict = field(default_factory=dict)  # variant or "*" -> tuple of outcomes

    def expected_for(self, variant: str) -> tuple[str, ...] | None:
        """The file's own expectation for ``variant`` (None: the model's verdict decides)."""
        found = self.expected.get(variant, self.expected.get("*"))
        return None if found is None else tuple(found)


class _Reader:
    """Reads one file's fields, each problem a UsageError naming the file and the field."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, where: str, problem: str):
        raise UsageError(f"experiment {self.path}: {where}: {problem}")

    def number(self, where: str, value, low, high, kind=int):
        ok = isinstance(value, (int, float) if kind is float else int) and not isinstance(value, bool)
        if not ok or not low <= value <= high:
            self.fail(where, f"expected {'a number' if kind is float else 'an integer'} {low}..{high}, got {value!r}")
        return value


def load_experiment(path: str | Path, root: str | Path | None = None) -> Experiment:
    """The experiment at ``path``; ``root`` the folder its schedule path is relative to (default:
    the repository holding it, else the file's folder)."""
    path = Path(path)
    r = _Reader(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"experiment {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise UsageError(f"experiment {path}: not JSON ({exc})") from None
    if not isinstance(doc, dict):
        r.fail("(top level)", "expected a JSON object")
    if doc.get("format") != FORMAT:
        r.fail("format", f"expected {FORMAT!r}, got {doc.get('format')!r}")
    if doc.get("version") != VERSION:
        r.fail("version", f"expected {VERSION}, got {doc.get('version')!r}")
    known = {"format", "version", "name", "description", "schedule", "cluster", "plan", "expected"}
    for key in doc:
        if key not in known:
            r.fail(key, f"unknown field (fields: {', '.join(sorted(known))})")
    name = doc.get("name")
    if not isinstance(name, str) or not name:
        r.fail("name", "expected a non-empty string")
    description = doc.get("description", "")
    if not isinstance(description, str):
        r.fail("description", "expected a string")
    schedule = _schedule_path(r, doc.get("schedule"), path, root)
    cluster = _cluster(r, doc.get("cluster", {}))
    plan = _plan(r, doc.get("plan"), cluster)
    expected = _expected(r, doc.get("expected", {}))
    return Experiment(name, description, path, schedule, cluster, plan, expected)


def _schedule_path(r: _Reader, value, path: Path, root) -> Path:
    if not isinstance(value, str) or not value:
        r.fail("schedule", "expected the path of a schedule file")
    bases = (
        [Path(root)]
        if root is not None
        else [*[p for p in path.resolve().parents if (p / "specs").is_dir()][:1], path.parent]
    )
    for base in bases:
        if (base / value).is_file():
            return (base / value).resolve()
    r.fail("schedule", f"no schedule file {value!r} (looked in {', '.join(map(str, bases))})")


def _cluster(r: _Reader, value) -> ClusterSpec:
    if not isinstance(value, dict):
        r.fail("cluster", "expected an object")
    out = {}
    for key, v in value.items():
        if key not in CLUSTER_FIELDS:
            r.fail(f"cluster.{key}", f"unknown setting (settings: {', '.join(CLUSTER_FIELDS)})")
        kind = CLUSTER_FIELDS[key]
        if v is None and key in ("flush_messages", "elr"):
            continue
        if kind[0] is bool:
            if not isinstance(v, bool):
                r.fail(f"cluster.{key}", f"expected true or false, got {v!r}")
        else:
            r.number(f"cluster.{key}", v, kind[1], kind[2])
        out[key] = v
    spec = ClusterSpec(**out)
    if spec.min_insync_replicas > spec.brokers:
        r.fail("cluster.min_insync_replicas", f"{spec.min_insync_replicas} > brokers {spec.brokers}")
    return spec


def _plan(r: _Reader, value, cluster: ClusterSpec) -> tuple[Step, ...]:
    if not isinstance(value, list) or not value:
        r.fail("plan", "expected a non-empty list of steps")
    names: set[str] = set()
    steps = []
    for i, raw in enumerate(value):
        where = f"plan[{i}]"
        if not isinstance(raw, dict):
            r.fail(where, 'expected an object with "do"')
        do = raw.get("do")
        if do not in STEPS:
            r.fail(f"{where}.do", f"expected one of {', '.join(STEPS)}, got {do!r}")
        required, optional = STEPS[do]
        for key in raw:
            if key != "do" and key not in required + optional:
                r.fail(f"{where}.{key}", f"not a field of {do} (fields: {', '.join(required + optional) or 'none'})")
        for key in required:
            if key not in raw:
                r.fail(f"{where}.{key}", f"missing (a {do} step needs {', '.join(required)})")
        fields = {k: v for k, v in raw.items() if k != "do"}
        _step_fields(r, where, do, fields, names, cluster)
        if "as" in fields:
            names.add(fields["as"])
        steps.append(Step(do, fields))
    return tuple(steps)


def _step_fields(r: _Reader, where: str, do: str, f: dict, names: set, cluster: ClusterSpec) -> None:
    if "records" in f:
        r.number(f"{where}.records", f["records"], 1, 10_000)
    if "ms" in f:
        r.number(f"{where}.ms", f["ms"], 1, MAX_DELAY_MS)
    if "retries" in f:
        r.number(f"{where}.retries", f["retries"], 0, 1_000)
    for key in ("timeout_s", "for_s"):
        if key in f:
            r.number(f"{where}.{key}", f[key], 0.1, 600, float)
    for key in ("until", "state"):
        if key in f:
            if f[key] not in STATES:
                r.fail(f"{where}.{key}", f"expected one of {', '.join(STATES)}, got {f[key]!r}")
            if f[key] in NODE_STATES and "node" not in f:
                r.fail(f"{where}.node", f"missing (the state {f[key]} names a broker)")
    if "as" in f and (not isinstance(f["as"], str) or not f["as"] or f["as"] in ROLES):
        r.fail(f"{where}.as", f"expected a name other than {', '.join(ROLES)}, got {f['as']!r}")
    for key in ("node", "from"):
        if key in f:
            _node_ref(r, f"{where}.{key}", f[key], names, cluster)
    if "request" in f and f["request"] not in REQUESTS:
        r.fail(f"{where}.request", f"expected one of {', '.join(REQUESTS)}, got {f['request']!r}")


def _node_ref(r: _Reader, where: str, node, names: set, cluster: ClusterSpec) -> None:
    if isinstance(node, bool) or not (isinstance(node, (int, str))):
        r.fail(where, f"expected a role, a broker id or a bound name, got {node!r}")
    if isinstance(node, int) and not 0 <= node < cluster.brokers:
        r.fail(where, f"broker {node} does not exist (brokers 0..{cluster.brokers - 1})")
    if isinstance(node, str) and node not in ROLES and node not in names:
        r.fail(where, f'{node!r} is no role ({", ".join(ROLES)}) and no earlier step bound it with "as"')


def _expected(r: _Reader, value) -> dict:
    if not isinstance(value, dict):
        r.fail("expected", "expected an object of variant -> [outcome, ...]")

    out = {}
    for variant, outcomes in value.items():
        if variant != "*" and variant not in PROTOCOLS:
            r.fail(f"expected.{variant}", f"no such variant (variants: {', '.join(PROTOCOLS)}, or *)")
        if not isinstance(outcomes, list) or any(o not in OUTCOMES for o in outcomes):
            r.fail(f"expected.{variant}", f"expected a list of outcomes among {', '.join(OUTCOMES)}, got {outcomes!r}")
        out[variant] = tuple(outcomes)
    return out


def catalogue(folder: str | Path) -> list[Path]:
    """Every experiment file of ``folder``, by name."""
    return sorted(Path(folder).glob("*.json"))


__all__ = [
    "ClusterSpec",
    "Experiment",
    "OUTCOMES",
    "REQUESTS",
    "STATES",
    "STEPS",
    "Step",
    "catalogue",
    "load_experiment",
]
