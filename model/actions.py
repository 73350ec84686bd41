"""One action per step kind of docs/steps.md: its enabling condition beside its effect, as a TLA+
action holds both, each with the Kafka mechanism it follows.

``guard(cfg, state, step)`` returns None when the step is enabled, else the reason it is refused;
``effect(nx, step)`` changes the ``NextState`` under construction. Protocol differences are the
``cfg.rules`` calls (``model/protocols.py``), not branches here.
"""

from __future__ import annotations

from .alphabet import MESSAGE_KINDS, NONE, STEPS, Step
from .next_state import NextState, flush_policy, isr_eligible, lagging, maybe_increment_leader_hw
from .state import (
    AlterPartition,
    AlterPartitionResponse,
    Controller,
    Entry,
    FetchRequest,
    FetchResponse,
    HeldRead,
    LeaderAndIsr,
    Replica,
    State,
    active,
    alive_broker_epochs,
    batch_ends,
    end_offset_for,
    fetch_state,
    last_fetch,
    latest_epoch,
    registration_fenced,
    truncate_to,
    updated,
)

NOT_LEADER = "NOT_LEADER_OR_FOLLOWER"
CORRUPT_MESSAGE = "CORRUPT_MESSAGE"  # Errors.CORRUPT_MESSAGE: a consumer's CRC check failed (CorruptRecordException)


class Action:
    """A step kind's semantics. Subclasses set ``name`` (a key of ``alphabet.STEPS``) and define
    ``guard(cfg, s, st)`` and ``effect(nx, st)``, plain functions of their arguments (no ``self``:
    an action has no state of its own)."""

    name = ""

    def __init_subclass__(cls) -> None:
        for method in ("guard", "effect", "receive"):
            if callable(vars(cls).get(method)):  # a plain function, not already a static/class method
                setattr(cls, method, staticmethod(vars(cls)[method]))

    @staticmethod
    def guard(cfg, s: State, st: Step) -> str | None:
        return None

    @staticmethod
    def effect(nx: NextState, st: Step) -> None:
        raise NotImplementedError


# -- what several guards ask -----------------------------------------------------------------------


def _down(s: State, r: int) -> str | None:
    return None if s.replicas[r].alive else f"broker {r} is down"


def _not_serving(s: State, r: int) -> str | None:
    """Why broker r handles no request now: down, or started and not yet registered (KRaft's
    BrokerServer enables request processing only after the controller accepted it)."""
    rep = s.replicas[r]
    if not rep.alive:
        return f"broker {r} is down"
    return f"broker {r} is not registered yet" if rep.unregistered else None


def fetcher_tag(rep: Replica) -> tuple:
    """The (leader, leader epoch) a follower's fetcher fetches under: the partition's, or while it is
    stale (split_become_follower) the one it had before makeFollower."""
    return rep.stale_fetcher or (rep.leader, rep.leader_epoch)


def _outstanding(cfg, s: State, r: int, rep: Replica) -> bool:
    """A fetch of follower r sent under its fetcher's tag is still in flight, or read and held by
    the tag's leader (an orphan, sent before r crashed, is no longer its own)."""
    tag = fetcher_tag(rep)
    if any((m.leader, m.leader_epoch) == tag and not m.orphan for m in s.fetch_requests[r]) or any(
        (m.leader, m.leader_epoch) == tag for m in s.fetch_responses[r]
    ):
        return True
    leader, epoch = tag
    return cfg.split_fetch_handling and any(
        h.follower == r and h.leader_epoch == epoch and not h.orphan for h in s.replicas[leader].held_reads
    )


def held_read(s: State, r: int) -> tuple[int, HeldRead] | None:
    """(holder, read) of the read of follower r a broker holds (at most one: docs/steps.md, read_fetch)."""
    for d, rep in enumerate(s.replicas):
        for h in rep.held_reads:
            if h.follower == r:
                return d, h
    return None


def _lagging(cfg, now: int, r: int, rep: Replica) -> list[int]:
    return [f for f in rep.isr if f != r and lagging(cfg, now, rep, f)]


def _caught_up(cfg, r: int, rep: Replica) -> list[int]:
    """The followers outside the ISR maybeExpandIsr would add: in sync (isFollowerInSync) and eligible
    (isReplicaIsrEligible)."""
    in_sync = cfg.rules.in_sync
    return [
        f
        for f in range(cfg.replicas)
        if f != r and f not in rep.isr and in_sync(rep, rep.remote_leo[f]) and isr_eligible(cfg, rep, f)
    ]


def _leader_guard(cfg, s: State, r: int) -> str | None:
    rep = s.replicas[r]
    reason = _not_serving(s, r)  # unregistered: its AlterPartition would be STALE_BROKER_EPOCH
    if reason:
        return reason
    if rep.leader != r:
        return f"broker {r} is not the leader in its own view"
    if rep.pending_isr is not None:
        return f"broker {r} has an ISR change in flight"
    if cfg.rules.committed_partition_state and awaits_answer(s, r):
        # DefaultAlterPartitionManager.submit: OPERATION_NOT_ATTEMPTED, and Partition puts back its committed state
        return f"an AlterPartition of broker {r} awaits its answer"
    return None


def awaits_answer(s: State, r: int) -> bool:
    """Broker r's AlterPartitionManager holds an AlterPartition of the partition: in flight and no
    orphan of an earlier process, or answered and the answer in flight (docs/steps.md)."""
    return bool(s.alter_partition_responses[r]) or any(not m.orphan for m in s.alter_partition[r])


def _clean_choice(cfg, c: Controller) -> tuple[int, tuple, tuple] | None:
    """(leader, ISR, ELR) of a clean election (PartitionChangeBuilder.electLeader without unclean
    election), or None if no active broker is eligible."""
    choice = cfg.rules.elect_clean(c)
    return None if choice is None else choice + (cfg.rules.elr_after(c, choice[1], cfg.min_insync_replicas),)


def _elect_choice(cfg, c: Controller) -> tuple[int, tuple, tuple] | None:
    """(leader, ISR, ELR) of an election without a target, or None if nobody is eligible."""
    choice = _clean_choice(cfg, c)
    if choice is not None:
        return choice
    if cfg.unclean_leader_election_enable:
        for r in range(cfg.replicas):
            if active(c, r):  # an unclean leader need not hold what the ELR vouched for
                return r, (r,), ()
    return None


def _propose_isr(nx: NextState, r: int, rep: Replica, proposed: tuple, epochs: tuple | None = None) -> Replica:
    """Send an AlterPartition for ``proposed`` with each member's broker epoch as the leader knows
    it (KIP-903), or resend a pending one with the ``epochs`` it was proposed with."""
    if epochs is None:
        known = nx.cfg.rules.proposal_epoch
        epochs = tuple(known(rep.broker_epoch if m == r else rep.remote_broker_epoch[m]) for m in proposed)
    nx.queues("alter_partition")[r] += (AlterPartition(rep.leader_epoch, rep.partition_epoch, proposed, epochs),)
    return updated(rep, pending_isr=proposed, pending_epochs=epochs)


