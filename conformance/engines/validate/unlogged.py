"""The steps a self-driven run does not log, and what a self-driven implementation does that has
no step of its own (docs/steps.md, "Runs nobody drove"): each a function ``take(state, steps)``
that the search applies before or instead of a model step, recording what it took in ``steps``;
``Mismatch`` when it cannot explain the event."""

from __future__ import annotations

from typing import Iterator

from isrcheck.model import MESSAGE_KINDS, ModelConfig, Step, StepRefused, apply, why_disabled
from isrcheck.model.actions import ACTIONS, fetcher_tag
from isrcheck.model.alphabet import (
    CONSUME,
    CONTROLLED_SHUTDOWN,
    CRASH,
    DELIVER_LEADER_AND_ISR,
    DROP,
    ELECT,
    FENCE,
    FLUSH,
    HANDLE_ALTER_PARTITION,
    REGISTER,
    REJOIN,
)
from isrcheck.model.next_state import addressed
from isrcheck.model.semantics import take
from isrcheck.model.state import LeaderAndIsr, State, batch_ends, updated

from .events import Event
from .views import broker_view, mismatch


class Mismatch(Exception):
    """A validator-side check of an unlogged step failed; the message says how."""


class Refuse:
    """An alternative that explains nothing, with the reason."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __call__(self, s: State, steps: list) -> State:
        raise Mismatch(self.reason)


def drop_outstanding(s: State, r: int) -> list:
    """A new Fetch shows the follower's last one was answered or lost: drop what the model still has
    in flight of it under its fetcher's tag (the ones the guard would count: its current (leader,
    leader epoch), or a stale fetcher's), and every response to it (one of another tag would only be
    discarded)."""
    tag = fetcher_tag(s.replicas[r])
    drops = []
    for kind in ("fetch_request", "fetch_response"):
        queue = getattr(s, MESSAGE_KINDS[kind])[r]
        left = 0
        for m in queue:
            # a response of another (leader, leader epoch) can only be discarded: it goes too
            if (m.leader, m.leader_epoch) == tag or kind == "fetch_response":
                drops.append(Step(DROP, r, kind, index=left))
            else:
                left += 1
    return drops


def lost_alter_partition(s: State, r: int, leader_epoch: int) -> Iterator[list]:
    """The leader learned its AlterPartition or the answer was lost: either one, sent in that epoch."""
    found = False
    for i, m in enumerate(s.alter_partition[r]):
        if m.leader_epoch == leader_epoch:
            found = True
            yield [Step(DROP, r, "alter_partition", index=i)]
    for i, m in enumerate(s.alter_partition_responses[r]):
        if m.request_leader_epoch == leader_epoch:
            found = True
            yield [Step(DROP, r, "alter_partition_response", index=i)]
    if not found:
        yield []  # the model lost it already (a crash of either end discards it)


def refused_alter_partition(cfg: ModelConfig, r: int):
    """The controller refused ``r``'s oldest AlterPartition: Kafka's controller writes no record for a
    refusal (``ReplicationControlManager.alterPartition`` answers with the error alone), so only the
    leader's handling of the answer is logged. The model's handling must refuse it too."""

    def handle(s: State, steps: list) -> State:
        s2, _ = apply(cfg, s, Step(HANDLE_ALTER_PARTITION, r))
        if s2.alter_partition_responses[r] and s2.alter_partition_responses[r][-1].error == "NONE":
            raise Mismatch(f"the controller commits broker {r}'s AlterPartition, which Kafka's refused (no record)")
        steps.append(Step(HANDLE_ALTER_PARTITION, r).to_json())
        return s2

    return handle


def requeue(field: str, r: int, message, at_end: bool = False):
    """The network's duplicate of a delivered message, back in flight (first, or last)."""

    def take(s: State, steps: list) -> State:
        queues = list(getattr(s, field))
        queues[r] = queues[r] + (message,) if at_end else (message,) + queues[r]
        steps.append({"step": "duplicate", "message": field, "replica": r})
        return s._replace(**{field: tuple(queues)})

    return take


def byte_limit(r: int, batches: int | None, upto: int | None = None):
    """The leader answered with the first ``batches`` whole batches, or those that end at offset ``upto``, cut
    by bytes (replica.fetch.max.bytes, KIP-74): the request it handles asks for that many (``max_batches``)."""

    def take(s: State, steps: list) -> State:
        queue = s.fetch_requests[r]
        if not queue:
            return s  # the delivery refuses, with the model's reason
        wanted = batches
        if upto is not None:  # the batches of the leader's log from the fetch offset that end by then
            ends = batch_ends(s.replicas[queue[0].leader].log, queue[0].fetch_offset)
            if upto not in ends:
                return s  # no batch ends there: the delivery refuses, with the model's reason
            wanted = ends.index(upto) + 1
        queues = list(s.fetch_requests)
        queues[r] = (queue[0]._replace(max_batches=wanted),) + queue[1:]
        steps.append({"step": "byte_limit", "replica": r, "max_batches": wanted})
        return s._replace(fetch_requests=tuple(queues))

    return take


