"""The TCP server survives garbage: negative or oversized frame lengths, truncated frames, random
bytes and idle or half-sent connections each close that connection with one log line, while a
well-formed client on another connection is served, during and after."""

import asyncio
import logging
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from isrcheck.impl.controller import CONTROLLER_ID, Controller
from isrcheck.impl.network import NodeEndpoint
from isrcheck.impl.protocol import CODEC, REQUEST, ApiKey, BrokerHeartbeatRequest, Errors
from isrcheck.impl.real import AsyncioScheduler, TcpTransport

CLIENT = 1  # the well-formed client: broker 1's heartbeats
IDLE_MS = 300
MAX_FRAME = 4096


class Records(logging.Handler):
    def __init__(self):
        super().__init__()
        self.records = []

    def emit(self, record):
        self.records.append(record)


async def _with_server(body, idle_ms=IDLE_MS):
    """Run ``body(transport, controller, client, records)`` against a controller on a real port."""
    loop = asyncio.get_running_loop()
    transport = TcpTransport(loop, max_frame_bytes=MAX_FRAME, connections_max_idle_ms=idle_ms)
    controller = Controller(3, False, AsyncioScheduler(loop), transport)
    client = NodeEndpoint(CLIENT, transport)
    transport.register(CLIENT, client)
    records = Records()
    logger = logging.getLogger("isrcheck.impl.real.runtime")
    logger.addHandler(records)
    try:
        await asyncio.sleep(0)  # the servers start listening
        return await body(transport, controller, client, records)
    finally:
        logger.removeHandler(records)
        transport.unregister(CLIENT)
        transport.unregister(CONTROLLER_ID)


async def _heartbeat(controller, client):
    """The client's heartbeat is answered (within 5 s)."""
    answered = asyncio.get_running_loop().create_future()
    request = BrokerHeartbeatRequest(CLIENT, controller.broker_epochs[CLIENT], 0, 0)
    client.send_request(CONTROLLER_ID, ApiKey.BROKER_HEARTBEAT, 0, request, answered.set_result)
    response = await asyncio.wait_for(answered, 5)
    assert response is not None and response.error in (Errors.NONE, Errors.STALE_BROKER_EPOCH)
    return response


async def _send(address, data, keep_open=False):
    """Write ``data`` on a new connection (then end it unless ``keep_open``) and wait until the
    server closes it; returns the local address the server's log names."""
    reader, writer = await asyncio.open_connection(*address)
    local = "%s:%d" % writer.get_extra_info("sockname")[:2]
    try:
        writer.write(data)
        await writer.drain()
        if not keep_open:
            writer.write_eof()
        assert await asyncio.wait_for(reader.read(), 5) == b""  # closed by the server, not by us
    except ConnectionError:
        pass  # closed by the server while we were still writing
    finally:
        writer.close()
    return local


def _prefix(length, sender):
    return struct.pack(">iiq", length, sender, 0)  # length, sender, Lamport clock


def _frame(sender, api_key=ApiKey.BROKER_HEARTBEAT, version=0, body=None):
    frame = CODEC.encode(REQUEST, api_key, version, 9, body or BrokerHeartbeatRequest(sender, 0, 0, 0))
    return _prefix(len(frame), sender) + frame


def _closes(records, local):
    return [r.getMessage() for r in records.records if local in r.getMessage()]


@pytest.mark.parametrize(
    "data, words",
    [
        (_prefix(-5, 0), "frame length -5 outside 9..4096 (socket.request.max.bytes)"),
        (_prefix(MAX_FRAME + 1, 0) + b"x" * 100, "frame length 4097 outside 9..4096"),
        (_prefix(2**31 - 1, 0), "frame length 2147483647 outside"),
        (_prefix(20, 0) + b"\x07" * 20, "unknown frame type 7"),
        (_frame(0)[:-3], "closed inside a 29-byte frame (26 of 29 bytes)"),
        (_frame(0)[:5], "closed inside a frame prefix (5 of 16 bytes)"),
        (_frame(0) + _frame(2), "sender id 2 on a connection from node 0"),
    ],
)
def test_bad_frames_close_only_their_connection_with_one_line(data, words):
    async def body(transport, controller, client, records):
        await _heartbeat(controller, client)
        local = await _send(transport.addresses[CONTROLLER_ID], data)
        await _heartbeat(controller, client)
        return _closes(records, local)

    closes = asyncio.run(_with_server(body))
    assert len(closes) == 1 and words in closes[0], closes
    assert closes[0].startswith(f"node {CONTROLLER_ID}: closing the connection from 127.0.0.1:")


