"""A recording of Apache Kafka's own events (``recording.py``) translated into the event log that
``isrcheck validate`` reads (``impl/eventlog.py``'s format, docs/validate.md), one model step per
Kafka event, per partition. What each Kafka event is to the model, and which model steps the
validator takes unlogged because Kafka takes them at once or has no point for them, is in
docs/validate.md ("Apache Kafka's own events: the translation").

``translate(DIR) -> (header, {node: [event, ...]})`` and ``write(DIR, OUT)`` (OUT/broker-B.jsonl,
OUT/controller.jsonl). The controller is node ``CONTROLLER`` of the translated log (isrcheck's
controllers are numbered from 1000), brokers keep their ids; the header names each partition's
replicas in the order the controller's ``PartitionRecord`` gives, so the validator renames them.

Ordering: the agent reads a leader's state after the event, on a request-handler thread that may
race another (docs/validate.md): the translation logs of a leader's events only what the event's own
arguments and return value say (the produce's offsets, the fetch offset), and the HW that the
``maybeIncrementLeaderHW`` of the same thread just set, never the ``p`` read after.
"""

from __future__ import annotations

import bisect
import json
import math
import os
from pathlib import Path

from isrcheck.conformance.engines.apache.recording import iter_recording
from isrcheck.model.alphabet import (
    CHECKPOINT_HW,
    CONTROLLED_SHUTDOWN,
    CRASH,
    DELIVER_LEADER_AND_ISR,
    ELECT,
    EXPAND_ISR,
    FENCE,
    HANDLE_ALTER_PARTITION,
    HANDLE_ALTER_PARTITION_RESPONSE,
    HANDLE_FETCH,
    HANDLE_FETCH_RESPONSE,
    PRODUCE,
    READ_FETCH,
    READ_FETCH_HW,
    REGISTER,
    REMOVE_FETCHER,
    RESTART,
    SEND_FETCH,
    SHRINK_ISR,
    UNFENCE,
    UPDATE_METADATA_CACHE,
)

CONTROLLER = 1000
FORMAT, VERSION = "isrcheck-events", 1
REQUEST_TIMEOUT_MS = 30_000  # a producer's request.timeout.ms (librdkafka's and Java's default)
BURST_US = 100_000  # the records of one controller write are replayed within this of each other
PREFERRED = "preferred"  # the cause of the controller's leader balancing (maybeBalancePartitionLeaders)
RAISE_SLACK_US = 1_000_000  # how far a handling's raise of the HW may lie from where its update is placed
TIE = "_tie"  # a line's order among its node's lines at the same microsecond (default 0), dropped when written
HANDLERS = 8  # Kafka's num.io.threads: request handlers at once
RECENT_APPENDS = 64  # appends a produce append is ordered against: more than a broker has request handlers


def protocol(run: dict) -> str:
    """The variant a 4.x cluster implements: kip-966 with Eligible Leader Replicas on, kip-903 without."""
    return "kip-966" if run.get("elr") else "kip-903"


def header(run: dict, partitions: dict, caches: bool = False) -> dict:
    return {
        "format": FORMAT,
        "version": VERSION,
        "protocol": protocol(run),
        "source": "apache-kafka " + run["kafka"],
        "config": {
            "replicas": run["brokers"],
            "min_insync_replicas": run["min_insync_replicas"],
            "unclean_leader_election_enable": run["unclean_election"],
            "replica_lag_time_max_ms": run["replica_lag_time_max_ms"],
            "request_timeout_ms": REQUEST_TIMEOUT_MS,
            "flush_messages": run["flush_messages"],
            # no clean shutdown file after a crash of any kind: the registration is unclean
            "unclean_shutdown_detection": "clean-shutdown-file",
            # Kafka's request handlers read a follower's fetch, then update from it: two steps (docs/validate.md)
            "split_fetch_handling": True,
            # ReplicaManager.applyDelta makes a follower first and replaces its fetcher after (docs/validate.md)
            "split_become_follower": True,
            # Replica.updateFetchStateOrThrow: caught up as of the previous Fetch when reaching its leader LEO
            "catch_up_at_previous_fetch": True,
            # a recording of the brokers' metadata caches (agent version 2): Partition.isReplicaIsrEligible reads
            # them, and Partition.maybeIncrementLeaderHW waits for a caught-up follower that is eligible
            # and the controller's registrations they copy: a registration fenced until a heartbeat unfences it,
            # a broker in controlled shutdown (docs/steps.md, unfence_at_heartbeat and kraft_controlled_shutdown)
            **(
                {
                    "metadata_cache": True,
                    "hw_waits_for_caught_up": True,
                    "unfence_at_heartbeat": True,
                    "kraft_controlled_shutdown": True,
                }
                if caches
                else {}
            ),
        },
        "partitions": partitions,
    }