def lag_credit(d: int, f: int, since: int, leo_then: int):
    """``Replica.updateFetchStateOrThrow``'s second rule, which the model leaves out (docs/steps.md,
    "Outside the contract"): follower ``f``'s fetch just handled by leader ``d`` is below the LEO but
    reached ``leo_then``, the LEO the leader had at ``f``'s previous fetch, at ``since``: caught up then."""

    def take(s: State, steps: list) -> State:
        lead = s.replicas[d]
        offset, lcu = lead.remote_leo[f], lead.last_caught_up
        if offset >= len(lead.log) or offset < leo_then or lcu[f] >= since:
            return s  # the first rule's (caught up now), or no credit
        steps.append({"step": "lag_credit", "replica": d, "follower": f, "since": since})
        lead = updated(lead, last_caught_up=lcu[:f] + (since,) + lcu[f + 1 :])
        return s._replace(replicas=s.replicas[:d] + (lead,) + s.replicas[d + 1 :])

    return take


def partial_response(r: int, leo: int):
    """A process killed while it appended the records of the fetch response at the head of ``r``'s
    queue (one write per batch, as Kafka's file channel writes): the batches before ``leo``, the
    LEO its recovery later logged, reached the page cache, the rest did not. The response is cut
    there, so that its handling appends that prefix."""

    def take(s: State, steps: list) -> State:
        queue = s.fetch_responses[r]
        resp = queue[0] if queue else None
        records = resp.records if resp is not None and resp.kind == "records" else ()
        start = records[0].offset if records else -1
        keep = leo - start
        if not 0 < keep < len(records) or records[keep].base == records[keep - 1].base:
            raise Mismatch(f"no batch of the fetch response in flight ends at the recovered LEO {leo}")
        steps.append({"step": "partial_response", "replica": r, "leo": leo})
        queues = list(s.fetch_responses)
        queues[r] = (resp._replace(records=records[:keep]),) + queue[1:]
        return s._replace(fetch_responses=tuple(queues))

    return take


def resend_leader_and_isr(r: int):
    """The controller sends broker ``r`` its current partition state again, as it does on a change."""

    def take(s: State, steps: list) -> State:
        c = s.controller
        queues = list(s.leader_and_isr)
        if s.replicas[r].alive:
            sent = addressed(s.replicas[r], LeaderAndIsr(c.leader, c.leader_epoch, c.isr, c.partition_epoch))
            queues[r] = queues[r] + (sent,)
        steps.append({"step": "resend_leader_and_isr", "replica": r})
        return s._replace(leader_and_isr=tuple(queues))

    return take


def crash_while_down(cfg: ModelConfig, st: Step):
    """A crash of a broker whose restart never registered (down to the model), on what the model
    keeps of it: its log recovery had cut the log after a power loss and read the HW checkpoint; a
    clean shutdown then flushed the recovered log, a power loss took the page cache the earlier
    process crash had left (the crash's ``survive``), a process crash changed nothing."""

    def take_crash(s: State, steps: list) -> State:
        rep = s.replicas[st.replica]
        if st.arg == "clean":
            log = rep.log[: rep.durable] if rep.power_lost else rep.log
            # still unclean if it was (KIP-966): the controller never heard of the earlier shutdown
            rep = updated(
                rep,
                log=log,
                durable=len(log),
                hw=min(rep.hw, len(log)),
                hw_checkpoint=min(rep.hw_checkpoint, len(log)),
                power_lost=False,
            )
        elif st.arg == "power" and not rep.power_lost:
            s, _ = take(cfg, s, st, ACTIONS[CRASH])
            rep = s.replicas[st.replica]
        elif st.survive:
            raise Mismatch("a power loss after a power loss: its page cache held nothing")
        steps.append({**st.to_json(), "while_down": True})
        return s._replace(replicas=s.replicas[: st.replica] + (rep,) + s.replicas[st.replica + 1 :])

    return take_crash


