"""Step semantics (docs/steps.md): ``why_disabled``, ``enabled`` and ``apply``.

``apply`` copies the state's top-level tuples into a mutable ``_Next``, lets the step's effect
change what it must, and freezes it once: unchanged replicas and messages are shared, not copied.
"""
from __future__ import annotations

from .actions import ACKS, CRASH_KINDS, MESSAGES, Step, check_replica
from .state import (
    MESSAGE_FIELDS, NONE, AlterPartition, AlterPartitionResponse, Controller, Entry, FetchRequest,
    FetchResponse, LeaderAndIsr, Replica, State, end_offset_for, latest_epoch, truncate_to, updated,
)

NOT_LEADER = "NOT_LEADER_OR_FOLLOWER"


class StepRefused(Exception):
    """The step is not enabled in this state; ``reason`` says why. Nothing changed."""

    def __init__(self, step: Step, reason: str):
        super().__init__(f"{step.name} refused: {reason}")
        self.step = step
        self.reason = reason


# -- guards: None when enabled, else the reason --------------------------------------------------

def _down(s: State, r: int) -> str | None:
    return None if s.replicas[r].alive else f"broker {r} is down"


def _outstanding(s: State, r: int, rep: Replica) -> bool:
    """A fetch of follower r sent under its current (leader, leader epoch) is still in flight."""
    tag = (rep.leader, rep.leader_epoch)
    return any((m.leader, m.leader_epoch) == tag for m in s.fetch_requests[r]) or \
        any((m.leader, m.leader_epoch) == tag for m in s.fetch_responses[r])


def _lagging(cfg, now: int, r: int, rep: Replica) -> list[int]:
    lag = cfg.replica_lag_time_max_ticks
    return [f for f in rep.isr if f != r and now - rep.last_caught_up[f] > lag]


def _caught_up(cfg, r: int, rep: Replica) -> list[int]:
    if not cfg.rules.may_expand_isr(rep):
        return []
    return [f for f in range(cfg.replicas) if f != r and f not in rep.isr and rep.remote_leo[f] >= rep.hw]


def _leader_guard(s: State, r: int) -> str | None:
    rep = s.replicas[r]
    if not rep.alive:
        return f"broker {r} is down"
    if rep.leader != r:
        return f"broker {r} is not the leader in its own view"
    if rep.pending_isr is not None:
        return f"broker {r} has an ISR change in flight"
    return None


def _g_send_fetch(cfg, s, st):
    r = st.replica
    rep = s.replicas[r]
    if not rep.alive:
        return f"broker {r} is down"
    if rep.leader == -1:
        return f"broker {r} knows no leader"
    if rep.leader == r:
        return f"broker {r} is the leader"
    if _outstanding(s, r, rep):
        return f"follower {r} has a fetch outstanding"
    return None


def _g_in_flight(field: str, what: str, need_alive: bool):
    def guard(cfg, s, st):
        r = st.replica
        if need_alive and not s.replicas[r].alive:
            return f"broker {r} is down"
        if not getattr(s, field)[r]:
            return f"no {what} of replica {r} in flight"
        return None
    return guard


def _g_deliver(cfg, s, st):
    if len(s.leader_and_isr[st.replica]) <= st.index:
        return f"no LeaderAndIsr #{st.index} for broker {st.replica} in flight"
    return None


def _g_shrink(cfg, s, st):
    reason = _leader_guard(s, st.replica)
    if reason is None and not _lagging(cfg, s.now, st.replica, s.replicas[st.replica]):
        reason = "no ISR follower is out of sync for longer than replica.lag.time.max"
    return reason


def _g_expand(cfg, s, st):
    reason = _leader_guard(s, st.replica)
    if reason is None and not _caught_up(cfg, st.replica, s.replicas[st.replica]):
        reason = "no follower outside the ISR has caught up to the high watermark"
    return reason


def _g_drop(cfg, s, st):
    if len(getattr(s, MESSAGE_FIELDS[st.arg])[st.replica]) <= st.index:
        return f"no {st.arg} #{st.index} of replica {st.replica} in flight"
    return None


def _elect_choice(cfg, c: Controller) -> tuple[int, tuple] | None:
    for r in c.isr:
        if r not in c.fenced:
            return r, c.isr
    if cfg.unclean_leader_election_enable:
        for r in range(cfg.replicas):
            if r not in c.fenced:
                return r, (r,)
    return None