class Delivery(Action):
    """A step that delivers the oldest in-flight ``message`` of the step's replica r to its
    handler ``receive(nx, r, message)``; enabled iff there is one (and, with ``to_replica``, the
    replica it goes to is alive)."""

    message = ""  # a key of alphabet.MESSAGE_KINDS
    what = ""  # the message's name in refusal reasons
    to_replica = False

    @classmethod
    def guard(cls, cfg, s: State, st: Step) -> str | None:
        r = st.replica
        if cls.to_replica and not s.replicas[r].alive:
            return f"broker {r} is down"
        if not getattr(s, MESSAGE_KINDS[cls.message])[r]:
            return f"no {cls.what} of replica {r} in flight"
        return None

    @classmethod
    def effect(cls, nx: NextState, st: Step) -> None:
        cls.receive(nx, st.replica, nx.pop(MESSAGE_KINDS[cls.message], st.replica))

    @staticmethod
    def receive(nx: NextState, r: int, message) -> None:
        raise NotImplementedError


# -- client requests ---------------------------------------------------------------------------------


class Produce(Action):
    """ProduceRequest handling: Partition.appendRecordsToLeader with acks and min.insync.replicas."""

    name = "produce"

    def guard(cfg, s, st):
        return _not_serving(s, st.replica)

    def effect(nx, st):
        r, acks, n = st.replica, st.arg, st.records
        record = nx.history.records_produced + 1
        rep = nx.replicas[r]
        if rep.leader != r:
            nx.produce_out(r, record, n, acks, NOT_LEADER)
            return
        if acks == -1 and len(rep.isr) < nx.cfg.min_insync_replicas:
            nx.produce_out(r, record, n, acks, "NOT_ENOUGH_REPLICAS")
            return
        offset = len(rep.log)
        log = rep.log + tuple(Entry(offset + i, rep.leader_epoch, record + i, offset) for i in range(n))
        rep = updated(rep, log=log, durable=flush_policy(nx.cfg, len(log), rep.durable))
        if acks == -1:
            rep = updated(
                rep,
                pending_produces=rep.pending_produces + ((record, offset, nx.now + nx.cfg.request_timeout_ticks, n),),
            )
        # Kafka raises the HW after every leader append, whatever the acks: with a maximal ISR of
        # one, an acks=1 record is committed at once.
        rep = maybe_increment_leader_hw(nx, r, rep)
        if acks == 1:
            nx.produce_out(r, record, n, acks, NONE, offset)
        nx.replicas[r] = rep


class Consume(Action):
    """Consumer FetchRequest from offset 0: records below the leader's HW (read_committed view). A
    damaged batch among them fails the consumer's CRC check (check.crcs, CorruptRecordException)."""

    name = "consume"

    def guard(cfg, s, st):
        return _not_serving(s, st.replica)

    def effect(nx, st):
        r = st.replica
        rep = nx.replicas[r]
        error = NOT_LEADER if rep.leader != r else nx.cfg.rules.consume_error(rep)
        if error is None and 0 <= rep.bad_batch < rep.hw:
            error = CORRUPT_MESSAGE
        if error is not None:
            nx.out.append({"type": "consume", "replica": r, "error": error, "hw": -1, "records": []})
            return
        nx.out.append(
            {
                "type": "consume",
                "replica": r,
                "error": NONE,
                "hw": rep.hw,
                "records": [[e.offset, e.record] for e in rep.log[: rep.hw]],
            }
        )


# -- replication: the follower's fetch round ----------------------------------------------------------


class SendFetch(Action):
    """ReplicaFetcherThread: a Fetch, or OffsetsForLeaderEpoch while truncating (KIP-101/KIP-279),
    to the leader of the fetcher's tag under the tag's leader epoch. AbstractFetcherThread.doWork ->
    maybeFetch builds it (RemoteLeaderEndPoint.buildFetch) under partitionMapLock from the fetcher's
    own partitionStates, so a stale fetcher (split_become_follower) fetches from its old leader under
    its old leader epoch until removeFetcherForPartitions takes the partition from it."""

    name = "send_fetch"

    def guard(cfg, s, st):
        r = st.replica
        rep = s.replicas[r]
        if not rep.alive:
            return f"broker {r} is down"
        leader = fetcher_tag(rep)[0]
        if rep.stale_fetcher and leader in (-1, r):  # it was leader, or knew none: no fetcher yet
            return f"broker {r} has no fetcher until remove_fetcher (none before its makeFollower)"
        if leader == -1:
            return f"broker {r} knows no leader"
        if leader == r:
            return f"broker {r} is the leader"
        if _outstanding(cfg, s, r, rep):
            return f"follower {r} has a fetch outstanding"
        return None

    def effect(nx, st):
        r = st.replica
        rep = nx.replicas[r]
        leader, epoch = fetcher_tag(rep)
        if nx.cfg.rules.uses_epoch_queries and rep.truncating_epoch >= 0 and rep.log:
            req = FetchRequest(leader, epoch, -1, -1, rep.truncating_epoch, 0)
        else:
            req = FetchRequest(
                leader,
                epoch,
                len(rep.log),
                latest_epoch(rep.log),
                -1,
                st.max_batches,
                nx.cfg.rules.fetch_broker_epoch(rep),
            )
        if nx.replicas[leader].alive:  # else discarded at once
            nx.queues("fetch_requests")[r] += (req,)


def _answer(rules, d: int, lead: Replica, req: FetchRequest) -> tuple | None:
    """Checks 1-5 of handle_fetch on broker ``d`` (docs/steps.md): the answer ``(error, kind,
    epoch, end)`` that reads no records, or None when step 6 reads."""
    if lead.leader != d:
        return NOT_LEADER, "error", -1, -1
    check = rules.check_fetch(lead, req)
    if check is not None:
        error, epoch, end = check
        return (error, "error", -1, -1) if error != NONE else (NONE, "diverging", epoch, end)
    if req.query_epoch >= 0:
        epoch, end = rules.answer_epoch_query(lead.log, req.query_epoch)
        return NONE, "epoch_end", epoch, end
    leo = len(lead.log)
    if req.fetch_offset > leo:
        return "OFFSET_OUT_OF_RANGE", "error", -1, leo
    return None


def _batches(lead: Replica, fetch_offset: int, max_batches: int) -> tuple[tuple, int]:
    """Partition.readRecords' localLog.read: whole batches from the one holding the fetch offset,
    at most ``max_batches``, and the damaged one among them (-1 none); the leader sends the file's
    bytes unchecked (FileRecords.slice), so a damaged batch goes too."""
    log, leo = lead.log, len(lead.log)
    start = log[fetch_offset].base if fetch_offset < leo else leo  # the whole batch
    end = leo
    if max_batches:
        ends = batch_ends(log, start)
        end = ends[min(max_batches, len(ends)) - 1] if ends else leo
    return log[start:end], lead.bad_batch if start <= lead.bad_batch < end else -1


def _read(now: int, r: int, lead: Replica, req: FetchRequest, hw_only: bool = False) -> HeldRead:
    """Step 6's read (Partition.readRecords) at ``now`` (ReplicaManager.readFromLog's fetchTimeMs):
    the HW before this fetch's own increment, the LEO and the batches; with ``hw_only``
    (read_fetch_hw) the HW alone, the LEO and the batches (at most the request's ``max_batches``)
    left to read_fetch."""
    records, bad = ((), -1) if hw_only else _batches(lead, req.fetch_offset, req.max_batches)
    return HeldRead(
        r,
        req.leader_epoch,
        req.fetch_offset,
        req.broker_epoch,
        now,
        -1 if hw_only else len(lead.log),
        lead.hw,
        records,
        bad,
        req.orphan,
        hw_only=hw_only,
        max_batches=req.max_batches if hw_only else 0,
    )