@pytest.mark.parametrize(
    "data, words",
    [
        (b"", "no complete frame prefix within 300 ms (connections.max.idle.ms)"),
        (_prefix(40, 0)[:3], "no complete frame prefix within 300 ms"),
        (_prefix(40, 0) + b"\x00" * 10, "no complete 40-byte frame within 300 ms"),
    ],
)
def test_idle_and_half_sent_connections_are_closed_after_the_idle_timeout(data, words):
    async def body(transport, controller, client, records):
        loop = asyncio.get_running_loop()
        start = loop.time()
        idle = asyncio.create_task(_send(transport.addresses[CONTROLLER_ID], data, keep_open=True))
        await _heartbeat(controller, client)  # served while the idle one hangs
        local = await idle
        return _closes(records, local), loop.time() - start

    closes, seconds = asyncio.run(_with_server(body))
    assert len(closes) == 1 and words in closes[0], closes
    assert 0.25 < seconds < 3


def test_an_idle_sender_closes_its_connection_first_and_reconnects():
    async def body(transport, controller, client, records):
        await _heartbeat(controller, client)
        await asyncio.sleep(IDLE_MS / 1000 + 0.3)  # the client closes its idle connection
        response = await _heartbeat(controller, client)  # on a new connection
        return response.error, [r.getMessage() for r in records.records]

    error, logged = asyncio.run(_with_server(body))
    assert error == Errors.NONE and logged == []


def test_a_sender_notices_when_the_server_closed_its_idle_connection():
    """Two processes: the server's idle timeout is shorter than the client's, so the server closes
    the client's connection; the client drops it at once and its next request reconnects."""

    async def body(transport, controller, _, records):
        loop = asyncio.get_running_loop()
        other = TcpTransport(loop, connections_max_idle_ms=60_000)
        client = NodeEndpoint(CLIENT, other)
        other.register(CLIENT, client)
        other.addresses[CONTROLLER_ID] = transport.addresses[CONTROLLER_ID]
        transport.addresses[CLIENT] = other.addresses[CLIENT]
        try:
            await _heartbeat(controller, client)
            await asyncio.sleep(IDLE_MS / 1000 + 0.3)
            response = await _heartbeat(controller, client)
        finally:
            other.unregister(CLIENT)
        return response.error, [r.getMessage() for r in records.records]

    error, logged = asyncio.run(_with_server(body))
    assert error == Errors.NONE
    assert len(logged) == 1 and "no complete frame prefix within 300 ms" in logged[0], logged


def test_limits_are_checked():
    loop = asyncio.new_event_loop()
    try:
        with pytest.raises(ValueError, match="max_frame_bytes must be >= 9"):
            TcpTransport(loop, max_frame_bytes=8)
        with pytest.raises(ValueError, match="connections_max_idle_ms"):
            TcpTransport(loop, connections_max_idle_ms=0)
    finally:
        loop.close()


_SENDERS = st.integers(-3, 4).filter(lambda s: s != CLIENT) | st.just(CONTROLLER_ID)
_PIECES = st.one_of(
    st.binary(max_size=120),
    st.builds(
        lambda length, sender, body: _prefix(length, sender) + body,
        st.integers(-(2**31), 2**31 - 1) | st.integers(0, 60),
        _SENDERS,
        st.binary(max_size=60),
    ),
    st.builds(lambda sender, cut: _frame(sender)[:cut], _SENDERS, st.integers(0, 40)),
    st.builds(
        lambda sender, head, body: _prefix(9 + len(body), sender) + struct.pack(">BhhI", *head) + body,
        _SENDERS,
        st.tuples(
            st.integers(0, 2),
            st.sampled_from([int(k) for k in ApiKey]) | st.integers(-2, 70),
            st.integers(-1, 4),
            st.integers(0, 2**32 - 1),
        ),
        st.binary(max_size=40),
    ),
)
_CONNECTIONS = st.lists(
    st.tuples(st.lists(_PIECES, min_size=1, max_size=3).map(b"".join), st.sampled_from([False, False, False, True])),
    min_size=1,
    max_size=4,
)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(_CONNECTIONS)
def test_random_bytes_never_stop_the_server(connections):
    async def body(transport, controller, client, records):
        address = transport.addresses[CONTROLLER_ID]
        sends = [asyncio.create_task(_send(address, data, keep_open)) for data, keep_open in connections]
        await _heartbeat(controller, client)  # served while the garbage arrives
        locals_ = await asyncio.gather(*sends)
        await _heartbeat(controller, client)  # and after
        return [_closes(records, local) for local in locals_], records.records

    per_connection, all_records = asyncio.run(_with_server(body))
    assert all(len(closes) <= 1 for closes in per_connection), per_connection
    assert all(r.levelno == logging.WARNING and r.exc_info is None for r in all_records), [
        r.getMessage() for r in all_records
    ]