def _g_elect(cfg, s, st):
    if s.controller.leader != -1:
        return f"the controller has a leader ({s.controller.leader})"
    if _elect_choice(cfg, s.controller) is None:
        return "no eligible replica (every ISR member is fenced" + \
            (")" if cfg.unclean_leader_election_enable else " and unclean election is disabled)")
    return None


def _g_fence(cfg, s, st):
    r = st.replica
    if s.replicas[r].alive:
        return f"broker {r} is alive"
    if r in s.controller.fenced:
        return f"broker {r} is already fenced"
    return None


def _g_crash(cfg, s, st):
    return None if s.replicas[st.replica].alive else f"broker {st.replica} is already down"


def _g_restart(cfg, s, st):
    r = st.replica
    if s.replicas[r].alive:
        return f"broker {r} is alive"
    if r not in s.controller.fenced:
        return f"broker {r} is not fenced yet (its old session has not expired)"
    return None


def _g_flush(cfg, s, st):
    rep = s.replicas[st.replica]
    if not rep.alive:
        return f"broker {st.replica} is down"
    if rep.durable == len(rep.log) and rep.hw_checkpoint == rep.hw:
        return f"broker {st.replica} has nothing to flush"
    return None


def _g_always(cfg, s, st):
    return None


def _g_alive(cfg, s, st):
    return _down(s, st.replica)


# -- the mutable successor ------------------------------------------------------------------------

class _Next:
    """Mutable copy of a state's top-level fields; ``freeze`` builds the successor State.
    Message queues are copied on first write only (most steps touch one queue or none)."""

    __slots__ = ("cfg", "src", "replicas", "controller", "msgs", "now", "records_produced", "acked",
                 "consumed", "max_consumer_hw", "consumer_hw_regressed", "crashes",
                 "power_losses", "drops", "out")

    def __init__(self, cfg, s: State):
        self.cfg = cfg
        self.src = s
        self.replicas = list(s.replicas)
        self.controller = s.controller
        self.msgs: dict[str, list] = {}
        self.now = s.now
        self.records_produced = s.records_produced
        self.acked = s.acked
        self.consumed = s.consumed
        self.max_consumer_hw = s.max_consumer_hw
        self.consumer_hw_regressed = s.consumer_hw_regressed
        self.crashes = s.crashes
        self.power_losses = s.power_losses
        self.drops = s.drops
        self.out: list[dict] = []

    def queues(self, field: str) -> list:
        """The per-replica queues of one message kind, writable."""
        q = self.msgs.get(field)
        if q is None:
            q = self.msgs[field] = list(getattr(self.src, field))
        return q

    def freeze(self) -> State:
        src, m = self.src, self.msgs
        return State(tuple(self.replicas), self.controller,
                     tuple(m["fetch_requests"]) if "fetch_requests" in m else src.fetch_requests,
                     tuple(m["fetch_responses"]) if "fetch_responses" in m else src.fetch_responses,
                     tuple(m["leader_and_isr"]) if "leader_and_isr" in m else src.leader_and_isr,
                     tuple(m["alter_partition"]) if "alter_partition" in m else src.alter_partition,
                     tuple(m["alter_partition_responses"]) if "alter_partition_responses" in m
                     else src.alter_partition_responses,
                     self.now, self.records_produced, self.acked, self.consumed, self.max_consumer_hw,
                     self.consumer_hw_regressed, self.crashes, self.power_losses, self.drops)

    def send(self, field: str, dest: int, msg) -> None:
        """Queue a message; one addressed to a dead broker is discarded at once."""
        if self.replicas[dest].alive:
            self.queues(field)[dest] += (msg,)

    def pop(self, field: str, r: int, index: int = 0):
        queues = self.queues(field)
        queue = queues[r]
        queues[r] = queue[:index] + queue[index + 1:]
        return queue[index]

    def produce_out(self, r: int, record: int, acks: int, error: str, offset: int = -1) -> None:
        self.out.append({"type": "produce", "replica": r, "record": record, "acks": acks,
                         "error": error, "offset": offset if error == NONE else -1})

    def send_leader_and_isr(self) -> None:
        """The controller propagates its partition state to every unfenced broker, in id order."""
        c = self.controller
        msg = LeaderAndIsr(c.leader, c.leader_epoch, c.isr, c.partition_epoch)
        for b in range(self.cfg.replicas):
            if b not in c.fenced:
                self.send("leader_and_isr", b, msg)


