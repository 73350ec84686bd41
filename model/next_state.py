"""The successor under construction, and what several steps share (the HW rule, the flush policy).

``NextState`` copies a state's top-level tuples, lets one step's effect change what it must and
freezes once: unchanged replicas and message queues are shared with the predecessor, not copied.
"""

from __future__ import annotations

from .alphabet import MESSAGE_KINDS, NONE
from .history import History
from .state import GHOSTS_AT, LeaderAndIsr, Replica, State, catching_up, updated

_QUEUE_FIELDS = tuple(MESSAGE_KINDS.values())  # in State's order


class NextState:
    """Mutable copy of a state's top-level fields; ``freeze`` builds the successor State.
    Message queues are copied on first write only (most steps touch one queue or none)."""

    __slots__ = ("cfg", "src", "replicas", "controller", "msgs", "now", "history", "out")

    def __init__(self, cfg, s: State):
        self.cfg = cfg
        self.src = s
        self.replicas = list(s.replicas)
        self.controller = s.controller
        self.msgs: dict[str, list] = {}
        self.now = s.now
        self.history = History(*s[GHOSTS_AT:])
        self.out: list[dict] = []

    def take(self, action, st) -> None:
        """Apply ``action``'s effect for step ``st`` (already known to be enabled), then bring the
        ghost history up to date with the outputs it gave (effects never write the history)."""
        start = len(self.out)
        action.effect(self, st)
        self.history = self.history.after(st, self.out[start:] if start else self.out, self.src)

    def queues(self, field: str) -> list:
        """The per-replica queues of one message kind (by State field), writable."""
        q = self.msgs.get(field)
        if q is None:
            q = self.msgs[field] = list(getattr(self.src, field))
        return q

    def freeze(self) -> State:
        src, m = self.src, self.msgs
        queues = src[2:7] if not m else [tuple(m[f]) if f in m else getattr(src, f) for f in _QUEUE_FIELDS]
        return State(tuple(self.replicas), self.controller, *queues, self.now, *self.history)  # type: ignore[call-arg]

    def send(self, field: str, dest: int, msg) -> None:
        """Queue a message; one addressed to a dead broker is discarded at once."""
        if self.replicas[dest].alive:
            if field == "leader_and_isr":
                msg = addressed(self.replicas[dest], msg)
            self.queues(field)[dest] += (msg,)

    def pop(self, field: str, r: int, index: int = 0):
        queues = self.queues(field)
        queue = queues[r]
        queues[r] = queue[:index] + queue[index + 1 :]
        return queue[index]

    def produce_out(self, r: int, record: int, records: int, acks: int, error: str, offset: int = -1) -> None:
        """A produce response: ``record`` the batch's first record id, ``records`` their number."""
        self.out.append(
            {
                "type": "produce",
                "replica": r,
                "record": record,
                "records": records,
                "acks": acks,
                "error": error,
                "offset": offset if error == NONE else -1,
            }
        )

    def send_leader_and_isr(self, skip: int = -1) -> None:
        """The controller propagates its partition state to every unfenced broker but ``skip``, in
        id order."""
        c = self.controller
        msg = LeaderAndIsr(c.leader, c.leader_epoch, c.isr, c.partition_epoch)
        for b in range(self.cfg.replicas):
            if b != skip and b not in c.fenced:
                self.send("leader_and_isr", b, msg)


def addressed(rep, msg: LeaderAndIsr) -> LeaderAndIsr:
    """A LeaderAndIsr as the controller sends it to broker ``rep``: marked ``registration`` when the
    broker registered and does not serve yet (sent for the broker epoch of its registration: once it
    applied one, it has replayed the metadata log past its registration, initialCatchUpFuture)."""
    return msg._replace(registration=True) if catching_up(rep) else msg


def flush_policy(cfg, log_len: int, durable: int) -> int:
    """flush.messages: fsync once that many messages are unflushed (log only, not the HW checkpoint)."""
    fm = cfg.flush_messages
    return log_len if fm is not None and log_len - durable >= fm else durable


def lagging(cfg, now: int, rep: Replica, f: int) -> bool:
    """A leader's follower ``f`` has not caught up within replica.lag.time.max: shrink_isr's test, and
    the time clause of ReplicaState.isCaughtUp negated (hw_waits_for_caught_up)."""
    return now - rep.last_caught_up[f] > cfg.replica_lag_time_max_ticks


def isr_eligible(cfg, rep: Replica, f: int) -> bool:
    """Partition.isReplicaIsrEligible of leader ``rep``'s follower ``f``: its remote LEO is known (a Fetch
    in this leader epoch stored its ReplicaState.brokerEpoch); with metadata_cache also the leader's
    metadata cache holds it unfenced (isBrokerFenced) and, unless the Fetch carried broker epoch -1, at
    that broker epoch (isBrokerEpochIsrEligible against getAliveBrokerEpoch)."""
    if rep.remote_leo[f] < 0:
        return False
    if not cfg.metadata_cache:
        return True
    cached = rep.cached_broker_epochs[f]
    return cached != -1 and rep.remote_broker_epoch[f] in (-1, cached)


def maybe_increment_leader_hw(nx: NextState, r: int, rep: Replica) -> Replica:
    """Partition.maybeIncrementLeaderHW: HW = min LEO over the maximal ISR (only moves up), then
    DelayedProduce completion for acks=all requests the HW has passed (a blocked HW passes none).
    hw_waits_for_caught_up (Kafka 3.6+, KAFKA-15021): the minimum also takes every follower outside
    the maximal ISR that shouldWaitForReplicaToJoinIsr, i.e. ReplicaState.isCaughtUp and
    Partition.isReplicaIsrEligible (``isr_eligible``, as expand_isr asks), so one catching up reaches the HW."""
    cfg = nx.cfg
    if rep.leader != r or cfg.rules.hw_blocked(rep, cfg.min_insync_replicas):
        return rep  # KIP-966 strict min ISR: nothing is committed while the ISR is below min ISR
    new_hw = len(rep.log)
    members = rep.isr if rep.pending_isr is None else rep.pending_isr + rep.isr
    remote = rep.remote_leo
    for f in members:
        if f != r and remote[f] < new_hw:
            new_hw = remote[f]
    if cfg.hw_waits_for_caught_up:
        for f in range(cfg.replicas):
            # isCaughtUp's other clause, remote LEO = leader LEO, never lowers the minimum
            if (
                f != r
                and remote[f] < new_hw
                and f not in members
                and not lagging(cfg, nx.now, rep, f)
                and isr_eligible(cfg, rep, f)
            ):
                new_hw = remote[f]
    if new_hw > rep.hw:
        rep = updated(rep, hw=new_hw)
    pending = rep.pending_produces
    hw = rep.hw
    if pending and any(p[1] + p[3] <= hw for p in pending):  # DelayedProduce: requiredOffset = last + 1
        error = NONE if len(rep.isr) >= nx.cfg.min_insync_replicas else "NOT_ENOUGH_REPLICAS_AFTER_APPEND"
        for record, offset, _deadline, records in pending:
            if offset + records <= hw:
                nx.produce_out(r, record, records, -1, error, offset)
        rep = updated(rep, pending_produces=tuple(p for p in pending if p[1] + p[3] > hw))
    return rep
