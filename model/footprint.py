"""What each step reads and writes, as bits of a location map: the independence relation of the
explorer's partial-order reduction (``reduction.py``).

A location is one field of one broker's replica, one field of the controller (a broker's epoch
there per broker), one message FIFO per kind and broker, the clock, one ghost field of the history,
or one part of the fault ledger (a loser per broker, the stale-read flag, one known loss per name).
Two steps are independent when neither writes what the other reads or writes: then each leaves
the other enabled (or disabled) and they give the same state, history and ledger in either order.

Some locations only ever grow by a union or a counter increment (``ADD`` below: the acknowledged
and consumed records, the regression flag, the fault counters and the ledger's sets): two steps
that only add to one commute, and only a step that reads it depends on one that adds to it.

``reads`` is what a step of a group may read in a given state, and also every location it may
assign (an assignment of a location's current value is no change, but it makes the step's effect
depend on it): its guard, the explorer's scope constraints, its effect, the history's and the
ledger's bookkeeping, and the pruning of Last Replica Standing. Where what it reads depends on the
state (the leader a follower fetches from, a LeaderAndIsr's contents) those determinants are read
too, so as long as nothing writes what a step reads, it reads, does and writes the same.
``reads(..., None)`` and ``writes`` are the same for any state: what the persistent sets ask of
the steps they leave out. ``changed`` is what a step actually changed, from the states around it.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from .actions import fetcher_tag
from .alphabet import (
    CHECKPOINT_HW,
    CONSUME,
    CONTROLLED_SHUTDOWN,
    CORRUPT,
    CORRUPT_LIVE,
    CRASH,
    DELIVER_LEADER_AND_ISR,
    DROP,
    ELECT,
    EXPAND_ISR,
    FAIL_DISK,
    FENCE,
    FLUSH,
    HANDLE_ALTER_PARTITION,
    HANDLE_ALTER_PARTITION_RESPONSE,
    HANDLE_FETCH,
    HANDLE_FETCH_RESPONSE,
    LOSE_DISK,
    MESSAGE_KINDS,
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
    Step,
)
from .budget import HW_STEPS, LEDGER_STEPS, loses_data  # FaultLedger.after's lists
from .history import COUNTERS, History
from .losses import (
    BOUNCED_LEADER_PROPOSAL,
    DEPOSED_LEADER_HW,
    FAST_BOUNCE_AFTER_LOSS,
    LAST_REPLICA_STANDING,
    RESTART_WITHIN_SESSION_AFTER_LOSS,
    STALE_ISR_EXPANSION,
    UNREGISTERED_STALE_ISR_EXPANSION,
    last_replica_standing,
)
from .state import GHOSTS_AT, Controller, Replica, State

_REP = Replica._fields
_CTRL = tuple(f for f in Controller._fields if f != "broker_epochs")
_QUEUES = tuple(MESSAGE_KINDS.values())  # State fields 2..6, in State's order
_HISTORY = History._fields  # State fields GHOSTS_AT.., in State's order
_ADDED = ("acked", "consumed", "consumer_hw_regressed") + COUNTERS  # unions, a flag set once, counters
_KNOWN = (
    LAST_REPLICA_STANDING.name,
    FAST_BOUNCE_AFTER_LOSS.name,
    STALE_ISR_EXPANSION.name,
    DEPOSED_LEADER_HW.name,
    BOUNCED_LEADER_PROPOSAL.name,
    RESTART_WITHIN_SESSION_AFTER_LOSS.name,
    UNREGISTERED_STALE_ISR_EXPANSION.name,
)
# the steps that may replace the controller's state (the ledger's Last Replica Standing check)
_CONTROLLER_STEPS = frozenset(
    (ELECT, FENCE, HANDLE_ALTER_PARTITION, REJOIN, UNFENCE, CONTROLLED_SHUTDOWN, RESTART, REGISTER, FAIL_DISK)
)
_DATA_LOSSES = frozenset((CRASH, LOSE_DISK, CORRUPT, FAIL_DISK, CORRUPT_LIVE))  # where loses_data may hold


class Layout:
    """The bit of every location of a cluster of ``n`` brokers (masks are Python ints)."""

    def __init__(self, n: int) -> None:
        self.n = n
        bit = iter(range(10_000))

        def one() -> int:
            return 1 << next(bit)

        self.rep = [{f: one() for f in _REP} for _ in range(n)]
        self.ctrl = {f: one() for f in _CTRL}
        self.bepoch = [one() for _ in range(n)]
        self.queue = {q: [one() for _ in range(n)] for q in _QUEUES}
        self.now = one()
        self.hist = {h: one() for h in _HISTORY}
        self.losers = [one() for _ in range(n)]
        self.stale_reads = one()
        self.known = {k: one() for k in _KNOWN}
        self.size = next(bit)
        self.rep_all = [sum(r.values()) for r in self.rep]
        self.ctrl_all = sum(self.ctrl.values())
        self.queues_of = [sum(self.queue[q][x] for q in _QUEUES) for x in range(n)]
        self.everything = (1 << self.size) - 1
        self.added = sum(self.hist[h] for h in _ADDED) | sum(self.losers) | self.stale_reads | sum(self.known.values())

    def field(self, name: str, brokers=None) -> int:
        """A replica field of ``brokers`` (default: all)."""
        return sum(self.rep[x][name] for x in (range(self.n) if brokers is None else brokers))

    def fields(self, x: int, *names: str) -> int:
        return sum(self.rep[x][f] for f in names)

    def queues(self, q: str) -> int:
        return sum(self.queue[q])


@lru_cache(maxsize=8)
def layout(n: int) -> Layout:
    return Layout(n)


class Context(NamedTuple):
    """What the footprints depend on besides the state: the cluster, the scope and the variant's
    known losses the fault ledger watches."""

    L: Layout
    rounds: bool  # fetch rounds as one transition
    watch: frozenset  # the known losses the ledger records (the variant's)
    losses: bool  # a step of the scope may lose data (power loss, lost disk, corruption)
    exclude_lrs: bool  # the explorer prunes Last Replica Standing
    stale_scope: bool  # the scope check of handle_alter_partition (exclude_known_losses, KIP-903)
    split: bool = False  # restart starts the broker, register registers it (kip-903 on)
    committed: bool = False  # KRaft's partition state: one AlterPartition awaits its answer (kip-903 on)
    held: bool = False  # split_fetch_handling: a leader holds its reads of follower Fetches (read_fetch)
    stale: bool = False  # split_become_follower: a new follower keeps its old fetcher until remove_fetcher
    waits: bool = False  # hw_waits_for_caught_up: the HW rule reads the clock (who is caught up)
    cache: bool = False  # metadata_cache: brokers cache the controller's registrations
    unfence: bool = False  # unfence_at_heartbeat: a registration awaits unfence
    shutdown: bool = False  # kraft_controlled_shutdown: the controller holds brokers in controlled shutdown


def context(config, scope) -> Context:
    known = config.rules.known_losses
    losses = (
        scope.max_power_losses > 0
        or scope.max_disk_losses > 0
        or scope.max_live_corruptions > 0
        or scope.max_fsync_failures > 0
    )
    return Context(
        layout(config.replicas),
        scope.fetch_rounds,
        frozenset(known),
        losses,
        scope.exclude_known_losses and LAST_REPLICA_STANDING.name in known,
        scope.exclude_known_losses and STALE_ISR_EXPANSION.name in known,
        config.rules.start_before_registration,
        config.rules.committed_partition_state,
        config.split_fetch_handling,
        config.split_become_follower,
        config.hw_waits_for_caught_up,
        config.metadata_cache,
        config.unfence_at_heartbeat,
        config.kraft_controlled_shutdown,
    )


def group(st: Step) -> tuple:
    """The group a step belongs to: the steps of one kind and broker (and message kind, or target),
    whatever their other fields; a persistent set holds a group whole."""
    return (st.name, st.replica, st.arg if st.name == DROP else None)


# -- reads ------------------------------------------------------------------------------------------


def reads(ctx: Context, g: tuple, s: State | None) -> int:
    """What a step of group ``g`` may read or assign in ``s`` (None: in any state), its ledger
    bookkeeping and pruning aside (``ledger_reads``)."""
    L = ctx.L
    name, b, arg = g
    q = L.queue
    h = L.hist
    if name == PRODUCE:
        return L.rep_all[b] | L.now | h["records_produced"]
    if name == CONSUME:
        return L.rep_all[b] | h["max_consumer_hw"] | L.ctrl["leader_epoch"]
    if name == SEND_FETCH:
        lead = _leaders(L, s, b)
        if not ctx.rounds:
            m = L.rep_all[b] | q["fetch_requests"][b] | q["fetch_responses"][b] | L.field("alive", lead)
            return m | (L.field("held_reads", lead) if ctx.held else 0)  # a read of its request held there
        return L.rep_all[b] | sum(L.rep_all[d] for d in lead) | L.now  # no fetch message outlives a round
    if name in (HANDLE_FETCH, READ_FETCH, READ_FETCH_HW):
        if s is None:
            lead = range(L.n)
        else:  # the broker holding a read of b's, or the destination of b's oldest request
            held = _holder(s, b) if ctx.held else None
            lead = [held] if held is not None else [s.fetch_requests[b][0].leader] if s.fetch_requests[b] else []
        m = (
            q["fetch_requests"][b]
            | q["fetch_responses"][b]
            | L.rep[b]["alive"]
            | L.now
            | sum(L.rep_all[d] for d in lead)
        )
        return m | (L.field("held_reads") if ctx.held else 0)  # whether a broker holds a read of b's
    if name == HANDLE_FETCH_RESPONSE:
        return L.rep_all[b] | q["fetch_responses"][b]
    if name == DELIVER_LEADER_AND_ISR:
        return q["leader_and_isr"][b] | L.rep_all[b] | L.now
    if name == REMOVE_FETCHER:
        return L.rep_all[b]
    if name == UPDATE_METADATA_CACHE:
        # and who is registered but not yet caught up (unregistered with a broker epoch), awaits unfence
        # or is in controlled shutdown
        return (
            L.fields(b, "alive", "cached_broker_epochs")
            | L.ctrl["fenced"]
            | L.ctrl["awaiting_unfence"]
            | L.ctrl["in_controlled_shutdown"]
            | sum(L.bepoch)
            | L.field("unregistered")
        )
    if name in (SHRINK_ISR, EXPAND_ISR):  # the AlterPartitions it awaits answers of (kip-903 on)
        return (
            L.rep_all[b] | L.now | q["alter_partition"][b] | (q["alter_partition_responses"][b] if ctx.committed else 0)
        )
    if name == HANDLE_ALTER_PARTITION:
        m = q["alter_partition"][b] | q["alter_partition_responses"][b] | L.ctrl_all | sum(L.bepoch) | L.rep[b]["alive"]
        if ctx.stale_scope:
            m |= L.rep[b]["remote_leo"] | L.field("log")
        return m
    if name == HANDLE_ALTER_PARTITION_RESPONSE:  # the one HW step that otherwise reads no clock
        return L.rep_all[b] | q["alter_partition_responses"][b] | (L.now if ctx.waits else 0)
    if name in (ELECT, FENCE):
        return L.ctrl_all | L.field("alive") | L.queues("leader_and_isr") | h["leader_moves"] | h["zombies"]
    if name in (REJOIN, UNFENCE):
        return L.rep_all[b] | L.ctrl_all | L.bepoch[b] | q["leader_and_isr"][b]
    if name == CONTROLLED_SHUTDOWN:  # its guard, a partition change told to every unfenced broker
        return (
            L.rep_all[b]
            | L.ctrl_all
            | L.field("alive")
            | L.field("unregistered")
            | L.field("broker_epoch")
            | (L.queues("leader_and_isr"))
        )
    if name == CRASH:  # with held reads: its own forgotten, those of its requests orphaned
        m = L.rep_all[b] | _own_queues(ctx, b) | _fetch_queues(ctx) | h["crashes"] | h["power_losses"]
        return m | (L.field("held_reads") if ctx.held else 0)
    # metadata_cache: a restart's cache takes every registration
    registrations = sum(L.bepoch) | L.field("unregistered") if ctx.cache and name == RESTART else 0
    if name == RESTART and ctx.split:  # the replayed metadata: the controller's state, applied
        return L.rep_all[b] | L.ctrl_all | L.now | h["bounces"] | registrations
    if name in (RESTART, REGISTER):
        m = L.rep_all[b] | L.ctrl_all | L.bepoch[b] | q["leader_and_isr"][b] | h["bounces"] | L.now | registrations
        if s is None or s.replicas[b].unclean_shutdown or (name == REGISTER and b not in s.controller.fenced):
            m |= L.queues("leader_and_isr") | L.field("alive")  # the controller takes it out first, telling everyone
        return m
    if name == TICK:
        return L.now | L.field("pending_produces")
    if name == DROP:
        m = q[MESSAGE_KINDS[arg]][b] | h["drops"]
        if arg in ("alter_partition", "alter_partition_response"):  # a lost proposal is proposed again
            m |= L.rep_all[b] | q["alter_partition"][b]
        return m
    if name == FAIL_DISK:  # a crash, then a fence
        return (
            reads(ctx, (CRASH, b, None), s) | reads(ctx, (FENCE, b, None), s) | h["disk_failures"] | h["fsync_failures"]
        )
    counter = _OWN_COUNTER.get(name)  # lose_disk, flush, checkpoint_hw, corrupt, corrupt_live
    return L.rep_all[b] | (h[counter] if counter else 0)


_OWN_COUNTER = {LOSE_DISK: "disk_losses", CORRUPT: "corruptions", CORRUPT_LIVE: "live_corruptions"}


def _holder(s: State, f: int) -> int | None:
    """The broker holding a read of follower ``f``'s Fetch (split_fetch_handling), if one does."""
    return next((d for d, rep in enumerate(s.replicas) for h in rep.held_reads if h.follower == f), None)