def _flush_policy(cfg, log_len: int, durable: int) -> int:
    """flush.messages: fsync once that many messages are unflushed (log only, not the HW checkpoint)."""
    fm = cfg.flush_messages
    return log_len if fm is not None and log_len - durable >= fm else durable


def maybe_increment_leader_hw(nx: _Next, r: int, rep: Replica) -> Replica:
    """Partition.maybeIncrementLeaderHW: HW = min LEO over the maximal ISR (only moves up), then
    DelayedProduce completion for acks=all requests the HW has passed."""
    if rep.leader != r:
        return rep
    new_hw = len(rep.log)
    members = rep.isr if rep.pending_isr is None else rep.pending_isr + rep.isr
    remote = rep.remote_leo
    for f in members:
        if f != r and remote[f] < new_hw:
            new_hw = remote[f]
    if new_hw > rep.hw:
        rep = updated(rep, hw=new_hw)
    pending = rep.pending_produces
    if pending and any(p[1] < rep.hw for p in pending):
        error = NONE if len(rep.isr) >= nx.cfg.min_insync_replicas else "NOT_ENOUGH_REPLICAS_AFTER_APPEND"
        done = [p for p in pending if p[1] < rep.hw]
        for record, offset, _deadline in done:
            nx.produce_out(r, record, -1, error, offset)
        if error == NONE:
            nx.acked = tuple(sorted(nx.acked + tuple((p[1], p[0]) for p in done)))
        rep = updated(rep, pending_produces=tuple(p for p in pending if p[1] >= rep.hw))
    return rep


# -- effects -------------------------------------------------------------------------------------

def _produce(nx: _Next, st: Step) -> None:
    """ProduceRequest handling: Partition.appendRecordsToLeader with acks and min.insync.replicas."""
    r, acks = st.replica, st.arg
    nx.records_produced += 1
    record = nx.records_produced
    rep = nx.replicas[r]
    if rep.leader != r:
        nx.produce_out(r, record, acks, NOT_LEADER)
        return
    if acks == -1 and len(rep.isr) < nx.cfg.min_insync_replicas:
        nx.produce_out(r, record, acks, "NOT_ENOUGH_REPLICAS")
        return
    offset = len(rep.log)
    log = rep.log + (Entry(offset, rep.leader_epoch, record),)
    rep = updated(rep, log=log, durable=_flush_policy(nx.cfg, len(log), rep.durable))
    if acks == -1:
        rep = updated(rep, pending_produces=rep.pending_produces +
                           ((record, offset, nx.now + nx.cfg.request_timeout_ticks),))
    # Kafka raises the HW after every leader append, whatever the acks: with a maximal ISR of
    # one, an acks=1 record is committed at once.
    rep = maybe_increment_leader_hw(nx, r, rep)
    if acks == 1:
        nx.produce_out(r, record, acks, NONE, offset)
    nx.replicas[r] = rep


def _consume(nx: _Next, st: Step) -> None:
    """Consumer FetchRequest from offset 0: records below the leader's HW (read_committed view)."""
    r = st.replica
    rep = nx.replicas[r]
    error = NOT_LEADER if rep.leader != r else nx.cfg.rules.consume_error(rep)
    if error is not None:
        nx.out.append({"type": "consume", "replica": r, "error": error, "hw": -1, "records": []})
        return
    hw = rep.hw
    pairs = tuple((e.offset, e.record) for e in rep.log[:hw])
    nx.out.append({"type": "consume", "replica": r, "error": NONE, "hw": hw,
                   "records": [list(p) for p in pairs]})
    if pairs:
        nx.consumed = tuple(sorted(set(nx.consumed).union(pairs)))
    if hw < nx.max_consumer_hw:
        nx.consumer_hw_regressed = True
    elif hw > nx.max_consumer_hw:
        nx.max_consumer_hw = hw


def _send_fetch(nx: _Next, st: Step) -> None:
    """ReplicaFetcherThread: a Fetch, or OffsetsForLeaderEpoch while truncating (KIP-101/KIP-279)."""
    r = st.replica
    rep = nx.replicas[r]
    if nx.cfg.rules.uses_epoch_queries and rep.truncating_epoch >= 0 and rep.log:
        req = FetchRequest(rep.leader, rep.leader_epoch, -1, -1, rep.truncating_epoch)
    else:
        req = FetchRequest(rep.leader, rep.leader_epoch, len(rep.log), latest_epoch(rep.log), -1)
    if nx.replicas[rep.leader].alive:  # else discarded at once
        nx.queues("fetch_requests")[r] += (req,)


