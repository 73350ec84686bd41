"""The model's state: immutable nested NamedTuples of plain values (hashable, comparable).

Every field is public and built from ints, bools, strings, None and tuples, so the conformance
harness can construct the same ``State`` from an implementation. Fields that only mean something
while a replica leads (``epoch_start_offset``, ``remote_leo``, ``last_caught_up``, ``pending_isr``,
``last_fetch_leo``, ``last_fetch_time``) hold their neutral values (-1, -1s, 0s, None, ()) otherwise,
so equal situations are equal states.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any, NamedTuple

from .history import EMPTY_HISTORY, History
from .history import FIELDS as GHOST_FIELDS


def _repr_without(t: Any, field: str, default: object, **more: object) -> str:
    """``repr(t)`` leaving ``field`` (and each of ``more``) out at its default: states and traces
    hashed before the field existed keep their text (the trace hash and the explorer's fingerprints
    read it)."""
    defaults = {field: default, **more}
    return (
        type(t).__name__
        + "("
        + ", ".join(f"{n}={v!r}" for n, v in zip(t._fields, t) if n not in defaults or v != defaults[n])
        + ")"
    )


class Entry(NamedTuple):
    """One record: its offset, the leader epoch that wrote its batch, its id, and the base offset
    of its batch (a batch is the unit of append, replication, truncation and power-loss survival)."""

    offset: int
    epoch: int
    record: int
    base: int


class HeldRead(NamedTuple):
    """A follower's Fetch its leader has read and not yet updated from nor answered
    (``split_fetch_handling``: docs/steps.md, ``read_fetch``): what ``handle_fetch`` completes."""

    follower: int
    leader_epoch: int  # the request's current leader epoch: the answer's tag
    fetch_offset: int
    broker_epoch: int  # the request's (Fetch v15 ReplicaState)
    fetch_time: int  # the time of the read (of its HW with hw_only): Kafka's fetchTimeMs
    leo_read: int  # the leader's LEO the read took (LogReadInfo.logEndOffset), -1 while hw_only
    hw: int  # the HW read (LogReadInfo.highWatermark)
    records: tuple  # Entry, ...: the batches read
    bad_batch: int = -1  # base offset of a damaged batch among them, -1 none
    orphan: bool = False  # its follower crashed since it sent the request: never answered
    detached: bool = False  # the holder became a follower since: the update reaches nothing
    # read_fetch_hw: only the HW is read yet, read_fetch reads the LEO and the batches (at most
    # max_batches, the request's; 0 once read)
    hw_only: bool = False
    max_batches: int = 0

    def __repr__(self) -> str:
        return _repr_without(self, "hw_only", False, max_batches=0)


class Replica(NamedTuple):
    """One broker's view of the partition (docs/steps.md, "Per-replica state")."""

    alive: bool
    log: tuple  # Entry, ... (offset i at index i)
    durable: int  # length of the fsynced prefix
    hw: int
    hw_checkpoint: int  # replication-offset-checkpoint
    leader: int  # -1 none
    leader_epoch: int  # -1 unknown
    isr: tuple  # sorted replica ids
    partition_epoch: int  # -1 unknown
    epoch_start_offset: int  # leader: LEO when it became leader; else -1
    remote_leo: tuple  # leader: per replica id the follower's fetch offset, -1 unknown
    last_caught_up: tuple  # leader: per replica id, the tick the follower last reached LEO
    pending_isr: tuple | None  # leader: ISR proposed by an AlterPartition in flight
    pending_produces: tuple  # leader: DelayedProduce (record, offset, deadline), ...
    truncating_epoch: int  # follower (kip-101/kip-279): epoch to ask about next; -1 fetching
    power_lost: bool  # crashed by power loss; the unflushed suffix goes at restart
    broker_epoch: int  # epoch of the broker's current registration (kip-903+; else 0)
    remote_broker_epoch: tuple  # leader: per replica id the broker epoch of its last reading Fetch, -1 unknown
    pending_epochs: tuple  # leader: the broker epochs ``pending_isr`` was proposed with; () when none
    unclean_shutdown: bool  # down without a clean shutdown (kip-966; else False)
    bad_batch: int = -1  # base offset of a batch damaged on disk under it (corrupt_live), -1 none
    # up, started by restart, and not yet serving: its registration not yet accepted, or accepted but
    # the LeaderAndIsr of it not yet applied (kip-903+; Kafka's initialCatchUpFuture)
    unregistered: bool = False
    # leader (split_fetch_handling): the follower Fetches it read and has yet to update from and answer
    held_reads: tuple = ()  # HeldRead, ... by follower
    # follower (split_become_follower): the (leader, leader epoch) of the fetcher it kept on becoming a
    # follower in a newer leader epoch, until remove_fetcher replaces it; () none
    stale_fetcher: tuple = ()
    # leader (catch_up_at_previous_fetch): per replica id the highest leader LEO a Fetch of the follower
    # read (-1 none) and the time of its last Fetch (0 none), Kafka's ReplicaState.lastFetchLeaderLogEndOffset
    # and lastFetchTimeMs; () while every follower's is -1 and 0 (``fetch_state``)
    last_fetch_leo: tuple = ()
    last_fetch_time: tuple = ()
    # broker (metadata_cache): its metadata cache of the brokers' registrations, per broker id the broker
    # epoch it holds, -1 fenced (KRaftMetadataCache.getAliveBrokerEpoch); () always without the switch
    cached_broker_epochs: tuple = ()

    def __repr__(self) -> str:
        return _repr_without(
            self,
            "bad_batch",
            -1,
            unregistered=False,
            held_reads=(),
            stale_fetcher=(),
            last_fetch_leo=(),
            last_fetch_time=(),
            cached_broker_epochs=(),
        )


