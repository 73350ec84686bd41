"""Trace validation: a behaviour of the model that explains a run's events, found breadth-first.

The candidates are the model states (model/) that explain every event so far. For the next event
each candidate takes the unlogged steps the event needs first (docs/steps.md, "Runs nobody drove":
clock ticks up to the event's time, the loss of messages the log shows were never delivered, the
network's duplicate of a delivered request), then the docs/steps.md step the event is; a successor
survives if the model enables every step and leaves the node in the state the event logged. The
first event no candidate survives is reported with every candidate and why the model refuses it
there (``why_disabled`` or the state it would leave).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

from isrcheck.model import MESSAGE_KINDS, ModelConfig, Step, StepRefused, apply
from isrcheck.model.alphabet import (
    CHECKPOINT_HW,
    CONSUME,
    CONTROLLED_SHUTDOWN,
    CRASH,
    DELIVER_LEADER_AND_ISR,
    DROP,
    ELECT,
    EXPAND_ISR,
    FENCE,
    FLUSH,
    HANDLE_ALTER_PARTITION,
    HANDLE_ALTER_PARTITION_RESPONSE,
    HANDLE_FETCH,
    HANDLE_FETCH_RESPONSE,
    LOSE_DISK,
    PRODUCE,
    READ_FETCH,
    READ_FETCH_HW,
    REGISTER,
    REJOIN,
    REMOVE_FETCHER,
    RESTART,
    SEND_FETCH,
    SHRINK_ISR,
    TICK,
    UNFENCE,
    UPDATE_METADATA_CACHE,
)
from isrcheck.model.state import LeaderAndIsr, State, initial_state

from . import unlogged
from .budgets import Judged
from .events import HALTS, Event, Trace
from .sharedlog import SharedLog, shared
from .views import broker_view, cache_fenced, controller_view, mismatch

# the model's deliveries: event step (the model step of the same name) -> the message kind it takes
DELIVERIES = {
    READ_FETCH: "fetch_request",  # the read of a split handling (split_fetch_handling), handle_fetch its rest
    READ_FETCH_HW: "fetch_request",  # that read's HW alone, read_fetch its LEO and batches
    HANDLE_FETCH: "fetch_request",
    HANDLE_FETCH_RESPONSE: "fetch_response",
    HANDLE_ALTER_PARTITION: "alter_partition",
    HANDLE_ALTER_PARTITION_RESPONSE: "alter_partition_response",
}
CONTROLLER_STEPS = (
    ELECT,
    FENCE,
    UNFENCE,
    REGISTER,
    HANDLE_ALTER_PARTITION,
    "resend_leader_and_isr",
    CONTROLLED_SHUTDOWN,
)
# what a broker up again but not yet registered does, which changes nothing the model keeps
UNREGISTERED = (PRODUCE, CONSUME, FLUSH, *HALTS, HANDLE_FETCH)
SAME_NAME = (PRODUCE, CONSUME, SHRINK_ISR, EXPAND_ISR, ELECT, FENCE, FLUSH, CHECKPOINT_HW, LOSE_DISK, REMOVE_FETCHER)


def _expand_args(ev: Event) -> dict:
    """An ``expand_isr`` that names the follower it adds takes that one alone (Kafka's proposal)."""
    return {"arg": ev.fields["follower"]} if "follower" in ev.fields else {}


class _Path:
    """The model steps that lead to a candidate, shared with its ancestors' (a linked list)."""

    __slots__ = ("steps", "parent", "judged")

    def __init__(self, steps: tuple, parent: "_Path | None", judged: Judged | None = None) -> None:
        self.steps, self.parent, self.judged = steps, parent, judged

    def unwind(self) -> list:
        out, node = [], self
        while node is not None:
            out.append(node.steps)
            node = node.parent
        return [st for steps in reversed(out) for st in steps]


@dataclass
class Refusal:
    """Why one candidate cannot explain the event."""

    candidate: int
    state: dict  # the node's state in that candidate (its view of the partition)
    reasons: list


@dataclass
class Verdict:
    """``explained`` with the model's steps, or the first event none explains."""

    explained: bool
    events: int  # events explained
    steps: list  # the model steps of one explaining behaviour (explained)
    event: Event | None = None  # the first unexplained event
    refusals: list | None = None
    max_candidates: int = 0
    partition: str | None = None  # the partition of the unexplained event, in a log of many
    renamed: dict | None = None  # that partition's broker -> model broker
    partitions: dict | None = None  # tp -> {"events", "model_steps"}, in a log of many
    judged: Judged | None = None  # the explaining behaviour's fault budgets (a search that judges)

    def to_json(self) -> dict:
        out = {
            "verdict": "explained" if self.explained else "not explained",
            "events": self.events,
            "max_candidates": self.max_candidates,
        }
        if self.partitions is not None:
            out["partitions"] = self.partitions
        if self.partition is not None:
            out["partition"] = self.partition
            out["renamed"] = {str(b): m for b, m in self.renamed.items()}
        if self.explained:
            out["model_steps"] = len(self.steps)
            out["steps"] = self.steps
        else:
            e = self.event
            out["event"] = {
                "where": e.where,
                "node": e.node,
                "seq": e.seq,
                "t": e.t,
                "step": e.step,
                **e.fields,
                "state": e.state,
            }
            out["candidates"] = [{"state": r.state, "why": r.reasons} for r in self.refusals]
        return out


class Search:
    """Breadth-first over the candidate model states of one trace; with ``judge``, each candidate
    carries its fault ledger and history properties along (``budgets.Judged``)."""

    def __init__(self, trace: Trace, judge: bool = False) -> None:
        self.cfg: ModelConfig = trace.config
        self.trace = trace
        self.judging = judge
        self.controller_id: int | None = None
        self.restarting: dict[int, Event] = {}  # broker -> its logged restart, until it registers
        self.delivered: dict[tuple, object] = {}  # (node, step, sender, corr) -> the message delivered
        self.orphaned: dict[tuple, object] = {}  # the same, of fetches whose sender crashed since
        self.sent: dict[tuple, object] = {}  # (follower, corr) -> its fetch not yet handled
        self.answers: dict[tuple, object] = {}  # (follower, leader, corr) -> the answer not yet handled
        self.produced: dict[int, dict] = {}  # broker -> its last logged produce's acks and records
        # (leader, follower) -> (time, leader LEO, leader epoch) of the follower's last fetch it handled,
        # for the lag rule's second clause, which long polls (replica.fetch.wait.max.ms) bring in
        self.fetched: dict[tuple, tuple] = {}
        self.long_polls = bool(trace.settings.get("replica_fetch_wait_max_ms"))
        self.recovered = _recovered(trace.events)  # a process crash's event -> the LEO its recovery logged
        c = initial_state(self.cfg).controller  # the partition states the controller had
        self.controller_states = {(c.leader, c.leader_epoch, c.isr, c.partition_epoch)}

    # -- the unlogged steps ---------------------------------------------------------------------
    def _tick_to(self, s: State, t: int, steps: list) -> State:
        """``tick`` until the model's clock reads ``t``: a tick that expires no DelayedProduce
        changes only ``now``, so such runs of ticks are taken at once."""
        while s.now < t:
            deadlines = [p[2] for rep in s.replicas for p in rep.pending_produces if p[2] >= s.now]
            due = min(deadlines, default=None)
            if due is None or due + 1 > t:
                steps.append({"step": TICK, "times": t - s.now})
                return s._replace(now=t)
            if due > s.now:
                steps.append({"step": TICK, "times": due - s.now})
                s = s._replace(now=due)
            s, _ = apply(self.cfg, s, Step(TICK))
            steps.append({"step": TICK})
        return s

    def _take(self, s: State, st: Step, steps: list) -> State:
        s2, _ = apply(self.cfg, s, st)
        steps.append(st.to_json())
        return s2

    # -- one event --------------------------------------------------------------------------------
    def successors(
        self, s: State, ev: Event, reasons: list, judged: Judged | None = None
    ) -> Iterator[tuple[State, list, Judged | None]]:
        """Every way ``s`` explains ``ev``: (the state after it, the model steps taken, ``judged``
        after them when the search judges)."""
        pre: list = []
        if ev.t < s.now:
            reasons.append(f"the event is at {ev.t} ms, before the model's clock ({s.now})")
            return
        ticked = self._tick_to(s, ev.t, pre)
        if self.judging and ticked is not s:
            judged = judged.after(self.cfg, s, Step(TICK), ticked, ev)
        s = ticked
        r = ev.fields["replica"]
        for alt in self._alternatives(s, ev, r):
            steps = list(pre)
            j = judged
            try:
                s2 = s
                for st in alt:
                    before, k = s2, len(steps)
                    s2 = self._take(s2, st, steps) if isinstance(st, Step) else st(s2, steps)
                    if self.judging:
                        for taken in [st] if isinstance(st, Step) else steps[k:]:
                            j = j.after(self.cfg, before, taken, s2, ev)
            except StepRefused as exc:
                reasons.append(f"{exc.step.name} refused: {exc.reason}")
                continue
            except unlogged.Mismatch as exc:
                reasons.append(str(exc))
                continue
            bad = self._state_mismatch(s2, ev)
            if bad is not None:
                reasons.append(f"after {', '.join(_short(x) for x in steps[len(pre) :]) or 'nothing'}: {bad}")
                continue
            yield kept(s2, self.judging), steps, j

    def _state_mismatch(self, s: State, ev: Event) -> str | None:
        if ev.step in CONTROLLER_STEPS:
            return mismatch(controller_view(s), ev.state)
        if ev.step == SEND_FETCH and ("stale_fetcher" in ev.fields or not self.trace.apache_kafka):
            # the tag a stale fetcher sent under (docs/steps.md): isrcheck's logs name it, or its absence
            model, logged = list(s.replicas[ev.node].stale_fetcher), ev.fields.get("stale_fetcher", [])
            if model != logged:
                return f"stale_fetcher is {model or 'none'} in the model, {logged or 'none'} in the log"
        if ev.step == RESTART or (ev.step in UNREGISTERED and self._down_to_the_model(s, ev.node)):
            return None  # checked when the model restarts it
        return mismatch(broker_view(s, ev.node), ev.state)

    def _alternatives(self, s: State, ev: Event, r: int) -> Iterator[list]:
        step = ev.step
        if step in SAME_NAME:
            if step == FLUSH and self._down_to_the_model(s, r):  # its recovered log made durable
                yield [unlogged.written_back(self.restarting[r], r), unlogged.flush_while_down(r)]
            elif step == CHECKPOINT_HW and s.replicas[r].alive and s.replicas[r].hw_checkpoint == s.replicas[r].hw:
                # Kafka's checkpointHighWatermarks writes every partition's HW each interval; the model takes a
                # write of what the checkpoint holds as no step
                yield []
                return
            elif step in UNREGISTERED and self._down_to_the_model(s, r):
                yield [unlogged.unregistered]  # up, not yet registered: it only refuses
                return
            if step == CONSUME:
                yield [unlogged.consume(self.cfg, r)]
                return
            if (
                step == FENCE
                and self.trace.renamed is not None
                and s.controller.leader == r
                and ev.state.get("leader", -1) >= 0
            ):  # KRaft: the fence and the election in one change
                yield [unlogged.fence_and_elect(self.cfg, r)]
                return
            yield [Step(step, r, **(_produce_args(ev) if step == PRODUCE else _expand_args(ev)))]
        elif step == UPDATE_METADATA_CACHE:
            logged = cache_fenced(ev.state.get("cached_broker_epochs"))
            # a cache the model's restart already set (a restarted broker's first image) is no step
            if cache_fenced(list(s.replicas[r].cached_broker_epochs)) == logged:
                yield []
            yield [Step(UPDATE_METADATA_CACHE, r)]
        elif step == SEND_FETCH:
            yield unlogged.drop_outstanding(s, r) + [Step(SEND_FETCH, r, max_batches=ev.fields["max_batches"])]
        elif step == HANDLE_FETCH and _holds(s, ev.node, r):
            yield [Step(HANDLE_FETCH, r)]  # the rest of a handling whose read was logged (read_fetch)
        elif step == READ_FETCH and _holds(s, ev.node, r, hw_only=True):
            yield [Step(READ_FETCH, r)]  # the LEO and batches of a read whose HW was logged (read_fetch_hw)
        elif step in DELIVERIES:
            cut = ev.fields.get("batches"), ev.fields.get("upto")
            credit = self._lag_credit(ev, r) if step == HANDLE_FETCH else None
            for alt in self._delivery(s, ev, r, DELIVERIES[step]):
                if alt and isinstance(alt[-1], Step):
                    if any(cut):  # a response the leader cut by bytes: to the model, a request of that many batches
                        alt = alt[:-1] + [unlogged.byte_limit(r, *cut), alt[-1]]
                    if credit is not None:
                        alt = alt + [credit]
                yield alt
        elif step == DELIVER_LEADER_AND_ISR:
            yield from self._leader_and_isr(s, ev, r)
        elif step == "lost_alter_partition":
            yield from unlogged.lost_alter_partition(s, r, ev.fields["leader_epoch"])
        elif step == "resend_leader_and_isr":  # no step of its own: the controller's LeaderAndIsr again
            yield [unlogged.resend_leader_and_isr(r)]
        elif step == CONTROLLED_SHUTDOWN and self.cfg.kraft_controlled_shutdown:
            yield [Step(CONTROLLED_SHUTDOWN, r)]
        elif step == CONTROLLED_SHUTDOWN:  # Kafka's one partition change for what the model takes in two
            yield [unlogged.controlled_shutdown(self.cfg, r)]
        elif step == UNFENCE:
            if self.cfg.unfence_at_heartbeat:  # a step of its own, a registration's unfencing too
                yield [Step(UNFENCE, r)]
            else:  # no step of its own (docs/steps.md): a rejoin that keeps the broker epoch
                yield [unlogged.unfence(self.cfg, r)]
        elif step == REGISTER:
            if not s.replicas[r].alive:  # the model's restart now (KRaft: and its registration)
                restart = [unlogged.written_back(self.restarting.get(r), r), Step(RESTART, r)]
                restart += [Step(REGISTER, r)] if self.cfg.rules.start_before_registration else []
                yield restart + [unlogged.check_recovered(self.restarting.get(r), r)]
                if self.trace.apache_kafka:
                    registered = self.cfg.rules.start_before_registration  # the registration taken with the fold
                    yield restart[: len(restart) - registered] + [
                        unlogged.elect_with_registration(self.cfg, r if registered else None),
                        unlogged.check_recovered(self.restarting.get(r), r),
                    ]
            elif s.replicas[r].broker_epoch < 0:  # started on the replayed metadata log (KRaft), registered now
                yield [Step(REGISTER, r)]
                if self.trace.apache_kafka:
                    yield [Step(REGISTER, r), unlogged.caught_up(self.cfg, r)]
                    yield [unlogged.elect_with_registration(self.cfg, r)]
            elif r in s.controller.fenced:
                yield [Step(REJOIN, r)]
            elif self.trace.apache_kafka:  # registered already, at its first replayed event
                yield []
                yield [unlogged.elect_with_registration(self.cfg)]
            else:
                yield [Step(REJOIN, r)]  # refused: an unfenced broker does not register again
        elif step == RESTART:
            yield []  # up, to the model when the controller registers it (``register``)
            if self.cfg.rules.start_before_registration and not s.replicas[r].alive:
                # KRaft: the broker replays the metadata log and acts on it (a follower fetches with
                # broker epoch -1) before its registration is accepted (BrokerServer installs its
                # metadata publishers first): to the model, restarted now, registered by ``register``
                yield [unlogged.written_back(ev, r), Step(RESTART, r), unlogged.check_recovered(ev, r)]
        elif step in HALTS:
            kind = ev.crash_kind
            # up again but never registered, to the model it stayed down: its machine's crash acts on
            # the replica as a crash does (a power loss takes the page cache, a clean one flushes it)
            # how many unflushed batches a power loss let the page cache write back shows only at
            # restart: the crash keeps none, and the restart's recovery says how many it kept
            st = Step(CRASH, r, kind)
            down = self._down_to_the_model(s, r)
            yield (
                [unlogged.written_back(self.restarting[r], r), unlogged.crash_while_down(self.cfg, st)]
                if down
                else [st]
            )
            if kind != "clean" and r not in self.restarting:
                # killed between appending a fetch response and logging it (the event is written after
                # the step it records; a clean shutdown finishes the step): the append without its line,
                # after the answers before it in the queue (a DelayedFetch's earlier, empty one)
                for k in range(1, len(s.fetch_responses[r]) + 1):
                    yield [Step(HANDLE_FETCH_RESPONSE, r)] * k + [st]
                recovered = self.recovered.get(ev.where)
                if r in self.produced and recovered is not None and recovered > len(s.replicas[r].log):
                    # a leader killed so between a produce's append and its line: a batch as its last
                    # one logged. Only where its recovery shows more than it logged: the produce names
                    # every later record anew, so a search that tried it at each crash forked for good
                    yield [Step(PRODUCE, r, **self.produced[r]), st]
                leo = recovered if kind == "process" else None
                for k in range(1, len(s.fetch_responses[r]) + 1) if leo is not None else ():
                    # killed in the middle of that append: a prefix of its batches, as recovery shows
                    yield [Step(HANDLE_FETCH_RESPONSE, r)] * (k - 1) + [
                        unlogged.partial_response(r, leo),
                        Step(HANDLE_FETCH_RESPONSE, r),
                        st,
                    ]

    def _down_to_the_model(self, s: State, r: int) -> bool:
        """Broker ``r`` is up again (its restart logged) but down to candidate ``s``: the model
        restarts it when the controller registers it, or (KRaft) at its restart."""
        return r in self.restarting and not s.replicas[r].alive

    def _lag_credit(self, ev: Event, r: int):
        """The second clause of the lag rule after the leader handled follower ``r``'s fetch, as
        the follower's previous fetch in this leadership allows (``unlogged.lag_credit``); None without."""
        before = self.fetched.get((ev.node, r)) if self.long_polls else None
        if before is None or before[2] != ev.state.get("epoch"):
            return None
        return unlogged.lag_credit(ev.node, r, before[0], before[1])

    def _delivery(self, s: State, ev: Event, r: int, kind: str) -> Iterator[list]:
        """The oldest message of the queue after the lost ones before it; a second delivery of the
        same request is the network's duplicate of it."""
        field = MESSAGE_KINDS[kind]
        queue = getattr(s, field)[r]
        if kind == "fetch_request" and self._down_to_the_model(s, ev.node):
            # up again but not registered (down to the model): it answers NOT_LEADER_OR_FOLLOWER, which
            # changes nothing on either side, as a lost request does
            k = next((k for k, m in enumerate(queue) if m.leader == ev.node), None)
            yield [] if k is None else [Step(DROP, r, kind, index=k)]
            return
        key = (ev.node, ev.step) + (ev.msg or ())
        if ev.msg is not None and key in self.delivered:
            yield [unlogged.requeue(field, r, self.delivered[key]), Step(ev.step, r)]
            return
        if key in self.orphaned:  # a DelayedFetch completed for a broker that crashed since
            yield [unlogged.requeue(field, r, self.orphaned[key]), Step(ev.step, r)]
            return
        given_up = self.sent.get(ev.msg) if kind == "fetch_request" and ev.msg is not None else None
        if given_up is not None and not any(m.leader == ev.node for m in queue):
            # its sender gave it up (the connection broke) and fetched again, but the bytes had
            # reached the leader: the request handled, its answer lost
            yield [unlogged.requeue(field, r, given_up), Step(ev.step, r)]
            return
        sender = ev.msg[0] if ev.msg else None
        answer = self.answers.get((r, sender, ev.msg[1])) if kind == "fetch_response" and ev.msg else None
        if answer is not None and not any(m.leader == sender for m in queue):
            # the model lost it with its sender's crash, but TCP had it on the way: delivered still
            # (or, below, an answer that changed nothing)
            yield [unlogged.requeue(field, r, answer), Step(ev.step, r)]
        for k, m in enumerate(queue):
            if kind == "fetch_request" and m.leader != ev.node:
                continue
            if kind == "fetch_response" and sender is not None and m.leader != sender:
                continue
            yield [Step(DROP, r, kind, index=0)] * k + [Step(ev.step, r)]
        if (
            kind == "fetch_request"
            and not any(m.leader == ev.node for m in queue)
            and s.replicas[ev.node].leader != ev.node
        ):
            yield []  # sent while the model had this broker down: answered NOT_LEADER_OR_FOLLOWER, a no-op
        if kind == "fetch_response" and not any(m.leader == sender for m in queue):
            yield unlogged.drop_outstanding(s, r)  # an answer that changed nothing: to the model, a lost one
        if kind == "alter_partition_response" and not queue and s.alter_partition[r]:
            yield [unlogged.refused_alter_partition(self.cfg, r), Step(ev.step, r)]
        if not queue:
            yield [Step(ev.step, r)]  # refused, with the model's reason

    def _leader_and_isr(self, s: State, ev: Event, r: int) -> Iterator[list]:
        m = ev.fields["message"]
        want = (m.get("leader"), m.get("leader_epoch"), tuple(m.get("isr", ())), m.get("partition_epoch"))
        queue = s.leader_and_isr[r]
        key = (ev.node, ev.step) + (ev.msg or ())
        if key in self.delivered:  # the network's duplicate of one delivered before
            yield [
                unlogged.requeue("leader_and_isr", r, self.delivered[key], at_end=True),
                Step(DELIVER_LEADER_AND_ISR, r, index=len(queue)),
            ]
            return
        for i, msg in enumerate(queue):
            if (msg.leader, msg.leader_epoch, msg.isr, msg.partition_epoch) == want:
                yield [Step(DELIVER_LEADER_AND_ISR, r, index=i)]
                return
        if self.trace.renamed is not None and want in self.controller_states:
            # a Kafka cluster's controller sends a partition's state to every live broker, again on
            # heartbeats and fencing: a state the controller had, sent again then
            yield [
                unlogged.requeue("leader_and_isr", r, LeaderAndIsr(*want), at_end=True),
                Step(DELIVER_LEADER_AND_ISR, r, index=len(queue)),
            ]
            return
        yield [
            unlogged.Refuse(
                f"no LeaderAndIsr {m} to broker {r} in flight (in flight: {[tuple(x) for x in queue] or 'none'})"
            )
        ]

    # -- bookkeeping between events ---------------------------------------------------------------
    def note(self, before: State, after: State, ev: Event) -> None:
        """Remember what later events need: messages sent and delivered (for duplicates and late
        deliveries), restarts."""
        r = ev.fields["replica"]
        if ev.step == PRODUCE:
            self.produced[r] = _produce_args(ev)
        elif ev.step == SEND_FETCH and ev.corr is not None and after.fetch_requests[r]:
            self.sent[(r, ev.corr)] = after.fetch_requests[r][-1]
        elif ev.step == HANDLE_FETCH and _holds(before, ev.node, r):
            if ev.msg is not None and after.fetch_responses[r]:  # its answer, by the request's correlation id
                self.answers[(r, ev.node, ev.msg[1])] = after.fetch_responses[r][-1]
            return  # its request was taken at its read_fetch
        elif ev.step == READ_FETCH and _holds(before, ev.node, r, hw_only=True):
            return  # its request was taken at its read_fetch_hw
        elif ev.step in (READ_FETCH, READ_FETCH_HW) and ev.msg is not None:
            m = self.sent.pop(ev.msg, None)  # the request this read took
            if m is not None:  # under its handle_fetch: a DelayedFetch's completion handles it again
                self.delivered.setdefault((ev.node, HANDLE_FETCH) + ev.msg, m)
        elif ev.step == HANDLE_FETCH and ev.msg is not None:
            if ev.state.get("leader") == ev.node:
                self.fetched[(ev.node, r)] = (ev.t, ev.state["leo"], ev.state["epoch"])
            m = self.sent.pop(ev.msg, None)  # the request this event handled, whichever way it came
            if m is not None:
                self.delivered.setdefault((ev.node, ev.step) + ev.msg, m)
            if after.fetch_responses[r]:  # its answer, by the request's correlation id
                self.answers[(r, ev.node, ev.msg[1])] = after.fetch_responses[r][-1]
        elif ev.step == HANDLE_FETCH_RESPONSE and ev.msg is not None:
            self.answers.pop((r,) + ev.msg, None)
        if ev.step in CONTROLLER_STEPS:
            st = ev.state
            self.controller_states.add((st.get("leader"), st.get("epoch"), tuple(st.get("isr", ())), st.get("pe")))
        if ev.step == RESTART or ev.step in HALTS:  # a new process knows no follower's previous fetch
            self.fetched = {k: v for k, v in self.fetched.items() if k[0] != ev.node}
        if ev.step == RESTART:
            self.restarting[r] = ev
            self.orphaned = {k: m for k, m in self.orphaned.items() if k[2] != r}  # a new process numbers anew
            self.sent = {k: m for k, m in self.sent.items() if k[0] != r}
            self.answers = {k: m for k, m in self.answers.items() if k[0] != r}
        elif ev.step == REGISTER or ev.step in HALTS:
            self.restarting.pop(r, None)
        if ev.step in HALTS:
            # a fetch the crashed broker sent may still complete as a DelayedFetch: the request
            # handled again on the leader, the answer lost with the broker (its next process numbers
            # its requests anew: none of them is a duplicate of these)
            self.orphaned.update((k, m) for k, m in self.delivered.items() if k[1] == HANDLE_FETCH and k[2:3] == (r,))
            self.delivered = {k: v for k, v in self.delivered.items() if k[0] != r and k[2:3] != (r,)}
        if ev.msg is not None and (ev.step in DELIVERIES or ev.step == DELIVER_LEADER_AND_ISR):
            key = (ev.node, ev.step) + ev.msg
            if key not in self.delivered:
                kind = DELIVERIES.get(ev.step, "leader_and_isr")
                queue = getattr(before, MESSAGE_KINDS[kind])[r]
                m = self._delivered_message(ev, kind, queue)
                if m is not None:
                    self.delivered[key] = m

    @staticmethod
    def _delivered_message(ev: Event, kind: str, queue: tuple):
        if kind == "leader_and_isr":
            m = ev.fields["message"]
            want = (m.get("leader"), m.get("leader_epoch"), tuple(m.get("isr", ())), m.get("partition_epoch"))
            return next((x for x in queue if (x.leader, x.leader_epoch, x.isr, x.partition_epoch) == want), None)
        for m in queue:
            if kind != "fetch_request" or m.leader == ev.node:
                return m
        return None

    # -- the search -------------------------------------------------------------------------------
    def run(self) -> Verdict:
        start = _Path((), None, Judged() if self.judging else None)
        frontier: list[tuple[State, _Path]] = [(kept(initial_state(self.cfg), self.judging), start)]
        widest = 1
        for n, ev in enumerate(self.trace.events):
            nxt: list[tuple[State, _Path]] = []
            refusals = []
            for i, (s, path) in enumerate(frontier):
                reasons: list = []
                for s2, steps, judged in self.successors(s, ev, reasons, path.judged):
                    nxt.append((s2, _Path(tuple(steps), path, judged)))
                refusals.append((i, s, reasons))
            if not nxt:
                return Verdict(
                    False, n, [], ev, [Refusal(i, self._node_view(s, ev), why) for i, s, why in refusals], widest
                )
            self.note(frontier[0][0], nxt[0][0], ev)
            if len(nxt) > 1:
                nxt = _distinct(nxt)
            frontier = nxt
            widest = max(widest, len(frontier))
        last, path = frontier[0]
        judged = path.judged.at_end(self.cfg, last) if self.judging else None
        return Verdict(True, len(self.trace.events), path.unwind(), max_candidates=widest, judged=judged)

    def _node_view(self, s: State, ev: Event) -> dict:
        if ev.step in CONTROLLER_STEPS:
            return {"now": s.now, "controller": controller_view(s)}
        return {"now": s.now, f"broker {ev.node}": broker_view(s, ev.node)}


_GHOSTS_READ_BY_NO_STEP = {"acked": (), "consumed": ()}


def _holds(s: State, leader: int, follower: int, hw_only: bool = False) -> bool:
    """Broker ``leader`` holds a read of ``follower``'s Fetch (split_fetch_handling: read_fetch), with
    ``hw_only`` one whose batches are still to read (read_fetch_hw)."""
    return any(h.follower == follower and (h.hw_only or not hw_only) for h in s.replicas[leader].held_reads)


def _produce_args(ev: Event) -> dict:
    """A logged produce's arguments to the model's ``produce``: its acks and record count."""
    return {"arg": ev.fields["acks"], "records": ev.fields["records"]}


def _recovered(events: list) -> dict:
    """Each broker crash's ``where`` -> the LEO the broker's log recovery logged after it (its
    ``restart``'s state, or, where a restart opens no log yet, its first event that has one)."""
    out: dict = {}
    crashed: dict = {}  # broker -> its last crash not yet followed by a logged LEO
    for e in events:
        if e.node >= 1000:
            continue
        if e.step in HALTS:
            crashed[e.node] = e
        elif e.node in crashed and "leo" in e.state:
            out[crashed.pop(e.node).where] = e.state["leo"]
    return out


def kept(s: State, acked: bool = False) -> State:
    """What the validator keeps of a candidate state: every log a ``SharedLog`` (the model's log,
    appended at the cost of what is appended; sharedlog.py), and not what clients were told (the
    ghost ``acked`` and ``consumed``, which grow with the run; a consume, taken by its guard alone,
    leaves the consumers' HW ghosts as they were): no step reads them (docs/steps.md: each step's
    guard and effect read the replicas, the controller, the messages in flight, the clock and, to
    name a produce's records, ``records_produced``, kept) and no event is checked against them, so
    no later step nor check can tell they are gone. A search that judges the history properties
    keeps ``acked`` (``acked``), which they read."""
    reps = s.replicas
    if not all(type(r.log) is SharedLog for r in reps):
        s = s._replace(replicas=tuple(r if type(r.log) is SharedLog else r._replace(log=shared(r.log)) for r in reps))
    if acked:
        return s._replace(consumed=()) if s.consumed else s
    if s.acked or s.consumed:
        s = s._replace(**_GHOSTS_READ_BY_NO_STEP)
    return s


def _distinct(candidates: list) -> list:
    """The candidates without repeats, first ones kept. Hashing a state costs its whole log, so they
    are grouped by a cheap key and compared (siblings share their logs: equality sees it at once)."""
    groups: dict = {}
    out = []
    for s, path in candidates:
        key = (
            s.now,
            s.controller,
            tuple((len(r.log), r.hw, r.durable, r.alive) for r in s.replicas),
            tuple(len(q) for field in _QUEUES for q in getattr(s, field)),
        )
        same = groups.setdefault(key, [])
        if not any(_same(s, t) for t in same):
            same.append(s)
            out.append((s, path))
    return out


_QUEUES = tuple(MESSAGE_KINDS.values())
_SYSTEM = State._fields.index("now") + 1  # the fields before the ghost variables


def _same(a: State, b: State) -> bool:
    """The same system state (replicas, controller, messages in flight, clock), the small fields
    first: comparing two equal logs that are not one object walks them whole. The ghost variables
    (what clients were told, faults counted) are left out: no event is checked against them, and
    two behaviours that differ only there (one message lost before or after another) explain the
    rest of the log alike."""
    if a[1:_SYSTEM] != b[1:_SYSTEM]:
        return False
    for x, y in zip(a.replicas, b.replicas):
        if x is not y and (x[0] != y[0] or x[2:] != y[2:] or x.log != y.log):
            return False
    return True


def _short(step: dict) -> str:
    args = ",".join(str(v) for k, v in step.items() if k != "step")
    return f"{step['step']}({args})"


def validate(trace: Trace, judge: bool = False) -> Verdict:
    """The verdict on one partition's trace; with ``judge``, its fault budgets (``budgets.py``)."""
    return Search(trace, judge).run()


def validate_partitions(traces: list[tuple[str | None, Trace]], events: int, judge: bool = False) -> Verdict:
    """Each partition's trace validated on its own (the model is one partition); explained if every
    one is, else the first partition's first unexplained event. ``events``: the log's events.
    ``judge``: judge the fault budgets of a log of one partition (the runs that ask are)."""
    if len(traces) == 1 and traces[0][0] is None:
        return validate(traces[0][1], judge)
    if judge:
        raise ValueError("judging fault budgets needs a log of one partition")
    by_partition, steps, widest = {}, [], 0
    for tp, trace in traces:
        verdict = validate(trace)
        widest = max(widest, verdict.max_candidates)
        if not verdict.explained:
            verdict.partition, verdict.renamed = tp, trace.renamed
            verdict.max_candidates = widest
            return verdict
        by_partition[tp] = {"events": verdict.events, "model_steps": len(verdict.steps)}
        steps.extend({**st, "tp": tp} for st in verdict.steps)
    return Verdict(True, events, steps, max_candidates=widest, partitions=by_partition)


__all__ = ["Search", "Verdict", "Refusal", "validate", "validate_partitions", "broker_view", "controller_view"]