def _handle_fetch(nx: _Next, st: Step) -> None:
    """The leader's handling of a follower Fetch / OffsetsForLeaderEpoch (ReplicaManager.fetchMessages)."""
    r = st.replica
    req = nx.pop("fetch_requests", r)
    d = req.leader
    lead = nx.replicas[d]
    rules = nx.cfg.rules

    def respond(error: str, kind: str, records=(), hw=-1, epoch=-1, end=-1) -> None:
        if nx.replicas[r].alive:
            nx.queues("fetch_responses")[r] += (FetchResponse(d, req.leader_epoch, error, kind, records, hw, epoch, end),)

    if lead.leader != d:
        return respond(NOT_LEADER, "error")
    check = rules.check_fetch(lead, req)
    if check is not None:
        error, epoch, end = check
        return respond(error, "error") if error != NONE else respond(NONE, "diverging", epoch=epoch, end=end)
    if req.query_epoch >= 0:
        epoch, end = rules.answer_epoch_query(lead.log, req.query_epoch)
        return respond(NONE, "epoch_end", epoch=epoch, end=end)
    leo = len(lead.log)
    if req.fetch_offset > leo:
        return respond("OFFSET_OUT_OF_RANGE", "error", end=leo)
    remote = lead.remote_leo
    lead = updated(lead, remote_leo=remote[:r] + (req.fetch_offset,) + remote[r + 1:])
    if req.fetch_offset >= leo:
        lcu = lead.last_caught_up
        lead = updated(lead, last_caught_up=lcu[:r] + (nx.now,) + lcu[r + 1:])
    lead = maybe_increment_leader_hw(nx, d, lead)
    nx.replicas[d] = lead
    respond(NONE, "records", lead.log[req.fetch_offset:], lead.hw)


def _handle_fetch_response(nx: _Next, st: Step) -> None:
    """ReplicaFetcherThread.processPartitionData / truncation on the follower."""
    r = st.replica
    resp = nx.pop("fetch_responses", r)
    rep = nx.replicas[r]
    if resp.leader != rep.leader or resp.leader_epoch != rep.leader_epoch:
        return  # answers a request of an earlier leadership: discarded
    kind = resp.kind
    if kind == "records":
        log = rep.log
        if resp.records:
            log = log[:resp.records[0].offset] + resp.records
        rep = updated(rep, log=log, durable=_flush_policy(nx.cfg, len(log), min(rep.durable, len(log))),
                           hw=min(resp.leader_hw, len(log)))
    elif kind == "epoch_end":
        rep = nx.cfg.rules.handle_epoch_answer(rep, resp.epoch, resp.end_offset)
    elif kind == "diverging":
        own_epoch, own_end = end_offset_for(rep.log, resp.epoch)
        rep = truncate_to(rep, min(resp.end_offset, own_end) if own_epoch == resp.epoch else own_end)
    elif resp.error == "OFFSET_OUT_OF_RANGE":
        rep = truncate_to(rep, resp.end_offset)
    nx.replicas[r] = rep


def _deliver_leader_and_isr(nx: _Next, st: Step) -> None:
    """LeaderAndIsr (ReplicaManager.becomeLeaderOrFollower): makeLeader / makeFollower / ISR update."""
    r = st.replica
    m = nx.pop("leader_and_isr", r, st.index)
    rep = nx.replicas[r]
    if (m.leader_epoch, m.partition_epoch) <= (rep.leader_epoch, rep.partition_epoch):
        return
    n = nx.cfg.replicas
    if m.leader_epoch == rep.leader_epoch:
        rep = updated(rep, isr=m.isr, partition_epoch=m.partition_epoch)
    elif m.leader == r:  # Partition.makeLeader
        rep = updated(rep, leader=r, leader_epoch=m.leader_epoch, isr=m.isr, partition_epoch=m.partition_epoch,
                           epoch_start_offset=len(rep.log), remote_leo=(-1,) * n,
                           last_caught_up=tuple(nx.now if i in m.isr else 0 for i in range(n)),
                           pending_isr=None, truncating_epoch=-1)
        rep = maybe_increment_leader_hw(nx, r, rep)
    else:  # Partition.makeFollower
        for record, _offset, _deadline in rep.pending_produces:
            nx.produce_out(r, record, -1, NOT_LEADER)
        rep = updated(rep, leader=m.leader, leader_epoch=m.leader_epoch, isr=m.isr,
                           partition_epoch=m.partition_epoch, epoch_start_offset=-1, remote_leo=(-1,) * n,
                           last_caught_up=(0,) * n, pending_isr=None, pending_produces=())
        rep = nx.cfg.rules.make_follower(rep)
    nx.replicas[r] = rep