def unfence(cfg: ModelConfig, r: int):
    """A live fenced broker heartbeats again with its broker epoch and the controller unfences it
    (BrokerHeartbeatManager, ReplicationControlManager.handleBrokerUnfenced): the model's ``rejoin``
    (unfenced, told the current state) without the new broker epoch a registration would give."""

    def take_unfence(s: State, steps: list) -> State:
        kept = s.controller.broker_epochs
        s2, _ = apply(cfg, s, Step(REJOIN, r))
        rep = updated(s2.replicas[r], broker_epoch=s.replicas[r].broker_epoch)
        steps.append({"step": REJOIN, "replica": r, "same_broker_epoch": True})
        return s2._replace(
            replicas=s2.replicas[:r] + (rep,) + s2.replicas[r + 1 :],
            controller=s2.controller._replace(broker_epochs=kept),
        )

    return take_unfence


def consume(cfg: ModelConfig, r: int):
    """A consume by the model's guard alone: it changes no state, only what the consumer is told
    (docs/steps.md, ``consume``: its output, the records below the HW), which no event logs and no
    step reads, so the validator does not read the HW's records (a cost in the log's length)."""
    st = Step(CONSUME, r)

    def take_consume(s: State, steps: list) -> State:
        reason = why_disabled(cfg, s, st)
        if reason is not None:
            raise StepRefused(st, reason)
        steps.append(st.to_json())
        return s

    return take_consume


def caught_up(cfg: ModelConfig, r: int):
    """Kafka: a registered broker's catch-up with the metadata log past its registration
    (``initialCatchUpFuture``) when its registration changed no partition, so no ``makeLeader`` or
    ``makeFollower`` logs it: the registration's LeaderAndIsr (the last marked ``registration`` in
    flight to ``r``) applied."""

    def take_caught_up(s: State, steps: list) -> State:
        marked = [i for i, m in enumerate(s.leader_and_isr[r]) if m.registration]
        if not marked:
            raise Mismatch(f"no LeaderAndIsr of broker {r}'s registration in flight")
        st = Step(DELIVER_LEADER_AND_ISR, r, index=marked[-1])
        steps.append(st.to_json())
        return apply(cfg, s, st)[0]

    return take_caught_up


def unregistered(s: State, steps: list) -> State:
    """A broker up again but not registered knows no leader: a produce or consume it takes changes
    nothing the model keeps."""
    return s


def flush_while_down(r: int):
    """A flush of a broker up again but not registered (down to the model): its log recovery had
    cut the log (to what was durable, after a power loss) and read the HW checkpoint; the flush
    makes that log durable and checkpoints the HW recovery read, min(checkpoint, LEO)."""

    def take(s: State, steps: list) -> State:
        rep = s.replicas[r]
        leo = rep.durable if rep.power_lost else len(rep.log)
        rep = updated(rep, durable=leo, hw_checkpoint=min(rep.hw_checkpoint, leo))
        steps.append({"step": FLUSH, "replica": r, "while_down": True})
        return s._replace(replicas=s.replicas[:r] + (rep,) + s.replicas[r + 1 :])

    return take


def written_back(restart: Event | None, r: int):
    """How many unflushed batches reached the disk before the power loss, read off the log its
    recovery logged: the crash's ``survive``, decided here because nothing reads it before."""

    def take(s: State, steps: list) -> State:
        rep = s.replicas[r]
        leo = restart.state.get("leo") if restart is not None else None
        if not rep.power_lost or leo is None or leo <= rep.durable:
            return s
        ends = batch_ends(rep.log, rep.durable)
        if leo not in ends:
            raise Mismatch(
                f"log recovery at {restart.where}: LEO {leo} is not the end of a batch the "
                f"page cache held (unflushed batches end at {ends})"
            )
        steps.append({"step": "written_back", "replica": r, "survive": ends.index(leo) + 1})
        return s._replace(replicas=s.replicas[:r] + (updated(rep, durable=leo),) + s.replicas[r + 1 :])

    return take


def check_recovered(restart: Event | None, r: int):
    """The model's restart left the log its recovery logged."""

    def take(s: State, steps: list) -> State:
        if restart is not None:
            view = broker_view(s, r)
            bad = mismatch({k: view[k] for k in ("leo", "hw", "last_epoch")}, restart.state)
            if bad is not None:
                raise Mismatch(f"log recovery at {restart.where}: {bad}")
        return s

    return take