class Translation:
    def __init__(self, run: dict) -> None:
        self.run = run
        self.out: dict[int, list] = {}
        self.seq: dict[int, int] = {}
        self.topics: dict[str, str] = {}  # topic id -> name
        self.partitions: dict[str, list] = {}  # tp -> replicas in order
        self.pstate: dict[str, dict] = {}  # tp -> the controller's registration
        self.cause: tuple | None = None  # what the controller's next PartitionChangeRecord answers
        self.cause_us = 0  # when the controller logged that cause
        self.fence_changed: set[str] = set()  # the partitions the fencing in progress changed
        self.held: list = []  # PartitionChangeRecords whose cause the next event says
        self.fetching: dict[tuple, dict] = {}  # (leader, thread) -> the fetch it is reading
        # (node, thread, tp) -> (us, the HW maybeIncrementLeaderHW just set, the line of its file it was written at)
        self.raised_hw: dict[tuple, tuple] = {}
        self.handlings: dict[
            tuple, list
        ] = {}  # (leader, tp) -> [(began, fetch entered, LEO read, returned, read line, update line)]
        self.appends: dict[tuple, list] = {}  # (leader, tp) -> [(its step, end offset)] of its produce appends
        self.recent_appends: dict[tuple, list] = {}  # (leader, tp) -> its last appends' [(returned, end, line)]
        self.answers: list[tuple] = []  # a follower's answers to place a DelayedFetch's read for: (follower, tp, ...)
        self.raises: list[tuple] = []  # (leader, tp, us, HW, its handling) a fetch raised: checked in finish()
        self.append_raises: list[tuple] = []  # (leader, tp, us, HW, (its produce line,)) an append raised: the same
        self.fetch_began: dict[tuple, int] = {}  # (leader, thread) -> when its fetchMessages was entered
        self.sends: dict[tuple, list] = {}  # (follower, tp) -> [(corr, fetch offset, leader)] not yet handled
        self.last_send: dict[tuple, tuple] = {}  # (follower, tp) -> (leader, corr) of its last fetch
        self.corr: dict[int, int] = {}
        self.down: set[int] = set()  # brokers crashed and not started again
        self.registered_down: set[int] = set()  # of those, started and registered, nothing recorded yet
        self.registered: set[int] = set()
        self.fenced: set[int] = set()  # brokers the controller's records fence, till registered or unfenced
        self.handled: dict[tuple, tuple] = {}  # (follower, leader, corr) -> its handling (as in handlings)
        self.leader_at: dict[tuple, list] = {}  # (leader, tp) -> [(us, leo, hw)], after each of its events
        self.following: dict[tuple, int | None] = {}  # (follower, tp) -> the leader epoch it follows in
        self.expanding: dict[
            tuple, tuple
        ] = {}  # (leader, thread, tp) -> the expand_isr (us, step, where, state, fields) its fetch handling proposed
        # (leader, thread, tp) of a proposal its AlterPartitionManager refused at once (OPERATION_NOT_ATTEMPTED)
        self.not_attempted: set[tuple] = set()
        self.last_line: dict[int, int] = {}  # node -> the time of its last line the agent wrote
        # follower -> [(handling line, tp, fetch offset)] of fetches handled with no send of it logged
        self.unsent: dict[int, list] = {}
        self.fetch_entered: dict[tuple, tuple] = {}  # (leader, follower, tp) -> (us, fetch offset) of its last fetch
        self.checkpointed: dict[tuple, int] = {}  # (broker, tp) -> the HW its last checkpoint wrote
        self.last_state: dict[tuple, dict] = {}  # (broker, tp) -> the partition's state its last line showed
        self.sends_log: list[tuple] = []  # (us, follower, tp, corr, leader, fetch offset) of every logged send
        self.sent_at: dict[tuple, int] = {}  # (follower, corr) -> when it sent that fetch
        self.kills: dict[int, list] = {}  # broker -> [(its last line before, when)] of each kill
        self.append_lines: dict[tuple, list] = {}  # (leader, tp) -> [(end offset, entered, its produce line)]
        self.led_since: dict[tuple, int] = {}  # (broker, tp) -> when its last makeLeader returned
        self.cut_logs: list[tuple] = []  # (leader, tp, LEO its lines showed, LEO after the kill, when killed)
        self.fetch_offset: dict[tuple, int] = {}  # (follower, corr) -> the offset that fetch asked from
        self.follower_append: dict[tuple, int] = {}  # (follower, thread, tp) -> the end of the records it appended last
        self.in_flight_at_kill: dict[tuple, tuple] = {}  # (follower, tp) -> (leader, corr, when killed)
        self.cut_answers: list[tuple] = []  # (follower, tp, its LEO after the kill, leader, corr, when killed)
        self.since_restart: dict[int, set] = {}  # broker -> the partitions it applied a LeaderAndIsr of since
        self.stale: set[tuple] = set()  # (follower, tp) made follower of a new leader epoch, its old fetcher kept
        self.read_more: dict[int, int] = {}  # id(handling) -> the LEO its read read to, past the one it noted
        self.unlogged_answers: dict[tuple, dict] = {}  # (leader, tp) -> an AlterPartition answer no callback logged
        self.hw_read: dict[int, dict] = {}  # id(read line) -> its read_fetch_hw line, read before it
        self.completed: dict[int, dict] = {}  # id(handling) -> the line of its DelayedFetch's completion
        self.expansions: dict[int, dict] = {}  # id(handling) -> the line of the ISR expansion its update proposed
        self.killed: dict[int, tuple] = {}  # broker -> (when it was killed, the partitions logged since its restart)
        self.lost_sends: list[
            tuple[dict, dict, int]
        ] = []  # (line, its handling, how far before it): sends a kill cut off
        self.caches = False  # the agent records the brokers' metadata caches (KRaftMetadataCache.setImage)
        self.broker_epochs: dict[int, list] = {}  # broker -> the broker epoch of each of its registrations, in order
        self.epoch_base: dict[str, dict] = {}  # tp -> broker -> its registration's index when tp was created
        self.cached: dict[tuple, list] = {}  # (broker, tp) -> its metadata cache as the model holds it
        self.kafka_fenced: set[int] = set()  # brokers fenced by Kafka's records (a registration's too, till unfenced)
        self.kafka_shutdown: set[int] = set()  # brokers in controlled shutdown by Kafka's records, till fenced
        # the controlled shutdown whose partition changes follow its record: (broker, us, where), the partitions changed
        self.shutdown_pending: tuple | None = None
        self.shutdown_changed: set[str] = set()
        self.cached_at: dict[tuple, int] = {}  # (broker, tp) -> when its cache last took the controller's
        self.alive_history: dict[str, list] = {}  # tp -> [(us, the controller's alive broker epochs from then)]
        self.quiet_stops: dict[int, tuple] = {}  # broker -> (us, where) of a clean stop of a JVM that logged nothing
        # a broker's DefaultAlterPartitionManager: the partitions it holds an AlterPartition of (sent or not),
        # those of the request in flight, and those whose Partition handled the answer to it
        self.apm_held: dict[int, set] = {}
        self.submitted: dict[tuple, int] = {}  # (broker, thread, tp) -> when its manager's submit was entered
        self.apm_sent: dict[int, set] = {}
        self.apm_answered: dict[int, set] = {}

    def emit(self, node: int, us: int, step: str, where: str, state: dict, tp: str | None = None, **fields) -> None:
        seq = self.seq[node] = self.seq.get(node, 0) + 1
        line = {
            "node": node,
            "seq": seq,
            "lc": 0,
            "t": us // 1000,
            "us": us,
            "step": step,
            **fields,
            "state": state,
            "from": where,
        }
        if tp is not None:
            line["tp"] = tp
        self.out.setdefault(node, []).append(line)
        if step == RESTART and self.caches:  # the model's restart replays the controller's registrations
            for t in self.partitions:
                self.cached[(node, t)] = self.alive_broker_epochs(t)

    # -- the controller -------------------------------------------------------------------------
    def controller(self, r) -> None:
        """One controller event. A PartitionChangeRecord is held until the controller's next event says
        what caused it: a registration's own changes (``handleBrokerUncleanShutdown``'s) are written
        before its RegisterBrokerRecord."""
        rec = _record(r)
        if r.ev == "ReplicationControlManager.replay" and "partitionId" in rec and not rec.get("replicas"):
            self.held.append(r)
            return
        held, self.held = self.held, []
        again = (
            rec.get("brokerId")
            if r.ev == "ClusterControlManager.replay"
            and "incarnationId" in rec
            and rec.get("brokerId") in self.registered
            else None
        )
        for change in held:
            # without the registerBroker hook (older recordings): the changes replayed in one burst with the
            # RegisterBrokerRecord that take the broker out of ISR or ELR are its registration's
            own = again is not None and r.us - change.us < BURST_US and self.removes(_record(change), again)
            self.change(change, _record(change), registration=own)
        self.shutdown_ends()
        self.decision(r, rec)
        for tp in self.partitions if self.caches else ():
            alive = self.alive_broker_epochs(tp)
            history = self.alive_history.setdefault(tp, [])
            if not history or history[-1][1] != alive:
                history.append((r.us, alive))

    def removes(self, rec: dict, b: int) -> bool:
        st = self.pstate.get(self.tp_of(rec), {})
        isr, elr = rec.get("isr"), rec.get("eligibleLeaderReplicas")  # None: unchanged
        return (isr is not None and b in st.get("isr", ()) and b not in isr) or (
            elr is not None and b in st.get("elr", ()) and b not in elr
        )

    def tp_of(self, rec: dict) -> str:
        return f"{self.topics.get(rec['topicId'], rec['topicId'])}-{rec['partitionId']}"

    def flush(self) -> None:
        for change in self.held:
            self.change(change, _record(change), registration=False)
        self.held = []
        self.shutdown_ends()

    def shutdown_ends(self) -> None:
        """The model's ``controlled_shutdown`` in every partition its changes left alone: KRaft writes the broker's
        ``inControlledShutdown`` before the partition changes (``handleBrokerInControlledShutdown``), so the changed
        ones are known only at the controller's next event."""
        if self.shutdown_pending is None:
            return
        (b, us, where), self.shutdown_pending = self.shutdown_pending, None
        for tp in self.partitions:
            if tp not in self.shutdown_changed:
                self.emit(CONTROLLER, us, CONTROLLED_SHUTDOWN, where, self.view(tp), tp, replica=b)

    def decision(self, r, rec: dict) -> None:
        cause = self.cause
        self._decision(r, rec)
        if self.cause is not cause:
            self.cause_us = r.us

    def _decision(self, r, rec: dict) -> None:
        a = r.line.get("args") or []
        if r.ev == "ReplicationControlManager.handleBrokerFenced":
            self.cause = (FENCE, a[0])
        elif r.ev == "ReplicationControlManager.handleBrokerUnfenced":
            self.cause = (UNFENCE, a[0])
        elif r.ev == "ReplicationControlManager.alterPartition":
            self.cause = (HANDLE_ALTER_PARTITION, a[1].get("brokerId", -1) if len(a) > 1 else -1)
        elif r.ev == "ReplicationControlManager.electLeader":
            self.cause = (ELECT, None)
        elif r.ev == "ReplicationControlManager.maybeBalancePartitionLeaders":
            self.cause = (PREFERRED, None)
        elif r.ev == "ClusterControlManager.registerBroker":  # its records (unclean shutdown's changes) follow
            request = a[0] if a and isinstance(a[0], dict) else {}
            self.cause = (REGISTER, request.get("brokerId", -1))
            stop = self.quiet_stops.pop(request.get("brokerId", -1), None)
            if stop is not None and request.get("previousBrokerEpoch") == -1:
                # a JVM that logged nothing had started (loaded its logs: their clean shutdown file taken) and
                # stopped cleanly unregistered, writing broker epoch -1: to the model, a restart and a clean crash
                b, (us, where) = request["brokerId"], stop
                self.emit(b, us - 1, RESTART, where, {}, replica=b)
                self.emit(b, us, CRASH, where, {}, None, replica=b, kind="clean")
        elif r.ev == "ClusterControlManager.replay" and "brokerId" in rec:
            b = rec["brokerId"]
            if "incarnationId" in rec:  # RegisterBrokerRecord
                self.broker_epochs.setdefault(b, []).append(rec.get("brokerEpoch"))
                (self.kafka_fenced.add if rec.get("fenced", True) else self.kafka_fenced.discard)(b)
                self.kafka_shutdown.discard(b)
                self.fenced.discard(b)  # the model's restart unfences it (Kafka's later unfencing is no step)
                if b in self.registered:  # registered again: the model's restart (Kafka's broker fetches from now)
                    for tp in self.partitions:
                        self.emit(CONTROLLER, r.us, REGISTER, r.where, {}, tp, replica=b)
                    if b in self.down:  # started, nothing recorded yet: up to the model from here (its restart)
                        self.registered_down.add(b)
                self.registered.add(b)
                self.cause = None
            elif rec.get("inControlledShutdown") == 1:
                self.cause = (CONTROLLED_SHUTDOWN, b)
                if self.caches:  # the model's controlled_shutdown (kraft_controlled_shutdown) in every partition
                    self.kafka_shutdown.add(b)
                    self.shutdown_pending, self.shutdown_changed = (b, r.us, r.where), set()
            elif rec.get("fenced") == -1:
                # a broker fenced after its registration and unfenced by its heartbeat: the model's unfence; with
                # unfence_at_heartbeat a registration's unfencing too (its RegisterBrokerRecord was fenced)
                if b in (self.kafka_fenced if self.caches else self.fenced):
                    for tp in self.partitions:
                        self.emit(CONTROLLER, r.us, UNFENCE, r.where, self.view(tp), tp, replica=b)
                self.fenced.discard(b)
                self.kafka_fenced.discard(b)
            elif rec.get("fenced") == 1:
                already = b in (self.kafka_fenced if self.caches else self.fenced)
                self.kafka_fenced.add(b)
                self.kafka_shutdown.discard(b)
                # the fencing's partition changes come first; a partition it did not change (the broker
                # neither led it nor was in its ISR) takes the model's fence all the same. A broker fenced
                # already (its session expiring after a controlled shutdown fenced it, or a registration not yet
                # unfenced) changes nothing.
                changed = self.fence_changed if self.cause == (FENCE, b) else set()
                for tp in self.partitions if not already else ():
                    if tp not in changed:
                        self.emit(CONTROLLER, r.us, FENCE, r.where, self.view(tp), tp, replica=b)
                self.fenced.add(b)
                self.cause, self.fence_changed = None, set()
        elif r.ev == "ReplicationControlManager.replay":
            if "name" in rec and "topicId" in rec and "partitionId" not in rec:
                self.topics[rec["topicId"]] = rec["name"]
            elif "partitionId" in rec and rec.get("replicas"):  # PartitionRecord: the model's initial state
                tp = f"{self.topics.get(rec['topicId'], rec['topicId'])}-{rec['partitionId']}"
                self.partitions[tp] = list(rec["replicas"])
                self.epoch_base[tp] = {b: len(epochs) - 1 for b, epochs in self.broker_epochs.items()}
                self.pstate[tp] = {
                    "leader": rec["leader"],
                    "epoch": rec["leaderEpoch"],
                    "isr": sorted(rec["isr"]),
                    "pe": rec["partitionEpoch"],
                    "elr": sorted(rec.get("eligibleLeaderReplicas") or []),
                }

    def change(self, r, rec: dict, registration: bool) -> None:
        """A PartitionChangeRecord: the model step its cause is, or none for a registration's."""
        tp = self.tp_of(rec)
        st = dict(self.pstate[tp])
        if rec.get("isr") is not None:
            st["isr"] = sorted(rec["isr"])
        if rec.get("leader", -2) != -2:  # -2: no change
            st["leader"] = rec["leader"]
            st["epoch"] += 1
        if rec.get("eligibleLeaderReplicas") is not None:
            st["elr"] = sorted(rec["eligibleLeaderReplicas"])
        st["pe"] += 1
        self.pstate[tp] = st
        step, b = self.cause or (ELECT, -1)
        if (
            step != PREFERRED
            and r.us - self.cause_us > BURST_US
            and rec.get("leader", -2) in st["isr"]
            and not (rec.get("isr") or rec.get("eligibleLeaderReplicas"))
        ):
            step = PREFERRED  # no hooked decision wrote it (recordings before the balancer's hook)
        if step == PREFERRED:  # auto.leader.rebalance.enable: the preferred replica, an ISR member, leads
            step, b = ELECT, rec["leader"]
        if step == REGISTER or registration:
            return  # the unclean shutdown's change: checked with the registration (the model's restart)
        if step == UNFENCE:  # a leaderless partition's election when a broker came back (KIP-966: ISR, then ELR)
            step, b = ELECT, -1  # the model's own choice, which the validator checks against the record
        if step == FENCE:
            self.fence_changed.add(tp)
        us = r.us
        if step == CONTROLLED_SHUTDOWN and self.shutdown_pending is not None:
            # one batch with the broker's inControlledShutdown, which a broker's cache may show before the
            # controller replays the partition changes after it: the model's step is taken at that record
            self.shutdown_changed.add(tp)
            us = self.shutdown_pending[1]
        self.emit(
            CONTROLLER,
            us,
            step,
            r.where,
            self.view(tp),
            tp,
            replica=b if b is not None else -1,
            **({"error": "NONE"} if step == HANDLE_ALTER_PARTITION else {}),
        )

    def model_epoch(self, tp: str, b: int, epoch) -> int:
        """The model's broker epoch of broker ``b``'s registration with Kafka's broker epoch ``epoch`` in
        partition ``tp``'s trace: the registration current at tp's creation is the model's 0, each later one
        (the model's ``register``) one more; -1 for an epoch no registration since had."""
        epochs = self.broker_epochs.get(b, [])
        if epoch not in epochs:
            return -1
        return epochs.index(epoch) - self.epoch_base.get(tp, {}).get(b, 0)

    def alive_broker_epochs(self, tp: str) -> list:
        """The controller's alive broker epochs (docs/steps.md) in tp's model: -1 for a broker Kafka's records
        hold fenced (registered again and not yet unfenced too: the model's awaiting unfence) or in controlled
        shutdown."""
        base = self.epoch_base.get(tp, {})
        return [
            -1
            if b in self.kafka_fenced or b in self.kafka_shutdown
            else len(self.broker_epochs.get(b, [None])) - 1 - base.get(b, 0)
            for b in range(self.run["brokers"])
        ]

    def metadata_cache(self, n: int, r) -> None:
        """``KRaftMetadataCache.setImage`` with new registrations: the model's ``update_metadata_cache`` for each
        partition whose cache it changes, -1 for a broker it holds fenced (a registration is fenced until the
        controller unfences it) or shutting down."""
        registrations = {reg["id"]: reg for reg in r.line.get("brokers") or [] if isinstance(reg, dict)}
        for tp in self.partitions:
            view = []
            for b in range(self.run["brokers"]):
                reg = registrations.get(b)
                # isBrokerShuttingDown too: the model's caches hold a broker in controlled shutdown at -1
                ineligible = reg is None or reg.get("fenced") or reg.get("shutdown")
                view.append(-1 if ineligible else self.model_epoch(tp, b, reg.get("epoch")))
            if view != self.cached.get((n, tp), [0] * len(view)):
                us = self.cache_taken(n, tp, view, r.us)
                self.cached[(n, tp)], self.cached_at[(n, tp)] = view, us
                self.emit(n, us, UPDATE_METADATA_CACHE, r.where, {"cached_broker_epochs": view}, tp, replica=n)

    def cache_taken(self, n: int, tp: str, view: list, us: int) -> int:
        """Where the model's ``update_metadata_cache`` of ``view`` goes: its step reads the controller's
        registrations as they are, and a broker's image lags the controller (the brokers stopped at a run's end:
        a fence applied after the controller had fenced the next one). An image the controller has moved past
        is taken just after the controller's last change to it since the broker's previous one (docs/validate.md);
        an image the controller never had there is left where it was logged, for the validator to refuse."""
        history = self.alive_history.get(tp, [])
        if not history or history[-1][1] == view:
            return us
        since = self.cached_at.get((n, tp), 0)
        for at, alive in reversed(history[:-1]):
            if at < since:
                break
            if alive == view:
                return min(at + 1, us)
        return us

    def view(self, tp: str) -> dict:
        st = self.pstate[tp]
        return {"leader": st["leader"], "epoch": st["epoch"], "isr": st["isr"], "pe": st["pe"], "elr": st["elr"]}

    # -- the brokers ----------------------------------------------------------------------------
    def broker(self, r) -> None:
        n, a, p = r.node, r.line.get("args") or [], r.p or {}
        thread = r.line.get("thread")
        if not r.ev.startswith("harness."):
            self.last_line[n] = r.us
        if n in self.down and not r.ev.startswith("harness."):
            self.down.discard(n)
            self.registered_down.discard(n)
            self.emit(n, r.us, RESTART, r.where, {}, replica=n)
            self.since_restart[n] = set()  # a new process knows no leader epoch: its first makeFollower is new
        if r.ev == "KRaftMetadataCache.setImage":
            self.metadata_cache(n, r)
            return
        if "leo" in p:
            self.cut_appends(n, p)
            self.last_state[(n, p["tp"])] = p
        if r.ev in ("Partition.makeLeader", "Partition.makeFollower"):
            reg = a[0]
            msg = {
                "leader": reg["leader"],
                "leader_epoch": reg["leaderEpoch"],
                "isr": sorted(reg["isr"]),
                "partition_epoch": reg["partitionEpoch"],
            }
            state = {"leader": p["leader"], "epoch": p["epoch"], "pe": p["pe"]}
            at = r.us
            if r.ev == "Partition.makeLeader":
                state["isr"] = p["isr"]
                # the LEO and HW it leads with (a restarted broker's recovered log): a DelayedFetch may answer them
                self.moved(n, p["tp"], r.us, p["leo"], p["hw"])
                raised = self.raised_within(n, thread, p["tp"], r)
                if raised is not None:
                    # its write lock's last step: it released the lock after that raise, then completed the delayed
                    # requests the raise unblocked, and request handlers appended and read meanwhile (the power
                    # soak at 163.9 s: 263 ms between the raise and its return)
                    at = raised[0]
                    self.moved(n, p["tp"], at, -1, raised[1])
                self.led_since[(n, p["tp"])] = at
                self.stale.discard((n, p["tp"]))  # applyLocalLeadersDelta removes the fetcher first
            elif (
                self.new_to_restart(n, p["tp"])
                or self.following.get((n, p["tp"]), reg["leaderEpoch"]) != reg["leaderEpoch"]
            ):
                # a new leader epoch (to a restarted broker, any) replaces the partition's fetcher once every
                # partition of the delta is made a follower (applyLocalFollowersDelta): till then the old one keeps
                # its fetch in flight
                self.stale.add((n, p["tp"]))
            self.following[(n, p["tp"])] = reg["leaderEpoch"] if r.ev == "Partition.makeFollower" else None
            self.emit(n, at, DELIVER_LEADER_AND_ISR, r.where, state, p["tp"], replica=n, message=msg)
        elif r.ev == "ReplicaManager.applyDelta":  # the agent logs its entry: the delta before it is applied
            for tp in sorted(tp for b, tp in self.stale if b == n):
                self.remove_fetcher(n, tp, r.us, r.where)
        elif r.ev == "AbstractFetcherThread.processFetchRequest":
            leader = _fetcher_leader(thread)
            for tp, req in a[0]:
                # the new fetcher sent before applyDelta returned; the old one fetches under its old leader epoch
                if (n, tp) in self.stale and req.get("currentLeaderEpoch", math.inf) >= (
                    self.following.get((n, tp)) or -1
                ):
                    self.remove_fetcher(n, tp, r.us - 1, r.where)
                c = self.corr[n] = self.corr.get(n, 0) + 1
                self.sends.setdefault((n, tp), []).append((c, req["fetchOffset"], leader))
                self.last_send[(n, tp)] = (leader, c)
                self.sent_at[(n, c)] = r.us
                self.fetch_offset[(n, c)] = req["fetchOffset"]
                self.sends_log.append((r.us, n, tp, c, leader, req["fetchOffset"]))
                self.emit(
                    n, r.us, SEND_FETCH, r.where, {"leo": req["fetchOffset"]}, tp, replica=n, max_batches=0, corr=c
                )
        elif r.ev == "ReplicaManager.fetchMessages":
            params = a[0]
            if params.get("replicaId", -1) >= 0:
                self.fetching[(n, thread)] = params
                self.fetch_began[(n, thread)] = r.us
                for key, data in a[1] if len(a) > 1 and isinstance(a[1], list) else []:
                    tp = str(key).split(":", 1)[-1]
                    self.fetch_entered[(n, params["replicaId"], tp)] = (r.us, data.get("fetchOffset"))
        elif r.ev == "ReplicaManager.checkpointHighWatermarks":
            # the periodic replication-offset-checkpoint of every partition: a restart after a kill recovers it
            for (b, tp), state in self.last_state.items():
                if b == n and "hw" in state and self.checkpointed.get((n, tp), 0) != state["hw"]:
                    self.checkpointed[(n, tp)] = state["hw"]
                    self.emit(n, r.began, CHECKPOINT_HW, r.where, {}, tp, replica=n)
        elif r.ev == "UnifiedLog.truncateTo" and str(thread).startswith("ReplicaFetcherThread"):
            # its first line of the truncation (a kill may cut those after), when an answer caused it: a fetcher
            # also truncates a log without leader epochs to its HW before it fetches (truncateToHighWatermark), a new
            # fetcher too: the answer is one to this fetcher's own fetch
            sent = self.last_send.get((n, p["tp"]))
            if (
                sent is not None
                and sent[0] == _fetcher_leader(thread)
                and self.sent_at.get((n, sent[1]), r.began) < r.began
            ):
                self.diverged(n, p["tp"], r, p)
        elif r.ev == "AbstractFetcherThread.truncateOnFetchResponse":
            for tp, _answer in a[0] if a else []:
                self.diverged(n, tp, r, self.last_state.get((n, tp), {}))
        elif r.ev == "Partition.maybeIncrementLeaderHW":
            written = int(r.where.rsplit(":", 1)[1])
            for key, (us, hw, other) in list(self.raised_hw.items()):
                # the agent renders a line's partition state after its time: one written after this later
                # raise may show it, so the HW that one raised is not known (the pause soak at 175.1 s)
                if key[0] == n and key[2] == p["tp"] and key[1] != thread and other > written and hw >= p["hw"]:
                    del self.raised_hw[key]
            self.raised_hw[(n, thread, p["tp"])] = (r.us, p["hw"], written)
        elif r.ev == "Partition.updateFollowerFetchState":
            follower, offset = a[0], a[1]
            tp = p["tp"]
            corr = None
            queue = self.sends.get((follower, tp), [])
            # a fetcher has one fetch in flight per leader: the latest send with this offset is the one
            # handled; earlier ones were answered with an error (a leader not yet leader), unhandled
            for i in range(len(queue) - 1, -1, -1):
                c, off, leader = queue[i]
                if off == offset and leader in (n, None):
                    corr = c
                    del queue[: i + 1]
                    break
            raised = self.raised_within(n, thread, tp, r)
            expand = self.expanding.pop((n, thread, tp), None)
            at = r.began if expand is None else min(r.began, expand[0] - 1)
            # the LEO it read, when it returned: the appends that made it have their own marks, and a
            # handling's read may go before the append of what it read (finish())
            self.moved(n, tp, r.us, a[4], None)
            # Request-handler threads handle followers' fetches at once: each reads the log (Partition.fetchRecords),
            # then updates its follower's state (updateFollowerFetchState, when the agent's `in` says it began) and
            # may raise the HW; another handler's steps may fall between. The read is placed by what it read
            # (finish(): the appends, the raises), the update when it began, and an HW it raised is checked at the
            # last update begun before the raise. maybeExpandIsr, called after the follower's state was updated,
            # returned before this exit: its proposal comes after the handling.
            msg = {"msg": [follower, corr]} if corr is not None else {}
            self.emit(n, at, READ_FETCH, r.where, {"leo": a[4]}, tp, replica=follower, **msg)
            read = self.out[n][-1]
            led = self.led_since.get((n, tp), -1)
            # an update begun before a makeLeader whose write lock its read lock then waited for raises after that
            # makeLeader's raise: it comes after the leader change, its read before (the power soak at 1,591.9 s)
            update_at = led + 1 if raised is not None and at < led < raised[0] else at
            self.emit(n, update_at, HANDLE_FETCH, r.where, {}, tp, replica=follower, **msg)
            handling = (r.began, self.fetch_began.get((n, thread), r.began), a[4], r.us, read, self.out[n][-1])
            self.handlings.setdefault((n, tp), []).append(handling)
            if corr is None:  # its send may be among the last lines of a follower a kill cuts off
                self.unsent.setdefault(follower, []).append((handling, tp, offset))
            if corr is not None:
                self.handled[(follower, n, corr)] = handling
            if raised is not None:
                self.raises.append((n, tp, raised[0], raised[1], handling))
            if expand is not None:
                self.emit(n, *expand[:4], tp, replica=n, **expand[4])
                self.expansions[id(handling)] = self.out[n][-1]
        elif r.ev == "Partition.appendRecordsToLeader":
            ret = r.line.get("ret") or {}
            if ret.get("firstOffset", -1) < 0:
                return
            tp, end = p["tp"], ret["lastOffset"] + 1
            raised = self.raised_within(n, thread, tp, r)
            hw = raised[1] if raised else None
            if _duplicate(a, ret):  # no produce (docs/steps.md, the idempotent producer)
                if hw is not None:  # the leader's HW from then on, for a DelayedFetch's read
                    self.moved(n, tp, r.us, -1, hw)
                return
            at, next_append = self.log_order(n, tp, r.began, r.us, end)
            state = {"leo": end}
            if hw is not None and hw > end and next_append is not None:
                # its raise came after the next append took the log and counted it: checked there
                next_append["state"]["hw"] = max(hw, next_append["state"].get("hw", hw))
                self.moved(n, tp, next_append["us"], -1, hw)
                hw = None
            self.moved(n, tp, at, end, hw)
            self.appends.setdefault((n, tp), []).append((at, end))
            self.emit(
                n,
                at,
                PRODUCE,
                r.where,
                state,
                tp,
                replica=n,
                acks=a[2],
                records=ret["lastOffset"] - ret["firstOffset"] + 1,
            )
            if hw is not None:  # its maybeIncrementLeaderHW ran after the append: checked where finish() says
                self.append_raises.append((n, tp, raised[0], hw, (self.out[n][-1],)))
            recent = self.recent_appends.setdefault((n, tp), [])
            recent.append((r.us, end, self.out[n][-1]))
            self.append_lines.setdefault((n, tp), []).append((end, r.began, self.out[n][-1]))
            del recent[:-RECENT_APPENDS]
        elif r.ev == "Partition.appendRecordsToFollowerOrFutureReplica":
            self.follower_append[(n, thread, p["tp"])] = (r.line.get("ret") or {}).get("lastOffset", -1) + 1
        elif r.ev == "ReplicaFetcherThread.processPartitionData":
            tp = p["tp"]
            sent = self.last_send.pop((n, tp), None)
            self.cut_by_bytes(n, sent, self.follower_append.pop((n, thread, tp), None))
            state = {"leo": p["leo"], "hw": p["hw"], "last_epoch": p["last_epoch"]}
            if sent and sent[0] is not None:
                # placed in finish(): an append whose records it holds may return after it (log_order)
                self.answers.append((n, tp, sent, p["leo"], a[3].get("highWatermark", -1), r.us, r.where))
            self.emit(
                n,
                r.us,
                HANDLE_FETCH_RESPONSE,
                r.where,
                state,
                tp,
                replica=n,
                **({"msg": list(sent)} if sent and sent[0] is not None else {}),
            )
        elif r.ev == "Partition.submitAlterPartition" and (n, thread, p["tp"]) in self.not_attempted:
            self.not_attempted.discard((n, thread, p["tp"]))  # no proposal: docs/validate.md
        elif r.ev == "Partition.submitAlterPartition":
            sent = a[0].get("sentLeaderAndIsr") or {}
            isr = sorted(m["brokerId"] for m in sent.get("isrWithBrokerEpoch", []))
            # proposed when its AlterPartitionManager took it (``submit``, which may send it at once: the
            # controller may commit it before this method returns)
            submitted = self.submitted.pop((n, thread, p["tp"]), r.us)
            at = submitted if r.began <= submitted < r.us else r.us
            if "newInSyncReplicaId" not in a[0]:
                self.emit(n, at, SHRINK_ISR, r.where, {"pending": isr}, p["tp"], replica=n)
            else:  # Kafka's proposal adds the follower whose Fetch it handles, named
                add = {"follower": a[0]["newInSyncReplicaId"]}
                if (n, thread) in self.fetching:  # inside the follower's fetch: taken after its handle_fetch
                    self.expanding[(n, thread, p["tp"])] = (at, EXPAND_ISR, r.where, {"pending": isr}, add)
                else:
                    self.emit(n, at, EXPAND_ISR, r.where, {"pending": isr}, p["tp"], replica=n, **add)
        elif r.ev == "Partition.handleAlterPartitionError" and a[1:2] == ["OPERATION_NOT_ATTEMPTED"]:
            # DefaultAlterPartitionManager.submit holds one AlterPartition per partition till it is answered and
            # fails another at once; the callback runs inside submitAlterPartition, which returns after it, and
            # Partition puts back its committed state: that proposal is not made (docs/steps.md)
            self.not_attempted.add((n, thread, p["tp"]))
        elif r.ev in ("Partition.handleAlterPartitionUpdate", "Partition.handleAlterPartitionError"):
            self.apm_answered.setdefault(n, set()).add(p["tp"])
            # the answer for this partition (an AlterPartition carries many; a whole request refused,
            # NOT_CONTROLLER, is sent again by the manager and answers none)
            line = self.unlogged_answers.pop((n, p["tp"]), None)
            if line is None:
                self.emit(n, r.us, HANDLE_ALTER_PARTITION_RESPONSE, r.where, {}, p["tp"], replica=n)
            else:  # the callback ran after the manager's return (below): the answer is handled here
                line["us"], line["t"], line["from"] = r.us, r.us // 1000, r.where
        elif r.ev.startswith("DefaultAlterPartitionManager."):
            self.alter_partition_manager(r, n, a)
        elif r.ev == "harness.crash":
            if n == self.run["controller"]:
                return
            self.stale = {(b, tp) for b, tp in self.stale if b != n}  # a crash clears it
            for manager in (self.apm_held, self.apm_sent, self.apm_answered):  # a new JVM's manager holds nothing
                manager.pop(n, None)
            if n in self.registered_down:  # it registered, recording nothing: up to the model since (restart)
                self.registered_down.discard(n)
            elif n in self.down:  # the harness stops only a running JVM: it started again and recorded nothing
                if r.line["kind"] == "clean":
                    # nor registered: its log as it was, and its clean shutdown file too unless it had loaded its
                    # logs; the next registration's previous broker epoch tells (above)
                    self.quiet_stops[n] = (r.us, r.where)
                    return
                self.emit(n, r.us - 1, RESTART, r.where, {}, replica=n)  # its next registration is unclean
            if r.line["kind"] != "clean":
                self.cut_sends(n, r.where)
            if r.line["kind"] == "process":  # an answer to these its log after the restart may prove handled
                for (f, tp), (leader, c) in self.last_send.items():
                    if f == n and leader is not None:
                        self.in_flight_at_kill[(n, tp)] = (leader, c, r.us)
            # its fetches in flight die with it: no answer of a new process is theirs
            self.last_send = {k: v for k, v in self.last_send.items() if k[0] != n}
            if n not in self.down:  # else a JVM that logged nothing: what the kill before it cut stays pending
                self.killed.pop(n, None)
                if r.line["kind"] == "process":  # its page cache survives: a log longer after it than its lines say
                    self.killed[n] = (r.us, set())
                    self.kills.setdefault(n, []).append((self.last_line.get(n, -1), r.us))
            self.down.add(n)
            self.emit(n, r.us, CRASH, r.where, {}, None, replica=n, kind=r.line["kind"])

    def alter_partition_manager(self, r, n: int, a: list) -> None:
        """DefaultAlterPartitionManager's answers no Partition logged: an answer to a proposal the leader
        forgot (a partition change applied in its leader epoch first) is ignored (``partitionState !=
        proposedIsrState``), its callback silent; to the model, it is handled all the same (docs/steps.md,
        handle_alter_partition_response). ``submit`` holds a partition's proposal (a second one is refused,
        OPERATION_NOT_ATTEMPTED), ``sendRequest`` sends every one held, and ``handleAlterPartitionResponse``
        answers them all unless the request failed as a whole (its return: that error)."""
        held, sent = self.apm_held.setdefault(n, set()), self.apm_sent.setdefault(n, set())
        if r.ev.endswith(".submit") and r.at == "enter" and a:
            topic_id, _, index = str(a[0]).rpartition(":")
            tp = f"{self.topics.get(topic_id, topic_id)}-{index}"
            held.add(tp)
            self.submitted[(n, r.line.get("thread"), tp)] = r.us
            self.unlogged_answers.pop((n, tp), None)  # a new proposal: no callback of the last one is to come
        elif r.ev.endswith(".sendRequest") and r.at == "enter":
            sent |= held
        elif r.ev.endswith(".handleAlterPartitionResponse") and r.at == "exit" and r.line.get("ret") == "NONE":
            answered = self.apm_answered.pop(n, set())
            for tp in sorted(sent):
                if tp not in answered and tp in self.partitions:
                    # its callback may yet run, on the thread that submitted it once that one attaches it to
                    # the completed future (the power soak at 116.3 s: 48 ms later): it takes this line then
                    self.emit(n, r.us, HANDLE_ALTER_PARTITION_RESPONSE, r.where, {}, tp, replica=n)
                    self.unlogged_answers[(n, tp)] = self.out[n][-1]
            held -= sent
            sent.clear()

    def raised_within(self, n: int, thread: str | None, tp: str, r) -> tuple | None:
        """The HW this thread's maybeIncrementLeaderHW raised inside the call ``r``. The method also runs on
        paths the agent does not hook (an ISR shrink, a leader change): their raise, before the call began,
        is not its own (a recording without entry times cannot tell)."""
        raised = self.raised_hw.pop((n, thread, tp), None)
        return raised if raised is not None and ("in" not in r.line or raised[0] >= r.began) else None

    def new_to_restart(self, n: int, tp: str) -> bool:
        """``tp``'s first LeaderAndIsr since broker ``n`` restarted."""
        seen = self.since_restart.get(n)
        if seen is None or tp in seen:
            return False
        seen.add(tp)
        return True

    def remove_fetcher(self, n: int, tp: str, us: int, where: str) -> None:
        """Broker ``n``'s old fetcher of ``tp`` replaced (``removeFetcherForPartitions`` then
        ``addFetcherForPartitions``, after every makeFollower of the delta; no line marks it): taken just before
        the new fetcher's first send, or the next delta, whichever comes first. Its fetch in flight is dropped."""
        self.stale.discard((n, tp))
        self.last_send.pop((n, tp), None)
        self.emit(n, us, REMOVE_FETCHER, where, {}, tp, replica=n)

    def diverged(self, f: int, tp: str, r, p: dict) -> None:
        """Follower ``f`` truncating ``tp`` on an answer that named a diverging epoch (KIP-320), at the first
        line of its truncation (``UnifiedLog.truncateTo`` on the fetcher thread, else its
        ``truncateOnFetchResponse``). No line of the leader says it handled that fetch
        (``Partition.fetchRecords`` finds the divergence in its read and updates nothing), so it is the
        leader's ``handle_fetch`` when its ``fetchMessages`` was entered, then the follower's
        ``handle_fetch_response`` with the log its truncation left."""
        sent = self.last_send.pop((f, tp), None)
        if sent is None or sent[0] is None:
            return  # taken at an earlier line of the same truncation
        leader, corr = sent
        queue = self.sends.get((f, tp), [])
        offset = next((off for c, off, _ in queue if c == corr), None)
        self.sends[(f, tp)] = [m for m in queue if m[0] != corr]
        entered, at_offset = self.fetch_entered.get((leader, f, tp), (None, None))
        at = entered if entered is not None and at_offset == offset and entered < r.began else r.began - 1
        if (leader, tp) in self.led_since:  # handled as leader: once its makeLeader returned
            at = max(at, min(self.led_since[(leader, tp)] + 1, r.began - 1))
        self.emit(leader, at, HANDLE_FETCH, r.where + " (a diverging epoch)", {}, tp, replica=f, msg=[f, corr])
        state = {k: p[k] for k in ("leo", "hw", "last_epoch") if k in p}
        self.emit(f, r.us, HANDLE_FETCH_RESPONSE, r.where, state, tp, replica=f, msg=[leader, corr])

    def cut_by_bytes(self, f: int, sent: tuple | None, end: int | None) -> None:
        """A response the leader cut by bytes (``replica.fetch.max.bytes``, KIP-74: whole batches while they fit the
        request's partition ``maxBytes``): its records end below the LEO its read took, which bounds them otherwise
        (the power soak at 1,684.3 s: a follower restarted empty fetched 13,714 records of the leader's 13,822).
        Its read is the model's read of the batches up to that end (``upto``)."""
        handling = self.handled.get((f, sent[0], sent[1])) if sent is not None and end else None
        if handling is not None and end < self.read_more.get(id(handling), handling[2]):
            handling[4]["upto"] = end

    def cut_handlings(self) -> None:
        """What a kill cut from a leader's log (docs/validate.md). Fetches it handled after its last logged line:
        their followers logged the answers, or fetched again (an answer with nothing new for the partition
        leaves it out: incremental fetch sessions); each is the leader's handle_fetch after its last line and the
        send. Its appends after its last line (its log after the restart, page cache kept, ends past the LEO its lines
        showed): one produce per record, each just before the first of those handlings whose answer holds it,
        else just before the kill. A follower's appends so cut are not restored."""
        placed: dict[tuple, list] = {}
        for f, tp, (leader, corr), end, _hw, answered, where in self.answers:
            if (f, leader, corr) in self.handled:
                continue
            sent = self.sent_at.get((f, corr), answered)
            cut = next((last for last, kill in self.kills.get(leader, []) if sent < kill and last < answered), None)
            if cut is None:
                continue
            at = min(max(sent, cut) + 1, answered - 1)
            self.emit(leader, at, HANDLE_FETCH, where + " (lost to the kill)", {}, tp, replica=f, msg=[f, corr])
            placed.setdefault((leader, tp), []).append((at, end))
        # fetches sent after the leader's last line and answered (the follower fetched again) with no answer
        # logged either: an answer with nothing new for the partition leaves it out (incremental fetch sessions)
        logged = {(f, leader, corr) for f, _tp, (leader, corr), *_ in self.answers}
        next_send: dict[tuple, int] = {}
        for us, f, tp, corr, leader, offset in reversed(self.sends_log):
            later, next_send[(f, tp, leader)] = next_send.get((f, tp, leader)), us
            if later is None or (f, leader, corr) in self.handled or (f, leader, corr) in logged:
                continue
            cut = next((last for last, kill in self.kills.get(leader, []) if last < us < kill and later < kill), None)
            if cut is not None:
                at = max(us, cut) + 1
                self.emit(leader, at, HANDLE_FETCH, "lost to the kill", {}, tp, replica=f, msg=[f, corr])
                placed.setdefault((leader, tp), []).append((at, offset))
        for n, tp, leo, new, kill in self.cut_logs:
            handled = sorted(placed.get((n, tp), []))
            for o in range(leo, new):
                base = next((at for at, end in handled if end > o), kill)
                at = base - 1 - (new - 1 - o)  # in the order of their offsets
                self.moved(n, tp, at, o + 1, None)
                self.appends.setdefault((n, tp), []).append((at, o + 1))
                self.emit(n, at, PRODUCE, "lost to the kill", {"leo": o + 1}, tp, replica=n, acks=-1, records=1)

    def cut_appends(self, n: int, p: dict) -> None:
        """Notes a leader's log that ends past what its last lines showed, at its first line since a kill
        (placed in cut_handlings)."""
        tp, killed = p["tp"], self.killed.get(n)
        if killed is None or tp in killed[1]:
            return
        killed[1].add(tp)  # the first line of this partition since the restart: its recovered log
        before = self.last_state.get((n, tp), p)  # what its last line before showed (noted after this call)
        leo = before["leo"]
        if before.get("leader") == n and p["leo"] > leo:
            self.cut_logs.append((n, tp, leo, p["leo"], killed[0]))
        elif (n, tp) in self.in_flight_at_kill:
            self.cut_answers.append((n, tp, p["leo"], *self.in_flight_at_kill.pop((n, tp))))

    def cut_last_answers(self) -> None:
        """A follower's answer a kill cut from its log, the last fetch it sent: its log after the restart (page
        cache kept) ends past the offset that fetch asked from, within what the leader's handling of it read.
        Handled just after that handling, before the kill."""
        logged = {(f, leader, corr) for f, _tp, (leader, corr), *_ in self.answers}
        for f, tp, leo, leader, c, kill in self.cut_answers:
            handling = self.handled.get((f, leader, c))
            if handling is None or (f, leader, c) in logged or handling[-1]["us"] + 1 >= kill:
                continue
            if self.fetch_offset.get((f, c), leo) < leo <= self.read_more.get(id(handling), handling[2]):
                at = handling[-1]["us"] + 1
                self.emit(
                    f, at, HANDLE_FETCH_RESPONSE, "lost to the kill", {"leo": leo}, tp, replica=f, msg=[leader, c]
                )
                self.answers.append((f, tp, (leader, c), leo, -1, at, "lost to the kill"))

    def cut_sends(self, f: int, where: str) -> None:
        """The fetches of follower ``f`` a leader handled after ``f``'s last logged line, ``f`` then killed:
        the agent writes its lines every few milliseconds and a SIGKILL loses those not yet written, the
        sends of those fetches among them. Each is sent again, just before its handling, and the answer to the
        fetch before it (logged or restored) handled just before that: the new fetch offset is the log it
        left (docs/validate.md)."""
        last = self.last_line.get(f, -1)
        for handling, tp, offset in sorted(self.unsent.pop(f, []), key=lambda u: u[0][-2]["us"]):
            read, update = handling[-2:]
            if read["us"] <= last or "msg" in read:
                continue  # handled while its follower still logged: not a send the kill cut off
            before = self.last_send.pop((f, tp), None)
            if before is not None and before[0] is not None:
                where = "lost to the kill"
                self.emit(
                    f, read["us"] - 2, HANDLE_FETCH_RESPONSE, where, {"leo": offset}, tp, replica=f, msg=list(before)
                )
                self.lost_sends.append((self.out[f][-1], read, 2))
                # an answer holding more than its handling read was a DelayedFetch's (placed in finish())
                self.answers.append((f, tp, before, offset, -1, read["us"] - 2, "lost to the kill"))
            c = self.corr[f] = self.corr.get(f, 0) + 1
            self.fetch_offset[(f, c)] = offset
            self.emit(
                f, read["us"] - 1, SEND_FETCH, "lost to the kill", {"leo": offset}, tp, replica=f, max_batches=0, corr=c
            )
            self.lost_sends.append((self.out[f][-1], read, 1))
            self.last_send[(f, tp)] = (read["node"], c)
            self.handled[(f, read["node"], c)] = handling
            read["msg"] = update["msg"] = [f, c]

    def finish(self) -> None:
        """Where concurrent handlers' steps go. Kafka's request-handler threads handle fetches and produces at
        once, and the model's steps are atomic: a fetch's handling reads the log, then (when the agent's
        ``in`` says it began) updates its follower's state; a produce appends, then returns. So a handling
        is taken when it began, moved after a produce whose records it read that returned later, and before
        one whose records it did not read that returned earlier; a handling answered at once with an HW below
        one a concurrent handling raised goes before that one (it read before the raise); an HW a handling or
        an append raised (maybeIncrementLeaderHW runs after the update or the append) is checked at the
        leader's last update begun before the raise when that comes later, since the raise counted every
        follower updated by then."""
        self.flush()
        self.cut_last_answers()
        self.read_past_snapshot()
        answered = {}  # id(handling) -> when its follower first handled an answer to it
        for n, _tp, (leader, corr), _end, _hw, us, _where in self.answers:
            handling = self.handled.get((n, leader, corr))
            if handling is not None:
                answered[id(handling)] = min(us, answered.get(id(handling), us))
        for key, handlings in self.handlings.items():
            appends = sorted(self.appends.get(key, []))
            for handling in handlings:
                _began, entered, read, returned, line, _update = handling
                read = self.read_more.get(id(handling), read)
                at = line["us"]  # when it began, or just before the ISR expansion it proposed
                # only the appends that returned while the fetch was in the leader's hands can be misplaced, and
                # those it read that returned after it (the log took them before the read; their handler was late)
                lo = hi = bisect.bisect_left(appends, (entered,))
                while hi < len(appends) and (appends[hi][0] <= returned or appends[hi][1] <= read):
                    hi += 1
                window = appends[lo:hi]
                read_after = [done for done, end in window if end <= read and done >= at]
                if read_after and max(read_after) + 1 >= answered.get(id(handling), math.inf):
                    # its follower handled the answer before these appends returned: their handlers returned
                    # late, the appends go before the read
                    self.appended_before(key[0], key[1], read, at)
                elif read_after:
                    at = max(read_after) + 1
                else:
                    # one it did not read that returned by then, at its microsecond too (the pause soak at 497.0 s)
                    at = min((done for done, end in window if end > read and done <= at), default=at + 1) - 1
                line["us"], line["t"] = at, at // 1000
        for handlings in self.handlings.values():  # an update follows its read
            for *_, read, update in handlings:
                if update["us"] < read["us"]:
                    update["us"], update["t"] = read["us"], read["t"]
        raises: dict[tuple, list] = {}
        for made in sorted(self.raises, key=lambda made: made[2]):
            raises.setdefault(made[:2], []).append(made)
        every: dict[tuple, list] = {}  # the raises of updates and of appends, in the order they were made
        for made in sorted(self.raises + self.append_raises, key=lambda made: made[2]):
            every.setdefault(made[:2], []).append(made)
        self.cut_handlings()
        raising = {id(made[-1]) for made in self.raises}
        began = {key: sorted(handlings, key=lambda h: h[0]) for key, handlings in self.handlings.items()}
        for n, tp, made, hw, own in self.raises:
            # the model's leader has the HW a handling raised from the step where that raise is checked on (the
            # last update begun before it), though Kafka's handler returns later: a DelayedFetch read in between
            # has it
            self.moved(n, tp, checked_at(began.get((n, tp), []), made, own[-1])["us"], -1, hw)
        for n, tp, sent, end, hw, answered, where in self.answers:
            key = (sent[0], tp)
            if not self.delayed(n, tp, sent, end, hw, answered, where, raises.get(key, []), every.get(key, []), began):
                self.read_before_raises(n, tp, sent, hw, every.get(key, []))
                self.counted_later(n, tp, sent, hw, raising, every.get(key, []))
        for handlings in self.handlings.values():
            handlings.sort(key=lambda h: h[0])
        for line, read, gap in self.lost_sends:  # a handling moved above goes with its send
            line["us"] = min(line["us"], self.hw_read.get(id(read), read)["us"] - gap)
            line["t"] = line["us"] // 1000
        for n, tp, us, hw, own in self.raises + self.append_raises:
            at = checked_at(self.handlings.get((n, tp), []), us, own[-1])
            at["state"]["hw"] = max(hw, at["state"].get("hw", hw))

    def read_past_snapshot(self) -> None:
        """Handlings whose read took records past the LEO it noted: ``Partition.readRecords`` notes the LEO
        (and the HW), then reads up to the log's end as it is then, so an append in between is read, and its
        update counts the follower caught up to the LEO noted. Told from a DelayedFetch's read by the HW: a
        DelayedFetch is parked once the handling's update returned, after the HW it raised, so an answer
        below that HW is the handling's own read. Its read goes after the appends of what it read."""
        raised: dict[int, int] = {}
        for *_, hw, own in self.raises:
            raised[id(own)] = max(hw, raised.get(id(own), hw))
        for n, _tp, sent, end, hw, _answered, _where in self.answers:
            handling = self.handled.get((n, sent[0], sent[1]))
            if handling is not None and end > handling[2] and raised.get(id(handling), -1) > hw:
                self.read_more[id(handling)] = end
                handling[-2]["state"]["leo"] = end

    def log_order(self, n: int, tp: str, began: int, returned: int, end: int) -> tuple[int, dict | None]:
        """Where a produce append goes: when it returned, unless an append it ran alongside returned first with
        later offsets. Request-handler threads append at once (``appendRecordsToLeader`` holds the partition's
        read lock); the log's lock orders the appends by offset, but a thread may return after one that took
        the lock later. The offsets are the log's order: the append goes just before the first such one,
        which is returned with it (None when it keeps its place). Not looked for: a change of leadership
        between two such appends (the broker losing and winning back leadership while one was appending)."""
        at, before = returned, None
        for done, later_end, line in reversed(self.recent_appends.get((n, tp), [])):
            if done <= began:
                break  # returned before this one was entered: not concurrent, nor any before it
            if later_end > end and line["us"] <= at:
                # two microseconds before it: between them goes what read this append and not that one
                # (a DelayedFetch this append completed, a handling that read its LEO)
                at, before = line["us"] - 2, line
        return at, before

    def moved(self, n: int, tp: str, us: int, leo: int, hw: int | None) -> None:
        """The leader's LEO and HW from one of its steps on, as far as the event's arguments say: marks in
        time order holding running maxima. A handling's step may precede marks of events that returned
        before it (concurrent handlers): it goes in its place, and the maxima after it take it in."""
        marks = self.leader_at.setdefault((n, tp), [])
        i = bisect.bisect_right(marks, us, key=lambda m: m[0])
        before = marks[i - 1] if i else (0, 0, 0)
        hw = hw if hw is not None else -1
        marks.insert(i, (us, max(leo, before[1]), max(hw, before[2])))
        for k in range(i + 1, len(marks)):  # the handlers' window: a few marks
            m = marks[k]
            if m[1] >= leo and m[2] >= hw:
                break  # running maxima: every later mark holds them already
            marks[k] = (m[0], max(m[1], leo), max(m[2], hw))

    def delayed(
        self,
        n: int,
        tp: str,
        sent: tuple,
        end: int,
        hw: int,
        answered: int,
        where: str,
        raises: list = (),
        every: list = (),
        began: dict | None = None,
    ) -> bool:
        """A fetch answered with more than its handling read (records appended, or an HW raised, after it): Kafka
        parked it as a DelayedFetch (minBytes), and the purgatory read it again when that append or HW move
        completed it; the agent records no event there (DelayedFetch reads without updating the follower's
        state). It is the leader's ``handle_fetch`` of the same request again (docs/validate.md), right after
        the leader's first event that had LEO and HW where the answer shows them."""
        leader, corr = sent
        handled = self.handled.get((n, leader, corr))
        if handled is None:
            return False
        marks = self.leader_at.get((leader, tp), [])
        read_us, read_leo = handled[4]["us"], self.read_more.get(id(handled), handled[2])
        # marks come in time order and hold running maxima: both searches are binary (a soak has millions).
        # The handling read the HW strictly before it updated the follower's state (Partition.fetchRecords),
        # so an HW that its own update raised is news the answer can only carry from a DelayedFetch's read
        i = bisect.bisect_left(marks, read_us, key=lambda m: m[0])
        if end <= read_leo and (i == 0 or hw <= marks[i - 1][2]):
            return False
        j = bisect.bisect_left(marks, True, key=lambda m: m[1] >= end and m[2] >= hw)
        when = marks[j][0] + 1 if j < len(marks) else answered
        # that HW is checked where the raise that reached it is (finish()): at the last update begun before it,
        # which may come after the raising handling's own update, where its mark is (the partition soak at 173.8 s)
        e = bisect.bisect_left(every, read_us, key=lambda x: x[2])  # the raises made since its handling's read
        reached = i > 0 and marks[i - 1][2] < hw  # an HW raised after its handling's read
        reached = reached and next((x for x in every[e : e + RECENT_APPENDS] if x[3] >= hw and x[2] < answered), None)
        if reached and began is not None:
            checked = checked_at(began.get((leader, tp), []), reached[2], reached[4][-1])["us"] + 1
            when = max(when, checked) if checked < answered else when
        # after the produces of the records it holds, where they are placed (a handling that read one before
        # its produce returned may show its LEO earlier)
        lines = self.append_lines.get((leader, tp), [])
        k = bisect.bisect_left(lines, answered, key=lambda x: x[1])
        nearby = lines[max(0, k - RECENT_APPENDS) : k + RECENT_APPENDS]
        for held, _began, line in nearby:
            if read_leo < held <= end:
                when = max(when, line["us"] + 1)
        if when >= answered:
            self.appended_before(leader, tp, end, answered)
        # after its handling's update (Kafka parks a DelayedFetch once readFromLog returned), strictly before
        # its answer is handled
        when = min(max(when, handled[-1]["us"] + 1), answered - 1)
        when = self.raised_after(raises, hw, end, handled[-1]["us"], when)
        self.emit(leader, when, HANDLE_FETCH, where + " (a DelayedFetch completed)", {}, tp, replica=n, msg=[n, corr])
        self.completed[id(handled)] = completion = self.out[leader][-1]
        if began is not None:
            # before the line where the next raise past its HW is checked, when that is at its microsecond (the pause
            # soak at 266.8 s: an append's raise, checked at an update placed just after the appends it held)
            nxt = next((x for x in every[e : e + RECENT_APPENDS] if x[3] > hw and x[2] < answered), None)
            if nxt is not None:
                checked = checked_at(began.get((leader, tp), []), nxt[2], nxt[4][-1])
                if checked["us"] == when:
                    completion[TIE] = min(completion.get(TIE, 0), checked.get(TIE, 0) - 1)
        if any(held > end and line["us"] == when for held, _, line in nearby):
            completion[TIE] = -1  # before an append at its microsecond whose records it does not hold (243.6 s)
        return True

    def raised_after(self, raises: list, hw: int, end: int, after: int, when: int) -> int:
        """Where a DelayedFetch placed at ``when`` that read ``hw`` and records up to ``end`` goes among the
        updates placed by ``when`` that raised the HW past ``hw``. Kafka's handler updates its follower's state,
        then raises the HW (``maybeIncrementLeaderHW``); the model's ``handle_fetch`` does both at once, anywhere
        between the two. So the DelayedFetch goes just before the first such update after its own handling's
        (``after``) whose handling had read those records (its read is in the log before it; the pause soak at
        53.0 s), and an update whose raise came after the DelayedFetch goes just after it (at 111.5 s; at 231.5 s
        one placed before the DelayedFetch's own handling).
        ``raises``: the leader's, in the order they were made (within a second of where their updates are)."""
        conflicts = []
        for *_, made, raised, own in raises[bisect.bisect_left(raises, when - RAISE_SLACK_US, key=lambda x: x[2]) :]:
            if made > when + RAISE_SLACK_US:
                break
            if raised > hw and own[-1]["us"] <= when:
                conflicts.append((made, own))
        read_them = [
            own[-1]["us"]
            for made, own in conflicts
            if own[-1]["us"] > after and self.read_more.get(id(own), own[2]) >= end
        ]
        when = min(read_them, default=when)
        for made, own in conflicts:
            update = own[-1]
            if update["us"] == when or update["us"] < when <= made:
                self.move_update(own, when, 1)  # after the lines at its time
        return when

    def move_update(self, handling: tuple, us: int, tie: int | None = None) -> None:
        """A handling's update moved to ``us`` (after the lines there by ``tie``): what Kafka did after it goes
        with it, the ISR expansion its ``maybeExpandIsr`` proposed (the power soak at 280.1 s) and its
        DelayedFetch's completion (the partition soak at 188.9 s), when placed before."""
        update = handling[-1]
        update["us"], update["t"] = us, us // 1000
        if tie is not None:
            update[TIE] = tie
        for line in (self.expansions.get(id(handling)), self.completed.get(id(handling))):
            if line is not None and in_node_order(line) < in_node_order(update):
                line["us"], line["t"], line[TIE] = us, us // 1000, update.get(TIE, 0) + 1

    def appended_before(self, n: int, tp: str, end: int, answered: int) -> None:
        """The appends of records up to ``end`` on leader ``n`` that returned after a follower handled an
        answer holding them: the log took them before the DelayedFetch they completed read them, their
        handlers returned late. They go just before that answer's completion, in the order of their offsets."""
        lines = self.append_lines.get((n, tp), [])
        i = bisect.bisect_left(lines, answered, key=lambda x: x[1])  # in the order they returned: nearly by entry
        nearby = lines[max(0, i - RECENT_APPENDS) : i + RECENT_APPENDS]
        late = [x for x in nearby if x[0] <= end and x[1] < answered <= x[2]["us"] + 1]
        while late:  # and those of lower offsets an earlier move left after where these go (the log's order)
            lo, top = answered - 2 - len(late), max(x[0] for x in late)
            more = [x for x in nearby if x[0] < top and x[2]["us"] >= lo and all(x is not y for y in late)]
            if not more:
                break
            late += more
        for k, (_end, _began, line) in enumerate(sorted(late, key=lambda x: x[0])):
            line["us"] = answered - 2 - len(late) + k
            line["t"] = line["us"] // 1000

    def counted_later(self, n: int, tp: str, sent: tuple, hw: int, raising: set, raises: list) -> None:
        """A handling answered at once with an HW below the leader's by its read: the updates of other handlings
        in flight at its read that raised nothing themselves go after it. Kafka counted each in a raise another
        handler made after this read (the pause soak at 87.6 s: follower 0's update began 2 ms before follower
        1's read and returned 4 ms after it, and follower 1's own raise counted it); the model's
        ``handle_fetch`` raises the HW at once, so taken before this read it would show the raised HW. One
        that another raise made before this read, up to the HW it shows, may have counted stays (the partition
        soak at 151.0 s: a produce's raise counted an update begun 1 ms before it).
        ``raising``: the handlings whose own thread raised the HW; ``raises``: the leader's, in the order made."""
        handling = self.handled.get((n, sent[0], sent[1]))
        if handling is None:
            return
        at = handling[-2]["us"]
        marks = self.leader_at.get((sent[0], tp), [])
        i = bisect.bisect_right(marks, at, key=lambda m: m[0])
        r = bisect.bisect_right(raises, at, key=lambda x: x[2])
        # or a raise past it just after this read (a produce's: the power soak at 204.0 s) counted the updates begun
        # before the read, which the model's handle_fetch counts where it is placed
        raised_next = r < len(raises) and raises[r][3] > hw
        if (i == 0 or marks[i - 1][2] <= hw) and not raised_next:
            return  # the leader's HW by then is what the answer shows
        handlings = self.handlings.get((sent[0], tp), [])
        k = bisect.bisect_left(handlings, at, key=lambda h: h[3])  # returned after the read, in update order
        for other in handlings[k : k + HANDLERS]:
            update = other[-1]
            if other is not handling and id(other) not in raising and other[0] <= at and update["us"] <= at < other[3]:
                j = bisect.bisect_right(raises, other[0], key=lambda x: x[2])
                if any(made < at and raised <= hw for *_, made, raised, _own in raises[j : j + HANDLERS]):
                    continue  # a raise before this read may have counted it
                if id(other) in self.expansions:
                    continue  # its follower, outside the ISR, counts only from the expansion it proposed on
                self.move_update(other, at, 1)

    def read_before_raises(self, n: int, tp: str, sent: tuple, hw: int, raises: list) -> None:
        """A handling answered at once carries the HW it read, before it updated its follower's state. An
        answer below an HW that a concurrent handling raised while this one was in the leader's hands was read
        before that raise: Kafka's handler updates its follower's state, then raises the HW, and another
        handler may read in between; the model's ``handle_fetch`` does both at once. So this handling goes
        before the raising one, or, when that one's update began before this fetch was even entered (the pause
        soak at 54.3 s: it began 11 ms before its raise), this read goes before that raise and that update after
        this read (the partition soak at 57.3 s). A produce's raise counts too: its append and raise are one
        step of the model, so the read goes before it (the power soak at 204.0 s: a restarted follower's fetch
        read HW 949 and records to 951, and a produce appended 952 and raised the HW to 951 before the
        handling's update). ``raises``: the leader's raises of updates and appends, in the order they were made."""
        handled = self.handled.get((n, sent[0], sent[1]))
        if handled is None:
            return
        handling = handled
        _began, entered, _read, returned, line, _update = handling
        at = line["us"]
        for _n, _tp, us, raised, own in raises[bisect.bisect_right(raises, entered, key=lambda x: x[2]) :]:
            if us > returned + RAISE_SLACK_US:
                break  # a raise after this handling returned came after its read all the same
            if raised > hw and own is not handling and own[-1]["us"] <= at:
                if own[-1]["us"] > entered:
                    at = own[-1]["us"] - 1
                elif entered < us:  # that update began before this fetch came and raised after it came
                    at = min(at, us - 1)  # this read before that raise, and that update after this read
                    self.move_update(own, at + 1)
        if at < line["us"]:  # the appends it read go before it (their handlers returned late)
            read = self.read_more.get(id(handling), handling[2])
            self.appended_before(sent[0], tp, read, at)
            if self.appended_after(sent[0], tp, read, at):
                # and one it read began after that raise: no point holds both its HW and its batches, which
                # Partition.readRecords reads each on its own (the partition soak at 162.1 s). Its HW is read here,
                # its LEO and batches where the read is (after the appends of what it read)
                fields = {"msg": line["msg"]} if "msg" in line else {}
                self.emit(sent[0], at, READ_FETCH_HW, line["from"], {"hw": hw}, tp, replica=n, **fields)
                self.hw_read[id(line)] = self.out[sent[0]][-1]
                return
        line["us"], line["t"] = at, at // 1000

    def appended_after(self, n: int, tp: str, end: int, at: int) -> bool:
        """Whether an append of records up to ``end`` on leader ``n`` is placed at or after ``at``."""
        lines = self.append_lines.get((n, tp), [])
        i = bisect.bisect_left(lines, at, key=lambda x: x[1])
        return any(
            held <= end and line["us"] >= at for held, _, line in lines[max(0, i - RECENT_APPENDS) : i + RECENT_APPENDS]
        )