def _propose_isr(nx: _Next, r: int, rep: Replica, proposed: tuple) -> Replica:
    nx.queues("alter_partition")[r] += (AlterPartition(rep.leader_epoch, rep.partition_epoch, proposed),)
    return updated(rep, pending_isr=proposed)


def _shrink_isr(nx: _Next, st: Step) -> None:
    """Partition.maybeShrinkIsr: drop followers not caught up within replica.lag.time.max.ms."""
    r = st.replica
    rep = nx.replicas[r]
    out = set(_lagging(nx.cfg, nx.now, r, rep))
    nx.replicas[r] = _propose_isr(nx, r, rep, tuple(f for f in rep.isr if f not in out))


def _expand_isr(nx: _Next, st: Step) -> None:
    """Partition.maybeExpandIsr: add followers whose LEO reached the HW; HW runs on the maximal ISR."""
    r = st.replica
    rep = nx.replicas[r]
    rep = _propose_isr(nx, r, rep, tuple(sorted(rep.isr + tuple(_caught_up(nx.cfg, r, rep)))))
    nx.replicas[r] = maybe_increment_leader_hw(nx, r, rep)


def _handle_alter_partition(nx: _Next, st: Step) -> None:
    """Controller AlterPartition handling with leader-epoch and partition-epoch fencing (KIP-497)."""
    r = st.replica
    m = nx.pop("alter_partition", r)
    c = nx.controller
    if r != c.leader or m.leader_epoch != c.leader_epoch:
        error = "FENCED_LEADER_EPOCH"
    elif m.partition_epoch != c.partition_epoch:
        error = "INVALID_UPDATE_VERSION"
    elif any(f in c.fenced for f in m.isr):
        error = "INELIGIBLE_REPLICA"
    else:
        error = NONE
        c = nx.controller = c._replace(isr=m.isr, partition_epoch=c.partition_epoch + 1)
    nx.send("alter_partition_responses", r, AlterPartitionResponse(error, c.leader_epoch, c.isr, c.partition_epoch))


def _handle_alter_partition_response(nx: _Next, st: Step) -> None:
    """AlterPartitionManager callback: clear the pending ISR, adopt the committed one if same leader
    epoch and not an older partition epoch (Partition.handleAlterPartitionUpdate)."""
    r = st.replica
    m = nx.pop("alter_partition_responses", r)
    rep = updated(nx.replicas[r], pending_isr=None)
    if m.leader_epoch == rep.leader_epoch and m.partition_epoch >= rep.partition_epoch:
        rep = maybe_increment_leader_hw(nx, r, updated(rep, isr=m.isr, partition_epoch=m.partition_epoch))
    nx.replicas[r] = rep


def _drop(nx: _Next, st: Step) -> None:
    """Network loss of one in-flight message (fault)."""
    nx.pop(MESSAGE_FIELDS[st.arg], st.replica, st.index)
    nx.drops += 1
    if st.arg in ("alter_partition", "alter_partition_response"):
        rep = nx.replicas[st.replica]
        if rep.pending_isr is not None:  # AlterPartitionManager resends until it gets an answer
            nx.replicas[st.replica] = _propose_isr(nx, st.replica, rep, rep.pending_isr)


def _elect(nx: _Next, st: Step) -> None:
    """Controller leader election: clean from the ISR, else unclean if enabled (KIP-966 aside)."""
    c = nx.controller
    leader, isr = _elect_choice(nx.cfg, c)
    nx.controller = Controller(leader, c.leader_epoch + 1, isr, c.partition_epoch + 1, c.fenced)
    nx.send_leader_and_isr()