def _fetch_queues(ctx: Context) -> int:
    """Every fetch request and response FIFO; none in fetch rounds, where no fetch message is in
    flight between transitions (a crash that drops those to it drops nothing)."""
    return 0 if ctx.rounds else ctx.L.queues("fetch_requests") | ctx.L.queues("fetch_responses")


def _own_queues(ctx: Context, b: int) -> int:
    """The FIFOs a crash of ``b`` empties (its fetch ones only outside fetch rounds)."""
    L = ctx.L
    return L.queues_of[b] & ~(0 if not ctx.rounds else L.queue["fetch_requests"][b] | L.queue["fetch_responses"][b])


def _leaders(L: Layout, s: State | None, f: int) -> list[int]:
    """The brokers follower ``f`` may fetch from in ``s`` (None: any other): its fetcher's tag's leader."""
    if s is None:
        return [d for d in range(L.n) if d != f]
    d = fetcher_tag(s.replicas[f])[0]
    return [d] if d >= 0 and d != f else []


def ledger_reads(
    ctx: Context, name: str, b: int, s: State | None, ledger=None, st: Step | None = None, after: State | None = None
) -> int:
    """What ``FaultLedger.after`` reads for step ``st`` of kind ``name`` on broker ``b``, taken in
    ``s`` with ``ledger`` to ``after`` (``s`` None: for any such step, anywhere). A fetch round's
    ledger step is its handle_fetch."""
    L = ctx.L
    if name not in LEDGER_STEPS:
        return 0
    if name == CONSUME:
        return L.rep_all[b] | L.ctrl["leader_epoch"]
    watch = ctx.watch
    if not watch:
        return 0
    m = 0
    # Last Replica Standing is checked when the controller changed or a broker lost data; it needs
    # a broker that lost power or its disk, so without data losses in the scope it reads nothing
    gate = ctx.losses and (s is None or s.controller is not after.controller or loses_data(st))
    if gate:
        m |= L.ctrl["isr"] | L.field("power_lost")
    if DEPOSED_LEADER_HW.name in watch:
        m |= L.known[LAST_REPLICA_STANDING.name]
        if (s is None and ctx.losses) or (
            s is not None
            and DEPOSED_LEADER_HW.name not in ledger.known
            and (LAST_REPLICA_STANDING.name in ledger.known or (gate and last_replica_standing(after)))
        ):
            # a deposed leader living on after Last Replica Standing
            m |= L.field("alive") | L.field("leader") | L.field("leader_epoch") | L.field("hw") | L.ctrl["leader_epoch"]
        if name in HW_STEPS:  # a deposed leader advancing its HW: only a broker whose HW rose counts
            rose = range(L.n) if s is None else [x for x in range(L.n) if after.replicas[x].hw > s.replicas[x].hw]
            if rose:
                m |= L.ctrl["leader_epoch"] | sum(L.rep_all[x] for x in rose)
    if name == HANDLE_ALTER_PARTITION and STALE_ISR_EXPANSION.name in watch:
        m |= sum(L.losers)
        if (s is None and ctx.losses) or (s is not None and ledger.losers):
            m |= L.ctrl["isr"] | L.rep[b]["hw"] | L.field("log")
    if name == HANDLE_ALTER_PARTITION and BOUNCED_LEADER_PROPOSAL.name in watch:
        m |= L.queue["alter_partition"][b] | L.ctrl["isr"] | L.rep[b]["alive"]
    if name == HANDLE_ALTER_PARTITION and UNREGISTERED_STALE_ISR_EXPANSION.name in watch:
        m |= sum(L.losers)
        if (s is None and ctx.losses) or (s is not None and ledger.losers):
            m |= (
                L.ctrl["isr"] | L.rep[b]["hw"] | L.rep[b]["remote_leo"] | L.field("log") | L.queue["alter_partition"][b]
            )
    return m