def _update_follower_fetch_state(nx: NextState, d: int, lead: Replica, h: HeldRead) -> Replica:
    """Partition.updateFollowerFetchState from read ``h``: remote LEO and broker epoch, the fetch
    state (``_update_fetch_state``), then maybeIncrementLeaderHW; a read detached by makeFollower
    updates a Replica the partition no longer holds."""
    r = h.follower
    if not h.detached:
        remote, epochs = lead.remote_leo, lead.remote_broker_epoch
        lead = updated(
            lead,
            remote_leo=remote[:r] + (h.fetch_offset,) + remote[r + 1 :],
            remote_broker_epoch=epochs[:r] + (h.broker_epoch,) + epochs[r + 1 :],
        )
        lead = _update_fetch_state(nx.cfg, lead, r, h.fetch_offset, h.leo_read, h.fetch_time)
    return maybe_increment_leader_hw(nx, d, lead)


def _update_fetch_state(cfg, lead: Replica, r: int, fetch_offset: int, leader_leo: int, fetch_time: int) -> Replica:
    """Replica.updateFetchStateOrThrow's times for follower r's Fetch at ``fetch_offset`` read at
    ``fetch_time`` with the leader's LEO at ``leader_leo``: caught up then if it reached that LEO;
    with catch_up_at_previous_fetch, else caught up as of its previous Fetch if it reached the LEO
    that one read (lastFetchLeaderLogEndOffset, lastFetchTimeMs). The later time is kept."""
    lcu = lead.last_caught_up
    leo_before, time_before = last_fetch(lead, r)
    caught = lcu[r]
    if fetch_offset >= leader_leo:
        caught = max(caught, fetch_time)
    elif cfg.catch_up_at_previous_fetch and fetch_offset >= leo_before:
        caught = max(caught, time_before)
    if caught != lcu[r]:
        lead = updated(lead, last_caught_up=lcu[:r] + (caught,) + lcu[r + 1 :])
    if not cfg.catch_up_at_previous_fetch:
        return lead
    n = len(lcu)
    leos, times = lead.last_fetch_leo or (-1,) * n, lead.last_fetch_time or (0,) * n
    leos, times = leos[:r] + (max(leader_leo, leo_before),) + leos[r + 1 :], times[:r] + (fetch_time,) + times[r + 1 :]
    return updated(lead, **fetch_state(leos, times))


def _respond(nx: NextState, d: int, r: int, tag: int, orphan: bool, error: str, kind: str, **fields) -> None:
    """A fetch answer of broker ``d`` to follower ``r``, tagged with the request's (leader, leader
    epoch); none to a follower down or to an orphan, whose connection is closed."""
    if nx.replicas[r].alive and not orphan:
        nx.queues("fetch_responses")[r] += (
            FetchResponse(
                d,
                tag,
                error,
                kind,
                fields.get("records", ()),
                fields.get("hw", -1),
                fields.get("epoch", -1),
                fields.get("end", -1),
                fields.get("bad", -1),
            ),
        )


def _answer_read(nx: NextState, d: int, h: HeldRead) -> None:
    _respond(nx, d, h.follower, h.leader_epoch, h.orphan, NONE, "records", records=h.records, hw=h.hw, bad=h.bad_batch)


class HandleFetch(Delivery):
    """The leader's handling of a follower Fetch / OffsetsForLeaderEpoch (ReplicaManager.fetchMessages):
    checks, then Partition.fetchRecords' read and its updateFollowerFetchState, then the answer with
    what was read. With a read held (split_fetch_handling: read_fetch), the update and the answer."""

    name = "handle_fetch"

    message, what = "fetch_request", "fetch request"

    @classmethod
    def guard(cls, cfg, s, st):
        held = held_read(s, st.replica) if cfg.split_fetch_handling else None
        if held is not None:  # its holder is up: a crash forgets what it held
            if held[1].hw_only:
                return f"broker {held[0]} has read only the HW of follower {st.replica}'s fetch (read_fetch next)"
            return None
        return cls.request_guard(cfg, s, st)

    @classmethod
    def request_guard(cls, cfg, s, st):
        """Whether follower ``st.replica``'s oldest fetch request may be handled now."""
        reason = super(HandleFetch, cls).guard(cfg, s, st)
        if reason is None and s.replicas[s.fetch_requests[st.replica][0].leader].unregistered:
            reason = f"broker {s.fetch_requests[st.replica][0].leader} is not registered yet"  # the request waits
        return reason

    @classmethod
    def effect(cls, nx, st):
        held = held_read(nx.src, st.replica) if nx.cfg.split_fetch_handling else None
        if held is None:
            return super().effect(nx, st)
        d, h = held
        lead = updated(nx.replicas[d], held_reads=tuple(x for x in nx.replicas[d].held_reads if x is not h))
        nx.replicas[d] = _update_follower_fetch_state(nx, d, lead, h)
        _answer_read(nx, d, h)

    def receive(nx, r, req):
        d = req.leader
        lead = nx.replicas[d]
        answer = _answer(nx.cfg.rules, d, lead, req)
        if answer is not None:
            error, kind, epoch, end = answer
            return _respond(nx, d, r, req.leader_epoch, req.orphan, error, kind, epoch=epoch, end=end)
        h = _read(nx.now, r, lead, req)
        nx.replicas[d] = _update_follower_fetch_state(nx, d, lead, h)
        _answer_read(nx, d, h)


class ReadFetch(Action):
    """The read of a leader's fetch handling (split_fetch_handling): Partition.fetchRecords' checks
    and readRecords under the read lock of leaderIsrUpdateLock; the update and the answer come with
    handle_fetch. Only a Fetch that reads records: the others update nothing (handle_fetch). After
    read_fetch_hw, the rest of Partition.readRecords: the LEO and localLog.read's batches."""

    name = "read_fetch"
    hw_only = False  # ReadFetchHw: the HW alone

    @classmethod
    def guard(cls, cfg, s, st):
        r = st.replica
        if not cfg.split_fetch_handling:
            return "split_fetch_handling is off: a leader handles a fetch whole (handle_fetch)"
        held = held_read(s, r)
        if held is not None and held[1].hw_only and not cls.hw_only:
            return None  # its batches to read; its holder is up: a crash forgets what it held
        reason = HandleFetch.request_guard(cfg, s, st)
        if reason is not None:
            return reason
        if held is not None:
            return f"broker {held[0]} holds a read of follower {r} (its next request waits)"
        req = s.fetch_requests[r][0]
        answer = _answer(cfg.rules, req.leader, s.replicas[req.leader], req)
        if answer is not None:
            what = answer[0] if answer[1] == "error" else answer[1]
            return f"the oldest fetch request of follower {r} reads no records (its answer: {what})"
        return None

    @classmethod
    def effect(cls, nx, st):
        r = st.replica
        held = held_read(nx.src, r)
        if held is not None:  # an hw_only read: the LEO and its batches now, its HW and time kept
            d, h = held
            lead = nx.replicas[d]
            records, bad = _batches(lead, h.fetch_offset, h.max_batches)
            done = h._replace(records=records, bad_batch=bad, leo_read=len(lead.log), hw_only=False, max_batches=0)
            nx.replicas[d] = updated(lead, held_reads=tuple(done if x is h else x for x in lead.held_reads))
            return
        req = nx.pop("fetch_requests", r)
        d = req.leader
        lead = nx.replicas[d]
        held_reads = tuple(sorted(lead.held_reads + (_read(nx.now, r, lead, req, cls.hw_only),)))
        nx.replicas[d] = updated(lead, held_reads=held_reads)