def _fence(nx: _Next, st: Step) -> None:
    """Broker session expiry: fence, drop from the ISR (never the last member), resign leadership."""
    r = st.replica
    c = nx.controller
    isr = tuple(i for i in c.isr if i != r) if r in c.isr and len(c.isr) > 1 else c.isr
    leader, epoch = (-1, c.leader_epoch + 1) if c.leader == r else (c.leader, c.leader_epoch)
    changed = isr != c.isr or leader != c.leader
    nx.controller = Controller(leader, epoch, isr, c.partition_epoch + (1 if changed else 0),
                               tuple(sorted(c.fenced + (r,))))
    if changed:
        nx.send_leader_and_isr()


def _crash(nx: _Next, st: Step) -> None:
    """Broker failure: clean shutdown (flush), process crash (page cache kept) or power loss."""
    r, kind = st.replica, st.arg
    rep = nx.replicas[r]
    if kind == "clean":
        rep = updated(rep, durable=len(rep.log), hw_checkpoint=rep.hw)
    nx.replicas[r] = updated(rep, alive=False, pending_produces=(), power_lost=kind == "power")
    for field in MESSAGE_FIELDS.values():
        if getattr(nx.src, field)[r]:
            nx.queues(field)[r] = ()
    for field in ("fetch_requests", "fetch_responses"):
        queues = nx.queues(field)
        for f in range(nx.cfg.replicas):
            if any(m.leader == r for m in queues[f]):
                queues[f] = tuple(m for m in queues[f] if m.leader != r)
    nx.crashes += 1
    if kind == "power":
        nx.power_losses += 1


def _restart(nx: _Next, st: Step) -> None:
    """Broker restart: log recovery (power loss cuts to the fsynced prefix), HW from checkpoint,
    registration with a new broker epoch, then the controller's current LeaderAndIsr."""
    r = st.replica
    rep = nx.replicas[r]
    n = nx.cfg.replicas
    log = rep.log[:rep.durable] if rep.power_lost else rep.log
    nx.replicas[r] = Replica(True, log, min(rep.durable, len(log)), min(rep.hw_checkpoint, len(log)),
                             rep.hw_checkpoint, -1, -1, (), -1, -1, (-1,) * n, (0,) * n, None, (), -1, False)
    c = nx.controller = nx.controller._replace(fenced=tuple(b for b in nx.controller.fenced if b != r))
    nx.send("leader_and_isr", r, LeaderAndIsr(c.leader, c.leader_epoch, c.isr, c.partition_epoch))


def _flush(nx: _Next, st: Step) -> None:
    """Log.flush plus the replication-offset-checkpoint write (fsync)."""
    rep = nx.replicas[st.replica]
    nx.replicas[st.replica] = updated(rep, durable=len(rep.log), hw_checkpoint=rep.hw)


def _tick(nx: _Next, st: Step) -> None:
    """Clock advance: DelayedProduce requests past request.timeout.ms expire."""
    nx.now += 1
    for r, rep in enumerate(nx.replicas):
        if any(p[2] < nx.now for p in rep.pending_produces):
            for record, _offset, deadline in rep.pending_produces:
                if deadline < nx.now:
                    nx.produce_out(r, record, -1, "REQUEST_TIMED_OUT")
            nx.replicas[r] = updated(rep, pending_produces=tuple(p for p in rep.pending_produces if p[2] >= nx.now))


# step name -> (guard, effect)
_STEPS = {
    "produce": (_g_alive, _produce),
    "consume": (_g_alive, _consume),
    "send_fetch": (_g_send_fetch, _send_fetch),
    "handle_fetch": (_g_in_flight("fetch_requests", "fetch request", False), _handle_fetch),
    "handle_fetch_response": (_g_in_flight("fetch_responses", "fetch response", True), _handle_fetch_response),
    "deliver_leader_and_isr": (_g_deliver, _deliver_leader_and_isr),
    "shrink_isr": (_g_shrink, _shrink_isr),
    "expand_isr": (_g_expand, _expand_isr),
    "handle_alter_partition": (_g_in_flight("alter_partition", "AlterPartition", False), _handle_alter_partition),
    "handle_alter_partition_response": (
        _g_in_flight("alter_partition_responses", "AlterPartition response", True), _handle_alter_partition_response),
    "drop": (_g_drop, _drop),
    "elect": (_g_elect, _elect),
    "fence": (_g_fence, _fence),
    "crash": (_g_crash, _crash),
    "restart": (_g_restart, _restart),
    "flush": (_g_flush, _flush),
    "tick": (_g_always, _tick),
}


def _check_range(cfg, st: Step) -> None:
    if st.name in ("elect", "tick"):
        return
    check_replica(st.name, st.replica, cfg.replicas)


