"""NodeEndpoint: one node's connection point, Kafka's NetworkClient and RequestChannel in one.

Outgoing requests get a correlation id and a callback; the callback receives the decoded response,
or ``None`` when the transport reports the request lost. Incoming requests are decoded and
dispatched by api key to a handler, which returns the response or ``None`` to answer later with
``respond`` (DelayedProduce). Malformed input never raises: an undecodable request body gets an
``INVALID_REQUEST`` response, an unknown api or version ``UNSUPPORTED_VERSION`` where a response
type exists, and a frame without a readable header is dropped (the connection is closed).
"""

from __future__ import annotations

from typing import Any, Callable

from .protocol import CODEC, REQUEST, RESPONSE, DecodeError, Errors, Header
from .runtime import Transport

Handler = Callable[[int, Header, Any], Any]
Callback = Callable[[Any], None]


class NodeEndpoint:
    """One node's client and server side of the wire protocol."""

    def __init__(self, node_id: int, transport: Transport) -> None:
        self.node_id = node_id
        self.transport = transport
        self.handlers: dict[int, Handler] = {}
        self._pending: dict[int, Callback] = {}
        self._next_correlation = 0
        self.malformed = 0  # frames that could not be decoded
        # where an OSError of a handler or callback goes (a broker's log directory failure); None: raised
        self.on_io_error: Callable[[OSError], None] | None = None

    def next_correlation_id(self) -> int:
        """Reserve a correlation id, so a caller can record it before the send (which may fail at once)."""
        self._next_correlation += 1
        return self._next_correlation

    def send_request(
        self,
        dst: int,
        api_key: int,
        version: int,
        request: Any,
        callback: Callback | None = None,
        correlation_id: int | None = None,
    ) -> int:
        if correlation_id is None:
            correlation_id = self.next_correlation_id()
        if callback is not None:
            self._pending[correlation_id] = callback
        self.transport.send(self.node_id, dst, CODEC.encode(REQUEST, api_key, version, correlation_id, request))
        return correlation_id

    def respond(self, dst: int, header: Header, response: Any) -> None:
        self.transport.send(
            self.node_id,
            dst,
            CODEC.encode(RESPONSE, header.api_key, header.api_version, header.correlation_id, response),
        )

    def forget(self, correlation_id: int) -> None:
        """Stop waiting for a response: it will be ignored when it arrives."""
        self._pending.pop(correlation_id, None)

    # -- Endpoint ---------------------------------------------------------------------------
    def receive(self, src: int, frame: bytes) -> None:
        try:
            self._receive(src, frame)
        except OSError as exc:  # nothing is answered: the node halts on it
            if self.on_io_error is None:
                raise
            self.on_io_error(exc)

    def _receive(self, src: int, frame: bytes) -> None:
        try:
            header = CODEC.decode_header(frame)
        except DecodeError:
            self.malformed += 1
            return
        if header.frame_type == RESPONSE:
            callback = self._pending.pop(header.correlation_id, None)
            if callback is None:
                return  # a duplicate, or a response to a request we gave up on
            try:
                response = CODEC.decode_body(header, frame)
            except DecodeError:
                self.malformed += 1
                response = None  # treated like a lost connection
            callback(response)
            return
        handler = self.handlers.get(header.api_key)
        try:
            request = CODEC.decode_body(header, frame)
        except DecodeError:
            self.malformed += 1
            self._respond_error(src, header, Errors.INVALID_REQUEST if handler else Errors.UNSUPPORTED_VERSION)
            return
        if handler is None:
            self._respond_error(src, header, Errors.UNSUPPORTED_VERSION)
            return
        response = handler(src, header, request)
        if response is not None:
            self.respond(src, header, response)

    def connection_lost(self, peer: int, correlation_id: int) -> None:
        callback = self._pending.pop(correlation_id, None)
        if callback is not None:
            callback(None)

    def _respond_error(self, src: int, header: Header, error: Errors) -> None:
        response = CODEC.error_response(header.api_key, error)
        versions = CODEC.response_versions(header.api_key)
        if response is None or not versions:
            return  # one-way or unknown api: close the connection
        version = header.api_version if header.api_version in versions else versions[0]
        self.transport.send(
            self.node_id, src, CODEC.encode(RESPONSE, header.api_key, version, header.correlation_id, response)
        )
