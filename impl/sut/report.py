"""What the implementation reports of itself after a step: the abstraction's input state.

docs/sut-protocol.md ("The state") names every field; they are docs/steps.md's per-replica state,
the controller, the messages in flight and the clock, in ticks. Values are plain data (ints,
bools, strings, tuples, dicts), so the same report is written as JSON for an external driver and
read in process by the conformance layer.

Two facts are not on the wire and are kept here from the steps: the (leader, leader epoch) a fetch
was sent under (Kafka keeps it with the request, keyed here by correlation id), and the leader
epoch of the AlterPartition a response answers. Both are forgotten once no message needs them.
"""

from __future__ import annotations

from typing import Callable

from ..protocol import CODEC, Errors, OffsetForLeaderEpochResponse
from ..sim import MESSAGE_KINDS
from ..storage import iter_batches

NONE = Errors.NONE.name
MS_PER_TICK = 1  # one tick of a schedule is one millisecond of the simulated clock
_TAGGED = ("fetch_request", "fetch_response")


def _entries(log) -> tuple:
    return tuple((e.offset, e.epoch, int(e.value), e.base_offset) for e in log)


def replica_fields(b, tag_epoch: Callable[[object], int] | None = None) -> dict:
    """A broker snapshot's fields besides its log (docs/sut-protocol.md, "replicas"); ``tag_epoch``
    gives the leader epoch a held Fetch was sent under (``Report.tag_epoch``), which its bytes need not
    carry."""
    return {
        "alive": b.alive,
        "durable": b.durable,
        "hw": b.hw,
        "hw_checkpoint": b.hw_checkpoint,
        "leader": b.leader,
        "leader_epoch": b.leader_epoch,
        "isr": tuple(b.isr),
        "partition_epoch": b.partition_epoch,
        "epoch_start_offset": b.epoch_start_offset,
        "remote_leo": tuple(b.remote_leo),
        "last_caught_up": tuple(t // MS_PER_TICK for t in b.last_caught_up_ms),
        "pending_isr": None if b.pending_isr is None else tuple(b.pending_isr),
        "pending_produces": tuple(
            (int(p.value), p.offset, p.deadline_ms // MS_PER_TICK, p.count) for p in b.pending_produces
        ),
        "truncating_epoch": b.truncating_epoch,
        "power_lost": b.power_lost,
        "broker_epoch": b.broker_epoch,
        "remote_broker_epoch": tuple(b.remote_broker_epoch),
        "pending_epochs": tuple(b.pending_isr_epochs),
        "unclean_shutdown": b.unclean_shutdown,
        **({"bad_batch": b.bad_batch} if b.bad_batch >= 0 else {}),
        **({"unregistered": True} if b.unregistered else {}),
        **({"held_reads": tuple(_held(h, tag_epoch) for h in b.held_reads)} if b.held_reads else {}),
        **({"stale_fetcher": tuple(b.stale_fetcher)} if b.stale_fetcher else {}),
        **_last_fetch(b),
        **({"cached_broker_epochs": tuple(b.cached_broker_epochs)} if b.cached_broker_epochs else {}),
    }  # optional: -1, false and none when left out


def _last_fetch(b) -> dict:
    """A leader's last Fetch of each follower (catch_up_at_previous_fetch): the highest LEO one found
    and the time of the last, in ticks; left out while every follower's is -1 and 0."""
    leos, times = tuple(b.last_fetch_leader_leo), tuple(t // MS_PER_TICK for t in b.last_fetch_ms)
    if all(x == -1 for x in leos) and not any(times):
        return {}
    return {"last_fetch_leo": leos, "last_fetch_time": times}


def _held(h, tag_epoch: Callable[[object], int] | None) -> dict:
    """A Fetch its leader read and has yet to complete (split_fetch_handling), in ticks."""
    return {
        "follower": h.follower,
        "leader_epoch": tag_epoch(h) if tag_epoch is not None else -1,
        "fetch_offset": h.fetch_offset,
        "broker_epoch": h.broker_epoch,
        "fetch_time": h.fetch_time_ms // MS_PER_TICK,
        "leo_read": h.leo_read,
        "hw": h.hw,
        "records": tuple((offset, epoch, int(value), base) for offset, epoch, value, base in h.records),
        "bad_batch": h.bad_batch,
        "orphan": h.orphan,
        "detached": h.detached,
        # only while the batches are still to read (read_fetch_hw): reports without it read as before
        **({"hw_only": True, "max_batches": h.max_batches} if h.hw_only else {}),
    }


def controller_fields(c) -> dict:
    return {
        "leader": c.leader,
        "leader_epoch": c.leader_epoch,
        "isr": tuple(c.isr),
        "partition_epoch": c.partition_epoch,
        "fenced": tuple(sorted(c.fenced)),
        "broker_epochs": tuple(c.broker_epochs),
        "elr": tuple(c.elr),
        "last_known_leader": c.last_known_leader,
        "registrations": c.registrations,
        **({"awaiting_unfence": tuple(c.awaiting_unfence)} if c.awaiting_unfence else {}),  # optional: none
        # optional: none in controlled shutdown when left out (kraft_controlled_shutdown)
        **({"in_controlled_shutdown": tuple(c.in_controlled_shutdown)} if c.in_controlled_shutdown else {}),
    }


class Report:
    """The report of one step-mode Cluster; ``note_*`` after the steps that create untagged facts."""

    def __init__(self, cluster) -> None:
        self.cluster = cluster
        self.n = cluster.config.replicas
        self._tags: dict[tuple[int, int], tuple[int, int]] = {}  # (follower, correlation) -> (leader, epoch)
        self._alter_epochs: dict[tuple[int, int], int] = {}  # (leader, correlation) -> request's leader epoch
        # a fetch request's tag by its envelope: an orphan keeps its own when the follower's next
        # process reuses its correlation id (ids restart with each process)
        self._request_tags: dict[int, tuple[int, int] | None] = {}
        self._messages: dict[tuple, object] = {}  # the messages in flight at the last report, converted
        self._logs: list[tuple[tuple, tuple]] = [((), ())] * self.n  # per broker: (snapshot log, entries)
        self._last: tuple = (None, None)  # (what the last in_flight read, its answer)

    # -- facts the wire does not carry --------------------------------------------------------
    def note_fetch_sent(self, follower: int) -> None:
        fetcher = self.cluster.brokers[follower].replica_manager.fetcher
        if fetcher.outstanding is not None:
            self._tags[(follower, fetcher.outstanding)] = fetcher.sent_under

    def note_alter_partition_handling(self, leader: int) -> None:
        """The controller is about to handle ``leader``'s oldest AlterPartition: its response (same
        correlation id) belongs to that request's leader epoch, which the response does not carry."""
        queue = self.cluster.network.queue(("alter_partition", leader))
        if queue:
            header = CODEC.decode_header(queue[0].frame)
            body = CODEC.decode_body(header, queue[0].frame)
            self._alter_epochs[(leader, header.correlation_id)] = body.leader_epoch

    def tag_epoch(self, held) -> int:
        """The leader epoch a held Fetch (a snapshot's ``HeldFetchView``) was sent under, -1 unknown."""
        tag = self._request_tags.get(held.seq) or self._tags.get((held.follower, held.correlation_id))
        return tag[1] if tag else -1

    # -- the report ---------------------------------------------------------------------------
    def log(self, broker: int, log: tuple) -> tuple:
        """``(offset, epoch, record, base)`` of each entry of a broker's snapshot log, converting only
        the entries after the part it shares with the last one (the cluster hands out the same tuple
        while a log is unchanged and keeps an unchanged prefix), so a step costs what it changed."""
        self._logs[broker] = kept = converted(self._logs[broker], log, _entries)
        return kept[1]

    def state(self) -> dict:
        """The whole report (docs/sut-protocol.md, "The state")."""
        snap = self.cluster.snapshot()
        return {
            "replicas": [
                {"log": self.log(b.broker_id, b.log), **replica_fields(b, self.tag_epoch)} for b in snap.brokers
            ],
            "controller": controller_fields(snap.controller),
            "messages": dict(zip(MESSAGE_KINDS, self.in_flight())),
            "now": snap.now_ms // MS_PER_TICK,
        }

    def in_flight(self, convert: Callable[[str, dict], object] | None = None) -> list[tuple]:
        """Per message kind (MESSAGE_KINDS order), per replica, the messages in flight, oldest first,
        each as its fields (``convert(kind, fields)`` if given). What was decoded for the last report
        is reused, and the tags of messages no longer in flight are forgotten: kept, both would grow
        with the run. While no frame joined or left a queue (most steps move one, many none) and no
        tag was noted, the last answer is the answer."""
        network = self.cluster.network
        read = (network.changes, len(self._tags), len(self._alter_epochs), convert, len(network.held))
        if read == self._last[0]:
            return self._last[1]
        known, self._messages = self._messages, {}
        tags, alter_epochs, request_tags = {}, {}, {}
        for env in network.held:  # a Fetch read and held by its leader keeps the tag it was sent under
            sent = (env.src, CODEC.decode_header(env.frame).correlation_id)
            tags[sent] = self._tags.get(sent)
            request_tags[env.seq] = self._request_tags.get(env.seq, tags[sent])
        out = []
        for kind in MESSAGE_KINDS:
            per_replica = []
            for r in range(self.n):
                msgs = []
                queue = network.queue((kind, r))
                registration = self._registration(r, queue) if kind == "leader_and_isr" and queue else ()
                for env in queue:
                    tag = None
                    if kind in _TAGGED:  # equal frames may be sent under different tags (correlation ids restart)
                        sent = (r, CODEC.decode_header(env.frame).correlation_id)
                        noted = tags[sent] = self._tags.get(sent)
                        tag = noted
                        if kind == "fetch_request":
                            tag = request_tags[env.seq] = self._request_tags.get(env.seq, noted)
                    elif kind == "alter_partition_response":  # the leader epoch of its request
                        sent = (r, CODEC.decode_header(env.frame).correlation_id)
                        tag = alter_epochs[sent] = self._alter_epochs.get(sent, -1)
                    elif any(env is e for e in registration):
                        tag = True
                    key = (kind, r, env.src, env.dst, env.frame, tag, env.orphan, convert)
                    msg = known.get(key)
                    if msg is None:
                        msg = decode(kind, env, tag)
                        if convert is not None:
                            msg = convert(kind, msg)
                    self._messages[key] = msg
                    msgs.append(msg)
                per_replica.append(tuple(msgs))
            out.append(tuple(per_replica))
        self._tags, self._alter_epochs, self._request_tags = tags, alter_epochs, request_tags
        self._last = ((network.changes, len(tags), len(alter_epochs), convert, len(network.held)), out)
        return out

    def _registration(self, r: int, queue) -> list:
        """The LeaderAndIsrs in ``queue`` sent for the broker epoch broker ``r``'s registration gave
        it while it does not serve yet (KRaft): applying one, it serves (docs/sut-protocol.md)."""
        b = self.cluster.brokers[r]
        if not b.alive or not b.replica_manager.starting or b.broker_epoch < 0:
            return []
        epoch = b.broker_epoch
        return [e for e in queue if CODEC.decode_body(CODEC.decode_header(e.frame), e.frame).broker_epoch >= epoch]

    def kept(self) -> int:
        """How many decoded messages and tags are kept (bounded by the messages in flight)."""
        return max(len(self._messages), len(self._tags) + len(self._alter_epochs))


def converted(kept: tuple[tuple, tuple], items: tuple, convert: Callable[[tuple], tuple]) -> tuple[tuple, tuple]:
    """``(items, convert(items))`` from ``kept``, the last such pair, converting only the items after
    the prefix ``items`` shares with the last ones: a log grows or is cut by a step, and its
    conversion must cost what changed, not the length of the log."""
    seen, out = kept
    if items is seen:
        return kept
    same = _common_prefix(seen, items)
    return items, out[:same] + convert(items[same:])


def _common_prefix(a: tuple, b: tuple) -> int:
    """How many leading items ``a`` and ``b`` share (compared at C speed while the prefix is shared)."""
    n = min(len(a), len(b))
    return n if a[:n] == b[:n] else next(k for k in range(n) if a[k] != b[k])


def _response(
    leader: int, epoch: int, error: str, kind: str, records=(), leader_hw=-1, answered=-1, end_offset=-1
) -> dict:
    return {
        "leader": leader,
        "leader_epoch": epoch,
        "error": error,
        "kind": kind,
        "records": records,
        "leader_hw": leader_hw,
        "epoch": answered,
        "end_offset": end_offset,
    }


def decode(kind: str, env, tag: tuple[int, int] | int | None) -> dict:
    """One message in flight as its fields (docs/sut-protocol.md, "Messages"), from its wire bytes;
    a request whose sender died since carries ``orphan`` (optional: false when left out)."""
    fields = _decode(kind, env, tag)
    return {**fields, "orphan": True} if env.orphan else fields


def _decode(kind: str, env, tag: tuple[int, int] | int | None) -> dict:
    header = CODEC.decode_header(env.frame)
    body = CODEC.decode_body(header, env.frame)
    if kind == "fetch_request":
        leader, epoch = tag or (env.dst, -1)
        if hasattr(body, "fetch_offset"):  # Fetch
            return {
                "leader": leader,
                "leader_epoch": epoch,
                "fetch_offset": body.fetch_offset,
                "last_fetched_epoch": body.last_fetched_epoch,
                "query_epoch": -1,
                "max_batches": body.max_batches,
                "broker_epoch": body.replica_epoch,
            }
        return {
            "leader": leader,
            "leader_epoch": epoch,
            "fetch_offset": -1,
            "last_fetched_epoch": -1,
            "query_epoch": body.leader_epoch,
            "max_batches": 0,
            "broker_epoch": -1,
        }  # OffsetsForLeaderEpoch
    if kind == "fetch_response":
        leader, epoch = tag or (env.src, -1)
        error = Errors(body.error).name
        if isinstance(body, OffsetForLeaderEpochResponse):
            if error != NONE:
                return _response(leader, epoch, error, "error")
            return _response(leader, epoch, NONE, "epoch_end", answered=body.leader_epoch, end_offset=body.end_offset)
        if error == "OFFSET_OUT_OF_RANGE":
            return _response(leader, epoch, error, "error", end_offset=body.log_end_offset)
        if error != NONE:
            return _response(leader, epoch, error, "error")
        if body.diverging_end_offset >= 0:
            return _response(
                leader, epoch, NONE, "diverging", answered=body.diverging_epoch, end_offset=body.diverging_end_offset
            )
        batches = list(iter_batches(body.records))
        records = tuple(
            (rec.offset, batch.partition_leader_epoch, int(rec.value), batch.base_offset)
            for batch in batches
            for rec in batch.records()
        )
        out = _response(leader, epoch, NONE, "records", records, body.high_watermark)
        bad = next((batch.base_offset for batch in batches if not batch.is_valid()), -1)
        return {**out, "bad_batch": bad} if bad >= 0 else out  # optional: -1 when left out
    if kind == "leader_and_isr":
        return {
            "leader": body.leader,
            "leader_epoch": body.leader_epoch,
            "isr": tuple(body.isr),
            "partition_epoch": body.partition_epoch,
            **({"registration": True} if tag else {}),  # optional: false when left out
        }
    if kind == "alter_partition":
        return {
            "leader_epoch": body.leader_epoch,
            "partition_epoch": body.partition_epoch,
            "isr": tuple(body.new_isr),  # v0 names no broker epochs: -1 each
            "broker_epochs": tuple(body.new_isr_epochs) or (-1,) * len(body.new_isr),
        }
    return {
        "error": Errors(body.error).name,
        "leader_epoch": body.leader_epoch,
        "isr": tuple(body.isr),
        "partition_epoch": body.partition_epoch,
        "request_leader_epoch": tag,
    }