def why_disabled(cfg, s: State, step) -> str | None:
    """None if ``step`` is enabled in ``s``, else the reason it would be refused."""
    st = Step.from_json(step)
    _check_range(cfg, st)
    return _STEPS[st.name][0](cfg, s, st)


def apply(cfg, s: State, step) -> tuple[State, list[dict]]:
    """Take one step: the successor state and the outputs in the order they happened.
    Raises StepRefused (nothing changes) if the step is not enabled, InvalidStep if malformed."""
    st = step if type(step) is Step else Step.from_json(step)
    guard, effect = _STEPS[st.name]
    if not 0 <= st.replica < cfg.replicas and st.name not in ("elect", "tick"):
        _check_range(cfg, st)
    reason = guard(cfg, s, st)
    if reason is not None:
        raise StepRefused(st, reason)
    nx = _Next(cfg, s)
    effect(nx, st)
    return nx.freeze(), nx.out


_GROUPS: dict = {}
_ORDER = ("produce", "consume", "send_fetch", "handle_fetch", "handle_fetch_response", "deliver_leader_and_isr",
          "shrink_isr", "expand_isr", "handle_alter_partition", "handle_alter_partition_response", "elect",
          "fence", "crash", "restart", "flush", "tick", "drop")


def step_groups(cfg) -> tuple:
    """(name, guard, effect, steps) per step name in the alphabet's order; ``steps`` lists the
    state-independent candidates, None for the two whose candidates depend on queued messages."""
    groups = _GROUPS.get(cfg)
    if groups is None:
        rng = range(cfg.replicas)
        fixed = {"produce": [Step("produce", r, acks) for r in rng for acks in ACKS],
                 "crash": [Step("crash", r, kind) for r in rng for kind in CRASH_KINDS],
                 "elect": [Step("elect")], "tick": [Step("tick")],
                 "deliver_leader_and_isr": None, "drop": None}
        groups = _GROUPS[cfg] = tuple(
            (name,) + _STEPS[name] + ((tuple(fixed[name]) if fixed[name] is not None else None)
                                      if name in fixed else tuple(Step(name, r) for r in rng),)
            for name in _ORDER)
    return groups


def candidates(cfg, s: State):
    """(step, guard, effect) for every step that could be enabled in ``s``, in the alphabet's
    deterministic order: produce, consume, fetch steps, LeaderAndIsr deliveries, ISR steps,
    elect, fence, crash, restart, flush, tick, drops; within a step by replica id, then index."""
    for name, guard, effect, steps in step_groups(cfg):
        for st in (steps if steps is not None else dynamic_steps(name, s)):
            yield st, guard, effect


def dynamic_steps(name: str, s: State) -> list[Step]:
    """The deliver_leader_and_isr / drop candidates: one per queued message."""
    if name == "deliver_leader_and_isr":
        return [Step(name, r, None, i) for r, queue in enumerate(s.leader_and_isr) for i in range(len(queue))]
    return [Step(name, r, kind, i) for kind in MESSAGES
            for r, queue in enumerate(getattr(s, MESSAGE_FIELDS[kind])) for i in range(len(queue))]


def successor(cfg, s: State, st: Step, effect) -> tuple[State, list[dict]]:
    """Apply an already-checked step (the explorer's fast path)."""
    nx = _Next(cfg, s)
    effect(nx, st)
    return nx.freeze(), nx.out


def fetch_round(cfg, s: State, r: int) -> tuple[State, State] | None:
    """send_fetch, handle_fetch and handle_fetch_response of follower ``r`` back to back, on one
    working copy (send_fetch must be enabled and nothing of ``r`` in flight): the state after
    handle_fetch and the state after the round; None if the leader is down (request lost)."""
    nx = _Next(cfg, s)
    st = Step("send_fetch", r)
    _send_fetch(nx, st)
    if not nx.msgs.get("fetch_requests", s.fetch_requests)[r]:
        return None
    _handle_fetch(nx, Step("handle_fetch", r))
    served = nx.freeze()
    _handle_fetch_response(nx, Step("handle_fetch_response", r))
    return served, nx.freeze()


def enabled(cfg, s: State) -> list[Step]:
    """The enabled steps of ``s`` in a deterministic order (the alphabet's, then replica id)."""
    return [st for st, guard, _effect in candidates(cfg, s) if guard(cfg, s, st) is None]