class ReadFetchHw(ReadFetch):
    """The first read of read_fetch (split_fetch_handling): Partition.readRecords' initialHighWatermark,
    read before initialLogEndOffset and localLog.read's batches; the read lock of leaderIsrUpdateLock
    it holds stops no appendRecordsToLeader nor another handling's updateFollowerFetchState, so an
    append or an HW raise may come before read_fetch reads the LEO and the batches. makeLeader and
    makeFollower take the write lock: deliver_leader_and_isr waits."""

    name = "read_fetch_hw"
    hw_only = True


class HandleFetchResponse(Delivery):
    """ReplicaFetcherThread.processPartitionData, or truncation on the follower (KIP-101/279/320).
    AbstractFetcherThread.processFetchRequest takes an answer against the fetcher's own
    partitionStates: a stale fetcher (split_become_follower) handles the answer to its old leader
    under its old fetch state, after makeFollower applied a newer leader epoch."""

    name = "handle_fetch_response"

    message, what = "fetch_response", "fetch response"
    to_replica = True

    def receive(nx, r, resp):
        rep = nx.replicas[r]
        if (resp.leader, resp.leader_epoch) != fetcher_tag(rep):
            return  # answers a request of an earlier fetcher: discarded
        kind = resp.kind
        if kind == "records":
            if resp.bad_batch >= 0:
                return  # appendAsFollower's CRC check refuses the whole response; the same offset is fetched again
            if resp.records and resp.records[0].offset < len(rep.log):
                return  # diverged batch boundaries: Log.append refuses out-of-order offsets
            log = rep.log + resp.records
            rep = updated(
                rep, log=log, durable=flush_policy(nx.cfg, len(log), rep.durable), hw=min(resp.leader_hw, len(log))
            )
        elif kind == "epoch_end":
            rep = nx.cfg.rules.handle_epoch_answer(rep, resp.epoch, resp.end_offset)
        elif kind == "diverging":
            own_epoch, own_end = end_offset_for(rep.log, resp.epoch)
            rep = truncate_to(rep, min(resp.end_offset, own_end) if own_epoch == resp.epoch else own_end)
        elif resp.error == "OFFSET_OUT_OF_RANGE":
            rep = truncate_to(rep, resp.end_offset)
        nx.replicas[r] = rep


# -- partition state: LeaderAndIsr and the ISR -----------------------------------------------------------


class DeliverLeaderAndIsr(Action):
    """LeaderAndIsr (ReplicaManager.becomeLeaderOrFollower): makeLeader / makeFollower / ISR update."""

    name = "deliver_leader_and_isr"

    def guard(cfg, s, st):
        if len(s.leader_and_isr[st.replica]) <= st.index:
            return f"no LeaderAndIsr #{st.index} for broker {st.replica} in flight"
        if any(h.hw_only for h in s.replicas[st.replica].held_reads):
            # makeLeader / makeFollower take leaderIsrUpdateLock's write lock: it waits for the reader
            return f"broker {st.replica} holds a fetch read of the HW only (its batches' read holds the lock)"
        return None

    def effect(nx, st):
        r = st.replica
        m = nx.pop("leader_and_isr", r, st.index)
        rep = nx.replicas[r]
        if m.registration:  # caught up with its registration: it serves from now on, so no mark matters
            rep = nx.replicas[r] = updated(rep, unregistered=False)
            queue = nx.queues("leader_and_isr")
            queue[r] = tuple(q._replace(registration=False) for q in queue[r])
        known = (rep.leader_epoch, rep.partition_epoch)
        if (m.leader_epoch, m.partition_epoch) < known or (
            (m.leader_epoch, m.partition_epoch) == known and not nx.cfg.rules.committed_partition_state
        ):
            return
        if m.leader == -1 and not nx.cfg.rules.follows_leaderless:
            return
        nx.replicas[r] = _apply_partition_state(nx, r, rep, m)


def _apply_partition_state(nx: NextState, r: int, rep: Replica, m: LeaderAndIsr) -> Replica:
    """Broker ``r`` applies a newer partition state ``m`` (ReplicaManager.becomeLeaderOrFollower,
    KRaft's applyDelta): the same leader epoch updates ISR and partition epoch; a newer one runs
    Partition.makeLeader or makeFollower."""
    n = nx.cfg.replicas
    if m.leader_epoch == rep.leader_epoch:
        rep = updated(rep, isr=m.isr, partition_epoch=m.partition_epoch)
        if m.leader == r and nx.cfg.rules.committed_partition_state:
            # updateAssignmentAndIsr's CommittedPartitionState forgets the proposal; makeLeader raises the HW
            rep = maybe_increment_leader_hw(nx, r, updated(rep, pending_isr=None, pending_epochs=()))
    elif m.leader == r:  # Partition.makeLeader
        rep = updated(
            rep,
            leader=r,
            leader_epoch=m.leader_epoch,
            isr=m.isr,
            partition_epoch=m.partition_epoch,
            epoch_start_offset=len(rep.log),
            remote_leo=(-1,) * n,
            remote_broker_epoch=(-1,) * n,
            last_caught_up=tuple(nx.now if i in m.isr else 0 for i in range(n)),
            last_fetch_leo=(),  # resetReplicaState for a new leader: UNKNOWN_OFFSET, 0
            last_fetch_time=(),
            pending_isr=None,
            pending_epochs=(),
            truncating_epoch=-1,
            stale_fetcher=(),  # applyLocalLeadersDelta removes the fetcher first
        )
        rep = maybe_increment_leader_hw(nx, r, rep)
    else:  # Partition.makeFollower
        for record, _offset, _deadline, records in rep.pending_produces:
            nx.produce_out(r, record, records, -1, NOT_LEADER)
        old_fetcher = fetcher_tag(rep)
        rep = updated(
            rep,
            leader=m.leader,
            leader_epoch=m.leader_epoch,
            isr=m.isr,
            partition_epoch=m.partition_epoch,
            epoch_start_offset=-1,
            remote_leo=(-1,) * n,
            remote_broker_epoch=(-1,) * n,
            last_caught_up=(0,) * n,
            last_fetch_leo=(),
            last_fetch_time=(),
            pending_isr=None,
            pending_epochs=(),
            pending_produces=(),
        )
        if rep.held_reads:  # updateAssignmentAndIsr cleared remoteReplicasMap: their updates reach nothing
            rep = updated(rep, held_reads=tuple(h._replace(detached=True) for h in rep.held_reads))
        if nx.cfg.split_become_follower:  # the fetcher is replaced later, by remove_fetcher
            rep = updated(rep, stale_fetcher=old_fetcher)
        else:
            rep = nx.cfg.rules.new_fetcher(rep)
    return rep


class RemoveFetcher(Action):
    """The end of ReplicaManager.applyLocalFollowersDelta (split_become_follower): after makeFollower,
    ReplicaFetcherManager.removeFetcherForPartitions takes the partition from the old fetcher (under
    its partitionMapLock, so not while it processes an answer) and addFetcherForPartitions starts one
    for the new leader and leader epoch at the log's initial fetch offset (Kafka before KRaft:
    ReplicaManager.makeFollowers, which truncated to the HW in between)."""

    name = "remove_fetcher"

    def guard(cfg, s, st):
        r = st.replica
        if not cfg.split_become_follower:
            return "split_become_follower is off: deliver_leader_and_isr replaces the fetcher"
        if not s.replicas[r].alive:
            return f"broker {r} is down"
        if not s.replicas[r].stale_fetcher:
            return f"the fetcher of broker {r} is not stale"
        return None

    def effect(nx, st):
        rep = updated(nx.replicas[st.replica], stale_fetcher=())
        nx.replicas[st.replica] = nx.cfg.rules.new_fetcher(rep)


