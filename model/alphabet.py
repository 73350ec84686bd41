"""The step alphabet, defined once (docs/steps.md, "Steps"): step kinds, their fields, the message
kinds in flight, crash kinds, the error code ``NONE`` and the cluster size bound.

Everything that reads or writes steps derives from this registry: the model's parser
(``Step.from_json``) and its semantics, the schedule loader, the explorer's successor enumeration,
the random walks, the Hypothesis strategies and the conformance adapter's dispatch. A test holds
it against docs/steps.md, so a step added in one place only fails the suite.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Mapping, NamedTuple

NONE = "NONE"      # Kafka's Errors.NONE: the error code of a successful answer
MAX_REPLICAS = 5   # brokers of a schedule's cluster, ids 0 .. replicas - 1

ACKS = (0, 1, -1)                          # producer acks; -1 is acks=all
CRASH_KINDS = ("clean", "process", "power")  # the order is also "less destructive first"

# message kind -> the State field holding its per-replica FIFOs (docs/steps.md, "Messages in flight")
MESSAGE_KINDS: Mapping[str, str] = {
    "fetch_request": "fetch_requests",
    "fetch_response": "fetch_responses",
    "leader_and_isr": "leader_and_isr",
    "alter_partition": "alter_partition",
    "alter_partition_response": "alter_partition_responses",
}


class Field(NamedTuple):
    """One field of a step. ``values`` lists the allowed values of a choice field in the order
    generators enumerate them; ``replica`` is bounded by the cluster, ``index`` by the messages in
    flight; ``default`` is the value of an optional field left out."""

    name: str
    doc: str
    values: tuple | None = None
    default: int | None = None


FIELDS: Mapping[str, Field] = {f.name: f for f in (
    Field("replica", "a broker id, 0 .. replicas - 1"),
    Field("acks", "producer acks: 0, 1 or -1 (all)", ACKS),
    Field("kind", "crash kind: clean shutdown, process crash, power loss", CRASH_KINDS),
    Field("message", "message kind in flight", tuple(MESSAGE_KINDS)),
    Field("index", "position in the (kind, replica) FIFO, 0 = oldest", default=0),
)}
CHOICES = tuple(name for name, f in FIELDS.items() if f.values is not None)


class StepKind(NamedTuple):
    """A step of the alphabet: its JSON fields (besides ``"step"``), the Kafka mechanism it stands
    for, and for a step with an ``index``, the message kind whose FIFO it picks from (None: the
    step's ``message`` field names it)."""

    name: str
    fields: tuple[str, ...]
    mechanism: str
    queue: str | None = None

    @property
    def choice(self) -> str | None:
        """The step's choice field (acks, kind or message), carried as ``Step.arg``."""
        return next((f for f in self.fields if f in CHOICES), None)


# In the alphabet's order: the order of ``enabled`` and of every enumeration of steps.
STEPS: Mapping[str, StepKind] = {k.name: k for k in (
    StepKind("produce", ("replica", "acks"),
             "ProduceRequest; Partition.appendRecordsToLeader with acks and min.insync.replicas"),
    StepKind("consume", ("replica",), "consumer Fetch from offset 0 (reads below the HW)"),
    StepKind("send_fetch", ("replica",),
             "ReplicaFetcherThread sends a Fetch, or OffsetsForLeaderEpoch while truncating (KIP-101)"),
    StepKind("handle_fetch", ("replica",),
             "ReplicaManager.fetchMessages on the leader; KIP-320 epoch validation"),
    StepKind("handle_fetch_response", ("replica",),
             "ReplicaFetcherThread.processPartitionData and truncation (KIP-101, KIP-279, KIP-320)"),
    StepKind("deliver_leader_and_isr", ("replica", "index"),
             "LeaderAndIsr; ReplicaManager.becomeLeaderOrFollower (makeLeader / makeFollower)",
             queue="leader_and_isr"),
    StepKind("shrink_isr", ("replica",), "Partition.maybeShrinkIsr (replica.lag.time.max.ms)"),
    StepKind("expand_isr", ("replica",), "Partition.maybeExpandIsr (KIP-320: HW reached the epoch start)"),
    StepKind("handle_alter_partition", ("replica",),
             "controller AlterPartition handling, leader and partition epoch fencing (KIP-497)"),
    StepKind("handle_alter_partition_response", ("replica",),
             "AlterPartitionManager callback; Partition.handleAlterPartitionUpdate"),
    StepKind("elect", (), "controller leader election, clean or unclean.leader.election.enable"),
    StepKind("fence", ("replica",), "broker session expiry: the controller fences the broker"),
    StepKind("crash", ("replica", "kind"), "broker failure: clean shutdown, process crash, power loss"),
    StepKind("restart", ("replica",), "broker restart: log recovery (LogLoader), registration"),
    StepKind("flush", ("replica",), "Log.flush and the replication-offset-checkpoint write"),
    StepKind("tick", (), "clock advance: DelayedProduce expiry (request.timeout.ms), replica lag"),
    StepKind("drop", ("message", "replica", "index"), "network loss of one in-flight message"),
)}


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


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class Step(NamedTuple):
    """One schedule step. ``arg`` is the value of the step's choice field (acks, kind or message)."""

    name: str
    replica: int = -1
    arg: object = None
    index: int = 0

    @property
    def kind(self) -> StepKind:
        return STEPS[self.name]

    def field_values(self) -> tuple:
        """The values of the step's fields, in the order of ``STEPS[name].fields``."""
        return tuple(self.replica if f == "replica" else self.index if f == "index" else self.arg
                     for f in STEPS[self.name].fields)

    def to_json(self) -> dict:
        return {"step": self.name, **dict(zip(STEPS[self.name].fields, self.field_values()))}

    @classmethod
    def from_json(cls, step, replicas: int | None = None) -> "Step":
        """Parse and validate a step dict (replica ids too, given ``replicas``); raises InvalidStep
        naming the field and what is wrong with it."""
        if isinstance(step, Step):
            return step
        if not isinstance(step, Mapping):
            raise InvalidStep("step", None, f"expected an object like {{\"step\": \"tick\"}}, got {step!r}")
        name = step.get("step")
        if not isinstance(name, str) or name not in STEPS:
            raise InvalidStep(name, "step", f"unknown step {name!r} (known: {', '.join(STEPS)})")
        fields = STEPS[name].fields
        extra = sorted(set(step) - set(fields) - {"step"})
        if extra:
            raise InvalidStep(name, extra[0], f"not a field of step {name!r} (unexpected field; it takes "
                                              f"{', '.join(fields) or 'no fields'})")
        values = {}
        for f in fields:
            spec = FIELDS[f]
            if f not in step:
                if spec.default is None:
                    raise InvalidStep(name, f, f"missing field {f!r} (step {name!r} needs {', '.join(fields)})")
                values[f] = spec.default
                continue
            value = values[f] = step[f]
            if spec.values is None or all(_is_int(v) for v in spec.values):
                if not _is_int(value):
                    raise InvalidStep(name, f, f"{f} must be an integer, got {value!r}")
            if spec.values is not None and value not in spec.values:
                raise InvalidStep(name, f, f"{f} must be one of {', '.join(map(str, spec.values))}, got {value!r}")
        if "index" in values and values["index"] < 0:
            raise InvalidStep(name, "index", f"index must be >= 0, got {values['index']}")
        if "replica" in values and replicas is not None:
            check_replica(name, values["replica"], replicas)
        choice = STEPS[name].choice
        return cls(name, values.get("replica", -1), values.get(choice) if choice else None, values.get("index", 0))


def steps_of(kind: StepKind, replicas: int, state=None) -> list[Step]:
    """Every step of ``kind`` with in-range fields, in the order of its fields (replicas by id,
    choices in the alphabet's order, messages oldest first). A step with an ``index`` takes one
    step per message in flight in ``state``; the others do not depend on the state."""
    name = kind.name
    rng = range(replicas) if "replica" in kind.fields else (-1,)
    choice = kind.choice
    values = FIELDS[choice].values if choice else (None,)
    if "index" not in kind.fields:
        return [Step(name, r, v) for r in rng for v in values]
    if kind.queue is not None:
        queues = getattr(state, MESSAGE_KINDS[kind.queue])
        return [Step(name, r, None, i) for r in rng for i in range(len(queues[r]))]
    return [Step(name, r, v, i) for v in values
            for r, queue in enumerate(getattr(state, MESSAGE_KINDS[v])) for i in range(len(queue))]


@lru_cache(maxsize=None)
def step_kinds(replicas: int) -> tuple[tuple[StepKind, tuple[Step, ...] | None], ...]:
    """Per step kind in the alphabet's order, its steps for a cluster of ``replicas`` when they
    do not depend on the state, else None (steps with an ``index``: ``steps_of`` with the state)."""
    return tuple((kind, None if "index" in kind.fields else tuple(steps_of(kind, replicas)))
                 for kind in STEPS.values())