def last_fetch(rep: Replica, f: int) -> tuple[int, int]:
    """Follower ``f``'s (``last_fetch_leo``, ``last_fetch_time``) as its leader ``rep`` holds them."""
    return (rep.last_fetch_leo[f], rep.last_fetch_time[f]) if rep.last_fetch_leo else (-1, 0)


def fetch_state(leos: tuple, times: tuple) -> dict:
    """``last_fetch_leo`` and ``last_fetch_time`` of a Replica from every follower's values: () for
    both while all are neutral (-1 and 0), so a state has one form."""
    if all(x == -1 for x in leos) and not any(times):
        return {"last_fetch_leo": (), "last_fetch_time": ()}
    return {"last_fetch_leo": tuple(leos), "last_fetch_time": tuple(times)}


class Controller(NamedTuple):
    """The controller's partition state (leader, epochs, ISR) and its fenced brokers."""

    leader: int
    leader_epoch: int
    isr: tuple
    partition_epoch: int
    fenced: tuple  # sorted broker ids
    broker_epochs: tuple  # per broker the epoch of its current registration (kip-903+; else 0s)
    elr: tuple  # Eligible Leader Replicas, sorted (kip-966; else empty)
    last_known_leader: int  # the leader the partition last lost (kip-966; else -1)
    # unfence_at_heartbeat: the brokers registered and not yet unfenced by a heartbeat, sorted (KRaft's
    # BrokerRegistration.fenced between RegisterBrokerRecord and UnfenceBrokerRecord); () always without it
    awaiting_unfence: tuple = ()
    # kraft_controlled_shutdown: the brokers in controlled shutdown, sorted (KRaft's
    # BrokerRegistration.inControlledShutdown, from controlled_shutdown to their fence or registration);
    # () always without it
    in_controlled_shutdown: tuple = ()

    def __repr__(self) -> str:
        return _repr_without(self, "awaiting_unfence", (), in_controlled_shutdown=())


def registration_fenced(c: Controller, b: int) -> bool:
    """Whether broker ``b``'s registration is fenced (KRaft's BrokerRegistration.fenced): fenced, or
    registered and awaiting unfence."""
    return b in c.fenced or b in c.awaiting_unfence


def active(c: Controller, b: int) -> bool:
    """Whether broker ``b`` may lead or join the ISR: its registration not fenced and not in controlled
    shutdown (KRaft's ClusterControlManager.isActive, which PartitionChangeBuilder.isAcceptableLeader asks)."""
    return not registration_fenced(c, b) and b not in c.in_controlled_shutdown


def catching_up(rep: Replica) -> bool:
    """Registered and not yet caught up with its registration (kip-903+: ``unregistered`` with a broker
    epoch): it serves nothing yet (initialCatchUpFuture) and KRaft holds it fenced till its heartbeat says so."""
    return rep.unregistered and rep.broker_epoch >= 0