class UpdateMetadataCache(Action):
    """KRaftMetadataCachePublisher.onMetadataUpdate handing a new image to KRaftMetadataCache.setImage
    (metadata_cache): the broker's cache of the brokers' registrations takes the controller's, however
    many changes it missed (a KRaft broker replays the metadata log, fenced or not)."""

    name = "update_metadata_cache"

    def guard(cfg, s, st):
        r = st.replica
        if not cfg.metadata_cache:
            return "metadata_cache is off: brokers hold no metadata cache"
        if not s.replicas[r].alive:
            return f"broker {r} is down"
        if s.replicas[r].cached_broker_epochs == alive_broker_epochs(s.controller, s.replicas):
            return f"the metadata cache of broker {r} holds the controller's registrations"
        return None

    def effect(nx, st):
        nx.replicas[st.replica] = updated(
            nx.replicas[st.replica], cached_broker_epochs=alive_broker_epochs(nx.controller, nx.replicas)
        )


class ShrinkIsr(Action):
    """Partition.maybeShrinkIsr: drop followers not caught up within replica.lag.time.max.ms."""

    name = "shrink_isr"

    def guard(cfg, s, st):
        reason = _leader_guard(cfg, s, st.replica)
        if reason is None and not _lagging(cfg, s.now, st.replica, s.replicas[st.replica]):
            reason = "no ISR follower is out of sync for longer than replica.lag.time.max"
        return reason

    def effect(nx, st):
        r = st.replica
        rep = nx.replicas[r]
        out = set(_lagging(nx.cfg, nx.now, r, rep))
        nx.replicas[r] = _propose_isr(nx, r, rep, tuple(f for f in rep.isr if f not in out))


class ExpandIsr(Action):
    """Partition.maybeExpandIsr: add followers whose LEO reached the HW; HW runs on the maximal ISR."""

    name = "expand_isr"

    def guard(cfg, s, st):
        reason = _leader_guard(cfg, s, st.replica)
        if reason is None and not _adding(cfg, st, s.replicas[st.replica]):
            reason = "no follower outside the ISR has caught up to the high watermark"
            if st.arg is not None and st.arg >= 0:
                reason = f"follower {st.arg} is in the ISR or has not caught up to the high watermark"
        return reason

    def effect(nx, st):
        r = st.replica
        rep = nx.replicas[r]
        rep = _propose_isr(nx, r, rep, tuple(sorted(rep.isr + tuple(_adding(nx.cfg, st, rep)))))
        nx.replicas[r] = maybe_increment_leader_hw(nx, r, rep)


def _adding(cfg, st, rep: Replica) -> list[int]:
    """The followers ``expand_isr`` adds: those caught up, or the one it names if it is (Kafka's
    maybeExpandIsr adds the follower whose Fetch it handles)."""
    caught = _caught_up(cfg, st.replica, rep)
    return caught if st.arg is None or st.arg < 0 else [f for f in caught if f == st.arg]


class HandleAlterPartition(Delivery):
    """Controller AlterPartition handling with leader-epoch and partition-epoch fencing (KIP-497),
    and members checked against their registrations (ReplicationControlManager.ineligibleReplicasForIsr:
    fenced, awaiting unfence or in controlled shutdown, or a stale broker epoch: KIP-903)."""

    name = "handle_alter_partition"

    message, what = "alter_partition", "AlterPartition"

    def receive(nx, r, m):
        c = nx.controller
        if r != c.leader or m.leader_epoch != c.leader_epoch:
            error = "FENCED_LEADER_EPOCH"
        elif m.partition_epoch != c.partition_epoch:
            error = "INVALID_UPDATE_VERSION"
        elif any(not active(c, f) or e not in (-1, c.broker_epochs[f]) for f, e in zip(m.isr, m.broker_epochs)):
            error = "INELIGIBLE_REPLICA"
        else:
            error = NONE
            c = nx.controller = c._replace(
                isr=m.isr,
                elr=nx.cfg.rules.elr_after(c, m.isr, nx.cfg.min_insync_replicas),
                partition_epoch=c.partition_epoch + 1,
            )
        if not m.orphan:  # an orphan's connection is closed: the answer reaches nobody
            nx.send(
                "alter_partition_responses",
                r,
                AlterPartitionResponse(error, c.leader_epoch, c.isr, c.partition_epoch, m.leader_epoch),
            )


class HandleAlterPartitionResponse(Delivery):
    """AlterPartitionManager callback: clear the pending ISR, adopt the committed one if same leader
    epoch and not an older partition epoch (Partition.handleAlterPartitionUpdate)."""

    name = "handle_alter_partition_response"

    message, what = "alter_partition_response", "AlterPartition response"
    to_replica = True

    def receive(nx, r, m):
        if m.request_leader_epoch != nx.replicas[r].leader_epoch:
            return  # answers a proposal of an earlier leadership, not the one pending now
        if nx.replicas[r].pending_isr is None and nx.cfg.rules.committed_partition_state:
            return  # its proposal was forgotten: partitionState != proposedIsrState
        rep = updated(nx.replicas[r], pending_isr=None, pending_epochs=())
        if m.leader_epoch == rep.leader_epoch and m.partition_epoch >= rep.partition_epoch:
            rep = maybe_increment_leader_hw(nx, r, updated(rep, isr=m.isr, partition_epoch=m.partition_epoch))
        nx.replicas[r] = rep


# -- the controller ----------------------------------------------------------------------------------------


class Elect(Action):
    """Controller leader election (PartitionChangeBuilder.electLeader): clean from the ISR (KIP-966:
    then the ELR, then the last known leader), else unclean if enabled; an active broker only
    (isAcceptableLeader: ClusterControlManager.isActive)."""

    name = "elect"

    def guard(cfg, s, st):
        c, target = s.controller, st.replica
        if target != -1:  # preferred replica election / controlled shutdown: move leadership
            if target not in c.isr:
                return f"broker {target} is not in the controller's ISR"
            if target in c.fenced:
                return f"broker {target} is fenced"
            if target in c.awaiting_unfence:
                return f"broker {target} awaits unfence"
            if target in c.in_controlled_shutdown:
                return f"broker {target} is in controlled shutdown"
            if target == c.leader:
                return f"broker {target} already leads"
            return None
        if c.leader != -1:
            return f"the controller has a leader ({c.leader})"
        if _elect_choice(cfg, c) is None:
            return "no eligible replica (every ISR member is fenced" + (
                ")" if cfg.unclean_leader_election_enable else " and unclean election is disabled)"
            )
        return None

    def effect(nx, st):
        c = nx.controller
        leader, isr, elr = (st.replica, c.isr, c.elr) if st.replica != -1 else _elect_choice(nx.cfg, c)
        nx.controller = c._replace(
            leader=leader,
            leader_epoch=c.leader_epoch + 1,
            isr=isr,
            elr=elr,
            partition_epoch=c.partition_epoch + 1,
            last_known_leader=-1,
        )
        nx.send_leader_and_isr()


