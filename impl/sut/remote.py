"""Objects of another process, used as if local: a small re-entrant RPC over one socket.

Values cross by copy when they are data (numbers, strings, bytes, containers, enums, dataclass
instances such as wire messages and snapshots) and by reference otherwise (a broker, its log, a
callback, the clock): a reference arrives as a ``Proxy`` whose attribute reads, calls, ``in``,
``[]``, ``len`` and iteration run in the owning process. One proxy stands for one remote object,
so ``is`` keeps its meaning. Calls nest both ways: while a call waits for its answer, calls from
the other side (a broker sending a message through the driver's network) are served.
"""

from __future__ import annotations

import dataclasses
import enum
import io
import pickle
import socket
import struct

_PLAIN = (int, float, str, bytes, bytearray, bool, type(None), tuple, list, dict, set, frozenset, range)
_LENGTH = struct.Struct(">I")


class RemoteError(Exception):
    """The other side raised; ``remote_type`` names its exception class."""

    def __init__(self, remote_type: str, message: str) -> None:
        super().__init__(message)
        self.remote_type = remote_type


class ChannelClosed(Exception):
    """The other process is gone."""


class Proxy:
    __slots__ = ("_channel", "_ref")

    def __init__(self, channel: "Channel", ref: int) -> None:
        object.__setattr__(self, "_channel", channel)
        object.__setattr__(self, "_ref", ref)

    def __getattr__(self, name: str):
        return self._channel.request("getattr", self._ref, name)

    def __setattr__(self, name: str, value) -> None:
        self._channel.request("setattr", self._ref, name, value)

    def __call__(self, *args, **kwargs):
        return self._channel.request("call", self._ref, None, args, kwargs)

    def __contains__(self, item) -> bool:
        return self._channel.request("call", self._ref, "__contains__", (item,), {})

    def __getitem__(self, key):
        return self._channel.request("call", self._ref, "__getitem__", (key,), {})

    def __len__(self) -> int:
        return self._channel.request("call", self._ref, "__len__", (), {})

    def __iter__(self):
        return iter(self._channel.request("call", self._ref, "__list__", (), {}))

    def __bool__(self) -> bool:
        return self._channel.request("call", self._ref, "__bool__", (), {})


class Channel:
    """One end of the connection; ``export(obj)`` makes ``obj`` callable by the other end."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._objects: dict[int, object] = {}  # ref -> object of this side
        self._refs: dict[int, int] = {}  # id(object) -> ref
        self._proxies: dict[int, Proxy] = {}  # ref of the other side -> its proxy
        self._next = 0
        self.roots: dict[str, object] = {}  # named objects the other side may ask for

    # -- marshalling ------------------------------------------------------------------------------
    def _ref_of(self, obj) -> int:
        ref = self._refs.get(id(obj))
        if ref is None:
            ref = self._next = self._next + 1
            self._refs[id(obj)] = ref
            self._objects[ref] = obj
        return ref

    def _dumps(self, value) -> bytes:
        buf = io.BytesIO()
        pickler = pickle.Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)

        def persistent_id(obj):
            if isinstance(obj, Proxy) and obj._channel is self:
                return ("yours", obj._ref)
            if (
                isinstance(obj, _PLAIN)
                or isinstance(obj, enum.Enum)
                or isinstance(obj, type)
                or (dataclasses.is_dataclass(obj))
            ):
                return None
            return ("mine", self._ref_of(obj))

        pickler.persistent_id = persistent_id
        pickler.dump(value)
        return buf.getvalue()

    def _loads(self, data: bytes):
        unpickler = pickle.Unpickler(io.BytesIO(data))

        def persistent_load(pid):
            whose, ref = pid
            if whose == "yours":  # one of ours, coming back
                return self._objects[ref]
            proxy = self._proxies.get(ref)
            if proxy is None:
                proxy = self._proxies[ref] = Proxy(self, ref)
            return proxy

        unpickler.persistent_load = persistent_load
        return unpickler.load()

    # -- the wire ---------------------------------------------------------------------------------
    def _send(self, message) -> None:
        data = self._dumps(message)
        self.sock.sendall(_LENGTH.pack(len(data)) + data)

    def _receive(self):
        head = self._read(_LENGTH.size)
        return self._loads(self._read(_LENGTH.unpack(head)[0]))

    def _read(self, size: int) -> bytes:
        chunks, left = [], size
        while left:
            chunk = self.sock.recv(min(left, 1 << 20))
            if not chunk:
                raise ChannelClosed("the other process closed the connection")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    # -- requests ---------------------------------------------------------------------------------
    def request(self, *message):
        """Send a request and serve the other side's requests until its answer comes."""
        self._send(("request",) + message)
        while True:
            kind, *rest = self._receive()
            if kind == "answer":
                return rest[0]
            if kind == "error":
                raise RemoteError(*rest)
            self._serve(rest)

    def root(self, name: str):
        return self.request("root", name)

    def serve_forever(self) -> None:
        """The child's loop: serve requests until the connection closes."""
        try:
            while True:
                kind, *rest = self._receive()
                self._serve(rest)
        except ChannelClosed:
            return

    def _serve(self, message) -> None:
        op, *args = message
        try:
            if op == "root":
                result = self.roots[args[0]]
            elif op == "getattr":
                result = getattr(self._objects[args[0]], args[1])
            elif op == "setattr":
                setattr(self._objects[args[0]], args[1], args[2])
                result = None
            else:  # call
                target = self._objects[args[0]]
                name, call_args, kwargs = args[1], args[2], args[3]
                if name is None:
                    result = target(*call_args, **kwargs)
                elif name == "__list__":
                    result = list(target)
                elif name == "__bool__":
                    result = bool(target)
                else:
                    result = getattr(target, name)(*call_args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - carried to the caller, who raises it
            self._send(("error", type(exc).__name__, f"{type(exc).__name__}: {exc}"))
            return
        self._send(("answer", result))
