"""The abstraction function: the implementation's report of itself as a reference-model state.

The simulation reports (``isrcheck.impl.sut.Report``) its logs as offset/epoch/record id, HW, HW
checkpoint, durable prefix, leader epochs, ISR views, leader-side follower state, pending
produces, fetcher state, the controller and every message in flight decoded from its wire bytes;
an external system under test sends the same report as JSON (``sut_state``). Here it becomes the
system part of a model ``State``; the ghost variables of what clients were told are the runner's
(computed from the outputs, model/history.py). Fields an older wire version does not carry are
compared in their wire view (``wire.wire_view``).
"""
from __future__ import annotations

from isrcheck.impl.sut.report import Report, controller_fields, converted, replica_fields
from isrcheck.model import (
    AlterPartition, AlterPartitionResponse, Controller, Entry, FetchRequest, FetchResponse,
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
        return (replicas, Controller(**controller_fields(snap.controller)),
                *self.report.in_flight(message), snap.now_ms // MS_PER_TICK)

    def _log(self, broker: int, log: tuple) -> tuple:
        """The model entries of a broker's log, converting only the entries after the part it shares
        with the last one, so a step costs what it changed, not the length of the log."""
        self._logs[broker] = kept = converted(self._logs[broker], self.report.log(broker, log), entries)
        return kept[1]