def controlled_shutdown(cfg: ModelConfig, r: int):
    """Kafka's controlled shutdown of broker ``r`` (``ReplicationControlManager.handleBrokerInControlledShutdown``):
    one partition change that takes ``r`` out of the ISR (the ELR by the ELR rule) and, if it led, elects
    the first unfenced member of what is left, one leader epoch for both; the broker stays unfenced until its
    session ends (its ``fence`` follows). To the model: ``elect`` of that member with ``r``'s ISR removal in
    the same partition change, or, with nobody left to lead (or ``r`` not leading), ``fence`` without the
    fencing (leader -1, a new leader epoch, the last known leader)."""

    def take_shutdown(s: State, steps: list) -> State:
        c = s.controller
        isr = tuple(i for i in c.isr if i != r)
        target = next((i for i in isr if i not in c.fenced), None) if c.leader == r else None
        if target is not None:
            s2, _ = apply(cfg, s, Step(ELECT, target))
            c2 = s2.controller
            c2 = c2._replace(isr=isr, elr=cfg.rules.elr_after(c2, isr, cfg.min_insync_replicas))
            sent = LeaderAndIsr(c2.leader, c2.leader_epoch, c2.isr, c2.partition_epoch)
            queues = tuple(
                q[:-1] + (_as(q[-1], sent),) if q and q[-1].partition_epoch == c2.partition_epoch else q
                for q in s2.leader_and_isr
            )
            steps.append({"step": ELECT, "replica": target, "controlled_shutdown": r})
            return s2._replace(controller=c2, leader_and_isr=queues)
        if r not in c.isr and c.leader != r:
            steps.append({"step": CONTROLLED_SHUTDOWN, "replica": r, "changed": False})
            return s
        s2, _ = apply(cfg, s, Step(FENCE, r))
        steps.append({"step": FENCE, "replica": r, "controlled_shutdown": True})
        return s2._replace(controller=s2.controller._replace(fenced=c.fenced))

    return take_shutdown


def elect_with_registration(cfg: ModelConfig, r: int | None = None):
    """KRaft's registration after an unclean shutdown (``handleBrokerUncleanShutdown``): one partition
    change takes the broker out of ISR and ELR and elects a leader for a leaderless partition, one
    leader epoch and one partition epoch more; the model's registration then ``elect`` folded into
    one. With ``r`` the registration of ``r`` is taken here first, so that the fold takes back only
    what both changed: the leader epoch only if ``r`` led (else the partition was leaderless before).
    The registration's LeaderAndIsr naming no leader, still in flight, becomes the election's."""

    def take_elect(s: State, steps: list) -> State:
        prior = s.controller
        if r is not None:
            s, _ = apply(cfg, s, Step(REGISTER, r))
            steps.append(Step(REGISTER, r).to_json())
        before = s.controller
        if before.leader != -1:
            raise Mismatch("the registration left a leader: no election folded into it")
        s2, _ = apply(cfg, s, Step(ELECT))
        if r is not None and before.partition_epoch == prior.partition_epoch:
            raise Mismatch("the registration changed no partition: the election is a change of its own")
        c, sent = _one_change(s2.controller, led=r is None or before.leader_epoch > prior.leader_epoch)
        unled = LeaderAndIsr(-1, before.leader_epoch, before.isr, before.partition_epoch)
        queues = tuple(tuple(_as(m, sent) if m[:4] == unled[:4] else m for m in q) for q in s.leader_and_isr)
        steps.append({"step": ELECT, "with_registration": True})
        return s2._replace(controller=c, leader_and_isr=queues)

    return take_elect


def _as(old: LeaderAndIsr, new: LeaderAndIsr) -> LeaderAndIsr:
    """``new`` in the place of ``old`` in flight, to the same broker (marked as ``old`` was)."""
    return new._replace(registration=old.registration)


def _one_change(c, led: bool = True):
    """The controller after two model changes that KRaft makes as one: one partition epoch fewer, and
    one leader epoch fewer when both moved it (``led``); and the LeaderAndIsr that one change sends."""
    c = c._replace(leader_epoch=c.leader_epoch - int(led), partition_epoch=c.partition_epoch - 1)
    return c, LeaderAndIsr(c.leader, c.leader_epoch, c.isr, c.partition_epoch)


def fence_and_elect(cfg: ModelConfig, r: int):
    """KRaft's fencing of a leader (``ReplicationControlManager.handleBrokerFenced``): one partition change
    that takes ``r`` out of the ISR and elects its successor, one leader epoch and one partition epoch for
    both; the model's ``fence`` (leader -1, a new epoch) then ``elect`` (another) folded into one change."""

    def take_fence_elect(s: State, steps: list) -> State:
        s1, _ = apply(cfg, s, Step(FENCE, r))
        s2, _ = apply(cfg, s1, Step(ELECT))
        c, sent = _one_change(s2.controller)
        queues = tuple(  # marked as the election's own was (a broker registered, not yet serving)
            q0 + ((_as(q2[-1], sent),) if len(q2) > len(q0) else ())
            for q0, q2 in zip(s.leader_and_isr, s2.leader_and_isr)
        )
        steps.append({"step": FENCE, "replica": r, "and_elect": True})
        return s2._replace(controller=c, leader_and_isr=queues)

    return take_fence_elect