def ledger_step(ctx: Context, g: tuple) -> str:
    """The step kind whose ledger bookkeeping a transition of group ``g`` does (a fetch round's is
    its handle_fetch: send_fetch and handle_fetch_response change nothing the ledger reads)."""
    return HANDLE_FETCH if g[0] == SEND_FETCH and ctx.rounds else g[0]


def prune_reads(ctx: Context, s: State, after: State) -> int:
    """What the explorer's pruning of Last Replica Standing reads for a step from ``s`` to ``after``."""
    if ctx.exclude_lrs and _touches_lrs(s, after):
        return ctx.L.ctrl["isr"] | ctx.L.field("power_lost")
    return 0


def static_reads(ctx: Context, g: tuple) -> int:
    """Everything a step of group ``g`` may read in any state, its bookkeeping and pruning included."""
    L = ctx.L
    m = reads(ctx, g, None) | ledger_reads(ctx, ledger_step(ctx, g), g[1], None)
    if ctx.exclude_lrs and writes(ctx, g) & (L.ctrl["isr"] | L.field("power_lost")):
        m |= L.ctrl["isr"] | L.field("power_lost")
    return m


def _touches_lrs(s: State, after: State) -> bool:
    """Whether a step from ``s`` to ``after`` may change what ``last_replica_standing`` reads."""
    if s.controller.isr != after.controller.isr:
        return True
    return any(p.power_lost != q.power_lost for p, q in zip(s.replicas, after.replicas))


