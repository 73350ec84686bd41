"""AsyncioScheduler and TcpTransport: ``Scheduler`` and ``Transport`` for real time and real sockets.

Each registered node listens on its own localhost port; frames travel over one TCP connection per
(sender, receiver), each prefixed by its length, the sender's node id and the sender's Lamport
clock (``>iiq``, 16 bytes; docs/processes.md, "The real runtime"). The clock is the event log's
(``clock``: ``stamp()`` when a frame is written, ``receive(stamp)`` before the receiver handles
it), so that the events of every process are ordered consistently with causality; 0 without one. When a connection fails
(the peer is gone, refused or reset), every request the two nodes still await from each other is
reported lost (``Endpoint.connection_lost``), as Kafka's NetworkClient fails its in-flight requests
on a disconnect. Everything runs on one event loop thread, like a broker's network threads handing
requests to one request handler.

A listening port is open to anything on the host, so the server side trusts nothing it reads, as
Kafka's SocketServer: a frame length outside 9 bytes (a frame header) .. ``max_frame_bytes``
(``socket.request.max.bytes``), a frame header that does not decode, a sender id that changes, a
connection closed inside a frame, or one that goes ``connections_max_idle_ms`` without completing
a frame each close that one connection with one log line; the other connections are not touched.
A sender closes its own connection after 90% of that idle time, before the server would.

Network partitions: ``cut(peers)`` cuts the links between this transport's nodes and ``peers``
(nodes of other processes) until ``heal``. A cut link is as broken as a reset one, both ways: its
connections close at once (the requests awaited over them are reported lost), a request sent to
a cut peer is reported lost right after the send (as a refused connection), a response to one is
dropped, and a frame that still arrives from one is dropped with its connection closed (so the
peer's side reports its requests lost too, even before it cuts the link itself). Only the
transport's own nodes are cut: Kafka clients' connections (impl/kafka) are not its business.

Held requests: ``set_holds({(src, dst, api_key): released})`` keeps the requests of that API key
that ``src`` sends to ``dst`` in a queue of their own, in order, instead of sending them (a request
stuck on its way, while every other frame flows: a leader's AlterPartition delayed while its
heartbeats pass); the first ``released`` of them go out, and a hold that is no longer named sends
all it kept. ``hold_counts`` says how many each hold took and sent on.

Delayed links: ``set_delays({(src, dst): ms})`` hands each frame ``src`` sends to ``dst`` to ``dst``'s
endpoint ``ms`` milliseconds after it arrived (latency on the wire, as netem adds it). The receiving
side waits, so a frame sent before its sender was paused or killed still arrives, as one in flight
does. In order: a frame never overtakes one that arrived before it on its connection (TCP keeps
order), so after the delay shrank or ended the next frames still wait behind those delayed. A cut
loses the frames it finds delayed (they were on the cut link).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

from ..invariants import InvariantBroken, halt
from ..protocol import CODEC, RESPONSE, DecodeError
from ..runtime import Endpoint

_PREFIX = struct.Struct(">iiq")  # frame length, sender node id, sender's Lamport clock
_FRAME_HEADER = struct.Struct(">BhhI")

MAX_FRAME_BYTES = 104_857_600  # Kafka's socket.request.max.bytes default (100 MiB)
CONNECTIONS_MAX_IDLE_MS = 600_000  # Kafka's connections.max.idle.ms default (10 minutes)
# A sender closes its idle connection first (as Kafka's clients, 9 minutes against the broker's 10),
# so that the server never closes one a frame is being written to.
SENDER_IDLE_RATIO = 0.9

log = logging.getLogger(__name__)


class _BadConnection(Exception):
    """What a connection sent, or failed to send, is not frames of this protocol: close it."""


class _CutConnection(Exception):
    """A frame from a peer whose link is cut: close the connection without a word."""


class AsyncioScheduler:
    """Wall-clock milliseconds since creation, or since ``origin`` (a ``time.monotonic()`` reading,
    which every process of the host shares: one clock for a run's processes); timers are the loop's
    ``call_later`` handles."""

    def __init__(self, loop: asyncio.AbstractEventLoop, origin: float | None = None) -> None:
        self.loop = loop
        self._start = loop.time() if origin is None else origin

    def now_ms(self) -> int:
        return int((self.loop.time() - self._start) * 1000)

    def schedule(self, delay_ms: int, callback: Callable[[], None]) -> asyncio.TimerHandle:
        return self.loop.call_later(max(0, delay_ms) / 1000, callback)


class _Link:
    """The outgoing connection of one (src, dst) pair and the frames waiting for it."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[bytes] = asyncio.Queue()
        self.task: asyncio.Task | None = None


@dataclass
class _Hold:
    """The requests one hold keeps back, and its counts."""

    released: int = 0
    held: int = 0  # requests it took, in all
    delivered: int = 0  # of them, sent on
    queue: deque = field(default_factory=deque)


class TcpTransport:
    """Kafka's Selector on localhost TCP; ``max_frame_bytes`` and ``connections_max_idle_ms`` bound
    what one connection can cost the server (memory, and time spent waiting for a frame)."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        host: str = "127.0.0.1",
        max_frame_bytes: int = MAX_FRAME_BYTES,
        connections_max_idle_ms: int = CONNECTIONS_MAX_IDLE_MS,
        ports: dict[int, int] | None = None,
    ) -> None:
        if max_frame_bytes < _FRAME_HEADER.size or connections_max_idle_ms <= 0:
            raise ValueError(
                f"max_frame_bytes must be >= {_FRAME_HEADER.size} and connections_max_idle_ms "
                f"> 0, got {max_frame_bytes} and {connections_max_idle_ms}"
            )
        self.loop = loop
        self.host = host
        self.max_frame_bytes = max_frame_bytes
        self.connections_max_idle_ms = connections_max_idle_ms
        self.addresses: dict[int, tuple[str, int]] = {}
        # nodes of other processes (node -> port on ``host``), and the fixed ports of this one's nodes
        self.ports = dict(ports or {})
        self.addresses.update((node, (host, port)) for node, port in self.ports.items())
        self._endpoints: dict[int, Endpoint] = {}
        self._servers: dict[int, asyncio.AbstractServer] = {}
        self._links: dict[tuple[int, int], _Link] = {}
        self._awaiting: dict[tuple[int, int], set[int]] = {}  # (requester, peer) -> correlation ids
        self._writers: dict[int, set[asyncio.StreamWriter]] = {}
        self._cut: set[int] = set()  # peers whose links to this transport's nodes are cut
        self._holds: dict[tuple[int, int, int], _Hold] = {}  # (src, dst, api key) -> its held requests
        self._delays: dict[tuple[int, int], float] = {}  # (src, dst) -> seconds a frame spends on the wire
        # each server-side connection's task -> the sender id once known (a one-element list)
        self._incoming: dict[asyncio.Task, list[int]] = {}
        self.clock = None  # the nodes' event log (isrcheck.impl.eventlog), when they keep one

    # -- network partitions -------------------------------------------------------------------
    @property
    def cut_peers(self) -> frozenset[int]:
        return frozenset(self._cut)

    def cut(self, peers) -> None:
        """Cut the links between this transport's nodes and ``peers`` (adding to those cut): their
        connections close now, their awaited requests are reported lost, and until ``heal`` every
        frame to or from them is dropped."""
        new = {int(p) for p in peers} - self._cut
        if not new:
            return
        self._cut |= new
        for (src, dst), link in list(self._links.items()):
            if src in new or dst in new:
                del self._links[(src, dst)]
                if link.task is not None:
                    link.task.cancel()
        for task, peer in list(self._incoming.items()):
            if peer and peer[0] in new:
                task.cancel()  # its handler closes the connection
        for requester, peer in list(self._awaiting):
            if requester in new or peer in new:
                self._fail(requester, peer)

    def heal(self, peers=None) -> None:
        """Restore the links to ``peers`` (default: every cut one); the next frame reconnects."""
        if peers is None:
            self._cut.clear()
        else:
            self._cut -= {int(p) for p in peers}

    # -- held requests ------------------------------------------------------------------------
    def set_holds(self, holds: dict[tuple[int, int, int], int]) -> None:
        """Hold the requests ``(src, dst, api_key)`` names, letting the first ``released`` of each
        through; every hold not named ends, sending what it kept."""
        for key in [k for k in self._holds if k not in holds]:
            hold = self._holds.pop(key)
            while hold.queue:
                self._send(key[0], key[1], hold.queue.popleft())
        for key, released in holds.items():
            hold = self._holds.setdefault(key, _Hold())
            hold.released = max(hold.released, released)
            self._deliver(key, hold)

    def hold_counts(self) -> dict[tuple[int, int, int], tuple[int, int]]:
        """``(src, dst, api_key) -> (held, delivered)`` of every hold in place."""
        return {key: (hold.held, hold.delivered) for key, hold in self._holds.items()}

    def _deliver(self, key: tuple[int, int, int], hold: _Hold) -> None:
        while hold.queue and hold.delivered < hold.released:
            hold.delivered += 1
            self._send(key[0], key[1], hold.queue.popleft())

    # -- delayed links ------------------------------------------------------------------------
    def set_delays(self, delays: dict[tuple[int, int], int]) -> None:
        """Delay the frames ``src`` sends to ``dst`` by ``ms`` (``{(src, dst): ms}``, this transport's
        nodes receiving); a link not named is delayed no more (frames delayed already keep their place)."""
        self._delays = {(int(a), int(b)): ms / 1000 for (a, b), ms in delays.items() if ms > 0}

    @property
    def delays(self) -> dict[tuple[int, int], int]:
        """``(src, dst) -> ms`` of every delayed link."""
        return {link: round(s * 1000) for link, s in self._delays.items()}

    def _arrived(self, node_id: int, sender: int, frame: bytes, header, stamp: int, backlog: deque) -> None:
        """A frame came in on a connection whose still delayed frames are ``backlog``: hand it to the
        node now, or once its link's delay passed and every frame before it was handed over."""
        delay = self._delays.get((sender, node_id), 0.0)
        if not delay and not backlog:
            self._hand(node_id, sender, frame, header, stamp)
            return
        due = max(self.loop.time() + delay, backlog[-1][0] if backlog else 0.0)
        backlog.append((due, sender, frame, header, stamp))
        self.loop.call_at(due, self._hand_due, node_id, backlog)

    def _hand_due(self, node_id: int, backlog: deque) -> None:
        while backlog and backlog[0][0] <= self.loop.time():
            _due, sender, frame, header, stamp = backlog.popleft()
            self._hand(node_id, sender, frame, header, stamp)

    def _hand(self, node_id: int, sender: int, frame: bytes, header, stamp: int) -> None:
        endpoint = self._endpoints.get(node_id)
        if endpoint is None or sender in self._cut:  # gone, or the frame was on a link cut since
            return
        if header.frame_type == RESPONSE:  # no longer awaited
            self._awaiting.get((node_id, sender), set()).discard(header.correlation_id)
        if self.clock is not None:
            self.clock.receive(stamp)
        endpoint.receive(sender, frame)

    # -- Transport ----------------------------------------------------------------------------
    def register(self, node_id: int, endpoint: Endpoint) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, self.ports.get(node_id, 0)))
        sock.listen()
        sock.setblocking(False)
        self.addresses[node_id] = sock.getsockname()[:2]
        self._endpoints[node_id] = endpoint
        self._writers[node_id] = set()
        self.loop.create_task(self._serve(node_id, sock))

    def unregister(self, node_id: int) -> None:
        """The node's process is gone: its port closes and its connections reset."""
        self._endpoints.pop(node_id, None)
        self.addresses.pop(node_id, None)
        server = self._servers.pop(node_id, None)
        if server is not None:
            server.close()
        for writer in self._writers.pop(node_id, set()):
            writer.close()
        for (src, dst), link in list(self._links.items()):
            if node_id in (src, dst) and link.task is not None:
                link.task.cancel()
                del self._links[(src, dst)]
                self._fail(src, dst)

    def send(self, src: int, dst: int, frame: bytes) -> None:
        if self._holds and len(frame) >= _FRAME_HEADER.size:
            frame_type, api_key, _, _ = _FRAME_HEADER.unpack_from(frame)
            hold = self._holds.get((src, dst, api_key)) if frame_type == 0 else None
            if hold is not None:
                hold.held += 1
                hold.queue.append(frame)
                self._deliver((src, dst, api_key), hold)
                return
        self._send(src, dst, frame)

    def _send(self, src: int, dst: int, frame: bytes) -> None:
        request = None
        if len(frame) >= _FRAME_HEADER.size:
            frame_type, _, _, correlation_id = _FRAME_HEADER.unpack_from(frame)
            if frame_type == 0:
                request = correlation_id
        if self._cut and (dst in self._cut or src in self._cut):
            if request is not None:  # lost, as on a refused connection: after the send returns
                self.loop.call_soon(self._lost, src, dst, request)
            return
        if request is not None:
            self._awaiting.setdefault((src, dst), set()).add(request)
        link = self._links.get((src, dst))
        if link is None:
            link = self._links[(src, dst)] = _Link()
            link.task = self.loop.create_task(self._write_loop(src, dst, link))
        link.queue.put_nowait(frame)

    # -- internals ----------------------------------------------------------------------------
    async def _serve(self, node_id: int, sock: socket.socket) -> None:
        async def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self._writers.setdefault(node_id, set()).add(writer)
            peer: list[int] = []  # the sender id, once a well-formed frame came from it
            task = asyncio.current_task()
            self._incoming[task] = peer
            try:
                await self._read_frames(node_id, reader, peer)
            except _CutConnection:
                pass
            except _BadConnection as exc:
                if node_id in self._endpoints:
                    log.warning("node %d: closing the connection from %s: %s", node_id, _address(writer), exc)
            except ConnectionError:
                pass  # reset by the peer: as a close
            except asyncio.CancelledError:  # the loop is shutting down; asyncio 3.11 would log a
                pass  # cancelled connection task as an error
            except InvariantBroken as exc:  # the node must not go on: it halts
                halt(exc)
            except Exception:  # a bug in a handler: that connection only, with its traceback
                log.exception("node %d: closing the connection from %s", node_id, _address(writer))
            finally:
                self._incoming.pop(task, None)
                writer.close()
                self._writers.get(node_id, set()).discard(writer)
                if peer:
                    self._fail(node_id, peer[0])

        self._servers[node_id] = await asyncio.start_server(on_connection, sock=sock)

    async def _read_frames(self, node_id: int, reader: asyncio.StreamReader, peer: list[int]) -> None:
        """Hand each frame to the node's endpoint until the connection ends cleanly between frames;
        raise _BadConnection as soon as the bytes cannot be frames."""
        idle_s = self.connections_max_idle_ms / 1000
        backlog: deque = deque()  # frames of this connection its link's delay still keeps
        while True:
            prefix = await self._read_exactly(reader, _PREFIX.size, idle_s, "frame prefix")
            if prefix is None:
                return
            length, sender, stamp = _PREFIX.unpack(prefix)
            if not _FRAME_HEADER.size <= length <= self.max_frame_bytes:
                raise _BadConnection(
                    f"frame length {length} outside {_FRAME_HEADER.size}.."
                    f"{self.max_frame_bytes} (socket.request.max.bytes)"
                )
            if peer and sender != peer[0]:
                raise _BadConnection(f"sender id {sender} on a connection from node {peer[0]}")
            if sender in self._cut:
                if not peer:
                    peer.append(sender)
                raise _CutConnection()
            frame = await self._read_exactly(reader, length, idle_s, f"{length}-byte frame")
            if frame is None:
                raise _BadConnection(f"closed before its {length}-byte frame")
            try:
                header = CODEC.decode_header(frame)
            except DecodeError as exc:
                raise _BadConnection(str(exc)) from None
            if node_id not in self._endpoints:
                return
            if not peer:
                peer.append(sender)
            self._arrived(node_id, sender, frame, header, stamp, backlog)

    @staticmethod
    async def _read_exactly(reader: asyncio.StreamReader, size: int, idle_s: float, what: str) -> bytes | None:
        """``size`` bytes; None if the stream ends cleanly before the first of them."""
        try:
            async with asyncio.timeout(idle_s):
                return await reader.readexactly(size)
        except asyncio.IncompleteReadError as exc:
            if not exc.partial:
                return None
            raise _BadConnection(f"closed inside a {what} ({len(exc.partial)} of {size} bytes)") from None
        except TimeoutError:
            raise _BadConnection(
                f"no complete {what} within {idle_s * 1000:.0f} ms (connections.max.idle.ms)"
            ) from None

    async def _write_loop(self, src: int, dst: int, link: _Link) -> None:
        writer = watcher = None
        try:
            host_port = self.addresses.get(dst)
            if host_port is None:
                raise ConnectionRefusedError(f"node {dst} is not listening")
            reader, writer = await asyncio.open_connection(*host_port)
            watcher = self.loop.create_task(self._watch_close(src, dst, link, reader))
            idle_s = self.connections_max_idle_ms * SENDER_IDLE_RATIO / 1000
            while True:
                try:
                    async with asyncio.timeout(idle_s):
                        frame = await link.queue.get()
                except TimeoutError:
                    if link.queue.empty():  # idle: close it cleanly; the next frame opens a new one
                        if self._links.get((src, dst)) is link:
                            del self._links[(src, dst)]
                        return
                    continue
                # stamped as it leaves: after every event its sender logged before, this one's too
                stamp = self.clock.stamp() if self.clock is not None else 0
                writer.write(_PREFIX.pack(len(frame), src, stamp) + frame)
                await writer.drain()
        except (OSError, ConnectionError):
            self._drop_link(src, dst, link)
        finally:
            if watcher is not None:
                watcher.cancel()
            if writer is not None:
                writer.close()

    async def _watch_close(self, src: int, dst: int, link: _Link, reader: asyncio.StreamReader) -> None:
        """The server never writes on this connection: end of stream means it closed it (idle, or
        a bad frame). Drop the link at once, so the next frame opens a new connection."""
        try:
            while await reader.read(1 << 16):
                pass
        except ConnectionError:
            pass
        if self._links.get((src, dst)) is link and link.task is not None:
            link.task.cancel()
        self._drop_link(src, dst, link)

    def _drop_link(self, src: int, dst: int, link: _Link) -> None:
        if self._links.get((src, dst)) is link:
            del self._links[(src, dst)]
            self._fail(src, dst)

    def _lost(self, src: int, dst: int, correlation_id: int) -> None:
        endpoint = self._endpoints.get(src)
        if endpoint is not None:
            endpoint.connection_lost(dst, correlation_id)

    def _fail(self, a: int, b: int) -> None:
        """The connection between ``a`` and ``b`` broke: both sides' awaited requests are lost."""
        for requester, peer in ((a, b), (b, a)):
            lost = self._awaiting.pop((requester, peer), set())
            endpoint = self._endpoints.get(requester)
            if endpoint is not None:
                for correlation_id in sorted(lost):
                    endpoint.connection_lost(peer, correlation_id)


def _address(writer: asyncio.StreamWriter) -> str:
    peername = writer.get_extra_info("peername")
    return f"{peername[0]}:{peername[1]}" if peername else "an unknown address"