def alive_broker_epochs(c: Controller, replicas: tuple = ()) -> tuple:
    """The controller's registrations as a metadata cache holds them: per broker its broker epoch, -1
    while it is fenced (BrokerRegistration.fenced, epoch; KRaftMetadataCache.getAliveBrokerEpoch), awaiting
    unfence, in controlled shutdown (KRaftMetadataCache.isBrokerShuttingDown, which
    Partition.isReplicaIsrEligible reads as it reads a fenced one), or registered and not yet caught up
    with its registration (``unregistered`` with a broker epoch: KRaft registers a broker fenced and
    unfences it once its heartbeat shows it replayed the metadata log past its registration,
    BrokerHeartbeatManager; without unfence_at_heartbeat the model's register unfences at once)."""
    return tuple(
        -1 if not active(c, b) or (replicas and catching_up(replicas[b])) else e for b, e in enumerate(c.broker_epochs)
    )


class FetchRequest(NamedTuple):
    """A ReplicaFetcher request: Fetch, or OffsetsForLeaderEpoch when ``query_epoch`` >= 0."""

    leader: int  # destination: the leader the follower knew when sending
    leader_epoch: int  # the follower's current leader epoch when sending
    fetch_offset: int
    last_fetched_epoch: int
    query_epoch: int  # -1: a Fetch; else the epoch asked about by OffsetsForLeaderEpoch
    max_batches: int  # a Fetch's limit in whole batches (replica.fetch.max.bytes), 0 = none
    broker_epoch: int = -1  # the follower's broker epoch (Fetch v15 ReplicaState; -1 before kip-903)
    orphan: bool = False  # its sender crashed after sending it: handled, never answered (docs/steps.md, crash)

    def __repr__(self) -> str:
        return _repr_without(self, "orphan", False)


class FetchResponse(NamedTuple):
    """Answer to a FetchRequest; ``leader``/``leader_epoch`` echo the request's tag."""

    leader: int
    leader_epoch: int
    error: str
    kind: str  # "records", "diverging", "epoch_end" or "error"
    records: tuple  # Entry, ... ("records")
    leader_hw: int  # "records"
    epoch: int  # "diverging"/"epoch_end": the epoch answered (-1 undefined)
    end_offset: int  # "diverging"/"epoch_end"; OFFSET_OUT_OF_RANGE: the leader's LEO
    bad_batch: int = -1  # "records": base offset of a damaged batch among them (corrupt_live), -1 none

    def __repr__(self) -> str:
        return _repr_without(self, "bad_batch", -1)


class LeaderAndIsr(NamedTuple):
    """Controller -> broker: the partition state to apply."""

    leader: int
    leader_epoch: int
    isr: tuple
    partition_epoch: int
    # the state of a started broker's registration (kip-903+): once applied, it is caught up and serves
    registration: bool = False

    def __repr__(self) -> str:
        return _repr_without(self, "registration", False)


class AlterPartition(NamedTuple):
    """Leader -> controller: proposed ISR, fenced by leader and partition epochs."""

    leader_epoch: int
    partition_epoch: int
    isr: tuple
    broker_epochs: tuple  # per proposed member (NewIsrWithEpochs); -1 unknown, always -1 before kip-903
    orphan: bool = False  # its leader crashed after sending it: handled, never answered (docs/steps.md, crash)

    def __repr__(self) -> str:
        return _repr_without(self, "orphan", False)


class AlterPartitionResponse(NamedTuple):
    """Controller -> leader: error and the controller's current partition state."""

    error: str
    leader_epoch: int
    isr: tuple
    partition_epoch: int
    request_leader_epoch: int  # the leader epoch of the AlterPartition it answers


# State's own fields, before the ghost variables (``history.FIELDS``). Message fields are per
# replica id FIFO tuples (oldest first).
_OWN_FIELDS = (
    ("replicas", tuple),  # Replica per broker id
    ("controller", Controller),
    ("fetch_requests", tuple),  # per follower id
    ("fetch_responses", tuple),  # per follower id
    ("leader_and_isr", tuple),  # per destination broker id
    ("alter_partition", tuple),  # per sending leader id
    ("alter_partition_responses", tuple),  # per destination leader id
    ("now", int),
)
GHOSTS_AT = len(_OWN_FIELDS)  # the index of the first ghost variable in a State