# -- what may enable a disabled step ----------------------------------------------------------------


def enabling(ctx: Context, g: tuple, s: State) -> tuple[int, int]:
    """For group ``g``, none of whose steps is enabled in ``s`` (its scope bounds aside, checked by
    the caller): ``(locations, queues)`` such that none of its steps becomes enabled before a step
    changes one of ``locations`` or adds a message to one of ``queues``. Per step one condition it
    fails is enough; where several may fail, what they all read."""
    L = ctx.L
    name, b, arg = g
    q = L.queue
    rep = s.replicas[b] if b >= 0 else None
    alive = L.rep[b]["alive"] if b >= 0 else 0
    if name in (
        PRODUCE,
        CONSUME,
        SEND_FETCH,
        SHRINK_ISR,
        EXPAND_ISR,
        REJOIN,
        CRASH,
        LOSE_DISK,
        FLUSH,
        CHECKPOINT_HW,
        CORRUPT,
        FAIL_DISK,
        CORRUPT_LIVE,
        HANDLE_FETCH_RESPONSE,
    ):
        if name not in (LOSE_DISK, CORRUPT) and not rep.alive:
            return alive, 0  # every one of these needs its broker up (lose_disk and corrupt: down)
        if name in (PRODUCE, CONSUME, SHRINK_ISR, EXPAND_ISR, REJOIN) and rep.unregistered:
            return L.rep[b]["unregistered"], 0  # and registered
    if name == PRODUCE:
        if rep.leader != b:
            return L.rep[b]["leader"], 0
        return L.fields(b, "isr") | L.hist["records_produced"], 0  # acks=all below min ISR, or records
    if name == SEND_FETCH:
        leader = fetcher_tag(rep)[0]
        if leader < 0 or leader == b:  # a stale one: enabled once remove_fetcher or a crash replaced it
            return L.fields(b, "leader", "stale_fetcher"), 0
        own = L.fields(b, "leader", "leader_epoch", "stale_fetcher")  # its fetcher's tag
        if not ctx.rounds:  # a fetch outstanding under that tag (or its read held)
            held = L.rep[leader]["held_reads"] if ctx.held else 0
            return own | q["fetch_requests"][b] | q["fetch_responses"][b] | held, 0
        return own | L.rep[leader]["alive"], 0  # a round is lost to a dead leader
    if name == HANDLE_FETCH:  # a read of b's is held only once a request of b's was in flight
        holder = _holder(s, b) if ctx.held else None
        if holder is not None:  # an hw_only read: enabled once read_fetch reads its batches, or a crash
            return L.rep[holder]["held_reads"], 0
        if s.fetch_requests[b]:  # its destination is not registered yet
            return L.rep[s.fetch_requests[b][0].leader]["unregistered"] | q["fetch_requests"][b], 0
        return 0, q["fetch_requests"][b]
    if name in (READ_FETCH, READ_FETCH_HW):  # an hw_only read of b's is held only after a request
        if not ctx.held:
            return 0, 0  # the config switch is off: never enabled
        if not s.fetch_requests[b]:
            return 0, q["fetch_requests"][b]
        return reads(ctx, g, s), 0  # its destination, what it would answer, a read of b's held
    if name == HANDLE_FETCH_RESPONSE:
        return 0, q["fetch_responses"][b]
    if name == REMOVE_FETCHER:
        return (L.fields(b, "alive", "stale_fetcher") if ctx.stale else 0), 0  # off: never enabled
    if name == UPDATE_METADATA_CACHE:
        if not ctx.cache:
            return 0, 0  # off: never enabled
        return (alive if not rep.alive else reads(ctx, g, s)), 0  # down, or its cache the controller's
    if name == DELIVER_LEADER_AND_ISR:
        if not s.leader_and_isr[b]:
            return 0, q["leader_and_isr"][b]
        # each one ignored, or refused while b holds an hw_only read (makeLeader's write lock waits)
        return q["leader_and_isr"][b] | L.fields(b, "leader_epoch", "partition_epoch", "held_reads"), 0
    if name in (SHRINK_ISR, EXPAND_ISR):
        if rep.leader != b or rep.pending_isr is not None:
            return L.fields(b, "leader", "pending_isr"), 0
        if ctx.committed:  # an AlterPartition awaiting its answer: enabled once it is handled or lost
            return L.rep_all[b] | L.now | q["alter_partition"][b] | q["alter_partition_responses"][b], 0
        return L.rep_all[b] | L.now, 0
    if name == HANDLE_ALTER_PARTITION:
        if not s.alter_partition[b]:
            return 0, q["alter_partition"][b]
        return reads(ctx, g, s), 0  # refused by the scope (a known loss left out)
    if name == HANDLE_ALTER_PARTITION_RESPONSE:
        if not rep.alive:
            return alive, 0
        return 0, q["alter_partition_responses"][b]
    if name == REJOIN:
        return L.ctrl["fenced"], 0
    if name == UNFENCE:
        if not ctx.unfence:
            return 0, 0  # off: never enabled
        if not rep.alive:
            return alive, 0
        return L.fields(b, "broker_epoch", "unregistered") | L.ctrl["fenced"] | L.ctrl["awaiting_unfence"], 0
    if name == CONTROLLED_SHUTDOWN:
        if not ctx.shutdown:
            return 0, 0  # off: never enabled
        if not rep.alive:
            return alive, 0
        if rep.unregistered or rep.broker_epoch < 0:
            return L.fields(b, "unregistered", "broker_epoch"), 0
        return L.ctrl["fenced"] | L.ctrl["awaiting_unfence"] | L.ctrl["in_controlled_shutdown"], 0
    if name == CRASH:
        return L.fields(b, "log", "durable"), 0  # a power loss keeping or tearing more batches than unflushed
    if name == REGISTER:
        if not rep.alive:
            return alive, 0
        return L.fields(b, "unregistered", "broker_epoch"), 0  # registered: only a restart undoes it
    if name in (RESTART, LOSE_DISK, CORRUPT):
        if rep.alive:
            return alive, 0
        if name == RESTART:
            return L.ctrl["fenced"], 0  # a fast bounce past its bound
        return L.fields(b, "power_lost", "durable"), 0
    if name == DROP:
        return 0, q[MESSAGE_KINDS[arg]][b]
    if name == FENCE:  # fenced or awaiting unfence; the scope's epoch and zombie bounds
        return L.ctrl["fenced"] | L.ctrl["awaiting_unfence"] | L.ctrl["leader"] | L.ctrl["leader_epoch"] | alive, 0
    if name == ELECT:
        return L.ctrl_all, 0
    return reads(ctx, g, s), 0  # flush, checkpoint_hw, fail_disk, corrupt_live, consume: what they read


