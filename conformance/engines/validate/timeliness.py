"""Timeliness of a run that drove itself: what Kafka does by a deadline, checked on the event log's times.

The model lets any step wait forever (a behaviour that never takes it explains every prefix), so a
timer that never fires passes trace validation. These properties are not model steps: each is a
bound on the logged times ``t`` (one clock for the run), with the Kafka mechanism that keeps it:

* ``IsrExpiry``: a follower in its leader's ISR that has not caught up within
  ``replica.lag.time.max.ms`` is proposed out of the ISR (the leader's ISR change in flight) within
  one lag check interval more: ``Partition.maybeShrinkIsr``, run by ``ReplicaManager``'s
  isr-expiration task every ``replica.lag.time.max.ms / 2``. Caught up is Kafka's rule
  (``Replica.updateFetchStateOrThrow``): a fetch at or past the leader's LEO, or, with long polls,
  one that reached the LEO the leader had at the follower's previous fetch (caught up then). The
  fetch offset is the follower's LEO at its ``send_fetch`` (tied by ``corr``), its leader epoch the
  follower's then, or the one a stale fetcher's ``send_fetch`` names (``stale_fetcher``). A leader with an ISR
  change in flight cannot shrink; its next chance is one interval after the answer.
* ``DelayedFetchExpiry``: a follower fetch the leader parks (``replica.fetch.wait.max.ms`` set, no
  records past the fetch offset, no divergence) is completed, logged as its ``handle_fetch`` again,
  within the wait: ``DelayedFetch`` expires through the purgatory's timer, ``onExpiration``. Unless
  the leader stopped (a crash or a disk failure, or the run ended) before the deadline.

* ``DelayedProduceExpiry``: an acks=all batch the leader parks (its ``produce`` names the request's
  timeout) is answered within that timeout: completed once the HW passes it (its leader's state
  shows it), failed when the leader becomes a follower (``Partition.makeFollower``), or expired,
  logged as ``produce_expired`` (``DelayedProduce.onExpiration`` through the purgatory's timer).
* ``LogDirOffline``: a broker whose only log directory went offline (its ``log_dir_offline`` line,
  logged as the directory goes offline) takes no step and runs no timer more until its process is
  gone: ``ReplicaManager.handleLogDirFailure`` stops serving the directory's partitions and
  ``LogManager.handleLogDirFailure`` halts a broker with no log directory left.

Bounds are on the run's own clock; a deadline is missed when the leader is shown to have run its
timers past it and the step is still not logged. What shows it:

* in the simulation every event (``real`` False): timers fire at their exact time, so an event of
  the leader at ``t`` shows that every timer it set for before ``t`` has run;
* on real processes (``real``: a soak of isrcheck's cluster) only a node's ``timers`` lines
  (``impl/real/witness.py``): the event loop runs timers in the order they fall due, so a line for
  ``due`` shows that every timer set for before ``due`` has run, however late the loop was. A
  process starved of CPU, paused or stopped logs no such line, and owes nothing until it runs its
  timers again. No slack is guessed: the implementation sets the timers judged in whole ms from a
  reading taken before the event that starts them (the isr-expiration task at a fixed rate, a
  DelayedFetch's expiry from its read), so each is due by the deadline computed from logged times.

``check(trace, real)`` gives the ``Late`` findings, the first per leader, epoch and follower (or
fetch); a log of many partitions is checked per partition (``partition_traces``).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from isrcheck.model.alphabet import HANDLE_FETCH, LOSE_DISK, PRODUCE, REGISTER, RESTART, SEND_FETCH

from .events import HALTS, LOG_DIR_OFFLINE, PRODUCE_EXPIRED, TIMERS, Event, Trace, partition_traces, read_trace

PROPERTIES = {
    "IsrExpiry": "a follower not caught up within replica.lag.time.max.ms leaves the ISR within one lag check "
    "interval more (Partition.maybeShrinkIsr, ReplicaManager's isr-expiration task)",
    "DelayedFetchExpiry": "a parked follower fetch is answered within replica.fetch.wait.max.ms "
    "(DelayedFetch.onExpiration, the purgatory's expiration timer)",
    "DelayedProduceExpiry": "a parked acks=all produce is answered within its request's timeout "
    "(request.timeout.ms): once the HW passes it, when its leader becomes a follower, or at its expiry "
    "(DelayedProduce.onExpiration, the purgatory's expiration timer)",
    "LogDirOffline": "a broker whose only log directory went offline serves it no more: it halts before it "
    "takes another step or runs another timer (ReplicaManager.handleLogDirFailure, "
    "LogManager.handleLogDirFailure's halt)",
}
# variants whose new followers first ask OffsetsForLeaderEpoch, logged as send_fetch and handle_fetch
# like a Fetch (docs/steps.md); such a question is never parked, so no fetch of theirs is taken as parked
_EPOCH_QUESTIONS = ("kip-101", "kip-279")
_STOPS = HALTS + (RESTART, REGISTER, LOSE_DISK)  # a node's incarnation ends or starts anew
_GONE = HALTS + (RESTART, LOSE_DISK)  # a broker's lines that say its process is gone (or a new one)


@dataclass(frozen=True)
class Late:
    """A deadline missed: the property, the event that shows it, and why."""

    property: str
    event: Event
    why: str

    def describe(self) -> str:
        return f"{self.property} late at {self.event.describe()}: {self.why}"

    def to_json(self) -> dict:
        return {"property": self.property, "where": self.event.where, "t": self.event.t, "why": self.why}


@dataclass
class _Leadership:
    """What a leader's events say of its followers, for one leader epoch."""

    epoch: int
    chance: int  # the earliest time a shrink could be proposed from
    caught_up: dict = field(default_factory=dict)  # follower -> last caught-up time
    fetched: dict = field(default_factory=dict)  # follower -> (time, leader LEO) of its last fetch
    isr: tuple = ()  # the leader's ISR view and its change in flight, as its last event left them
    pending: object = None