class Fence(Action):
    """Broker session expiry: fence, drop from the ISR (never the last member before KIP-966),
    resign leadership. A live broker fenced this way is a zombie: it keeps acting on its last
    LeaderAndIsr."""

    name = "fence"

    def guard(cfg, s, st):
        if st.replica in s.controller.fenced:
            return f"broker {st.replica} is already fenced"
        if st.replica in s.controller.awaiting_unfence:  # its registration is fenced: the session's end writes nothing
            return f"broker {st.replica} awaits unfence (its registration is fenced)"
        return None

    def effect(nx, st):
        r = st.replica
        c = nx.controller
        changed = _remove_broker(nx, r, nx.cfg.rules.isr_after_fence(c.isr, r), ())
        nx.controller = nx.controller._replace(fenced=tuple(sorted(c.fenced + (r,))))
        _end_controlled_shutdown(nx, r)  # KRaft fences a broker in controlled shutdown at SHUTDOWN_NOW
        if changed:
            nx.send_leader_and_isr()


def _remove_broker(nx: NextState, r: int, isr: tuple, unclean: tuple) -> bool:
    """A partition change taking ``r`` out of leadership and the ISR (now ``isr``): leader -1 and a
    new leader epoch if it led, the ELR by KIP-966's rule; True if anything changed."""
    c = nx.controller
    rules = nx.cfg.rules
    leads = c.leader == r
    elr = rules.elr_after(c, isr, nx.cfg.min_insync_replicas, unclean)
    if not leads and isr == c.isr and elr == c.elr:
        return False
    nx.controller = c._replace(
        leader=-1 if leads else c.leader,
        leader_epoch=c.leader_epoch + int(leads),
        isr=isr,
        elr=elr,
        partition_epoch=c.partition_epoch + 1,
        last_known_leader=rules.last_known_leader(r) if leads else c.last_known_leader,
    )
    return True


def _end_controlled_shutdown(nx: NextState, r: int) -> None:
    """``r``'s controlled shutdown, if any, ends (kraft_controlled_shutdown): its fence or registration."""
    nx.controller = nx.controller._replace(in_controlled_shutdown=_without(nx.controller.in_controlled_shutdown, r))


class ControlledShutdown(Action):
    """A broker's controlled shutdown (kraft_controlled_shutdown): its heartbeat asks to shut down
    (wantShutDown) and BrokerHeartbeatManager.calculateNextBrokerState moves it from UNFENCED to
    CONTROLLED_SHUTDOWN; ReplicationControlManager.handleBrokerInControlledShutdown writes
    BrokerRegistrationChangeRecord (inControlledShutdown) and, by generateLeaderAndIsrUpdates with it to
    remove, one partition change: out of the ISR as a fence takes it, and where it led the first active
    member left leads (PartitionChangeBuilder.electLeader, clean), in one new leader epoch. It is not
    active until its fence (SHUTDOWN_NOW) or registration."""

    name = "controlled_shutdown"

    def guard(cfg, s, st):
        r = st.replica
        if not cfg.kraft_controlled_shutdown:
            return "kraft_controlled_shutdown is off: a controlled shutdown is elect with a target, then fence"
        reason = _not_serving(s, r)
        if reason:
            return reason
        if s.replicas[r].broker_epoch < 0:
            return f"broker {r} is not registered"
        if r in s.controller.fenced:
            return f"broker {r} is fenced"
        if r in s.controller.awaiting_unfence:
            return f"broker {r} awaits unfence"
        if r in s.controller.in_controlled_shutdown:
            return f"broker {r} is in controlled shutdown already"
        return None

    def effect(nx, st):
        r = st.replica
        c = nx.controller = nx.controller._replace(
            in_controlled_shutdown=tuple(sorted(nx.controller.in_controlled_shutdown + (r,)))
        )
        if not _remove_broker(nx, r, nx.cfg.rules.isr_after_fence(c.isr, r), ()):
            return
        choice = _clean_choice(nx.cfg, nx.controller) if c.leader == r else None
        if choice is not None:  # the same partition change elects: one leader epoch, one partition epoch
            leader, isr, elr = choice
            nx.controller = nx.controller._replace(leader=leader, isr=isr, elr=elr, last_known_leader=-1)
        nx.send_leader_and_isr()


class Rejoin(Action):
    """A live fenced broker re-registers with a new broker epoch: unfenced, told the current state."""

    name = "rejoin"

    def guard(cfg, s, st):
        r = st.replica
        if not s.replicas[r].alive:
            return f"broker {r} is down"
        if r not in s.controller.fenced:
            return f"broker {r} is not fenced"
        if s.replicas[r].unregistered:
            return f"broker {r} is not registered yet (it registers by register)"
        return None

    def effect(nx, st):
        _register(nx, st.replica, unclean=False)


class Unfence(Action):
    """The controller unfences a broker whose heartbeat shows it caught up (unfence_at_heartbeat):
    BrokerHeartbeatManager.calculateNextBrokerState goes FENCED -> UNFENCED once the heartbeat's
    currentMetadataOffset reached the broker's registerBrokerRecordOffset, and
    ReplicationControlManager.handleBrokerUnfenced writes UnfenceBrokerRecord. The broker keeps its broker
    epoch (only a registration gives a new one, KIP-903); one that was fenced (a zombie whose heartbeats
    reach the controller again) is sent the current state, as a registration is. No partition change:
    handleBrokerUnfenced's election of a leaderless partition is ``elect``."""

    name = "unfence"

    def guard(cfg, s, st):
        r = st.replica
        rep, c = s.replicas[r], s.controller
        if not cfg.unfence_at_heartbeat:
            return "unfence_at_heartbeat is off: a registration unfences at once"
        if not rep.alive:
            return f"broker {r} is down"
        if rep.broker_epoch < 0:
            return f"broker {r} is not registered"
        if rep.unregistered:
            return f"broker {r} has not caught up with its registration"
        if not registration_fenced(c, r):  # in controlled shutdown or not
            return f"broker {r} is neither fenced nor awaiting unfence"
        return None

    def effect(nx, st):
        r = st.replica
        c = nx.controller
        nx.controller = c._replace(fenced=_without(c.fenced, r), awaiting_unfence=_without(c.awaiting_unfence, r))
        if r in c.fenced:  # sent nothing while fenced (one awaiting unfence was sent every change)
            _send_current_state(nx, r)


def _without(brokers: tuple, r: int) -> tuple:
    return tuple(b for b in brokers if b != r)


def _send_current_state(nx: NextState, r: int) -> None:
    """The controller sends broker ``r`` a LeaderAndIsr of its current partition state (no epoch bump)."""
    c = nx.controller
    nx.send("leader_and_isr", r, LeaderAndIsr(c.leader, c.leader_epoch, c.isr, c.partition_epoch))


def _register(nx: NextState, r: int, unclean: bool) -> None:
    """Broker registration (docs/steps.md, "Controller state"): a new broker epoch (KIP-903); after
    an unclean shutdown the controller first takes ``r`` out of ISR, ELR and leadership
    (KIP-966, ReplicationControlManager.handleBrokerUncleanShutdown); then it unfences ``r`` and
    sends it its current partition state (to a started broker, KRaft: marked ``registration``, see
    ``addressed``: it serves once it applied one). With unfence_at_heartbeat ``r`` awaits unfence
    instead: ClusterControlManager.registerBroker writes RegisterBrokerRecord with fenced set."""
    c = nx.controller
    epoch = nx.cfg.rules.next_broker_epoch(c.broker_epochs[r])
    nx.controller = c._replace(broker_epochs=c.broker_epochs[:r] + (epoch,) + c.broker_epochs[r + 1 :])
    nx.replicas[r] = updated(nx.replicas[r], broker_epoch=epoch, unclean_shutdown=False)
    if unclean and _remove_broker(nx, r, tuple(i for i in c.isr if i != r), (r,)):
        nx.send_leader_and_isr(skip=r)
    _end_controlled_shutdown(nx, r)  # a new incarnation's RegisterBrokerRecord is not in controlled shutdown
    c = nx.controller
    awaiting = tuple(sorted(set(c.awaiting_unfence) | {r})) if nx.cfg.unfence_at_heartbeat else ()
    nx.controller = c._replace(fenced=_without(c.fenced, r), awaiting_unfence=awaiting)
    _send_current_state(nx, r)