def pushes(ctx: Context, g: tuple) -> int:
    """The FIFOs a step of group ``g`` may add a message to, in any state."""
    L = ctx.L
    name, b, arg = g
    q = L.queue
    if name == SEND_FETCH:
        return 0 if ctx.rounds else q["fetch_requests"][b]
    if name == HANDLE_FETCH:
        return q["fetch_responses"][b]
    if name in (SHRINK_ISR, EXPAND_ISR):
        return q["alter_partition"][b]
    if name == HANDLE_ALTER_PARTITION:
        return q["alter_partition_responses"][b]
    if name in (ELECT, FENCE, FAIL_DISK, RESTART, REGISTER, CONTROLLED_SHUTDOWN):
        return L.queues("leader_and_isr")
    if name in (REJOIN, UNFENCE):
        return q["leader_and_isr"][b]
    if name == DROP and arg in ("alter_partition", "alter_partition_response"):
        return q["alter_partition"][b]
    return 0


# -- writes -------------------------------------------------------------------------------------------

_FOLLOWER_WRITES = ("log", "durable", "hw", "truncating_epoch", "bad_batch")  # append, truncate, epoch answers
_SERVED_WRITES = (
    "remote_leo",
    "remote_broker_epoch",
    "last_caught_up",
    "last_fetch_leo",
    "last_fetch_time",
    "hw",
    "pending_produces",
)  # a leader serving a fetch
_CRASH_WRITES = (
    "alive",
    "durable",
    "hw_checkpoint",
    "pending_produces",
    "power_lost",
    "unclean_shutdown",
    "unregistered",
)
_PARTITION_CHANGE = ("leader", "leader_epoch", "isr", "elr", "partition_epoch", "last_known_leader")


