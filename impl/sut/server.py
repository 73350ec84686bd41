"""The driver protocol's implementation side (docs/sut-protocol.md): JSON lines in, JSON lines out.

One ``Session`` per stream (stdin/stdout, or one TCP connection): every request line gets exactly
one answer line, in order. A request the session cannot read is answered with an error and the
session goes on; only ``bye`` or the end of the input ends it.
"""

from __future__ import annotations

import json
import traceback
from typing import BinaryIO, Iterable

from ..replication.protocol import VARIANTS
from .driver import SimDriver, cluster_config
from .steps import BadStep, parse_step

VERSION = 1
IMPLEMENTATION = "isrcheck.impl (deterministic simulation)"


class _Error(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


class Session:
    """The state of one conversation: the agreed version, the current cluster, its snapshots."""

    def __init__(self, cluster_factory=None) -> None:
        self.cluster_factory = cluster_factory  # None: the simulation in this process
        self.version: int | None = None
        self.driver: SimDriver | None = None
        self._reset: tuple | None = None  # (protocol, config) of the last reset
        self._taken: list[tuple[str, tuple]] = []  # steps since the reset, for snapshots
        self._snapshots: list[tuple[tuple, int]] = []

    def answer(self, line: bytes) -> tuple[dict, bool]:
        """The answer to one request line, and whether the session ends."""
        try:
            request = json.loads(line)
        except (ValueError, UnicodeDecodeError) as exc:
            return _error("bad_request", f"not a JSON line: {exc}"), False
        if not isinstance(request, dict) or not isinstance(request.get("op"), str):
            return _error("bad_request", 'expected an object with a string "op"'), False
        op = request["op"]
        handler = getattr(self, "_op_" + op, None)
        if handler is None:
            return _error("bad_request", f"unknown op {op[:40]!r}"), False
        if op != "hello" and self.version is None:
            return _error("no_hello", "the first request must be hello"), False
        try:
            return {"ok": True, **handler(request)}, op == "bye"
        except _Error as exc:
            return _error(exc.code, exc.message), False
        except Exception as exc:  # the implementation itself failed: a finding, reported with where
            where = traceback.extract_tb(exc.__traceback__)[-3:]
            at = "; ".join(f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno} in {f.name}" for f in where)
            self.close()  # its state is unknown now: the next step needs a reset
            return _error("internal", f"{type(exc).__name__}: {exc} (at {at})"), False

    def _op_hello(self, request: dict) -> dict:
        versions = request.get("versions")
        if not isinstance(versions, list) or VERSION not in versions:
            raise _Error(
                "unsupported_version",
                f"this implementation speaks version {VERSION} only, asked for {str(versions)[:40]}",
            )
        self.version = VERSION
        return {
            "version": VERSION,
            "implementation": IMPLEMENTATION,
            "protocols": list(VARIANTS),
            "features": ["snapshot"],
        }

    def _op_reset(self, request: dict) -> dict:
        protocol, config = request.get("protocol"), request.get("config", {})
        if protocol not in VARIANTS:
            raise _Error(
                "unsupported_protocol", f"protocol: {str(protocol)[:40]!r} is not one of {', '.join(VARIANTS)}"
            )
        if not isinstance(config, dict):
            raise _Error("bad_config", "config: expected an object")
        try:
            cluster = cluster_config(protocol, config)
        except ValueError as exc:
            raise _Error("bad_config", str(exc)) from None
        self.close()
        self.driver = SimDriver(cluster, self.cluster_factory)
        self._reset, self._taken, self._snapshots = (protocol, config), [], []
        return {}

    def close(self) -> None:
        if self.driver is not None:
            self.driver.close()
            self.driver = None

    def _need_driver(self) -> SimDriver:
        if self.driver is None:
            raise _Error("no_reset", "no cluster: reset first")
        return self.driver

    def _op_step(self, request: dict) -> dict:
        driver = self._need_driver()
        try:
            name, values = parse_step(request.get("step"), driver.cluster.config.replicas)
        except BadStep as exc:
            raise _Error("bad_step", str(exc)) from None
        refused, outputs = driver.step(name, values)
        if refused is not None:
            return {"refused": refused, "outputs": []}
        self._taken.append((name, values))
        return {"refused": None, "outputs": outputs, "state": driver.report.state()}

    def _op_state(self, request: dict) -> dict:
        return {"state": self._need_driver().report.state()}

    def _op_snapshot(self, request: dict) -> dict:
        """The simulation is deterministic: a snapshot is the steps taken since the reset, and a
        restore replays them on a new cluster."""
        self._need_driver()
        self._snapshots.append((self._reset, len(self._taken)))
        return {"snapshot": len(self._snapshots) - 1}

    def _op_restore(self, request: dict) -> dict:
        token = request.get("snapshot")
        if type(token) is not int or not 0 <= token < len(self._snapshots):
            raise _Error("bad_request", f"snapshot: {str(token)[:40]!r} is not a snapshot of this reset")
        reset, length = self._snapshots[token]
        taken, snapshots = self._taken[:length], self._snapshots
        self._op_reset({"protocol": reset[0], "config": reset[1]})
        for name, values in taken:
            self.driver.step(name, values)
        self._taken, self._snapshots = taken, snapshots
        return {}

    def _op_bye(self, request: dict) -> dict:
        return {}


def _error(code: str, message: str) -> dict:
    return {"ok": False, "error": code, "message": message}


def encode(answer: dict) -> bytes:
    return json.dumps(answer, separators=(",", ":")).encode() + b"\n"


def serve(lines: Iterable[bytes], out: BinaryIO, cluster_factory=None) -> None:
    """Answer each request line on ``out`` until ``bye`` or the end of ``lines``."""
    session = Session(cluster_factory)
    try:
        for line in lines:
            if not line.strip():
                continue
            answer, done = session.answer(line)
            out.write(encode(answer))
            out.flush()
            if done:
                return
    finally:
        session.close()