class State(NamedTuple("_State", _OWN_FIELDS + GHOST_FIELDS)):
    """Whole-system state: its own fields, then the ghost variables, ``History``'s fields in its order."""

    __slots__ = ()

    @property
    def history(self) -> History:
        """The ghost variables as one value."""
        return History(*self[GHOSTS_AT:])


_REPLICA_INDEX = {name: i for i, name in enumerate(Replica._fields)}


def updated(rep: Replica, **changes) -> Replica:
    """``rep._replace(**changes)``, without NamedTuple._replace's overhead (a hot path)."""
    fields = list(rep)
    for name, value in changes.items():
        fields[_REPLICA_INDEX[name]] = value
    return tuple.__new__(Replica, fields)


def initial_state(config) -> State:
    """Broker 0 leads epoch 0 with every replica in the ISR; every broker applied it. The leader has
    heard from no follower yet: their LEOs and broker epochs are unknown (-1)."""
    n = config.replicas
    isr = tuple(range(n))
    none_yet = (-1,) * n
    zeros = (0,) * n
    replicas = []
    for r in range(n):
        leads = r == 0
        replicas.append(
            Replica(
                alive=True,
                log=(),
                durable=0,
                hw=0,
                hw_checkpoint=0,
                leader=0,
                leader_epoch=0,
                isr=isr,
                partition_epoch=0,
                epoch_start_offset=0 if leads else -1,
                remote_leo=none_yet,  # no follower fetched yet: ReplicaState.Empty, as after any makeLeader
                last_caught_up=zeros,
                pending_isr=None,
                pending_produces=(),
                truncating_epoch=-1,
                power_lost=False,
                broker_epoch=0,
                remote_broker_epoch=none_yet,
                pending_epochs=(),
                unclean_shutdown=False,
            )
        )
    empty = ((),) * n
    controller = Controller(
        leader=0,
        leader_epoch=0,
        isr=isr,
        partition_epoch=0,
        fenced=(),
        broker_epochs=zeros,
        elr=(),
        last_known_leader=-1,
    )
    if config.metadata_cache:  # every broker replayed the metadata log that registered them all
        replicas = [updated(r, cached_broker_epochs=alive_broker_epochs(controller)) for r in replicas]
    return State(
        replicas=tuple(replicas),
        controller=controller,
        fetch_requests=empty,
        fetch_responses=empty,
        leader_and_isr=empty,
        alter_partition=empty,
        alter_partition_responses=empty,
        now=0,
        **EMPTY_HISTORY._asdict(),
    )


# -- leader epoch cache (LeaderEpochFileCache), derived from the log ------------------------------


def latest_epoch(log: tuple) -> int:
    """Epoch of the last entry, -1 for an empty log (a Fetch's lastFetchedEpoch)."""
    return log[-1][1] if log else -1


def end_offset_for(log: tuple, epoch: int) -> tuple[int, int]:
    """LeaderEpochFileCache.endOffsetFor (KIP-279): (largest epoch <= ``epoch``, its end offset).
    Epochs grow along the log, so the first entry of a larger epoch ends it (found by bisection:
    a long run's log is long)."""
    if log and log[-1][1] <= epoch:
        return log[-1][1], len(log)
    i = bisect_right(log, epoch, key=_epoch)  # the first entry of a larger epoch
    return (log[i - 1][1], log[i][0]) if i > 0 else (-1, 0)


def _epoch(entry) -> int:
    return entry[1]


def end_offset_for_kip101(log: tuple, epoch: int) -> int:
    """Kafka 0.11 OffsetsForLeaderEpoch answer: LEO for the latest epoch, else the start of the
    first larger epoch; -1 (undefined) below the earliest epoch, or when no larger epoch exists."""
    if not log:
        return -1
    if epoch == log[-1][1]:
        return len(log)
    if epoch < log[0][1]:
        return -1
    for entry in log:
        if entry[1] > epoch:
            return entry[0]
    return -1