def check_path(path: str, real: bool = False) -> list[Late]:
    """``check`` of the event log at ``path`` (a directory of per-node logs, or one file)."""
    return check(read_trace(path), real)


def lines(late: list[Late]) -> list[str]:
    """What a person reads: each missed deadline, with its property's bound and mechanism."""
    return [f"late: {x.describe()}; {x.property}: {PROPERTIES[x.property]}" for x in late]


def check(trace: Trace, real: bool = False) -> list[Late]:
    """Every deadline the run missed, in the order found; ``real``: shown by ``timers`` lines only.
    A finding at a line of no partition (a broker's ``timers``) is said once, not per partition."""
    found = {}
    for _tp, t in partition_traces(trace):
        for late in _check(t, real):
            found.setdefault((late.property, late.event.where, late.why), late)
    return list(found.values())


def _check(trace: Trace, real: bool) -> list[Late]:
    settings = trace.settings
    lag = settings["replica_lag_time_max_ms"]
    interval = settings.get("replica_lag_check_interval_ms") or max(1, lag // 2)
    wait = settings.get("replica_fetch_wait_max_ms", 0)
    parks = wait if trace.protocol not in _EPOCH_QUESTIONS else 0  # what is taken as parked
    sends: dict[tuple, Event] = {}  # (follower, corr) -> its send_fetch
    leading: dict[int, _Leadership] = {}
    parked: dict[tuple, Event] = {}  # (leader, follower, corr) -> its first handle_fetch
    producing: dict[tuple, Event] = {}  # (leader, LEO its batch needs the HW at) -> its parked produce
    late: list[Late] = []
    said: set = set()

    def missed(prop: str, key: tuple, e: Event, why: str) -> None:
        if (prop, key) not in said:  # the first finding per leader, epoch and follower (or fetch)
            said.add((prop, key))
            late.append(Late(prop, e, why))

    def shrunk(node: int, until: int, proof: Event) -> None:
        """``node`` has run every timer it set for before ``until`` (``proof`` shows it): its
        isr-expiration task too."""
        lead = leading.get(node)
        if lead is None or lead.pending is not None:
            return
        for f in lead.isr:
            if f == node:
                continue
            since = lead.caught_up.get(f, lead.chance)
            deadline = max(since + lag, lead.chance) + interval
            if deadline < until:
                missed(
                    "IsrExpiry",
                    (node, lead.epoch, f),
                    proof,
                    f"broker {f} still in the ISR of leader {node} (epoch {lead.epoch}) after its timers "
                    f"due before {until} ms ran, last caught up at {since} ms: out by {deadline} ms "
                    f"(lag {lag} ms, check every {interval} ms)",
                )

    offline: dict[int, Event] = {}  # broker -> its log_dir_offline line, until its process is gone
    for e in heapq.merge(trace.events, trace.marks, key=lambda e: (e.t, e.lc, e.node, e.seq)):
        if e.step == LOG_DIR_OFFLINE:
            offline[e.node] = e
            continue
        if e.node in offline:
            if e.step in _GONE:
                del offline[e.node]
            else:
                failed = offline[e.node]
                did = "ran its timers" if e.step == TIMERS else f"took {e.step}"
                missed(
                    "LogDirOffline",
                    (e.node, failed.seq),
                    e,
                    f"broker {e.node} logged its log directory offline ({failed.fields['error']}) at "
                    f"{failed.t} ms [{failed.where}] and still {did} at {e.t} ms: it halts first",
                )
        if e.step == PRODUCE_EXPIRED:
            producing.pop((e.node, e.fields["leo"]), None)
            continue
        if e.step == TIMERS:
            _expire_parked(parked, e.node, e.fields["due"], e, wait, missed)
            _expire_produces(producing, e.node, e.fields["due"], e, missed)
            shrunk(e.node, e.fields["due"], e)
            continue
        if not real:  # a simulated event at t: what fell due before t ran before it
            _expire_parked(parked, e.node, e.t, e, wait, missed)
            _expire_produces(producing, e.node, e.t, e, missed)
        _produced(e, producing)
        _take(e, sends, leading, parked, wait, parks)
        if not real:
            shrunk(e.node, e.t, e)
    return late


def _take(e: Event, sends: dict, leading: dict, parked: dict, wait: int, parks: int) -> None:
    """What event ``e`` tells of its node's leadership, followers and parked fetches."""
    if e.step in _STOPS:
        leading.pop(e.node, None)
        for key in [k for k in parked if k[0] == e.node]:
            del parked[key]
        return
    if e.step == SEND_FETCH and e.corr is not None:
        sends[(e.node, e.corr)] = e
        return
    # a parked fetch read again is its completion, whoever leads now: a LeaderAndIsr that moved the
    # leadership away completes the leader's parked fetches (DelayedFetch.tryComplete's case A)
    completed = e.step == HANDLE_FETCH and e.msg is not None and parked.pop((e.node, *e.msg), None) is not None
    state = e.state
    if state.get("leader") != e.node or e.node >= 1000:
        leading.pop(e.node, None)
        return
    lead = leading.get(e.node)
    if lead is None or lead.epoch != state["epoch"]:  # lastCaughtUpTime starts at the leadership
        lead = leading[e.node] = _Leadership(state["epoch"], chance=e.t)
    if e.step == HANDLE_FETCH and e.msg is not None:
        _fetched(lead, e, sends.get(e.msg), wait, parks, parked, completed)
    pending = state.get("pending")
    if pending is not None or lead.pending is not None:  # in flight, or just answered: the next
        lead.chance = e.t  # chance to shrink is the isr-expiration task's first run after the answer
    lead.isr, lead.pending = tuple(state.get("isr", ())), pending


def _produced(e: Event, producing: dict) -> None:
    """What event ``e`` tells of its node's parked acks=all produces: one more (a ``produce`` with
    its request's ``timeout``), or those answered (the HW passed them; the node stopped leading,
    ``Partition.makeFollower`` fails them; it stopped)."""
    state = e.state
    leads = e.step not in _STOPS and state.get("leader") == e.node and e.node < 1000
    if leads and e.step == PRODUCE and "timeout" in e.fields:
        producing[(e.node, state["leo"])] = e
    mine = [key for key in producing if key[0] == e.node]
    if mine and (not leads or "hw" not in state):
        for key in mine:
            del producing[key]
    elif mine:
        for key in mine:
            if state["hw"] >= key[1]:
                del producing[key]


def _expire_produces(producing: dict, node: int, until: int, proof: Event, missed) -> None:
    """Parked produces of ``node`` whose expiry (due just past ``timeout`` after the append) is
    shown to have been run without an answer: ``node`` ran every timer due before ``until``."""
    for key, produce in list(producing.items()):
        if key[0] != node:
            continue
        deadline = produce.t + produce.fields["timeout"] + 1  # it expires once now > append + timeout
        if deadline < until:
            del producing[key]
            missed(
                "DelayedProduceExpiry",
                key,
                produce,
                f"the acks=all batch leader {node} appended at {produce.t} ms (up to LEO {key[1]}) is still "
                f"unanswered after the leader's timers due before {until} ms ran ({proof.describe()}): "
                f"answered by {deadline} ms (the request's timeout {produce.fields['timeout']} ms)",
            )


def _fetched(
    lead: _Leadership, e: Event, send: Event | None, wait: int, parks: int, parked: dict, completed: bool
) -> None:
    """A follower fetch the leader handled: the follower's caught-up time by Kafka's rule (a
    ``completed`` parked fetch, read again, moves it as any read), and whether it is parked
    (``parks``: fetches are taken as parked)."""
    f = e.msg[0]
    key = (e.node, f, e.msg[1])
    if send is None:
        return
    offset, leo = send.state.get("leo"), e.state["leo"]
    # the leader epoch the request carried: a stale fetcher's own (split_become_follower), else the follower's
    epoch = send.fields["stale_fetcher"][1] if "stale_fetcher" in send.fields else send.state.get("epoch")
    if offset is None or epoch != e.state["epoch"]:
        return  # fenced, or not read at all: Kafka keeps the follower's state
    before = lead.fetched.get(f)
    if offset >= leo:
        lead.caught_up[f] = e.t
    elif wait and before is not None and offset >= before[1]:
        lead.caught_up[f] = max(lead.caught_up.get(f, lead.chance), before[0])
    lead.fetched[f] = (e.t, leo)
    if parks and not completed and offset == leo and send.state.get("last_epoch") == e.state.get("last_epoch"):
        parked[key] = e  # nothing to send: DelayedFetch until records or expiry


def _expire_parked(parked: dict, node: int, until: int, proof: Event, wait: int, missed) -> None:
    """Parked fetches of ``node`` whose expiry timer (due ``wait`` after the read) is shown to have
    been run without their completion: ``node`` ran every timer due before ``until``."""
    for key, first in list(parked.items()):
        if key[0] != node:
            continue
        deadline = first.t + wait
        if deadline < until:
            del parked[key]
            missed(
                "DelayedFetchExpiry",
                key,
                first,
                f"broker {key[1]}'s fetch (correlation id {key[2]}) parked by leader {node} at {first.t} ms "
                f"is still unanswered after the leader's timers due before {until} ms ran "
                f"({proof.describe()}): answered by {deadline} ms (replica.fetch.wait.max.ms {wait} ms)",
            )


__all__ = ["PROPERTIES", "Late", "check", "check_path", "lines"]