def writes(ctx: Context, g: tuple) -> int:
    """Every location a step of group ``g`` may change, in any state (adds included)."""
    L = ctx.L
    name, b, arg = g
    q = L.queue
    h = L.hist
    ctrl = L.ctrl
    others = [x for x in range(L.n) if x != b]
    served = sum(L.fields(x, *_SERVED_WRITES) for x in others) | h["acked"]
    m = _ledger_writes(ctx, g)
    if name == PRODUCE:
        return m | L.fields(b, "log", "durable", "pending_produces", "hw") | h["records_produced"] | h["acked"]
    if name == CONSUME:
        return m | h["max_consumer_hw"] | h["consumed"] | h["consumer_hw_regressed"]
    if name == SEND_FETCH:
        if ctx.rounds:  # the whole round; its messages never outlive it
            return m | L.fields(b, *_FOLLOWER_WRITES) | served
        return m | q["fetch_requests"][b]
    if name == HANDLE_FETCH:
        m |= L.field("held_reads", others) if ctx.held else 0
        return m | q["fetch_requests"][b] | q["fetch_responses"][b] | served
    if name in (READ_FETCH, READ_FETCH_HW):
        return m | q["fetch_requests"][b] | L.field("held_reads", others)
    if name == HANDLE_FETCH_RESPONSE:
        return m | q["fetch_responses"][b] | L.fields(b, *_FOLLOWER_WRITES)
    if name == REMOVE_FETCHER:  # the new fetcher's state; hw-truncation truncates to the HW
        return m | L.fields(b, "stale_fetcher", *_FOLLOWER_WRITES)
    if name == UPDATE_METADATA_CACHE:
        return m | L.rep[b]["cached_broker_epochs"]
    if name == DELIVER_LEADER_AND_ISR:
        return (
            m
            | q["leader_and_isr"][b]
            | (
                L.rep_all[b]
                & ~L.fields(
                    b,
                    "alive",
                    "hw_checkpoint",
                    "power_lost",
                    "broker_epoch",
                    "unclean_shutdown",
                    "cached_broker_epochs",
                )
                # not "unregistered": a LeaderAndIsr of its registration ends it
            )
            | h["acked"]
        )
    if name == SHRINK_ISR:
        return m | L.fields(b, "pending_isr", "pending_epochs") | q["alter_partition"][b]
    if name == EXPAND_ISR:
        return (
            m
            | L.fields(b, "pending_isr", "pending_epochs", "hw", "pending_produces")
            | q["alter_partition"][b]
            | h["acked"]
        )
    if name == HANDLE_ALTER_PARTITION:
        return (
            m
            | q["alter_partition"][b]
            | q["alter_partition_responses"][b]
            | ctrl["isr"]
            | ctrl["elr"]
            | ctrl["partition_epoch"]
        )
    if name == HANDLE_ALTER_PARTITION_RESPONSE:
        return (
            m
            | q["alter_partition_responses"][b]
            | h["acked"]
            | L.fields(b, "pending_isr", "pending_epochs", "isr", "partition_epoch", "hw", "pending_produces")
        )
    if name == ELECT:
        return m | sum(ctrl[f] for f in _PARTITION_CHANGE) | L.queues("leader_and_isr") | h["leader_moves"]
    if name == FENCE:
        m |= ctrl["in_controlled_shutdown"]  # a fence ends a controlled shutdown
        return m | sum(ctrl[f] for f in _PARTITION_CHANGE) | ctrl["fenced"] | L.queues("leader_and_isr") | h["zombies"]
    if name == CONTROLLED_SHUTDOWN:
        return m | sum(ctrl[f] for f in _PARTITION_CHANGE) | ctrl["in_controlled_shutdown"] | L.queues("leader_and_isr")
    if name == REJOIN:
        return (
            m
            | ctrl["fenced"]
            | ctrl["awaiting_unfence"]
            | L.bepoch[b]
            | L.rep[b]["broker_epoch"]
            | q["leader_and_isr"][b]
        )
    if name == UNFENCE:
        return m | ctrl["fenced"] | ctrl["awaiting_unfence"] | q["leader_and_isr"][b]
    if name == CRASH:
        return (
            m
            | (L.field("held_reads") if ctx.held else 0)
            | (L.rep[b]["stale_fetcher"] if ctx.stale else 0)
            | L.fields(b, *_CRASH_WRITES)
            | _own_queues(ctx, b)
            | _fetch_queues(ctx)
            | h["crashes"]
            | h["power_losses"]
        )
    if name == RESTART and ctx.split:
        return m | L.rep_all[b] | h["bounces"] | h["acked"]
    if name == RESTART:
        return m | L.rep_all[b] | L.ctrl_all | L.bepoch[b] | L.queues("leader_and_isr") | h["bounces"]
    if name == REGISTER:  # the broker catches up: the controller's state applied
        return m | L.rep_all[b] | h["acked"] | L.ctrl_all | L.bepoch[b] | L.queues("leader_and_isr")
    if name == LOSE_DISK:
        return (
            m
            | L.fields(b, "log", "durable", "hw", "hw_checkpoint", "bad_batch", "power_lost", "unclean_shutdown")
            | h["disk_losses"]
        )
    if name == FLUSH:
        return m | L.fields(b, "durable", "hw_checkpoint")
    if name == CHECKPOINT_HW:
        return m | L.rep[b]["hw_checkpoint"]
    if name == TICK:
        return m | L.now | L.field("pending_produces")
    if name == DROP:
        m |= q[MESSAGE_KINDS[arg]][b] | h["drops"]
        if arg in ("alter_partition", "alter_partition_response"):
            m |= q["alter_partition"][b] | L.fields(b, "pending_isr", "pending_epochs")
        return m
    if name == CORRUPT:
        return m | L.rep[b]["durable"] | h["corruptions"]
    if name == FAIL_DISK:
        return (
            m | writes(ctx, (CRASH, b, None)) | writes(ctx, (FENCE, b, None)) | h["disk_failures"] | h["fsync_failures"]
        )
    if name == CORRUPT_LIVE:
        return m | L.rep[b]["bad_batch"] | h["live_corruptions"]
    raise ValueError(f"no footprint for step {name}")