# -- brokers: failures, restarts, disks, fsync ---------------------------------------------------------------------


class Crash(Action):
    """Broker failure: clean shutdown (flush), process crash (page cache kept) or power loss, which
    keeps the first ``survive`` unflushed batches; a ``torn`` next batch is cut by log recovery.
    Messages to the broker are lost; what it sent stays in flight, its requests orphaned (handled
    by their destination, never answered: the answer goes to a closed connection)."""

    name = "crash"

    def guard(cfg, s, st):
        rep = s.replicas[st.replica]
        if not rep.alive:
            return f"broker {st.replica} is already down"
        if st.survive or st.torn:
            unflushed = len(batch_ends(rep.log, rep.durable))
            if st.survive > unflushed or (st.torn and st.survive == unflushed):
                return f"broker {st.replica} has only {unflushed} unflushed batch(es)"
        return None

    def effect(nx, st):
        r, kind = st.replica, st.arg
        rep = nx.replicas[r]
        if kind == "clean":
            rep = updated(rep, durable=len(rep.log), hw_checkpoint=rep.hw)
        elif st.survive:  # write-back is sequential: the first unflushed batches reached the disk
            rep = updated(rep, durable=batch_ends(rep.log, rep.durable)[st.survive - 1])
        lost = kind == "power"
        if kind != "clean" and rep.bad_batch >= 0:
            # no clean shutdown file: the restart's log recovery re-validates the segment and cuts at the damage
            rep, lost = updated(rep, durable=min(rep.durable, rep.bad_batch)), True
        nx.replicas[r] = updated(
            rep,
            alive=False,
            pending_produces=(),
            power_lost=lost,
            # an unclean shutdown not yet told to the controller stays one: the broker never registered
            unclean_shutdown=rep.unclean_shutdown
            or nx.cfg.rules.unclean_shutdown(kind, nx.cfg.unclean_shutdown_detection, rep.broker_epoch >= 0),
            unregistered=False,
            held_reads=(),  # its handler threads die with it: nothing held is answered
            stale_fetcher=(),  # and its fetcher threads
        )
        # what reached r is gone; what r sent stays on the wire, its requests orphaned
        for field in ("leader_and_isr", "alter_partition_responses", "fetch_responses"):
            if getattr(nx.src, field)[r]:
                nx.queues(field)[r] = ()
        for field in ("alter_partition", "fetch_requests"):
            if getattr(nx.src, field)[r]:
                nx.queues(field)[r] = tuple(m._replace(orphan=True) for m in nx.queues(field)[r])
        requests = nx.queues("fetch_requests")
        for f in range(nx.cfg.replicas):
            if any(m.leader == r for m in requests[f]):
                requests[f] = tuple(m for m in requests[f] if m.leader != r)
        for d, lead in enumerate(nx.replicas):  # a read of r's request: updated from, never answered
            if any(h.follower == r and not h.orphan for h in lead.held_reads):
                nx.replicas[d] = updated(
                    lead, held_reads=tuple(h._replace(orphan=True) if h.follower == r else h for h in lead.held_reads)
                )


class Restart(Action):
    """Broker restart: log recovery (power loss cuts to the fsynced prefix), HW from checkpoint.
    Before kip-903 the broker registers at once and gets the controller's current LeaderAndIsr; a
    fast bounce (the controller never fenced it) keeps its ISR membership and any leadership. From
    kip-903 on (KRaft's BrokerServer.startup) it starts on the replayed metadata log: it applies the
    controller's current partition state, as leader too, and stays unregistered (broker epoch -1)
    until ``register``."""

    name = "restart"

    def guard(cfg, s, st):
        return f"broker {st.replica} is alive" if s.replicas[st.replica].alive else None

    def effect(nx, st):
        r = st.replica
        rep = nx.replicas[r]
        n = nx.cfg.replicas
        log = rep.log[: rep.durable] if rep.power_lost else rep.log
        started = nx.cfg.rules.start_before_registration
        recovered = Replica(
            True,
            log,
            min(rep.durable, len(log)),
            min(rep.hw_checkpoint, len(log)),
            rep.hw_checkpoint,
            -1,
            -1,
            (),
            -1,
            -1,
            (-1,) * n,
            (0,) * n,
            None,
            (),
            -1,
            False,
            -1 if started else rep.broker_epoch,
            (-1,) * n,
            (),
            rep.unclean_shutdown and started,  # told to the controller by its registration
            rep.bad_batch if rep.bad_batch < len(log) else -1,  # a clean restart skips recovery
            started,
        )
        nx.replicas[r] = recovered
        if not started:
            _register(nx, r, unclean=rep.unclean_shutdown)
            _replayed_registrations(nx, r)  # the image its registration's answer brought
            return
        _replayed_registrations(nx, r)
        c = nx.controller  # the metadata log replayed: the controller's current state, applied
        nx.replicas[r] = _apply_partition_state(
            nx, r, nx.replicas[r], LeaderAndIsr(c.leader, c.leader_epoch, c.isr, c.partition_epoch)
        )


def _replayed_registrations(nx: NextState, r: int) -> None:
    """A restarted broker's metadata cache (metadata_cache): the registrations of the metadata log it
    replayed, the controller's current ones (kept otherwise: () without the switch)."""
    if nx.cfg.metadata_cache:
        nx.replicas[r] = updated(nx.replicas[r], cached_broker_epochs=alive_broker_epochs(nx.controller, nx.replicas))


class Register(Action):
    """The controller accepts a started broker's registration (ClusterControlManager.registerBroker,
    kip-903 on): only once its old session ended, as it refuses a new incarnation while that lives
    (DUPLICATE_BROKER_REGISTRATION); the step says it expired, and a broker the controller did not
    fence yet is taken out by the registration's own records (handleBrokerShutdown). A new broker
    epoch, KIP-966's unclean shutdown handling,
    unfenced, a LeaderAndIsr of the current state; the broker serves once it applied that one:
    BrokerServer enables request processing only after lifecycleManager.initialCatchUpFuture, once
    it replayed the metadata log up to its registration."""

    name = "register"

    def guard(cfg, s, st):
        r = st.replica
        rep = s.replicas[r]
        if not rep.alive:
            return f"broker {r} is down"
        if rep.broker_epoch >= 0:
            return f"broker {r} is registered"
        return None

    def effect(nx, st):
        r = st.replica
        unclean = nx.replicas[r].unclean_shutdown
        c = nx.controller
        if r not in c.fenced and not unclean:
            # its session expired before the controller fenced it: the registration's own records take
            # it out first, as a fence would (ClusterControlManager.registerBroker: addRecordsForShutdown)
            if _remove_broker(nx, r, nx.cfg.rules.isr_after_fence(c.isr, r), ()):
                nx.send_leader_and_isr(skip=r)
        _register(nx, r, unclean=unclean)