def _record(r) -> dict:
    """The metadata record (or request) an event's first argument is, else {}."""
    a = r.line.get("args") or []
    return a[0] if a and isinstance(a[0], dict) else {}


def _duplicate(args: list, ret: dict) -> bool:
    """A retried batch the log already holds (the idempotent producer's): Kafka's ``UnifiedLog.append``
    assigns the batch offsets from the log's end offset (in place, as the agent's exit line shows the
    batch), finds it in the producer state and returns the offsets it was first written at, below them,
    appending nothing. A batch copied by the validation (compressed) shows the producer's offsets: no sign."""
    batches = args[0] if args and isinstance(args[0], list) else []
    base = batches[0][0] if batches and isinstance(batches[0], list) and batches[0] else None
    return isinstance(base, int) and base > ret["lastOffset"]


def checked_at(handlings: list, us: int, own: dict) -> dict:
    """The line at which an HW raised at ``us`` is checked: the leader's update placed last among those begun by
    then (request handlers: a few at once; the raise counted every follower updated by then), or the raising
    step's own line ``own`` when that is later. ``handlings``: the leader's, in the order they began."""
    i = bisect.bisect_right(handlings, us, key=lambda h: h[0]) - 1
    at = max((h[-1] for h in handlings[max(0, i - HANDLERS) : i + 1]), key=in_node_order, default=own)
    return at if in_node_order(at) > in_node_order(own) else own


