"""``DriverSut``: a system under test in another process, driven by the JSON-lines protocol of
docs/sut-protocol.md on its stdin/stdout (``--sut "COMMAND ARGS"``) or on a TCP connection
(``--sut tcp://HOST:PORT``).

One process (or connection) serves schedule after schedule: each run starts with ``reset``. What
goes wrong on the other side is a ``SutFailure`` naming it: ``crash`` (the process exited or the
connection closed; with the end of its stderr), ``hang`` (no answer within the timeout; the
process is killed), ``malformed`` (an answer that is not one JSON object of the protocol's form)
or ``error`` (it refused a request it must take). After a failure the process is stopped, and the
next ``reset`` starts a new one.
"""

from __future__ import annotations

import json
import os
import select
import shlex
import signal
import socket
import subprocess
import tempfile
import time

from isrcheck.conformance.core import sut_state
from isrcheck.conformance.core.sut import ImplFailure, SutFailure, SystemUnderTest
from isrcheck.model.alphabet import STEPS, shown

VERSIONS = [1]
_MAX_LINE = 64 * 1024 * 1024  # an answer longer than this is not the protocol's
# the first answer also waits for the process to start (an interpreter importing its code): a busy
# machine may take seconds, which is no hang of the implementation
STARTUP_TIMEOUT_S = 60.0


def wire_step(st) -> dict:
    """A step as the protocol carries it: every field, defaults included (docs/sut-protocol.md)."""
    return {"step": st.name, **dict(zip(STEPS[st.name].fields, st.field_values()))}