def _ledger_writes(ctx: Context, g: tuple) -> int:
    """The ledger parts a step of group ``g`` may add to. Only Last Replica Standing and the
    losers are read by steps (``ledger_reads``), so only theirs are narrowed to what may happen in
    the scope; the others are never read by a step, only by fault budgets."""
    L = ctx.L
    name, b = ledger_step(ctx, g), g[1]
    if name == CONSUME:
        return L.stale_reads
    if name not in LEDGER_STEPS:
        return 0
    m = L.losers[b] if name in _DATA_LOSSES and ctx.losses else 0
    if not ctx.watch:
        return m
    m |= L.known[DEPOSED_LEADER_HW.name] | L.known[FAST_BOUNCE_AFTER_LOSS.name] | L.known[STALE_ISR_EXPANSION.name]
    m |= L.known[BOUNCED_LEADER_PROPOSAL.name] | L.known[RESTART_WITHIN_SESSION_AFTER_LOSS.name]
    m |= L.known[UNREGISTERED_STALE_ISR_EXPANSION.name]
    if ctx.losses and (name in _CONTROLLER_STEPS or name in _DATA_LOSSES):
        m |= L.known[LAST_REPLICA_STANDING.name]  # only a broker that lost power or its disk makes one
    return m


# -- what a step changed ---------------------------------------------------------------------------------


