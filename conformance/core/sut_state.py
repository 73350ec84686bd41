"""An external system's state report (docs/sut-protocol.md, "The state") as the system part of a
model State, checked field by field: a report that is not of the protocol's form is a
``SutFailure("malformed", ...)`` naming the place (``state.replicas[1].hw: expected an integer``),
never a divergence.
"""

from __future__ import annotations

from isrcheck.conformance.core.abstraction import MESSAGE_TYPES, entries, held_reads, message, with_model_epochs
from isrcheck.conformance.core.sut import SutFailure
from isrcheck.model import Controller, Replica
from isrcheck.model.alphabet import MESSAGE_KINDS, shown
from isrcheck.model.state import fetch_state


def _int(v, where):
    if type(v) is not int:
        raise SutFailure("malformed", f"{where}: expected an integer, got {shown(v)}")
    return v


def _bool(v, where):
    if type(v) is not bool:
        raise SutFailure("malformed", f"{where}: expected true or false, got {shown(v)}")
    return v


def _str(v, where):
    if type(v) is not str:
        raise SutFailure("malformed", f"{where}: expected a string, got {shown(v)}")
    return v


def _list(v, where, n: int | None = None) -> list:
    if type(v) is not list:
        raise SutFailure("malformed", f"{where}: expected an array, got {shown(v)}")
    if n is not None and len(v) != n:
        raise SutFailure("malformed", f"{where}: expected {n} items, got {len(v)}")
    return v


def _ints(v, where):
    return tuple(_int(x, f"{where}[{k}]") for k, x in enumerate(_list(v, where)))


def _optional_ints(v, where):
    return None if v is None else _ints(v, where)


def _rows(width: int):
    def check(v, where):
        return tuple(
            tuple(_int(x, f"{where}[{k}][{j}]") for j, x in enumerate(_list(row, f"{where}[{k}]", width)))
            for k, row in enumerate(_list(v, where))
        )

    return check


_ENTRIES = _rows(4)  # [offset, leader epoch, record, base offset]


def _lists_of_ints(v, where):
    return tuple(_ints(row, f"{where}[{k}]") for k, row in enumerate(_list(v, where)))


# every field of each object of the report, with its check (docs/sut-protocol.md)
SCHEMA = {
    "replica": {
        "alive": _bool,
        "log": _ENTRIES,
        "durable": _int,
        "hw": _int,
        "hw_checkpoint": _int,
        "leader": _int,
        "leader_epoch": _int,
        "isr": _ints,
        "partition_epoch": _int,
        "epoch_start_offset": _int,
        "remote_leo": _ints,
        "last_caught_up": _ints,
        "pending_isr": _optional_ints,
        "pending_produces": _rows(4),
        "truncating_epoch": _int,
        "power_lost": _bool,
        "broker_epoch": _int,
        "remote_broker_epoch": _ints,
        "pending_epochs": _ints,
        "unclean_shutdown": _bool,
    },
    "controller": {
        "leader": _int,
        "leader_epoch": _int,
        "isr": _ints,
        "partition_epoch": _int,
        "fenced": _ints,
        "broker_epochs": _ints,
        "elr": _ints,
        "last_known_leader": _int,
        "registrations": _lists_of_ints,
    },
    "fetch_request": {
        "leader": _int,
        "leader_epoch": _int,
        "fetch_offset": _int,
        "last_fetched_epoch": _int,
        "query_epoch": _int,
        "max_batches": _int,
        "broker_epoch": _int,
    },
    "fetch_response": {
        "leader": _int,
        "leader_epoch": _int,
        "error": _str,
        "kind": _str,
        "records": _ENTRIES,
        "leader_hw": _int,
        "epoch": _int,
        "end_offset": _int,
    },
    "leader_and_isr": {"leader": _int, "leader_epoch": _int, "isr": _ints, "partition_epoch": _int},
    "alter_partition": {"leader_epoch": _int, "partition_epoch": _int, "isr": _ints, "broker_epochs": _ints},
    "alter_partition_response": {
        "error": _str,
        "leader_epoch": _int,
        "isr": _ints,
        "partition_epoch": _int,
        "request_leader_epoch": _int,
    },
}
# fields an object may leave out, with the value that means (a damaged batch and an orphan are
# rare: -1 none, false)
OPTIONAL = {
    "replica": {
        "bad_batch": -1,
        "unregistered": False,
        "held_reads": (),
        "stale_fetcher": (),
        "last_fetch_leo": (),
        "last_fetch_time": (),
        "cached_broker_epochs": (),
    },
    "controller": {"awaiting_unfence": (), "in_controlled_shutdown": ()},
    "fetch_request": {"orphan": False},
    "fetch_response": {"bad_batch": -1},
    "leader_and_isr": {"registration": False},
    "alter_partition": {"orphan": False},
    # only while the batches are still to read (read_fetch_hw)
    "held_read": {"hw_only": False, "max_batches": 0},
}
# a leader's held reads (split_fetch_handling): per follower Fetch read, its fields by name
HELD_READ = {
    "follower": _int,
    "leader_epoch": _int,
    "fetch_offset": _int,
    "broker_epoch": _int,
    "fetch_time": _int,
    "leo_read": _int,
    "hw": _int,
    "records": _ENTRIES,
    "bad_batch": _int,
    "orphan": _bool,
    "detached": _bool,
}


