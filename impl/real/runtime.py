"""AsyncioScheduler and TcpTransport: ``Scheduler`` and ``Transport`` for real time and real sockets.

Each registered node listens on its own localhost port; frames travel over one TCP connection per
(sender, receiver), each prefixed by its length and the sender's node id. When a connection fails
(the peer is gone, refused or reset), every request the two nodes still await from each other is
reported lost (``Endpoint.connection_lost``), as Kafka's NetworkClient fails its in-flight requests
on a disconnect. Everything runs on one event loop thread, like a broker's network threads handing
requests to one request handler.
"""
from __future__ import annotations

import asyncio
import socket
import struct
from typing import Callable

from ..runtime import Endpoint

_PREFIX = struct.Struct(">ii")  # frame length, sender node id
_FRAME_HEADER = struct.Struct(">BhhI")


class AsyncioScheduler:
    """Wall-clock milliseconds since creation; timers are the loop's ``call_later`` handles."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._start = loop.time()

    def now_ms(self) -> int:
        return int((self.loop.time() - self._start) * 1000)

    def schedule(self, delay_ms: int, callback: Callable[[], None]) -> asyncio.TimerHandle:
        return self.loop.call_later(max(0, delay_ms) / 1000, callback)


class _Link:
    """The outgoing connection of one (src, dst) pair and the frames waiting for it."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[bytes] = asyncio.Queue()
        self.task: asyncio.Task | None = None


class TcpTransport:
    def __init__(self, loop: asyncio.AbstractEventLoop, host: str = "127.0.0.1") -> None:
        self.loop = loop
        self.host = host
        self.addresses: dict[int, tuple[str, int]] = {}
        self._endpoints: dict[int, Endpoint] = {}
        self._servers: dict[int, asyncio.AbstractServer] = {}
        self._links: dict[tuple[int, int], _Link] = {}
        self._awaiting: dict[tuple[int, int], set[int]] = {}  # (requester, peer) -> correlation ids
        self._writers: dict[int, set[asyncio.StreamWriter]] = {}

    # -- Transport ----------------------------------------------------------------------------
    def register(self, node_id: int, endpoint: Endpoint) -> None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self.host, 0))
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
        if len(frame) >= _FRAME_HEADER.size:
            frame_type, _, _, correlation_id = _FRAME_HEADER.unpack_from(frame)
            if frame_type == 0:
                self._awaiting.setdefault((src, dst), set()).add(correlation_id)
        link = self._links.get((src, dst))
        if link is None:
            link = self._links[(src, dst)] = _Link()
            link.task = self.loop.create_task(self._write_loop(src, dst, link))
        link.queue.put_nowait(frame)

    # -- internals ----------------------------------------------------------------------------
    async def _serve(self, node_id: int, sock: socket.socket) -> None:
        async def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self._writers.setdefault(node_id, set()).add(writer)
            peer = None
            try:
                while True:
                    length, peer = _PREFIX.unpack(await reader.readexactly(_PREFIX.size))
                    frame = await reader.readexactly(length)
                    endpoint = self._endpoints.get(node_id)
                    if endpoint is None:
                        return
                    if len(frame) >= _FRAME_HEADER.size and frame[0] == 1:  # a response: no longer awaited
                        self._awaiting.get((node_id, peer), set()).discard(
                            _FRAME_HEADER.unpack_from(frame)[3])
                    endpoint.receive(peer, frame)
            except (asyncio.IncompleteReadError, ConnectionError):
                if peer is not None:
                    self._fail(node_id, peer)
            finally:
                writer.close()
        self._servers[node_id] = await asyncio.start_server(on_connection, sock=sock)

    async def _write_loop(self, src: int, dst: int, link: _Link) -> None:
        writer = None
        try:
            host_port = self.addresses.get(dst)
            if host_port is None:
                raise ConnectionRefusedError(f"node {dst} is not listening")
            _, writer = await asyncio.open_connection(*host_port)
            while True:
                frame = await link.queue.get()
                writer.write(_PREFIX.pack(len(frame), src) + frame)
                await writer.drain()
        except (OSError, ConnectionError):
            if self._links.get((src, dst)) is link:
                del self._links[(src, dst)]
            self._fail(src, dst)
        finally:
            if writer is not None:
                writer.close()

    def _fail(self, a: int, b: int) -> None:
        """The connection between ``a`` and ``b`` broke: both sides' awaited requests are lost."""
        for requester, peer in ((a, b), (b, a)):
            lost = self._awaiting.pop((requester, peer), set())
            endpoint = self._endpoints.get(requester)
            if endpoint is not None:
                for correlation_id in sorted(lost):
                    endpoint.connection_lost(peer, correlation_id)