def truncate_to(rep: Replica, offset: int) -> Replica:
    """Log.truncateTo: drop every batch whose last offset is >= ``offset`` (a batch straddling it
    goes whole, as LogSegment.truncateTo cuts at a batch position); HW and durable prefix follow."""
    if offset >= len(rep.log):
        return rep
    offset = rep.log[offset].base if offset > 0 else 0
    return updated(
        rep,
        log=rep.log[:offset],
        hw=min(rep.hw, offset),
        durable=min(rep.durable, offset),
        bad_batch=rep.bad_batch if rep.bad_batch < offset else -1,
    )


def batch_ends(log: tuple, start: int) -> list[int]:
    """The end offsets of the batches of ``log`` from offset ``start`` (a batch base) on."""
    return [e.offset + 1 for e in log[start:] if e.offset + 1 == len(log) or log[e.offset + 1].base != e.base]


# -- renaming brokers (the explorer's symmetry reduction) -------------------------------------------


def permuted(s: State, perm: tuple) -> State:
    """``s`` with every broker ``b`` renamed ``perm[b]``: the one place that knows which fields
    hold a broker id (leaders, ISRs, fenced brokers, those awaiting unfence and those in controlled
    shutdown, the ELR), which are indexed by one (the replicas, per-follower leader state, broker
    epochs, the message FIFOs) and which pair one with a value (a proposal's broker epochs). A field
    added to the state that names or is indexed by a broker is renamed here
    (tests/model/test_symmetry.py fails until it is)."""
    n = len(perm)
    inv = [0] * n
    for b, p in enumerate(perm):
        inv[p] = b

    def one(b: int) -> int:
        return perm[b] if b >= 0 else b

    def ids(members: tuple) -> tuple:
        return tuple(sorted(perm[b] for b in members))

    def per(values: tuple) -> tuple:  # indexed by broker id (() stays: every follower's neutral)
        return tuple(values[inv[k]] for k in range(n)) if values else values

    def paired(members: tuple, values: tuple) -> tuple[tuple, tuple]:  # values aligned with members
        pairs = sorted(zip((perm[b] for b in members), values))
        return tuple(b for b, _ in pairs), tuple(v for _, v in pairs)

    replicas = []
    for k in range(n):
        r = s.replicas[inv[k]]
        pending, epochs = r.pending_isr, r.pending_epochs
        if pending is not None:
            pending, epochs = paired(pending, epochs) if len(epochs) == len(pending) else (ids(pending), epochs)
        replicas.append(
            updated(
                r,
                leader=one(r.leader),
                isr=ids(r.isr),
                remote_leo=per(r.remote_leo),
                last_caught_up=per(r.last_caught_up),
                pending_isr=pending,
                remote_broker_epoch=per(r.remote_broker_epoch),
                pending_epochs=epochs,
                held_reads=tuple(sorted(h._replace(follower=perm[h.follower]) for h in r.held_reads)),
                stale_fetcher=(one(r.stale_fetcher[0]), r.stale_fetcher[1]) if r.stale_fetcher else (),
                last_fetch_leo=per(r.last_fetch_leo),
                last_fetch_time=per(r.last_fetch_time),
                cached_broker_epochs=per(r.cached_broker_epochs),
            )
        )
    c = s.controller
    controller = c._replace(
        leader=one(c.leader),
        isr=ids(c.isr),
        fenced=ids(c.fenced),
        awaiting_unfence=ids(c.awaiting_unfence),
        broker_epochs=per(c.broker_epochs),
        elr=ids(c.elr),
        last_known_leader=one(c.last_known_leader),
        in_controlled_shutdown=ids(c.in_controlled_shutdown),
    )

    def queues(field: tuple, rename) -> tuple:
        return per(tuple(tuple(rename(m) for m in q) if q else q for q in field))

    def alter(m: AlterPartition) -> AlterPartition:
        isr, epochs = paired(m.isr, m.broker_epochs)
        return m._replace(isr=isr, broker_epochs=epochs)

    return s._replace(
        replicas=tuple(replicas),
        controller=controller,
        fetch_requests=queues(s.fetch_requests, lambda m: m._replace(leader=one(m.leader))),
        fetch_responses=queues(s.fetch_responses, lambda m: m._replace(leader=one(m.leader))),
        leader_and_isr=queues(s.leader_and_isr, lambda m: m._replace(leader=one(m.leader), isr=ids(m.isr))),
        alter_partition=queues(s.alter_partition, alter),
        alter_partition_responses=queues(s.alter_partition_responses, lambda m: m._replace(isr=ids(m.isr))),
    )
