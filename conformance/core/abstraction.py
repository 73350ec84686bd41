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

from isrcheck.impl.sut.report import MS_PER_TICK, Report, controller_fields, converted, replica_fields
from isrcheck.model import (
    PROTOCOLS,
    AlterPartition,
    AlterPartitionResponse,
    Controller,
    Entry,
    FetchRequest,
    FetchResponse,
    HeldRead,
    LeaderAndIsr,
    Replica,
)

# message kind (docs/sut-protocol.md) -> the model's message type
MESSAGE_TYPES = {
    "fetch_request": FetchRequest,
    "fetch_response": FetchResponse,
    "leader_and_isr": LeaderAndIsr,
    "alter_partition": AlterPartition,
    "alter_partition_response": AlterPartitionResponse,
}


def entries(raw) -> tuple:
    return tuple(Entry(*e) for e in raw)


def held_reads(raw) -> tuple:
    """Reported held reads (each its fields by name) as the model's ``HeldRead``s."""
    return tuple(HeldRead(**{**h, "records": entries(h["records"])}) for h in raw)


def message(kind: str, fields: dict):
    """A reported message (its fields by name) as the model's message tuple."""
    if kind == "fetch_response":
        fields = {**fields, "records": entries(fields["records"])}
    elif "isr" in fields:
        fields = {**fields, "isr": tuple(fields["isr"])}
    return MESSAGE_TYPES[kind](**fields)


class ModelEpochs:
    """The implementation's broker epochs numbered as the model numbers them, for one
    ``registrations`` (per broker every epoch the controller gave it), and the fields the variant
    does not keep at their neutral values."""

    def __init__(self, registrations: tuple, protocol: str) -> None:
        rules = PROTOCOLS[protocol]
        self.registrations = registrations
        self.counted = rules.next_broker_epoch(0) == 1  # kip-903 on: the model counts registrations
        self.unclean = rules.unclean_shutdown("power")  # kip-966: the unclean shutdown flag
        self._index = [{e: k for k, e in enumerate(given)} for given in registrations]

    def rank(self, broker: int, epoch: int) -> int:
        """-1 unknown; -2 an epoch the controller never gave ``broker``."""
        return -1 if epoch < 0 else self._index[broker].get(epoch, -2)

    def replica(self, b: int, r: Replica) -> Replica:
        rank = self.rank
        return r._replace(
            broker_epoch=rank(b, r.broker_epoch) if self.counted else 0,
            remote_broker_epoch=tuple(rank(f, e) for f, e in enumerate(r.remote_broker_epoch)),
            pending_epochs=tuple(rank(m, e) for m, e in zip(r.pending_isr or (), r.pending_epochs)),
            unclean_shutdown=self.unclean and (not r.alive or r.unregistered) and r.unclean_shutdown,
            held_reads=tuple(h._replace(broker_epoch=rank(h.follower, h.broker_epoch)) for h in r.held_reads)
            if self.counted
            else r.held_reads,
            cached_broker_epochs=tuple(
                rank(f, e) if self.counted or e < 0 else 0 for f, e in enumerate(r.cached_broker_epochs)
            ),
        )

    def controller(self, controller: Controller) -> Controller:
        return controller._replace(broker_epochs=tuple(len(g) - 1 if self.counted else 0 for g in self.registrations))

    def system(
        self, system: tuple, model_replicas: tuple | None = None, model_controller: Controller | None = None
    ) -> tuple:
        """``system`` (replicas, controller, the five message queues, now) in the model's
        numbering; ``model_replicas`` and ``model_controller``, if given, are already numbered."""
        replicas, controller, requests, responses, lai, alters, alter_responses, now = system
        rank, counted = self.rank, self.counted
        if model_replicas is None:
            model_replicas = tuple(self.replica(b, r) for b, r in enumerate(replicas))
        controller = self.controller(controller) if model_controller is None else model_controller
        if counted:
            requests = tuple(
                tuple(m._replace(broker_epoch=rank(f, m.broker_epoch)) for m in q) for f, q in enumerate(requests)
            )
            alters = tuple(
                tuple(m._replace(broker_epochs=tuple(rank(f, e) for f, e in zip(m.isr, m.broker_epochs))) for m in q)
                for q in alters
            )
        return model_replicas, controller, requests, responses, lai, alters, alter_responses, now


def with_model_epochs(system: tuple, registrations: tuple, protocol: str) -> tuple:
    """``system`` (replicas, controller, the five message queues, now) with the implementation's
    broker epochs numbered as the model numbers them, and the fields the variant does not keep at
    their neutral values."""
    return ModelEpochs(registrations, protocol).system(system)


class Abstraction:
    """The system part of the model State of one in-process simulation, after every step."""

    def __init__(self, report: Report) -> None:
        self.report = report
        self.cluster = report.cluster
        self._logs: list[tuple[tuple, tuple]] = [((), ())] * report.n  # per broker: (reported log, its entries)
        self._epochs: ModelEpochs | None = None
        # per broker: (its last snapshot, that snapshot as a model Replica); most steps change one
        # broker or none, and an equal snapshot under the same registrations is the same Replica
        self._replicas: list[tuple] = [(None, None)] * report.n
        self._controller: tuple = (None, None)  # the last controller state, as the model's Controller

    def system_state(self) -> tuple:
        """``(replicas, controller, fetch_requests, ..., alter_partition_responses, now)``."""
        snap = self.cluster.snapshot()
        epochs = self._epochs
        if snap.controller is not self._controller[0]:  # the controller hands out one object while unchanged
            controller = controller_fields(snap.controller)
            registrations = controller.pop("registrations")
            if epochs is None or epochs.registrations != registrations:
                epochs = self._epochs = ModelEpochs(registrations, self.cluster.config.protocol)
                self._replicas = [(None, None)] * self.report.n
            self._controller = (snap.controller, epochs.controller(Controller(**controller)))
        kept = self._replicas
        replicas = []
        for b in snap.brokers:
            i = b.broker_id
            if kept[i][0] is not b and kept[i][0] != b:  # an unchanged broker is the same snapshot
                fields = replica_fields(b, self.report.tag_epoch)
                if "held_reads" in fields:
                    fields["held_reads"] = held_reads(fields["held_reads"])
                raw = Replica(log=self._log(i, b.log), **fields)
                kept[i] = (b, epochs.replica(i, raw))
            replicas.append(kept[i][1])
        model_controller = self._controller[1]
        return epochs.system(
            (replicas, model_controller, *self.report.in_flight(message), snap.now_ms // MS_PER_TICK),
            tuple(replicas),
            model_controller,
        )

    def _log(self, broker: int, log: tuple) -> tuple:
        """The model entries of a broker's log, converting only the entries after the part it shares
        with the last one, so a step costs what it changed, not the length of the log."""
        self._logs[broker] = kept = converted(self._logs[broker], self.report.log(broker, log), entries)
        return kept[1]
