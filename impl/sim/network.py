"""SimNetwork: a simulated network of per-link message queues, driven by hand or by a seeded RNG.

Every frame sent becomes an ``Envelope`` filed under a tag the owner chooses (``classify``), so a
test can address "the oldest fetch request of follower 2". In manual mode nothing moves by itself:
``deliver`` and ``drop`` move one chosen envelope, and frames tagged ``INSTANT`` (client and
registration traffic) are handed over by ``deliver_instant``. In auto mode each frame gets a
delivery time from the seeded RNG: a delay, a chance of loss or duplication, and per-link FIFO
order unless a reorder is drawn. Partitions block links in both modes.

A lost frame is reported to the node that issued the request (``Endpoint.connection_lost``), the
way a broken connection fails a ``NetworkClient``'s in-flight requests; in auto mode only after
``disconnect_detect_ms``, in manual mode at once. A node that goes down loses what was sent to it;
what it sent stays on the wire, as bytes already written to a TCP connection do: its requests
become orphans, handled by their destination and never answered (docs/steps.md, ``crash``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, Hashable

from ..runtime import Endpoint
from .clock import SimClock

INSTANT = "instant"
_REQUEST_FLAG_BYTE = 0  # first header byte: 0 request, 1 response
_CORRELATION = slice(5, 9)


@dataclass(frozen=True)
class NetworkFaults:
    """Seeded fault rates of auto mode (delays in ms, rates as probabilities per frame)."""

    min_delay_ms: int = 1
    max_delay_ms: int = 5
    drop_rate: float = 0.0
    duplicate_rate: float = 0.0
    reorder_rate: float = 0.0
    disconnect_detect_ms: int = 100


class Envelope:
    """One frame in flight: its send order, endpoints, bytes and tag; ``orphan`` once the process
    that sent this request died (its answer then reaches nobody)."""

    __slots__ = ("seq", "src", "dst", "frame", "tag", "orphan")

    def __init__(self, seq: int, src: int, dst: int, frame: bytes, tag: Hashable) -> None:
        self.seq, self.src, self.dst, self.frame, self.tag = seq, src, dst, frame, tag
        self.orphan = False

    @property
    def is_request(self) -> bool:
        return len(self.frame) >= 9 and self.frame[0] == _REQUEST_FLAG_BYTE


class SimNetwork:
    """Implements ``Transport`` for the simulation."""

    def __init__(
        self,
        clock: SimClock,
        classify: Callable[[int, int, bytes], Hashable],
        rng: random.Random | None = None,
        faults: NetworkFaults | None = None,
        on_deliver: Callable[[Envelope], None] | None = None,
    ) -> None:
        self.clock = clock
        self.classify = classify
        self.auto = faults is not None
        self.faults = faults or NetworkFaults()
        self.rng = rng or random.Random(0)
        self.on_deliver = on_deliver
        self.endpoints: dict[int, Endpoint] = {}
        self.queues: dict[Hashable, list[Envelope]] = {}
        self.instant: list[Envelope] = []
        self.blocked: set[tuple[int, int]] = set()
        self._link_last_due: dict[tuple[int, int], int] = {}
        self._seq = 0
        self.delivered = 0
        self.lost = 0
        self.changes = 0  # bumped when a frame joins or leaves a queue: readers see nothing moved
        self._dead: set[tuple[int, int]] = set()  # (requester, correlation id) of requests whose connection is gone
        # requests taken off the wire by a handling still in progress (``hold``): their sender's death
        # still orphans them, their destination's ends them
        self.held: list[Envelope] = []

    # -- Transport --------------------------------------------------------------------------
    def register(self, node_id: int, endpoint: Endpoint) -> None:
        self.endpoints[node_id] = endpoint

    def unregister(self, node_id: int) -> None:
        """The node went down: every frame to it is discarded; the replication messages it sent stay
        queued, its requests as orphans (client and registration traffic, ``INSTANT``, goes either
        way: registration is no message of docs/steps.md, but part of ``restart``)."""
        self.endpoints.pop(node_id, None)
        for tag in sorted(self.queues, key=repr):
            for env in [e for e in self.queues[tag] if node_id in (e.src, e.dst)]:
                if env.dst == node_id or tag == INSTANT:
                    self._remove(env)
                    self._lost(env)
                elif env.is_request:
                    env.orphan = True
                    self.changes += 1
        for env in [e for e in self.instant if node_id in (e.src, e.dst)]:
            self.instant.remove(env)
            self._lost(env)
        for env in [e for e in self.held if node_id in (e.src, e.dst)]:
            if env.dst == node_id:  # the handling died with its process: no answer will come
                self.held.remove(env)
                self._lost(env)
            else:
                env.orphan = True

    def send(self, src: int, dst: int, frame: bytes) -> None:
        if (
            self._dead
            and len(frame) >= 9
            and frame[0] != _REQUEST_FLAG_BYTE
            and (dst, int.from_bytes(frame[_CORRELATION], "big")) in self._dead
        ):
            self._dead.discard((dst, int.from_bytes(frame[_CORRELATION], "big")))
            self.lost += 1  # the answer to a request of a connection that is gone: nobody hears it
            return
        self._seq += 1
        env = Envelope(self._seq, src, dst, frame, self.classify(src, dst, frame))
        if dst not in self.endpoints or self._is_blocked(src, dst):
            self._lost(env)
            return
        if not self.auto:
            if env.tag == INSTANT:
                self.instant.append(env)
            else:
                self.queues.setdefault(env.tag, []).append(env)
                self.changes += 1
            return
        self.queues.setdefault(env.tag, []).append(env)
        self.changes += 1
        f, rng = self.faults, self.rng
        if f.drop_rate and rng.random() < f.drop_rate:
            self.clock.schedule(rng.randint(f.min_delay_ms, f.max_delay_ms), lambda: self._drop_if_queued(env))
            return
        self._schedule(env)
        if f.duplicate_rate and rng.random() < f.duplicate_rate:
            self._seq += 1
            copy = Envelope(self._seq, src, dst, frame, env.tag)
            self.queues[env.tag].append(copy)
            self.changes += 1
            self._schedule(copy)

    # -- explicit control -------------------------------------------------------------------
    def queue(self, tag: Hashable) -> list[Envelope]:
        return self.queues.get(tag, [])

    def deliver(self, env: Envelope) -> None:
        """Hand one queued envelope to its destination now."""
        self._remove(env)
        self._hand_over(env)

    def hold(self, env: Envelope) -> None:
        """Take one queued request off the wire for a handling that its destination began and will
        complete later (``release``)."""
        self._remove(env)
        self.held.append(env)
        self.delivered += 1
        if self.on_deliver is not None:
            self.on_deliver(env)

    def release(self, env: Envelope) -> None:
        """The held request's handling completes: its answer reaches nobody if it is an orphan."""
        self.held.remove(env)
        if env.orphan:
            self._dead.add((env.src, int.from_bytes(env.frame[_CORRELATION], "big")))

    def drop(self, env: Envelope) -> None:
        """Lose one queued envelope."""
        self._remove(env)
        self._lost(env)

    def take(self, src: int, dst: int, api_key: int) -> list[Envelope]:
        """The requests of ``api_key`` from ``src`` to ``dst`` in flight, taken off the network (to
        be delivered late: ``deliver_stale``)."""
        taken = [
            e
            for e in self.in_flight()
            if e.src == src and e.dst == dst and e.is_request and (e.frame[1] << 8) | e.frame[2] == api_key
        ]
        for env in taken:
            self._remove(env)
        return taken

    def deliver_stale(self, env: Envelope) -> None:
        """Hand over a request taken off the network whose sender's connection is gone (the process
        that sent it died): its answer, if any, is lost without a word to anyone."""
        env.orphan = True
        self._hand_over(env)

    def deliver_instant(self) -> bool:
        """Deliver the oldest instant frame (manual mode); False if there is none."""
        if not self.instant:
            return False
        self._hand_over(self.instant.pop(0))
        return True

    def partition(self, a: int, b: int) -> None:
        """Block the link between ``a`` and ``b`` both ways; frames already queued on it are lost."""
        self.blocked.add((min(a, b), max(a, b)))
        for tag in sorted(self.queues, key=repr):
            for env in [e for e in self.queues[tag] if {e.src, e.dst} == {a, b}]:
                self.drop(env)

    def heal(self, a: int | None = None, b: int | None = None) -> None:
        """Unblock one link, or every link when called without arguments."""
        if a is None:
            self.blocked.clear()
        else:
            self.blocked.discard((min(a, b), max(a, b)))

    def in_flight(self) -> list[Envelope]:
        return sorted((e for q in self.queues.values() for e in q), key=lambda e: e.seq)

    # -- internals --------------------------------------------------------------------------
    def _is_blocked(self, src: int, dst: int) -> bool:
        return bool(self.blocked) and (min(src, dst), max(src, dst)) in self.blocked

    def _schedule(self, env: Envelope) -> None:
        f, rng = self.faults, self.rng
        due = self.clock.now_ms() + rng.randint(f.min_delay_ms, f.max_delay_ms)
        link = (env.src, env.dst)
        if not (f.reorder_rate and rng.random() < f.reorder_rate):
            due = max(due, self._link_last_due.get(link, 0))  # FIFO per link unless reordered
            self._link_last_due[link] = due
        self.clock.schedule(due - self.clock.now_ms(), lambda: self._deliver_if_queued(env))

    def _deliver_if_queued(self, env: Envelope) -> None:
        if env in self.queues.get(env.tag, ()):
            self.deliver(env)

    def _drop_if_queued(self, env: Envelope) -> None:
        if env in self.queues.get(env.tag, ()):
            self.drop(env)

    def _remove(self, env: Envelope) -> None:
        queue = self.queues[env.tag]
        queue.remove(env)
        self.changes += 1
        if not queue:
            del self.queues[env.tag]

    def _hand_over(self, env: Envelope) -> None:
        endpoint = self.endpoints.get(env.dst)
        if endpoint is None or self._is_blocked(env.src, env.dst):
            self._lost(env)
            return
        self.delivered += 1
        if self.on_deliver is not None:
            self.on_deliver(env)
        if env.orphan:  # its answer goes to a closed connection
            self._dead.add((env.src, int.from_bytes(env.frame[_CORRELATION], "big")))
        endpoint.receive(env.src, env.frame)

    def _lost(self, env: Envelope) -> None:
        """Tell the requester of a lost request or response that no answer will come."""
        self.lost += 1
        frame = env.frame
        if len(frame) < 9:
            return
        is_request = frame[0] == _REQUEST_FLAG_BYTE
        requester, peer = (env.src, env.dst) if is_request else (env.dst, env.src)
        correlation_id = int.from_bytes(frame[_CORRELATION], "big")
        if requester not in self.endpoints:
            return
        if self.auto:
            self.clock.schedule(self.faults.disconnect_detect_ms, lambda: self._notify(requester, peer, correlation_id))
        else:
            self._notify(requester, peer, correlation_id)

    def _notify(self, requester: int, peer: int, correlation_id: int) -> None:
        endpoint = self.endpoints.get(requester)
        if endpoint is not None:
            endpoint.connection_lost(peer, correlation_id)
