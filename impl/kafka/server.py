"""KafkaServer: a broker's listener for Kafka clients (Kafka's SocketServer and RequestChannel).

Each request is a 4-byte size and the request: header v1 (api key, version, correlation id, client
id) or v2 (the same plus tagged fields) by the request's flexible versions, then the body. As
Kafka's Processor mutes a connection while its request is handled, a connection's requests are
handled one at a time, so responses go back in request order; a produce waiting for acks=all or a
fetch waiting for data holds only its own connection.

Request processing starts once ``enable_request_processing`` is called (Kafka's
``SocketServer.enableRequestProcessing``, which ``BrokerServer.startup`` calls only after the broker
caught up with the controller's metadata): until then a connection is accepted and its requests wait,
so a restarted broker never answers from a partial view of its partitions. ``start(processing=True)``
enables it at once.

Bad input closes that connection with one log line and touches nothing else: a size outside
1..``socket.request.max.bytes``, a connection closed inside a request, an unknown api key, an
unsupported version of any api but ApiVersions (answered with v0 and UNSUPPORTED_VERSION, the list
of versions included, so that a client falls back), or a request that does not decode.
"""

from __future__ import annotations

import asyncio
import logging
import struct

from ..invariants import InvariantBroken, halt
from ..protocol import Errors
from .apis import API_VERSIONS, NO_RESPONSE, KafkaApis
from .registry import APIS

log = logging.getLogger(__name__)

SOCKET_REQUEST_MAX_BYTES = 104_857_600  # socket.request.max.bytes
_SIZE = struct.Struct(">i")
_HEAD = struct.Struct(">hhi")  # api key, api version, correlation id


class _Refused(Exception):
    """The connection sent what Kafka refuses: close it."""


class KafkaServer:
    """Serve ``apis`` on ``host:port`` from the running event loop."""

    def __init__(
        self, apis: KafkaApis, host: str, port: int, max_request_bytes: int = SOCKET_REQUEST_MAX_BYTES
    ) -> None:
        self.apis, self.host, self.port, self.max_request_bytes = apis, host, port, max_request_bytes
        self.server: asyncio.AbstractServer | None = None
        self.connections: set[asyncio.StreamWriter] = set()
        self._processing: asyncio.Event | None = None

    async def start(self, processing: bool = True) -> None:
        self._processing = asyncio.Event()
        if processing:
            self._processing.set()
        self.server = await asyncio.start_server(self._serve, self.host, self.port, reuse_address=True)

    def enable_request_processing(self) -> None:
        """Requests of every connection, waiting and future, are read and handled from now on."""
        self._processing.set()

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
        for writer in list(self.connections):
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections.add(writer)
        peer = writer.get_extra_info("peername")
        where = f"{peer[0]}:{peer[1]}" if peer else "an unknown address"
        try:
            await self._processing.wait()
            while True:
                request = await self._read_request(reader)
                if request is None:
                    return
                response = await self._handle(request)
                if response is not None:
                    writer.write(response)
                    await writer.drain()
        except _Refused as exc:
            log.warning("closing the Kafka connection from %s: %s", where, exc)
        except (ConnectionError, asyncio.CancelledError):
            pass
        except InvariantBroken as exc:  # the broker must not go on: it halts
            halt(exc)
        except Exception:  # a bug in a handler: that connection only, with its traceback
            log.exception("closing the Kafka connection from %s", where)
        finally:
            self.connections.discard(writer)
            writer.close()

    async def _read_request(self, reader: asyncio.StreamReader) -> bytes | None:
        try:
            head = await reader.readexactly(_SIZE.size)
        except asyncio.IncompleteReadError as exc:
            if not exc.partial:
                return None
            raise _Refused(f"closed inside a request size ({len(exc.partial)} of 4 bytes)") from None
        (size,) = _SIZE.unpack(head)
        if not _HEAD.size <= size <= self.max_request_bytes:
            raise _Refused(
                f"request size {size} outside {_HEAD.size}..{self.max_request_bytes} (socket.request.max.bytes)"
            )
        try:
            return await reader.readexactly(size)
        except asyncio.IncompleteReadError as exc:
            raise _Refused(f"closed inside a {size}-byte request ({len(exc.partial)} bytes came)") from None

    async def _handle(self, data: bytes) -> bytes | None:
        """The framed response to one request, or None (acks=0)."""
        api_key, version, correlation_id = _HEAD.unpack_from(data)
        api = APIS.get(api_key)
        if api is None:
            raise _Refused(f"unknown or unsupported api key {api_key} (correlation id {correlation_id})")
        request_class, lowest, highest = api.request, api.lowest, api.highest
        if not lowest <= version <= highest:
            if api_key == API_VERSIONS:  # KIP-511: answer v0 with ApiVersions' versions, the client retries
                response = KafkaApis.api_versions_response(0, Errors.UNSUPPORTED_VERSION)
                return _frame(response, correlation_id)
            raise _Refused(f"{request_class.__name__} v{version} is not supported (v{lowest}-v{highest})")
        try:
            request = request_class.decode(data, version=version, header=True)
        except Exception as exc:  # kafka-python raises assorted errors on malformed bytes
            raise _Refused(f"{request_class.__name__} v{version} does not decode: {exc}") from None
        done: asyncio.Future = asyncio.get_running_loop().create_future()

        def respond(resp) -> None:
            if not done.done():
                done.set_result(resp)

        response = self.apis.handle(api_key, version, request, respond)
        if response is NO_RESPONSE:
            return None
        if response is None:
            response = await done
        return _frame(response, correlation_id)


def _frame(response, correlation_id: int) -> bytes:
    response.with_header(correlation_id=correlation_id)
    return bytes(response.encode(header=True, framed=True))