def in_node_order(line: dict) -> tuple:
    """A node's lines in time order; at the same microsecond, by their TIE, then as emitted."""
    return line["us"], line.get(TIE, 0), line.get("seq", 0)


def _fetcher_leader(thread: str | None) -> int | None:
    """ReplicaFetcherThread-<fetcher id>-<leader id>: the broker it fetches from."""
    try:
        return int(str(thread).rsplit("-", 1)[1])
    except (IndexError, ValueError):
        return None


def translate(path: str | os.PathLike) -> tuple[dict, dict]:
    """The recording at ``path`` as an event log: (header, {node: [event, ...]})."""
    run, events = iter_recording(path)
    t = Translation(run)
    for r in events:
        if r.ev.startswith("agent."):
            if r.node != run["controller"] and str(r.line.get("class", "")).endswith(".KRaftMetadataCache"):
                t.caches = True  # the brokers' metadata caches are recorded (agent version 2)
            continue
        if r.node == run["controller"]:
            t.controller(r)
        else:
            t.broker(r)
    t.finish()
    for node, lines in t.out.items():
        lines.sort(key=in_node_order)
        for i, line in enumerate(lines, 1):
            line["seq"] = i
    every = sorted((line for lines in t.out.values() for line in lines), key=lambda line: line["us"])
    for line in every:
        line.pop(TIE, None)
    for i, line in enumerate(every, 1):  # one order for all nodes: the shared clock's (lc breaks a tie in t)
        line["lc"] = i
    return header(run, t.partitions, t.caches), t.out


def write(path: str | os.PathLike, out: str | os.PathLike) -> Path:
    """Translate the recording at ``path`` into the event log folder ``out``."""
    head, nodes = translate(path)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for node, lines in nodes.items():
        name = "controller.jsonl" if node == CONTROLLER else f"broker-{node}.jsonl"
        with open(out / name, "w", encoding="utf-8") as f:
            f.write(json.dumps(head) + "\n")
            for line in lines:
                f.write(json.dumps(line, separators=(",", ":")) + "\n")
    return out


__all__ = ["CONTROLLER", "protocol", "translate", "write"]
