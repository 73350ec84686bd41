"""The step alphabet, defined once (docs/steps.md, "Steps"): step kinds, their fields, the message
kinds in flight, crash kinds, the error code ``NONE`` and the cluster size bound.

Everything that reads or writes steps derives from this registry: the model's parser
(``Step.from_json``) and its semantics, the schedule loader, the explorer's successor enumeration,
the random walks, the Hypothesis strategies and the conformance adapter's dispatch. A test holds
it against docs/steps.md, so a step added in one place only fails the suite.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import product
from typing import Any, Mapping, NamedTuple

NONE = "NONE"  # Kafka's Errors.NONE: the error code of a successful answer
MAX_REPLICAS = 5  # brokers of a schedule's cluster, ids 0 .. replicas - 1

ACKS = (0, 1, -1)  # producer acks; -1 is acks=all
CRASH_KINDS = ("clean", "process", "power")  # the order is also "less destructive first"

# The step names, as code spells them outside this module and model/actions.py (a test finds a
# step name spelled as a literal elsewhere); STEPS below declares each in the alphabet's order.
PRODUCE = "produce"
CONSUME = "consume"
SEND_FETCH = "send_fetch"
READ_FETCH = "read_fetch"
READ_FETCH_HW = "read_fetch_hw"
HANDLE_FETCH = "handle_fetch"
HANDLE_FETCH_RESPONSE = "handle_fetch_response"
DELIVER_LEADER_AND_ISR = "deliver_leader_and_isr"
REMOVE_FETCHER = "remove_fetcher"
UPDATE_METADATA_CACHE = "update_metadata_cache"
SHRINK_ISR = "shrink_isr"
EXPAND_ISR = "expand_isr"
HANDLE_ALTER_PARTITION = "handle_alter_partition"
HANDLE_ALTER_PARTITION_RESPONSE = "handle_alter_partition_response"
ELECT = "elect"
FENCE = "fence"
REJOIN = "rejoin"
UNFENCE = "unfence"
CONTROLLED_SHUTDOWN = "controlled_shutdown"
CRASH = "crash"
RESTART = "restart"
REGISTER = "register"
LOSE_DISK = "lose_disk"
FLUSH = "flush"
CHECKPOINT_HW = "checkpoint_hw"
TICK = "tick"
DROP = "drop"
CORRUPT = "corrupt"
FAIL_DISK = "fail_disk"
CORRUPT_LIVE = "corrupt_live"

# message kind -> the State field holding its per-replica FIFOs (docs/steps.md, "Messages in flight")
# the I/O operation of a log directory that fails, and its errno (docs/steps.md, "Disk faults")
DISK_IO = ("write:EIO", "write:ENOSPC", "fsync:EIO", "fsync:ENOSPC", "read:EIO")
TORN_TAILS = ("cut", "stale", "random")  # what a torn batch holds past its written prefix

MESSAGE_KINDS: Mapping[str, str] = {
    "fetch_request": "fetch_requests",
    "fetch_response": "fetch_responses",
    "leader_and_isr": "leader_and_isr",
    "alter_partition": "alter_partition",
    "alter_partition_response": "alter_partition_responses",
}


class Field(NamedTuple):
    """One field of a step. ``values`` lists the allowed values of a choice field in the order
    generators enumerate them; an integer field lies in ``low .. high`` (``replica`` is bounded by
    the cluster instead; ``index`` also by the messages in flight when the step runs) and generators
    enumerate its ``sample``; ``default`` is the value of an optional field left out (None: the
    field is required). ``attr`` is the ``Step`` attribute that carries it."""

    name: str
    doc: str
    attr: str
    values: tuple | None = None
    default: Any = None  # Any, not object: mypyc cannot build a NamedTuple field typed object
    low: int = 0
    high: int | None = None
    sample: tuple = ()


MAX_BATCH_RECORDS = 4  # records in one produce batch
MAX_FETCH_BATCHES = 8  # a fetch's batch limit
MAX_SURVIVING = 4  # unflushed batches a power loss keeps
MAX_INDEX = 2**31 - 1  # a FIFO position: Kafka's int32 range (a FIFO never holds more messages than steps ran)

FIELDS: Mapping[str, Field] = {
    f.name: f
    for f in (
        Field("replica", "a broker id, 0 .. replicas - 1", "replica"),
        Field("acks", "producer acks: 0, 1 or -1 (all)", "arg", ACKS),
        Field("kind", "crash kind: clean shutdown, process crash, power loss", "arg", CRASH_KINDS),
        Field("message", "message kind in flight", "arg", tuple(MESSAGE_KINDS)),
        Field("index", "position in the (kind, replica) FIFO, 0 = oldest", "index", default=0, high=MAX_INDEX),
        Field(
            "records",
            "records in the produce batch",
            "records",
            default=1,
            low=1,
            high=MAX_BATCH_RECORDS,
            sample=(1, 2, 3),
        ),
        Field(
            "max_batches",
            "whole batches a fetch response may carry, 0 = no limit",
            "max_batches",
            default=0,
            high=MAX_FETCH_BATCHES,
            sample=(0, 1, 2),
        ),
        Field(
            "survive",
            "unflushed batches that reached the disk in a power loss",
            "survive",
            default=0,
            high=MAX_SURVIVING,
            sample=(0, 1, 2),
        ),
        Field("torn", "the next unflushed batch was partly written", "torn", (False, True), default=False),
        Field(
            "tail",
            "what a torn batch holds past its written prefix: nothing, stale or random bytes",
            "tail",
            TORN_TAILS,
            default="cut",
        ),
        Field("io", "the failing I/O operation of the log directory and its errno", "arg", DISK_IO),
        # generators leave it out (None, as -1 reads): naming one follower is how a recording of Kafka's reads
        Field("follower", "the follower an ISR expansion adds, -1 = every one in sync", "arg", sample=(None,)),
    )
}
CHOICES = ("acks", "kind", "message", "io")  # the choice fields, carried as ``Step.arg``


class Fault(NamedTuple):
    """A fault class: which steps of its kind are one (``when``), the ``History`` counter that
    counts them, and the explorer's ``Scope`` bound on that counter, ``max_<counter>``. Every
    counter and bound of faults is read from here: the model's history, the explorer's scope, the
    SMT encoding and the fault budget.

    ``when``: ``always``; ``power`` (a crash of kind power); ``unfenced`` (the controller had not
    fenced the step's broker: a fast bounce); ``alive`` (the broker was alive and registered: a zombie;
    fencing a broker still starting ends its previous process's session, the other half of a fast bounce);
    ``targeted`` (an election with a target: a leader move); ``fsync`` (a failed fsync)."""

    name: str
    counter: str
    when: str
    doc: str
    loses_data: bool = False  # the broker loses what it had not fsynced (or everything)

    @property
    def bound(self) -> str:
        return f"max_{self.counter}"

    @property
    def static(self) -> bool:
        """Whether the step alone tells (``counts`` needs no state)."""
        return self.when in ("always", "power", "targeted", "fsync")

    def counts(self, st, before) -> bool:
        """Whether step ``st``, taken in state ``before``, is this fault."""
        when = self.when
        if when == "always":
            return True
        if when == "power":
            return st.arg == "power"
        if when == "fsync":
            return st.arg.startswith("fsync")
        if when == "unfenced":
            return st.replica not in before.controller.fenced
        if when == "alive":
            rep = before.replicas[st.replica]
            return rep.alive and not rep.unregistered
        return st.replica != -1  # targeted


FAULT_WHEN = ("always", "power", "unfenced", "alive", "targeted", "fsync")


class StepKind(NamedTuple):
    """A step of the alphabet: its JSON fields (besides ``"step"``), the Kafka mechanism it stands
    for, and for a step with an ``index``, the message kind whose FIFO it picks from (None: the
    step's ``message`` field names it); ``faults``: the fault classes a step of this kind may be."""

    name: str
    fields: tuple[str, ...]
    mechanism: str
    queue: str | None = None
    optional: tuple[str, ...] = ()  # fields besides those with a default that may be left out (-1 then)
    faults: tuple[Fault, ...] = ()
    weight: float = (
        1.0  # how often generators propose it when enabled, relative to the others (fault profiles start here)
    )
    lifecycle: bool = False  # part of a broker's failure and recovery (the shrinker removes these together)
    switch: str | None = None  # the explorer's Scope flag that lets steps of this kind in
    disk_fault: bool = False  # a disk fault (docs/steps.md, "Disk faults"): generators take it only when asked
    # the schedule config switch (a boolean config field) without which steps of this kind are refused:
    # generators, the explorer and the refusals proposed leave the kind out while it is off
    config: str | None = None

    @property
    def choice(self) -> str | None:
        """The step's choice field (acks, kind or message), carried as ``Step.arg``."""
        return next((f for f in self.fields if f in CHOICES), None)


# In the alphabet's order: the order of ``enabled`` and of every enumeration of steps.
STEPS: Mapping[str, StepKind] = {
    k.name: k
    for k in (
        StepKind(
            PRODUCE,
            ("replica", "acks", "records"),
            "ProduceRequest; Partition.appendRecordsToLeader with acks and min.insync.replicas",
            weight=3.0,
        ),
        StepKind(CONSUME, ("replica",), "consumer Fetch from offset 0 (reads below the HW)", switch="consumes"),
        StepKind(
            SEND_FETCH,
            ("replica", "max_batches"),
            "ReplicaFetcherThread sends a Fetch (replica.fetch.max.bytes), or OffsetsForLeaderEpoch "
            "while truncating (KIP-101)",
            weight=4.0,
        ),
        StepKind(
            READ_FETCH,
            ("replica",),
            "Partition.fetchRecords up to its read (readRecords): a leader's fetch handling begun, its "
            "update and answer left to handle_fetch (split_fetch_handling); after read_fetch_hw, "
            "readRecords' localLog.read of the batches",
            weight=2.0,
            config="split_fetch_handling",
        ),
        StepKind(
            READ_FETCH_HW,
            ("replica",),
            "Partition.readRecords up to its initialHighWatermark: "
            "a fetch's HW read, its LEO and batches left to read_fetch (split_fetch_handling)",
            weight=1.0,
            config="split_fetch_handling",
        ),
        StepKind(
            HANDLE_FETCH,
            ("replica",),
            "ReplicaManager.fetchMessages on the leader; KIP-320 epoch validation; after read_fetch, "
            "Partition.updateFollowerFetchState and the answer",
            weight=4.0,
        ),
        StepKind(
            HANDLE_FETCH_RESPONSE,
            ("replica",),
            "ReplicaFetcherThread.processPartitionData and truncation (KIP-101, KIP-279, KIP-320)",
            weight=4.0,
        ),
        StepKind(
            DELIVER_LEADER_AND_ISR,
            ("replica", "index"),
            "LeaderAndIsr; ReplicaManager.becomeLeaderOrFollower (makeLeader / makeFollower)",
            queue="leader_and_isr",
            weight=3.0,
            lifecycle=True,
        ),
        StepKind(
            REMOVE_FETCHER,
            ("replica",),
            "ReplicaFetcherManager.removeFetcherForPartitions then addFetcherForPartitions: a new follower's "
            "stale fetcher replaced after makeFollower (split_become_follower)",
            weight=2.0,
            config="split_become_follower",
        ),
        StepKind(
            UPDATE_METADATA_CACHE,
            ("replica",),
            "KRaftMetadataCachePublisher.onMetadataUpdate, KRaftMetadataCache.setImage: a broker's metadata "
            "cache takes the controller's registrations (metadata_cache)",
            weight=1.0,
            config="metadata_cache",
        ),
        StepKind(SHRINK_ISR, ("replica",), "Partition.maybeShrinkIsr (replica.lag.time.max.ms)"),
        StepKind(
            EXPAND_ISR,
            ("replica", "follower"),
            "Partition.maybeExpandIsr (KIP-320: HW reached the epoch start); Kafka adds the fetching follower",
            optional=("follower",),
            weight=2.0,
        ),
        StepKind(
            HANDLE_ALTER_PARTITION,
            ("replica",),
            "controller AlterPartition handling, leader and partition epoch fencing (KIP-497)",
            weight=2.0,
        ),
        StepKind(
            HANDLE_ALTER_PARTITION_RESPONSE,
            ("replica",),
            "AlterPartitionManager callback; Partition.handleAlterPartitionUpdate",
            weight=2.0,
        ),
        StepKind(
            ELECT,
            ("replica",),
            "controller leader election (clean, unclean.leader.election.enable); "
            "with a target, preferred replica election or controlled shutdown",
            optional=("replica",),
            faults=(
                Fault(
                    "leader_move",
                    "leader_moves",
                    "targeted",
                    "an election with a target: preferred replica election, controlled shutdown",
                ),
            ),
            weight=3.0,
        ),
        StepKind(
            FENCE,
            ("replica",),
            "broker session expiry: the controller fences the broker, which may be alive (a zombie, KAFKA-6880)",
            faults=(Fault("zombie", "zombies", "alive", "a live broker fenced: its session expired (KAFKA-6880)"),),
            weight=1.5,
            lifecycle=True,
        ),
        StepKind(REJOIN, ("replica",), "a live fenced broker re-registers with a new broker epoch", weight=1.5),
        StepKind(
            UNFENCE,
            ("replica",),
            "BrokerHeartbeatManager.calculateNextBrokerState FENCED to UNFENCED, "
            "ReplicationControlManager.handleBrokerUnfenced: a heartbeat shows the broker caught up with its "
            "registration (unfence_at_heartbeat)",
            weight=1.5,
            config="unfence_at_heartbeat",
        ),
        StepKind(
            CONTROLLED_SHUTDOWN,
            ("replica",),
            "BrokerHeartbeatManager.calculateNextBrokerState (wantShutDown), "
            "ReplicationControlManager.handleBrokerInControlledShutdown: a broker's controlled shutdown "
            "(kraft_controlled_shutdown)",
            config="kraft_controlled_shutdown",
        ),
        StepKind(
            CRASH,
            ("replica", "kind", "survive", "torn", "tail"),
            "broker failure: clean shutdown, process crash, power loss (partial write-back, torn batch)",
            faults=(
                Fault("crash", "crashes", "always", "a broker failure of any kind"),
                Fault(
                    "power_loss",
                    "power_losses",
                    "power",
                    "a power loss: what the page cache held and no fsync reached is gone",
                    loses_data=True,
                ),
            ),
            weight=0.0,
            lifecycle=True,
        ),
        StepKind(
            RESTART,
            ("replica",),
            "broker restart: log recovery (LogLoader), then registration (kip-903 on: the replayed metadata, "
            "registration by register); a fast bounce when the controller never fenced it",
            faults=(
                Fault(
                    "bounce",
                    "bounces",
                    "unfenced",
                    "a fast bounce: a restart the controller never noticed (KIP-966 unclean shutdown)",
                ),
            ),
            weight=1.5,
            lifecycle=True,
        ),
        StepKind(
            REGISTER,
            ("replica",),
            "the controller accepts a started broker's registration once its old session ended "
            "(ClusterControlManager.registerBroker; kip-903, kip-966)",
            weight=1.5,
            lifecycle=True,
        ),
        StepKind(
            LOSE_DISK,
            ("replica",),
            "a down broker's log directory replaced by an empty one (KAFKA-14139)",
            faults=(
                Fault(
                    "disk_loss", "disk_losses", "always", "a broker's log directory lost (KAFKA-14139)", loses_data=True
                ),
            ),
            weight=0.0,
        ),
        StepKind(
            FLUSH,
            ("replica",),
            "Log.flush and the replication-offset-checkpoint write",
            weight=0.5,
            lifecycle=True,
            switch="flushes",
        ),
        StepKind(
            CHECKPOINT_HW,
            ("replica",),
            "ReplicaManager.checkpointHighWatermarks without a log flush",
            weight=0.5,
            switch="hw_checkpoints",
        ),
        StepKind(TICK, (), "clock advance: DelayedProduce expiry (request.timeout.ms), replica lag"),
        StepKind(
            DROP,
            ("message", "replica", "index"),
            "network loss of one in-flight message",
            faults=(Fault("drop", "drops", "always", "a message lost by the network"),),
            weight=0.0,
        ),
        # the disk faults come last: the order of every other step's enumeration stays as it was
        StepKind(
            CORRUPT,
            ("replica",),
            "a flushed batch corrupted at rest, found by log recovery's CRC check (LogSegment.recover)",
            faults=(
                Fault(
                    "corruption",
                    "corruptions",
                    "always",
                    "a flushed batch corrupted at rest (bit rot)",
                    loses_data=True,
                ),
            ),
            weight=0.0,
            disk_fault=True,
        ),
        StepKind(
            FAIL_DISK,
            ("replica", "io"),
            "an I/O error of the log directory: LogDirFailureChannel takes it "
            "offline (KIP-112), the broker halts, the controller elects elsewhere",
            faults=(
                Fault(
                    "disk_failure",
                    "disk_failures",
                    "always",
                    "a write, fsync or read of the log directory failed (EIO, ENOSPC)",
                ),
                Fault(
                    "fsync_failure",
                    "fsync_failures",
                    "fsync",
                    "a failed fsync: the dirty pages are dropped, what was not durable is gone",
                    loses_data=True,
                ),
            ),
            weight=0.0,
            disk_fault=True,
        ),
        StepKind(
            CORRUPT_LIVE,
            ("replica",),
            "a flushed batch corrupted at rest under a live broker, found by a read: "
            "the follower's CRC check refuses it (appendAsFollower), a consumer's fetch fails",
            faults=(
                Fault(
                    "live_corruption",
                    "live_corruptions",
                    "always",
                    "a flushed batch of a live broker corrupted at rest (bit rot)",
                    loses_data=True,
                ),
            ),
            weight=0.0,
            disk_fault=True,
        ),
    )
}


def configured(cfg, kind: StepKind) -> bool:
    """Whether steps of ``kind`` may be taken under the schedule config ``cfg`` (its ``config`` switch on)."""
    return kind.config is None or bool(getattr(cfg, kind.config))


# Every fault class, in the alphabet's order of their step kinds.
FAULTS: tuple[Fault, ...] = tuple(f for kind in STEPS.values() for f in kind.faults)


class InvalidStep(ValueError):
    """A step that is not of the schedule format (unknown name, missing or bad field). ``field``
    names the offending field ("step" for the name, None for the whole step); ``detail`` says what
    is wrong with it, so a schedule loader can name the place (``steps[3].acks: ...``)."""

    def __init__(self, name: object, field: str | None, detail: str) -> None:
        super().__init__(f"{name if isinstance(name, str) else shown(name)}: {detail}")
        self.field, self.detail = field, detail


def shown(value: object, limit: int = 40) -> str:
    """``repr(value)`` cut to ``limit`` characters: a message names a bad value without echoing a
    whole document (nor failing on one nested too deeply or an int too long to print)."""
    try:
        text = repr(value)
    except (ValueError, RecursionError):
        return f"<{type(value).__name__} too large to show>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def shown_key(key: object) -> str:
    """An unknown key as a message names its place (``steps[3].<key>``): as is, or like ``shown``
    when long or not printable (a lone surrogate cannot even be written to a terminal)."""
    return key if isinstance(key, str) and len(key) <= 40 and key.isprintable() else shown(key)


def check_replica(name: str, replica: object, replicas: int, field: str = "replica") -> None:
    """Raise InvalidStep unless ``replica`` is a broker id of a cluster of ``replicas``."""
    if not 0 <= replica < replicas:  # type: ignore[operator]
        raise InvalidStep(name, field, f"expected a replica id 0..{replicas - 1}, got {shown(replica)} (out of range)")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class Step(NamedTuple):
    """One schedule step. ``arg`` is the value of the step's choice field (acks, kind, message or io);
    the other attributes are the fields of the same name (-1: an optional ``replica`` left out)."""

    name: str
    replica: int = -1
    arg: Any = None
    index: int = 0  # type: ignore[assignment]  # the field shadows tuple.index, as the schedule names it
    records: int = 1
    max_batches: int = 0
    survive: int = 0
    torn: bool = False
    tail: str = "cut"

    def __repr__(self) -> str:
        # a tail at its default is left out, so traces hashed before torn tails existed hash the same
        if self[8] == "cut":
            return _STEP_REPR % self[:8]
        return _STEP_REPR_TAIL % self

    @property
    def kind(self) -> StepKind:
        return STEPS[self.name]

    def field_values(self) -> tuple:
        """The values of the step's fields, in the order of ``STEPS[name].fields``, as the driver
        protocol carries them (an optional choice left out, None here, is -1 there)."""
        kind = STEPS[self.name]
        values = tuple(getattr(self, FIELDS[f].attr) for f in kind.fields)
        if None in values:
            return tuple(-1 if v is None and f in kind.optional else v for f, v in zip(kind.fields, values))
        return values

    def to_json(self) -> dict:
        """The canonical dict: optional fields at their default are left out, except ``index``."""
        kind = STEPS[self.name]
        out: dict = {"step": self.name}
        for f, value in zip(kind.fields, self.field_values()):
            default = -1 if f in kind.optional else FIELDS[f].default
            if f == "index" or default is None or value != default:
                out[f] = value
        return out

    @classmethod
    def from_json(cls, step, replicas: int | None = None) -> "Step":
        """Parse and validate a step dict (replica ids too, given ``replicas``); raises InvalidStep
        naming the field and what is wrong with it."""
        if isinstance(step, Step):
            return step
        if not isinstance(step, Mapping):
            raise InvalidStep("step", None, f'expected an object like {{"step": "tick"}}, got {shown(step)}')
        name = step.get("step")
        if not isinstance(name, str) or name not in STEPS:
            raise InvalidStep(name, "step", f"unknown step {shown(name)} (known: {', '.join(STEPS)})")
        kind = STEPS[name]
        extra = sorted((k for k in step if k not in kind.fields and k != "step"), key=str)
        if extra:
            raise InvalidStep(
                name,
                shown_key(extra[0]),
                f"not a field of step {name!r} (unexpected field; it takes {', '.join(kind.fields) or 'no fields'})",
            )
        values: dict[str, Any] = {}
        for f in kind.fields:
            spec = FIELDS[f]
            if f not in step:
                if f in kind.optional:  # a choice field's stays None, as a step built in code has it
                    values[spec.attr] = None if spec.attr == "arg" else -1
                elif spec.default is not None:
                    values[spec.attr] = spec.default
                else:
                    raise InvalidStep(name, f, f"missing field {f!r} (step {name!r} needs {', '.join(kind.fields)})")
                continue
            values[spec.attr] = _checked(name, spec, step[f], replicas)
        misplaced = _misplaced(name, values)
        if misplaced:
            if misplaced == "tail" and values["arg"] == "power":
                raise InvalidStep(name, misplaced, "tail belongs to a torn power loss only (torn is false)")
            raise InvalidStep(name, misplaced, f"{misplaced} belongs to a power loss only (kind {values['arg']!r})")
        return cls(name, **values)


# ``Step``'s repr (a hot path: every step of a run is hashed by it), as a NamedTuple writes it
_STEP_REPR_TAIL = "Step(" + ", ".join(f"{name}=%r" for name in Step._fields) + ")"
_STEP_REPR = _STEP_REPR_TAIL.replace(", tail=%r", "")


def is_step(step: object) -> bool:
    """Whether ``step`` is a step of the alphabet: known name, valid fields that fit together."""
    try:
        Step.from_json(step)
    except InvalidStep:
        return False
    return True


def _misplaced(name: str, values: Mapping[str, object]) -> str | None:
    """The field that does not fit the others: ``survive``/``torn``/``tail`` of a crash that is no
    power loss, or a ``tail`` of one that tore nothing."""
    if name == "crash" and values["arg"] != "power":
        return next((f for f in ("survive", "torn", "tail") if values[f] != FIELDS[f].default), None)
    if name == "crash" and not values["torn"] and values["tail"] != FIELDS["tail"].default:
        return "tail"
    return None


def is_disk_fault(st: Step) -> bool:
    """Whether ``st`` is a disk fault (docs/steps.md, "Disk faults"): a step of such a kind, or a
    torn power loss whose tail holds garbage. Generators leave these out unless asked, so that
    schedules drawn without them stay what they were."""
    return STEPS[st.name].disk_fault or st.tail != "cut"


def _checked(name: str, spec: Field, value: Any, replicas: int | None) -> object:
    """``value`` if it is a valid value of field ``spec``, else InvalidStep naming the field."""
    f = spec.name
    if spec.values is not None:
        if all(isinstance(v, bool) for v in spec.values):
            valid = isinstance(value, bool)
        elif all(_is_int(v) for v in spec.values):
            if not _is_int(value):
                raise InvalidStep(name, f, f"{f} must be an integer, got {shown(value)}")
            valid = value in spec.values
        else:
            valid = isinstance(value, str) and value in spec.values
        if not valid:
            choices = ", ".join(str(v).lower() if isinstance(v, bool) else str(v) for v in spec.values)
            raise InvalidStep(name, f, f"{f} must be one of {choices}, got {shown(value)}")
        return value
    if not _is_int(value):
        raise InvalidStep(name, f, f"{f} must be an integer, got {shown(value)}")
    if f == "replica" or (f == "follower" and value != -1):
        check_replica(name, value, MAX_REPLICAS if replicas is None else replicas, f)
        return value
    if f == "follower":
        return None  # -1: every follower in sync, as when it is left out
    if value < spec.low or (spec.high is not None and value > spec.high):
        bound = f"{spec.low}..{spec.high}" if spec.high is not None else f">= {spec.low}"
        raise InvalidStep(name, f, f"{f} must be {bound}, got {shown(value)}")
    return value


def _choices(kind: StepKind, f: str, replicas: int) -> tuple:
    """The values generators enumerate for field ``f`` of ``kind`` (all but ``index``)."""
    spec = FIELDS[f]
    if f == "replica":
        return ((-1,) if f in kind.optional else ()) + tuple(range(replicas))
    return spec.values if spec.values is not None else spec.sample


def steps_of(kind: StepKind, replicas: int, state=None) -> list[Step]:
    """Every step of ``kind`` that generators enumerate, in the order of its fields (replicas by
    id, choices in the alphabet's order, integer fields by their ``sample``, messages oldest
    first). A step with an ``index`` takes one step per message in flight in ``state``; the others
    do not depend on the state."""
    name = kind.name
    combos = _combos(kind, replicas)
    if "index" not in kind.fields:
        return [Step(name, **c) for c in combos]
    out = []
    for c in combos:
        queue = getattr(state, MESSAGE_KINDS[kind.queue or c["arg"]])[c["replica"]]
        if queue:
            out += [Step(name, index=i, **c) for i in range(len(queue))]
    return out


def every_step(replicas: int, state) -> list[Step]:
    """Every step generators may propose in ``state``, enabled or not, in the alphabet's order: the
    enumerated steps of each kind, and for a step with an ``index``, every position of its FIFO and
    the one just past its end (refused: no such message), for every replica and choice."""
    out: list[Step] = []
    for kind, steps in step_kinds(replicas):
        if steps is not None:
            out += steps
            continue
        for c in _combos(kind, replicas):
            queue = getattr(state, MESSAGE_KINDS[kind.queue or c["arg"]])[c["replica"]]
            out += [Step(kind.name, index=i, **c) for i in range(len(queue) + 1)]
    return out


@lru_cache(maxsize=None)
def _combos(kind: StepKind, replicas: int) -> tuple[dict, ...]:
    """The field values (by ``Step`` attribute) of every step of ``kind`` but its ``index``."""
    fields = [f for f in kind.fields if f != "index"]
    attrs = [FIELDS[f].attr for f in fields]
    combos = (dict(zip(attrs, values)) for values in product(*(_choices(kind, f, replicas) for f in fields)))
    return tuple(c for c in combos if _misplaced(kind.name, c) is None)


@lru_cache(maxsize=64)
def configured_kinds(cfg) -> tuple[tuple[StepKind, tuple[Step, ...] | None], ...]:
    """``step_kinds`` of ``cfg``'s cluster without the kinds its config switches off (``configured``)."""
    return tuple((kind, steps) for kind, steps in step_kinds(cfg.replicas) if configured(cfg, kind))


@lru_cache(maxsize=None)
def step_kinds(replicas: int) -> tuple[tuple[StepKind, tuple[Step, ...] | None], ...]:
    """Per step kind in the alphabet's order, its steps for a cluster of ``replicas`` when they
    do not depend on the state, else None (steps with an ``index``: ``steps_of`` with the state)."""
    return tuple((kind, None if "index" in kind.fields else tuple(steps_of(kind, replicas))) for kind in STEPS.values())