class DriverSut(SystemUnderTest):
    """``spec`` is a command line (run with its arguments, no shell) or ``tcp://HOST:PORT``;
    ``timeout_s`` bounds the wait for each answer (the first, hello, waits for the process to start
    too: at least ``STARTUP_TIMEOUT_S``). Started (and the version agreed) at once."""

    def __init__(self, spec: str, timeout_s: float = 10.0) -> None:
        super().__init__()
        self.spec, self.timeout_s = spec, timeout_s
        self.name = f"the system under test ({spec})"
        self._proc: subprocess.Popen | None = None
        self._sock: socket.socket | None = None
        self._stderr = None
        self._fd_in = self._fd_out = -1
        self._buffer = b""
        self._replicas = 0
        self._state: tuple | None = None
        self.hello: dict = {}
        self._start()

    # -- the connection -----------------------------------------------------------------------
    def _start(self) -> None:
        self._buffer = b""
        if self.spec.startswith("tcp://"):
            host, _, port = self.spec[len("tcp://") :].rpartition(":")
            try:
                self._sock = socket.create_connection((host, int(port)), timeout=self.timeout_s)
            except (OSError, ValueError) as exc:
                raise SutFailure("crash", f"cannot connect to {self.spec}: {exc}") from None
            self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._fd_in = self._fd_out = self._sock.fileno()
        else:
            try:
                argv = shlex.split(self.spec)
            except ValueError as exc:
                raise SutFailure("crash", f"cannot read the command {self.spec!r}: {exc}") from None
            if not argv:
                raise SutFailure("crash", "empty command")
            self._stderr = tempfile.TemporaryFile()
            try:
                self._proc = subprocess.Popen(
                    argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, bufsize=0
                )
            except OSError as exc:
                raise SutFailure("crash", f"cannot start {argv[0]!r}: {exc.strerror or exc}") from None
            self._fd_in, self._fd_out = self._proc.stdout.fileno(), self._proc.stdin.fileno()
        hello = self._call({"op": "hello", "versions": VERSIONS}, max(self.timeout_s, STARTUP_TIMEOUT_S))
        if hello.get("version") not in VERSIONS:
            self.close()
            raise SutFailure("malformed", f"hello: version {shown(hello.get('version'))} was not offered")
        self.hello = hello

    def close(self) -> None:
        if self._proc is not None:
            if self._proc.poll() is None:
                try:  # a polite end first: the process may clean up after itself
                    os.write(self._fd_out, b'{"op":"bye"}\n')
                    self._proc.wait(timeout=1.0)
                except (OSError, subprocess.TimeoutExpired):
                    self._proc.kill()
                    self._proc.wait()
            for stream in (self._proc.stdin, self._proc.stdout):
                stream.close()
            self._proc = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        self._fd_in = self._fd_out = -1

    def _running(self) -> bool:
        return self._sock is not None or (self._proc is not None and self._proc.poll() is None)

    def _failure(self, kind: str, detail: str) -> SutFailure:
        """Stop the process (its state is unknown) and describe what happened."""
        if self._proc is not None and kind == "hang":
            self._proc.send_signal(signal.SIGKILL)
        code = self._proc.wait() if self._proc is not None and kind in ("hang", "crash") else None
        if kind == "crash" and code is not None:
            detail += f" (exit code {code})"
        tail = self._stderr_tail()
        self.close()
        return SutFailure(kind, detail + (f"; its stderr ends with:\n{tail}" if tail else ""))

    def _stderr_tail(self, lines: int = 8) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0, os.SEEK_END)
        size = self._stderr.tell()
        self._stderr.seek(max(0, size - 4096))
        text = self._stderr.read().decode(errors="replace").strip()
        return "\n".join(text.splitlines()[-lines:])

    def _call(self, request: dict, timeout_s: float | None = None) -> dict:
        """Send one request and read its answer; an ``ok: false`` answer raises (``internal``:
        ImplFailure, the implementation failed taking a step; any other: SutFailure)."""
        line = json.dumps(request, separators=(",", ":")).encode() + b"\n"
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(self._fd_out, view) :]
        except OSError as exc:
            raise self._failure("crash", f"cannot send {request['op']}: {exc.strerror or exc}") from None
        answer = self._read_line(request["op"], self.timeout_s if timeout_s is None else timeout_s)
        try:
            doc = json.loads(answer)
        except ValueError as exc:
            raise self._failure(
                "malformed",
                f"{request['op']}: the answer is not JSON ({exc}): {shown(answer.decode(errors='replace'))}",
            ) from None
        if type(doc) is not dict or type(doc.get("ok")) is not bool:
            raise self._failure("malformed", f'{request["op"]}: the answer is not an object with "ok": {shown(doc)}')
        if not doc["ok"]:
            code, message = doc.get("error"), doc.get("message")
            if code == "internal":
                raise ImplFailure(f"{message}")
            raise self._failure("error", f"{request['op']} answered {shown(code)}: {shown(message, 300)}")
        return doc

    def _read_line(self, op: str, timeout_s: float) -> bytes:
        deadline = time.monotonic() + timeout_s
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line, self._buffer = self._buffer[:end], self._buffer[end + 1 :]
                return line
            if len(self._buffer) > _MAX_LINE:
                raise self._failure("malformed", f"{op}: an answer longer than {_MAX_LINE} bytes")
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._fd_in], [], [], left)[0]:
                raise self._failure("hang", f"{op}: no answer within {timeout_s:g} s")
            try:
                chunk = os.read(self._fd_in, 1 << 20)
            except OSError as exc:
                raise self._failure("crash", f"{op}: cannot read the answer: {exc.strerror or exc}") from None
            if not chunk:
                where = "closed the connection" if self._sock is not None else "exited"
                raise self._failure("crash", f"{op}: the system under test {where} without answering")
            self._buffer += chunk

    # -- the interface --------------------------------------------------------------------------
    def _reset(self, protocol: str, config) -> None:
        if not self._running():
            self.close()
            self._start()
        self._replicas, self._protocol = config.replicas, protocol
        self._state = None
        self._call({"op": "reset", "protocol": protocol, "config": config.to_json()})

    def _step(self, st) -> tuple[str | None, list[dict]]:
        doc = self._call({"op": "step", "step": wire_step(st)})
        refused = doc.get("refused")
        if refused is not None and type(refused) is not str:
            raise self._failure("malformed", f"step: refused is {shown(refused)}, not a string or null")
        try:
            outputs = sut_state.outputs(doc.get("outputs"))
        except SutFailure as exc:
            raise self._failure(exc.kind, f"step: {exc.detail}") from None
        if refused is not None:
            return refused, []
        if "state" not in doc:
            raise self._failure("malformed", "step: a step taken is answered with its state")
        self._state = doc["state"]
        return None, outputs

    def system_state(self) -> tuple:
        raw = self._state
        if raw is None:
            raw = self._call({"op": "state"}).get("state")
        try:
            return sut_state.system_state(raw, self._replicas, self._protocol)
        except SutFailure as exc:
            raise self._failure(exc.kind, f"step: {exc.detail}") from None

    def snapshot(self):
        if "snapshot" not in self.hello.get("features", ()):
            return super().snapshot()
        token = self._call({"op": "snapshot"}).get("snapshot")
        return ("native", token, tuple(self._taken))

    def restore(self, token) -> None:
        if not (isinstance(token, tuple) and token and token[0] == "native"):
            return super().restore(token)
        self._call({"op": "restore", "snapshot": token[1]})
        self._taken, self._state = list(token[2]), None
        return None
