"""The abstraction function: the implementation's state as a reference-model ``State``.

It reads the cluster's snapshot (logs as offset/epoch/record id, HW, HW checkpoint, durable
prefix, leader epochs, ISR views, leader-side follower state, pending produces, fetcher state,
the controller), decodes every in-flight message from its wire bytes into the model's message
tuple, and adds the ghost variables of what the implementation's clients were told.

Two things are not on the wire and come from the adapter's records: the (leader, leader epoch)
a fetch was sent under (Kafka keeps it with the request, keyed here by correlation id), and the
client history. Broker epochs (KIP-903) are the controller's, globally increasing; the model
counts each broker's registrations from 0, so an epoch becomes its rank among the epochs the
controller gave that broker (recorded here as they appear); before kip-903 the model keeps them
at 0 and the implementation's do not count. Fields an older wire version does not carry are compared in their wire view
(``wire.wire_view``).
"""
from __future__ import annotations

from isrcheck.impl.protocol import CODEC, Errors, OffsetForLeaderEpochResponse
from isrcheck.impl.storage import iter_batches
from isrcheck.model import (
    AlterPartition, AlterPartitionResponse, Controller, Entry, FetchRequest, FetchResponse,
    LeaderAndIsr, Replica, State,
)
from isrcheck.model.alphabet import MESSAGE_KINDS, NONE
from isrcheck.model.history import EMPTY_HISTORY

from .diff import common_prefix

MS_PER_TICK = 1  # one model tick is one millisecond of the simulated clock


