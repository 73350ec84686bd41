"""The abstraction function: the implementation's report of itself as a reference-model state.

The simulation reports (``isrcheck.impl.sut.Report``) its logs as offset/epoch/record id, HW, HW
checkpoint, durable prefix, leader epochs, ISR views, leader-side follower state, pending
produces, fetcher state, the controller and every message in flight decoded from its wire bytes;
an external system under test sends the same report as JSON (``sut_state``). Here it becomes the
system part of a model ``State``; the ghost variables of what clients were told are the runner's
(computed from the outputs, model/history.py). Fields an older wire version does not carry are
compared in their wire view (``wire.wire_view``).

Broker epochs (KIP-903) are the controller's, globally increasing; the model counts each
broker's registrations from 0. The report names every epoch the controller gave each broker
(``registrations``, the metadata log's registration records), so an epoch becomes its index
there. Variants before kip-903 keep broker epochs at 0 / -1 in the model, and only kip-966 keeps
the unclean shutdown flag (``with_model_epochs``).
"""
from __future__ import annotations

from isrcheck.impl.sut.report import Report, controller_fields, converted, replica_fields
from isrcheck.model import (
    PROTOCOLS, AlterPartition, AlterPartitionResponse, Controller, Entry, FetchRequest, FetchResponse,
    LeaderAndIsr, Replica,
)

MS_PER_TICK = 1  # one model tick is one millisecond of the simulated clock

# message kind (docs/sut-protocol.md) -> the model's message type
MESSAGE_TYPES = {"fetch_request": FetchRequest, "fetch_response": FetchResponse,
                 "leader_and_isr": LeaderAndIsr, "alter_partition": AlterPartition,
                 "alter_partition_response": AlterPartitionResponse}


def entries(raw) -> tuple:
    return tuple(Entry(*e) for e in raw)


def message(kind: str, fields: dict):
    """A reported message (its fields by name) as the model's message tuple."""
    if kind == "fetch_response":
        fields = {**fields, "records": entries(fields["records"])}
    elif "isr" in fields:
        fields = {**fields, "isr": tuple(fields["isr"])}
    return MESSAGE_TYPES[kind](**fields)


def with_model_epochs(system: tuple, registrations: tuple, protocol: str) -> tuple:
    """``system`` (replicas, controller, the five message queues, now) with the implementation's
    broker epochs numbered as the model numbers them, and the fields the variant does not keep at
    their neutral values."""
    rules = PROTOCOLS[protocol]
    counted = rules.next_broker_epoch(0) == 1     # kip-903 on: the model counts registrations
    unclean = rules.unclean_shutdown("power")     # kip-966: the unclean shutdown flag
    index = [{e: k for k, e in enumerate(given)} for given in registrations]

    def rank(broker: int, epoch: int) -> int:  # -2: an epoch the controller never gave it
        return -1 if epoch < 0 else index[broker].get(epoch, -2)

    replicas, controller, requests, responses, lai, alters, alter_responses, now = system
    replicas = tuple(r._replace(
        broker_epoch=rank(b, r.broker_epoch) if counted else 0,
        remote_broker_epoch=tuple(rank(f, e) for f, e in enumerate(r.remote_broker_epoch)),
        pending_epochs=tuple(rank(m, e) for m, e in zip(r.pending_isr or (), r.pending_epochs)),
        unclean_shutdown=unclean and not r.alive and r.unclean_shutdown) for b, r in enumerate(replicas))
    controller = controller._replace(broker_epochs=tuple(len(g) - 1 if counted else 0 for g in registrations))
    if counted:
        requests = tuple(tuple(m._replace(broker_epoch=rank(f, m.broker_epoch)) for m in q)
                         for f, q in enumerate(requests))
        alters = tuple(tuple(m._replace(broker_epochs=tuple(rank(f, e) for f, e in zip(m.isr, m.broker_epochs)))
                             for m in q) for q in alters)
    return replicas, controller, requests, responses, lai, alters, alter_responses, now


class Abstraction:
    """The system part of the model State of one in-process simulation, after every step."""

    def __init__(self, report: Report) -> None:
        self.report = report
        self.cluster = report.cluster
        self._logs: list[tuple[tuple, tuple]] = [((), ())] * report.n  # per broker: (reported log, its entries)

    def system_state(self) -> tuple:
        """``(replicas, controller, fetch_requests, ..., alter_partition_responses, now)``."""
        snap = self.cluster.snapshot()
        replicas = tuple(Replica(log=self._log(b.broker_id, b.log), **replica_fields(b)) for b in snap.brokers)
        controller = controller_fields(snap.controller)
        registrations = controller.pop("registrations")
        return with_model_epochs((replicas, Controller(**controller), *self.report.in_flight(message),
                                  snap.now_ms // MS_PER_TICK), registrations, self.cluster.config.protocol)

    def _log(self, broker: int, log: tuple) -> tuple:
        """The model entries of a broker's log, converting only the entries after the part it shares
        with the last one, so a step costs what it changed, not the length of the log."""
        self._logs[broker] = kept = converted(self._logs[broker], self.report.log(broker, log), entries)
        return kept[1]