def changed(L: Layout, s: State, t: State) -> int:
    """The locations whose value differs between ``s`` and its successor ``t`` (ledger aside)."""
    m = 0
    if s[0] is not t[0]:
        for x, (p, r) in enumerate(zip(s[0], t[0])):
            if p is not r:
                bits = L.rep[x]
                for f, u, v in zip(_REP, p, r):
                    if u is not v and u != v:
                        m |= bits[f]
    c, d = s[1], t[1]
    if c is not d:
        for f in _CTRL:
            if getattr(c, f) != getattr(d, f):
                m |= L.ctrl[f]
        for x, (u, v) in enumerate(zip(c.broker_epochs, d.broker_epochs)):
            if u != v:
                m |= L.bepoch[x]
    for k, qname in enumerate(_QUEUES, start=2):
        a, z = s[k], t[k]
        if a is not z:
            bits = L.queue[qname]
            for x, (u, v) in enumerate(zip(a, z)):
                if u != v:
                    m |= bits[x]
    if s[7] != t[7]:
        m |= L.now
    for hname, u, v in zip(_HISTORY, s[GHOSTS_AT:], t[GHOSTS_AT:]):
        if u is not v and u != v:
            m |= L.hist[hname]
    return m


def ledger_changed(L: Layout, before, after) -> int:
    """The ledger parts that differ between two fault ledgers."""
    if before is after:
        return 0
    m = L.stale_reads if before.stale_reads != after.stale_reads else 0
    for x in set(before.losers) ^ set(after.losers):
        m |= L.losers[x]
    for k in set(before.known) ^ set(after.known):
        m |= L.known[k]
    return m