class Abstraction:
    """Builds the model State of one Cluster; ``state()`` after every step."""

    def __init__(self, cluster) -> None:
        self.cluster = cluster
        self.n = cluster.config.replicas
        self.protocol = cluster.config.protocol
        self._tags: dict[tuple[int, int], tuple[int, int]] = {}  # (follower, correlation) -> tag
        self._alter_epochs: dict[tuple[int, int], int] = {}  # (leader, correlation) -> request's leader epoch
        self._messages: dict[tuple, object] = {}  # the messages in flight at the last state(), decoded
        self._logs: list[tuple[tuple, tuple]] = [((), ())] * self.n  # per broker: (snapshot log, its entries)
        self.history = EMPTY_HISTORY
        variant = cluster.config.variant
        self._broker_epochs = variant.broker_epochs
        self._elr = variant.eligible_leader_replicas
        # per broker, the broker epochs the controller gave it, in order (index = the model's epoch)
        self._registrations = [[e] for e in cluster.snapshot().controller.broker_epochs]

    # -- what the adapter reports ----------------------------------------------------------------
    def fetch_sent(self, follower: int, correlation: int | None, tag: tuple[int, int]) -> None:
        if correlation is not None:
            self._tags[(follower, correlation)] = tag

    def alter_partition_handled(self, leader: int) -> None:
        """The controller is about to handle ``leader``'s oldest AlterPartition: its response (same
        correlation id) belongs to that request's leader epoch, which the response does not carry."""
        queue = self.cluster.network.queue(("alter_partition", leader))
        if queue:
            header = CODEC.decode_header(queue[0].frame)
            body = CODEC.decode_body(header, queue[0].frame)
            self._alter_epochs[(leader, header.correlation_id)] = body.leader_epoch

    def step_taken(self, st, outputs: list[dict], before: State | None) -> None:
        """The ghost history after a step the implementation took (in abstract state ``before``)
        and what its clients were told, by the model's own bookkeeping (model/history.py)."""
        self.history = self.history.after(st, outputs, before)

    # -- the abstract state ----------------------------------------------------------------------
    def state(self) -> State:
        snap = self.cluster.snapshot()
        c = snap.controller
        for b, epoch in enumerate(c.broker_epochs):
            if epoch != self._registrations[b][-1]:
                self._registrations[b].append(epoch)
        queues = self._in_flight()
        registered = tuple(len(r) - 1 if self._broker_epochs else 0 for r in self._registrations)
        return State(
            tuple(self._replica(b) for b in snap.brokers),
            Controller(c.leader, c.leader_epoch, tuple(c.isr), c.partition_epoch, tuple(sorted(c.fenced)),
                       registered, tuple(c.elr), c.last_known_leader),
            *queues, snap.now_ms // MS_PER_TICK, *self.history)

    def _epoch(self, broker: int, epoch: int) -> int:
        """The model's broker epoch of ``broker``'s implementation epoch ``epoch`` (-1 unknown; -2 one
        the controller never gave it, which no model state has)."""
        if epoch < 0:
            return -1
        seen = self._registrations[broker]
        return seen.index(epoch) if epoch in seen else -2

    def _log(self, broker: int, log: tuple) -> tuple:
        """The abstract entries of a broker's snapshot log, converting only the entries after the
        part it shares with the last one: the cluster hands out the same tuple while a log is
        unchanged and keeps the entries of an unchanged prefix, so a step costs what it changed,
        not the length of the log."""
        seen, entries = self._logs[broker]
        if log is not seen:
            same = common_prefix(seen, log)
            entries = entries[:same] + tuple(Entry(e.offset, e.epoch, int(e.value), e.base_offset)
                                             for e in log[same:])
            self._logs[broker] = (log, entries)
        return entries

    def _replica(self, b) -> Replica:
        return Replica(
            b.alive, self._log(b.broker_id, b.log), b.durable, b.hw, b.hw_checkpoint, b.leader, b.leader_epoch, tuple(b.isr),
            b.partition_epoch, b.epoch_start_offset, tuple(b.remote_leo),
            tuple(t // MS_PER_TICK for t in b.last_caught_up_ms),
            None if b.pending_isr is None else tuple(b.pending_isr),
            tuple((int(p.value), p.offset, p.deadline_ms // MS_PER_TICK, p.count) for p in b.pending_produces),
            b.truncating_epoch, b.power_lost,
            self._epoch(b.broker_id, b.broker_epoch) if self._broker_epochs else 0,
            tuple(self._epoch(f, e) for f, e in enumerate(b.remote_broker_epoch)),
            () if b.pending_isr is None else tuple(self._epoch(f, e) for f, e in zip(b.pending_isr, b.pending_isr_epochs)),
            b.unclean_shutdown and not b.alive and self._elr)

    def _in_flight(self) -> list[tuple]:
        """Every message in flight, decoded. What was decoded for the last state is reused, and
        the tags of messages no longer in flight are forgotten: kept, both would grow with the run."""
        network = self.cluster.network
        known, self._messages = self._messages, {}
        tags, alter_epochs = {}, {}
        out = []
        for kind in MESSAGE_KINDS:
            per_replica = []
            for r in range(self.n):
                msgs = []
                for env in network.queue((kind, r)):
                    tag = None
                    if kind == "fetch_request" or kind == "fetch_response":
                        # equal frames may be sent under different tags (correlation ids restart)
                        sent = (r, CODEC.decode_header(env.frame).correlation_id)
                        tag = tags[sent] = self._tags.get(sent)
                    elif kind == "alter_partition_response":  # the leader epoch of its request
                        sent = (r, CODEC.decode_header(env.frame).correlation_id)
                        tag = alter_epochs[sent] = self._alter_epochs.get(sent, -1)
                    key = (kind, r, env.src, env.dst, env.frame, tag)
                    msg = known.get(key)
                    if msg is None:
                        msg = self._decode(kind, r, env, tag)
                    self._messages[key] = msg
                    msgs.append(msg)
                per_replica.append(tuple(msgs))
            out.append(tuple(per_replica))
        self._tags, self._alter_epochs = tags, alter_epochs
        return out

    def _decode(self, kind: str, r: int, env, tag: tuple[int, int] | None):
        header = CODEC.decode_header(env.frame)
        body = CODEC.decode_body(header, env.frame)
        if kind == "fetch_request":
            leader, epoch = tag or (env.dst, -1)
            if hasattr(body, "fetch_offset"):  # Fetch
                return FetchRequest(leader, epoch, body.fetch_offset, body.last_fetched_epoch, -1, body.max_batches,
                                    self._epoch(r, body.replica_epoch))
            return FetchRequest(leader, epoch, -1, -1, body.leader_epoch, 0)  # OffsetsForLeaderEpoch
        if kind == "fetch_response":
            leader, epoch = tag or (env.src, -1)
            error = Errors(body.error).name
            if isinstance(body, OffsetForLeaderEpochResponse):
                if error != NONE:
                    return FetchResponse(leader, epoch, error, "error", (), -1, -1, -1)
                return FetchResponse(leader, epoch, NONE, "epoch_end", (), -1, body.leader_epoch, body.end_offset)
            if error == "OFFSET_OUT_OF_RANGE":
                return FetchResponse(leader, epoch, error, "error", (), -1, -1, body.log_end_offset)
            if error != NONE:
                return FetchResponse(leader, epoch, error, "error", (), -1, -1, -1)
            if body.diverging_end_offset >= 0:
                return FetchResponse(leader, epoch, NONE, "diverging", (), -1, body.diverging_epoch,
                                     body.diverging_end_offset)
            records = tuple(Entry(rec.offset, batch.partition_leader_epoch, int(rec.value), batch.base_offset)
                            for batch in iter_batches(body.records) for rec in batch.records())
            return FetchResponse(leader, epoch, NONE, "records", records, body.high_watermark, -1, -1)
        if kind == "leader_and_isr":
            return LeaderAndIsr(body.leader, body.leader_epoch, tuple(body.isr), body.partition_epoch)
        if kind == "alter_partition":
            epochs = body.new_isr_epochs or (-1,) * len(body.new_isr)  # v0 names none
            return AlterPartition(body.leader_epoch, body.partition_epoch, tuple(body.new_isr),
                                  tuple(self._epoch(m, e) for m, e in zip(body.new_isr, epochs)))
        return AlterPartitionResponse(Errors(body.error).name, body.leader_epoch, tuple(body.isr),
                                      body.partition_epoch, tag)