def _held_reads(v, where):
    return tuple(_object("held_read", h, f"{where}[{k}]", HELD_READ) for k, h in enumerate(_list(v, where)))


# the check of an optional field: by its name, else by its default's type
_CHECKS = {
    "held_reads": _held_reads,
    "stale_fetcher": _ints,
    "last_fetch_leo": _ints,
    "last_fetch_time": _ints,
    "cached_broker_epochs": _ints,
    "awaiting_unfence": _ints,
    "in_controlled_shutdown": _ints,
}
for _kind, _fields in OPTIONAL.items():
    {**SCHEMA, "held_read": HELD_READ}[_kind].update(
        {name: _CHECKS.get(name, _bool if default is False else _int) for name, default in _fields.items()}
    )
# the model type each object of the report becomes (a test holds SCHEMA to their fields)
TYPES = {"replica": Replica, "controller": Controller, **MESSAGE_TYPES}


def _object(kind: str, v, where, schema: dict | None = None) -> dict:
    if type(v) is not dict:
        raise SutFailure("malformed", f"{where}: expected an object, got {shown(v)}")
    schema = schema or SCHEMA[kind]
    for name in v:
        if name not in schema:
            raise SutFailure("malformed", f"{where}.{shown(name)}: not a field of {kind}")
    out = {}
    optional = OPTIONAL.get(kind, {})
    for name, check in schema.items():
        if name not in v:
            if name in optional:
                out[name] = optional[name]
                continue
            raise SutFailure("malformed", f"{where}.{name}: missing")
        out[name] = check(v[name], f"{where}.{name}")
    return out


def system_state(doc, replicas: int, protocol: str) -> tuple:
    """The system part of a model State from a report of a cluster of ``replicas`` brokers
    running ``protocol``."""
    state = _object_of(doc, "state", ("replicas", "controller", "messages", "now"))
    out = []
    for k, r in enumerate(_list(state["replicas"], "state.replicas", replicas)):
        fields = _object("replica", r, f"state.replicas[{k}]")
        fields.update(fetch_state(fields["last_fetch_leo"], fields["last_fetch_time"]))  # all neutral: ()
        out.append(Replica(**{**fields, "log": entries(fields["log"]), "held_reads": held_reads(fields["held_reads"])}))
    fields = _object("controller", state["controller"], "state.controller")
    registrations = fields.pop("registrations")
    controller = Controller(**fields)
    if len(registrations) != replicas or any(
        e >= 0 and e not in given for e, given in zip(controller.broker_epochs, registrations)
    ):
        raise SutFailure(
            "malformed", "state.controller.registrations: expected one list per broker holding its broker_epochs entry"
        )
    messages = _object_of(state["messages"], "state.messages", tuple(MESSAGE_KINDS))
    queues = []
    for kind in MESSAGE_KINDS:
        where = f"state.messages.{kind}"
        queues.append(
            tuple(
                tuple(
                    message(kind, _object(kind, m, f"{where}[{r}][{j}]"))
                    for j, m in enumerate(_list(q, f"{where}[{r}]"))
                )
                for r, q in enumerate(_list(messages[kind], where, replicas))
            )
        )
    return with_model_epochs(
        (tuple(out), controller, *queues, _int(state["now"], "state.now")), registrations, protocol
    )


def _object_of(v, where: str, names: tuple) -> dict:
    if type(v) is not dict:
        raise SutFailure("malformed", f"{where}: expected an object, got {shown(v)}")
    for name in names:
        if name not in v:
            raise SutFailure("malformed", f"{where}.{name}: missing")
    extra = sorted(k for k in v if k not in names)
    if extra:
        raise SutFailure("malformed", f"{where}.{shown(extra[0])}: unknown field")
    return v


# the client outputs of docs/steps.md, by type
OUTPUTS = {
    "produce": {
        "type": _str,
        "replica": _int,
        "record": _int,
        "records": _int,
        "acks": _int,
        "error": _str,
        "offset": _int,
    },
    "consume": {"type": _str, "replica": _int, "error": _str, "hw": _int, "records": _rows(2)},
}


def outputs(v) -> list[dict]:
    """The client outputs of a step answer, checked to be of docs/steps.md's output form."""
    out = []
    for k, o in enumerate(_list(v, "outputs")):
        kind = o.get("type") if type(o) is dict else None
        if kind not in OUTPUTS:
            raise SutFailure("malformed", f"outputs[{k}].type: expected produce or consume, got {shown(kind)}")
        fields = _object(kind, o, f"outputs[{k}]", OUTPUTS[kind])
        if kind == "consume":  # as the in-process adapter gives them: [offset, record] lists
            fields["records"] = [list(pair) for pair in fields["records"]]
        out.append(fields)
    return out