class LoseDisk(Action):
    """A down broker's log directory replaced by an empty one (KAFKA-14139): log and checkpoints gone."""

    name = "lose_disk"

    def guard(cfg, s, st):
        return f"broker {st.replica} is alive" if s.replicas[st.replica].alive else None

    def effect(nx, st):
        nx.replicas[st.replica] = updated(
            nx.replicas[st.replica],
            log=(),
            durable=0,
            hw=0,
            hw_checkpoint=0,
            bad_batch=-1,
            power_lost=True,
            unclean_shutdown=nx.cfg.rules.unclean_shutdown("lost disk", nx.cfg.unclean_shutdown_detection),
        )


def _last_flushed_batch(rep: Replica) -> int:
    """The base offset of the last durable batch, where the corruption steps damage the disk."""
    return rep.log[rep.durable - 1].base


class Corrupt(Action):
    """A flushed batch damaged at rest (bit rot, a misdirected write): LogSegment.recover finds its
    bad CRC after the unclean shutdown and truncates there, so it is no longer durable."""

    name = "corrupt"

    def guard(cfg, s, st):
        rep = s.replicas[st.replica]
        if rep.alive:
            return f"broker {st.replica} is alive"
        if not rep.power_lost:
            return f"broker {st.replica} did not lose power (its restart would not re-validate the log)"
        if rep.durable == 0:
            return f"broker {st.replica} has no flushed batch"
        return None

    def effect(nx, st):
        rep = nx.replicas[st.replica]
        nx.replicas[st.replica] = updated(rep, durable=_last_flushed_batch(rep))


class FailDisk(Action):
    """An I/O error of the log directory (EIO, ENOSPC): LogDirFailureChannel takes it offline
    (KIP-112); with no log directory left the broker halts (LogManager.handleLogDirFailure) and the
    controller takes it out of the ISR and leadership, as for a fence. A failed fsync drops the
    dirty pages: what was not durable is gone, as in a power loss that wrote nothing back."""

    name = "fail_disk"

    def guard(cfg, s, st):
        rep = s.replicas[st.replica]
        if not rep.alive:
            return f"broker {st.replica} is down"
        op = st.arg.split(":")[0]
        if op == "fsync" and rep.durable == len(rep.log):
            return f"broker {st.replica} has nothing unflushed to fsync"
        if op == "read" and not rep.log:
            return f"broker {st.replica} has nothing to read"
        return None

    def effect(nx, st):
        r = st.replica
        Crash.effect(nx, Step("crash", r, "power" if st.arg.startswith("fsync") else "process"))
        if not registration_fenced(nx.controller, r):  # as fence: a registration awaiting unfence is fenced already
            Fence.effect(nx, Step("fence", r))


class CorruptLive(Action):
    """A flushed batch damaged at rest under a live broker, found by the next read of it: Kafka serves
    the file's bytes unchecked, the follower's appendAsFollower refuses them by CRC and fetches the
    same offset again (AbstractFetcherThread), a consumer's fetch fails (CorruptRecordException).
    A CRC mismatch is no IOException: the log directory stays online."""

    name = "corrupt_live"

    def guard(cfg, s, st):
        rep = s.replicas[st.replica]
        if not rep.alive:
            return f"broker {st.replica} is down"
        if rep.durable == 0:
            return f"broker {st.replica} has no flushed batch"
        if rep.bad_batch >= 0:
            return f"broker {st.replica} already has a damaged batch"
        return None

    def effect(nx, st):
        rep = nx.replicas[st.replica]
        nx.replicas[st.replica] = updated(rep, bad_batch=_last_flushed_batch(rep))


class Flush(Action):
    """Log.flush plus the replication-offset-checkpoint write (fsync)."""

    name = "flush"

    def guard(cfg, s, st):
        rep = s.replicas[st.replica]
        if not rep.alive:
            return f"broker {st.replica} is down"
        if rep.durable == len(rep.log) and rep.hw_checkpoint == rep.hw:
            return f"broker {st.replica} has nothing to flush"
        return None

    def effect(nx, st):
        rep = nx.replicas[st.replica]
        nx.replicas[st.replica] = updated(rep, durable=len(rep.log), hw_checkpoint=rep.hw)


class CheckpointHw(Action):
    """ReplicaManager.checkpointHighWatermarks: the periodic replication-offset-checkpoint write
    (replica.high.watermark.checkpoint.interval.ms), independent of log flushes."""

    name = "checkpoint_hw"

    def guard(cfg, s, st):
        rep = s.replicas[st.replica]
        if not rep.alive:
            return f"broker {st.replica} is down"
        if rep.hw_checkpoint == rep.hw:
            return f"broker {st.replica}'s HW checkpoint is up to date"
        return None

    def effect(nx, st):
        rep = nx.replicas[st.replica]
        nx.replicas[st.replica] = updated(rep, hw_checkpoint=rep.hw)


class Tick(Action):
    """Clock advance: DelayedProduce requests past request.timeout.ms expire, in the order of the
    purgatory's timers (deadline, then the order they were parked in: record id), on any broker."""

    name = "tick"

    def effect(nx, st):
        nx.now += 1
        expired = []
        for r, rep in enumerate(nx.replicas):
            if any(p[2] < nx.now for p in rep.pending_produces):
                expired += [
                    (deadline, record, r, n)
                    for record, _offset, deadline, n in rep.pending_produces
                    if deadline < nx.now
                ]
                nx.replicas[r] = updated(rep, pending_produces=tuple(p for p in rep.pending_produces if p[2] >= nx.now))
        for _deadline, record, r, n in sorted(expired):
            nx.produce_out(r, record, n, -1, "REQUEST_TIMED_OUT")


class Drop(Action):
    """Network loss of one in-flight message; a lost AlterPartition or response of the leader's
    current leadership makes it resend its pending change (AlterPartitionManager retries until it
    gets an answer; one of an earlier leadership is no longer the pending change's, nor is one of a
    proposal forgotten since: docs/steps.md says what that leaves out)."""

    name = "drop"

    def guard(cfg, s, st):
        if len(getattr(s, MESSAGE_KINDS[st.arg])[st.replica]) <= st.index:
            return f"no {st.arg} #{st.index} of replica {st.replica} in flight"
        return None

    def effect(nx, st):
        lost = nx.pop(MESSAGE_KINDS[st.arg], st.replica, st.index)
        orphan = st.arg == "alter_partition" and lost.orphan  # a response is never one
        if st.arg in ("alter_partition", "alter_partition_response") and not orphan:
            rep = nx.replicas[st.replica]
            sent_in = lost.leader_epoch if st.arg == "alter_partition" else lost.request_leader_epoch
            if rep.pending_isr is not None and sent_in == rep.leader_epoch:
                nx.replicas[st.replica] = _propose_isr(nx, st.replica, rep, rep.pending_isr, rep.pending_epochs)


def _by_name() -> dict[str, type[Action]]:
    def concrete(cls):
        for sub in cls.__subclasses__():
            yield from ([sub] if sub.name else []) + list(concrete(sub))

    actions = {a.name: a for a in concrete(Action)}
    missing, unknown = sorted(set(STEPS) - set(actions)), sorted(set(actions) - set(STEPS))
    if missing or unknown:  # the registry and the semantics must name the same steps
        raise ImportError(f"model actions out of step with the alphabet: missing {missing}, unknown {unknown}")
    return {name: actions[name] for name in STEPS}


ACTIONS: dict[str, type[Action]] = _by_name()
