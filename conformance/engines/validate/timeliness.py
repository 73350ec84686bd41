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
  fetch offset is the follower's LEO at its ``send_fetch`` (tied by ``corr``). A leader with an ISR
  change in flight cannot shrink; its next chance is one interval after the answer.
* ``DelayedFetchExpiry``: a follower fetch the leader parks (``replica.fetch.wait.max.ms`` set, no
  records past the fetch offset, no divergence) is completed, logged as its ``handle_fetch`` again,
  within the wait: ``DelayedFetch`` expires through the purgatory's timer, ``onExpiration``. Unless
  the leader stopped (a crash or a disk failure, or the run ended) before the deadline.

Bounds are in the run's own time: exact in the simulation (``slack_ms`` 0). Real processes are
late by scheduling: ``slack_ms`` is added to every bound, and a node that logged nothing for more
than ``stall_ms`` (stopped, paused, starved of CPU) has every deadline it owes moved by that gap,
as its timers were late by as much.

``check(trace, slack_ms, stall_ms)`` gives the ``Late`` findings, the first per leader, epoch and
follower (or fetch); a log of many partitions is checked per partition (``partition_traces``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from isrcheck.model.alphabet import HANDLE_FETCH, LOSE_DISK, RESTART, SEND_FETCH

from .events import HALTS, Event, Trace, partition_traces, read_trace

PROPERTIES = {
    "IsrExpiry": "a follower not caught up within replica.lag.time.max.ms leaves the ISR within one lag check "
    "interval more (Partition.maybeShrinkIsr, ReplicaManager's isr-expiration task)",
    "DelayedFetchExpiry": "a parked follower fetch is answered within replica.fetch.wait.max.ms "
    "(DelayedFetch.onExpiration, the purgatory's expiration timer)",
}
# real processes (a soak of isrcheck's own cluster): how late a timer may run on a loaded machine
# (a third of the soak's replica.lag.time.max.ms of 3 s), and how long a node may be silent before
# it counts as stopped or starved (a paused broker), so that what it owes waits as long as it did
REAL_SLACK_MS = 1000
REAL_STALL_MS = 500
# variants whose new followers first ask OffsetsForLeaderEpoch, logged as send_fetch and handle_fetch
# like a Fetch (docs/steps.md); such a question is never parked, so no fetch of theirs is taken as parked
_EPOCH_QUESTIONS = ("kip-101", "kip-279")
_STOPS = HALTS + (RESTART, "register", LOSE_DISK)  # a node's incarnation ends or starts anew


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
    caught_up: dict = field(default_factory=dict)  # follower -> last caught-up time
    fetched: dict = field(default_factory=dict)  # follower -> (time, leader LEO) of its last fetch
    chance: int = 0  # the earliest time a shrink could be proposed from
    stalled: int = 0  # the node's stalls (ms) when ``chance`` was set


class _Clock:
    """The stalls of each node: gaps longer than ``stall_ms`` between its events."""

    def __init__(self, stall_ms: int | None) -> None:
        self.stall_ms, self.last, self.stalled = stall_ms, {}, {}

    def see(self, e: Event) -> None:
        last = self.last.get(e.node)
        if self.stall_ms is not None and last is not None and e.t - last > self.stall_ms:
            self.stalled[e.node] = self.stalled.get(e.node, 0) + e.t - last
        self.last[e.node] = e.t

    def of(self, node: int) -> int:
        return self.stalled.get(node, 0)


def check_path(path: str, slack_ms: int = 0, stall_ms: int | None = None) -> list[Late]:
    """``check`` of the event log at ``path`` (a directory of per-node logs, or one file)."""
    return check(read_trace(path), slack_ms, stall_ms)


def lines(late: list[Late]) -> list[str]:
    """What a person reads: each missed deadline, with its property's bound and mechanism."""
    return [f"late: {x.describe()}; {x.property}: {PROPERTIES[x.property]}" for x in late]


def check(trace: Trace, slack_ms: int = 0, stall_ms: int | None = None) -> list[Late]:
    """Every deadline the run missed, in the order found."""
    return [late for _tp, t in partition_traces(trace) for late in _check(t, slack_ms, stall_ms)]


def _check(trace: Trace, slack_ms: int, stall_ms: int | None) -> list[Late]:
    settings = trace.settings
    lag = settings["replica_lag_time_max_ms"]
    interval = settings.get("replica_lag_check_interval_ms") or max(1, lag // 2)
    wait = settings.get("replica_fetch_wait_max_ms", 0)
    parks = wait if trace.protocol not in _EPOCH_QUESTIONS else 0  # what is taken as parked
    clock = _Clock(stall_ms)
    sends: dict[tuple, Event] = {}  # (follower, corr) -> its send_fetch
    leading: dict[int, _Leadership] = {}
    parked: dict[tuple, tuple] = {}  # (leader, follower, corr) -> (first handle_fetch, stalls then)
    late: list[Late] = []
    said: set = set()

    def missed(prop: str, key: tuple, e: Event, why: str) -> None:
        if (prop, key) not in said:  # the first finding per leader, epoch and follower (or fetch)
            said.add((prop, key))
            late.append(Late(prop, e, why))

    for e in trace.events:
        clock.see(e)
        _expire_parked(parked, e, wait, slack_ms, clock, missed)
        if e.step in _STOPS:
            leading.pop(e.node, None)
            for key in [k for k in parked if k[0] == e.node]:
                del parked[key]
            continue
        if e.step == SEND_FETCH and e.corr is not None:
            sends[(e.node, e.corr)] = e
            continue
        state = e.state
        if state.get("leader") != e.node or e.node >= 1000:
            leading.pop(e.node, None)
            continue
        lead = leading.get(e.node)
        if lead is None or lead.epoch != state["epoch"]:  # lastCaughtUpTime starts at the leadership
            lead = leading[e.node] = _Leadership(state["epoch"], chance=e.t, stalled=clock.of(e.node))
        if e.step == HANDLE_FETCH and e.msg is not None:
            _fetched(lead, e, sends.get(e.msg), wait, parks, parked, clock)
        if state.get("pending") is not None:
            lead.chance, lead.stalled = e.t, clock.of(e.node)  # the next chance: after the answer
            continue
        moved = clock.of(e.node) - lead.stalled
        for f in state.get("isr", ()):
            if f == e.node:
                continue
            since = lead.caught_up.get(f, lead.chance)
            deadline = max(since + lag, lead.chance) + interval + slack_ms + moved
            if e.t > deadline:
                missed(
                    "IsrExpiry",
                    (e.node, lead.epoch, f),
                    e,
                    f"broker {f} still in the ISR of leader {e.node} (epoch {lead.epoch}) at {e.t} ms, "
                    f"last caught up at {since} ms: out by {deadline} ms (lag {lag} ms, check every "
                    f"{interval} ms" + (f", {slack_ms} ms slack" if slack_ms else "") + ")",
                )
    return late


def _fetched(
    lead: _Leadership, e: Event, send: Event | None, wait: int, parks: int, parked: dict, clock: _Clock
) -> None:
    """A follower fetch the leader handled: the follower's caught-up time by Kafka's rule, and
    whether it is parked (``parks``: fetches are taken as parked; a second ``handle_fetch`` of
    one is its completion)."""
    f = e.msg[0]
    key = (e.node, f, e.msg[1])
    completed = parked.pop(key, None) is not None  # read again: the follower's state moves as at any read
    if send is None:
        return
    offset, leo = send.state.get("leo"), e.state["leo"]
    if offset is None or send.state.get("epoch") != e.state["epoch"]:
        return  # fenced, or not read at all: Kafka keeps the follower's state
    before = lead.fetched.get(f)
    if offset >= leo:
        lead.caught_up[f] = e.t
    elif wait and before is not None and offset >= before[1]:
        lead.caught_up[f] = max(lead.caught_up.get(f, lead.chance), before[0])
    lead.fetched[f] = (e.t, leo)
    if parks and not completed and offset == leo and send.state.get("last_epoch") == e.state.get("last_epoch"):
        parked[key] = (e, clock.of(e.node))  # nothing to send: DelayedFetch until records or expiry


def _expire_parked(parked: dict, e: Event, wait: int, slack_ms: int, clock: _Clock, missed) -> None:
    """Parked fetches of ``e``'s node whose wait ran out before ``e`` without a completion: judged
    at the leader's own events, as a paused leader owes nothing until it runs again."""
    for key, (first, stalled) in list(parked.items()):
        if key[0] != e.node:
            continue
        deadline = first.t + wait + slack_ms + clock.of(key[0]) - stalled
        if e.t > deadline:
            del parked[key]
            missed(
                "DelayedFetchExpiry",
                key,
                first,
                f"broker {key[1]}'s fetch (correlation id {key[2]}) parked by leader {key[0]} at {first.t} ms "
                f"is still unanswered at {e.t} ms: answered by {deadline} ms (replica.fetch.wait.max.ms "
                f"{wait} ms" + (f", {slack_ms} ms slack" if slack_ms else "") + ")",
            )


__all__ = ["PROPERTIES", "REAL_SLACK_MS", "REAL_STALL_MS", "Late", "check", "check_path", "lines"]
