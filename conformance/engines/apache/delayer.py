"""Latency on a link, where the kernel has no netem: the packets an iptables ``NFQUEUE`` rule sends
to a queue are let through (an ``NF_ACCEPT`` verdict) ``ms`` milliseconds after they were queued, in
the order they came. ``netns`` runs one in the sending node's namespace per delayed link::

    python -m isrcheck.conformance.engines.apache.delayer QUEUE MS

It speaks nfnetlink_queue itself (a netlink socket of the namespace it runs in): binds the queue,
asks for packet metadata only, and fails open (a full queue lets packets pass, not drops them). It
prints ``ready`` once bound. On SIGTERM it lets every packet it still holds through, in order, and
exits 0; if it dies, the kernel drops what it held and TCP retransmits (the rule's
``--queue-bypass`` lets later packets pass while no one listens). Needs CAP_NET_ADMIN.
"""

from __future__ import annotations

import errno
import itertools
import select
import signal
import socket
import struct
import sys
import time
from collections import deque

NETLINK_NETFILTER = 12
NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET, NFQNL_MSG_VERDICT, NFQNL_MSG_CONFIG = 0, 1, 2
NLMSG_ERROR = 2
NLM_F_REQUEST, NLM_F_ACK = 1, 4
NFQA_CFG_CMD, NFQA_CFG_PARAMS, NFQA_CFG_QUEUE_MAXLEN, NFQA_CFG_MASK, NFQA_CFG_FLAGS = 1, 2, 3, 4, 5
NFQNL_CFG_CMD_BIND, NFQNL_COPY_META, NFQA_CFG_F_FAIL_OPEN = 1, 1, 1
NFQA_PACKET_HDR, NFQA_VERDICT_HDR = 1, 2
NF_ACCEPT = 1
QUEUE_MAXLEN = 65_536  # packets held at once (beyond it the queue fails open)
_NLMSG = struct.Struct("=IHHII")  # length, type, flags, sequence, port id (host order)
_NLATTR = struct.Struct("=HH")  # length, type (host order); attribute values are big-endian


class QueueError(Exception):
    """The queue could not be bound or answered (the kernel's errno in words)."""


def _attr(kind: int, data: bytes) -> bytes:
    raw = _NLATTR.pack(_NLATTR.size + len(data), kind) + data
    return raw + b"\0" * (-len(raw) % 4)


def _attrs(data: bytes):
    """(type, value) of each netlink attribute in ``data``."""
    at = 0
    while at + _NLATTR.size <= len(data):
        length, kind = _NLATTR.unpack_from(data, at)
        if length < _NLATTR.size:
            return
        yield kind & 0x3FFF, data[at + _NLATTR.size : at + length]
        at += (length + 3) & ~3


class NfQueue:
    """One bound nfnetlink queue: ``packets()`` reads the ids of those queued, ``accept(id)`` lets
    one through."""

    def __init__(self, queue: int) -> None:
        self.queue = queue
        self._seq = itertools.count(1)
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.sock.bind((0, 0))
        flags = struct.pack("!I", NFQA_CFG_F_FAIL_OPEN)
        for attrs in (
            [(NFQA_CFG_CMD, struct.pack("!BxH", NFQNL_CFG_CMD_BIND, 0))],
            [
                (NFQA_CFG_PARAMS, struct.pack("!IB", 0, NFQNL_COPY_META)),
                (NFQA_CFG_QUEUE_MAXLEN, struct.pack("!I", QUEUE_MAXLEN)),
                (NFQA_CFG_MASK, flags),
                (NFQA_CFG_FLAGS, flags),
            ],
        ):
            self._send(NFQNL_MSG_CONFIG, attrs, NLM_F_ACK)
            self._acked()

    def _send(self, kind: int, attrs, flags: int = 0) -> None:
        body = struct.pack("=BBH", socket.AF_UNSPEC, 0, socket.htons(self.queue))
        body += b"".join(_attr(k, v) for k, v in attrs)
        header = _NLMSG.pack(_NLMSG.size + len(body), NFNL_SUBSYS_QUEUE << 8 | kind, NLM_F_REQUEST | flags, 0, 0)
        self.sock.send(header + body)

    def _acked(self) -> None:
        for kind, payload in self._messages(self.sock.recv(65_536)):
            if kind == NLMSG_ERROR:
                code = -struct.unpack_from("=i", payload)[0]
                if code:
                    raise QueueError(f"queue {self.queue}: {errno.errorcode.get(code, code)} ({code})")
                return
        raise QueueError(f"queue {self.queue}: no answer to the configuration")

    @staticmethod
    def _messages(data: bytes):
        at = 0
        while at + _NLMSG.size <= len(data):
            length, kind, _flags, _seq, _port = _NLMSG.unpack_from(data, at)
            if length < _NLMSG.size:
                return
            yield kind, data[at + _NLMSG.size : at + length]
            at += (length + 3) & ~3

    def packets(self) -> list[int]:
        """The ids of the packets one read brought (none: an error or another message)."""
        try:
            data = self.sock.recv(1 << 20)
        except OSError as exc:
            if exc.errno == errno.ENOBUFS:  # messages lost: the packets wait until the queue unbinds
                return []
            raise
        ids = []
        for kind, payload in self._messages(data):
            if kind == NFNL_SUBSYS_QUEUE << 8 | NFQNL_MSG_PACKET:
                for attr, value in _attrs(payload[4:]):
                    if attr == NFQA_PACKET_HDR:
                        ids.append(struct.unpack_from("!I", value)[0])
        return ids

    def accept(self, packet_id: int) -> None:
        self._send(NFQNL_MSG_VERDICT, [(NFQA_VERDICT_HDR, struct.pack("!II", NF_ACCEPT, packet_id))])


def run(queue: int, ms: int) -> int:
    nfq = NfQueue(queue)
    held: deque[tuple[float, int]] = deque()  # (when it may pass, packet id), in arrival order
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    print("ready", flush=True)
    while not stopping:
        now = time.monotonic()
        while held and held[0][0] <= now:
            nfq.accept(held.popleft()[1])
        wait = max(0.0, held[0][0] - now) if held else 1.0
        try:
            readable, _, _ = select.select([nfq.sock], [], [], wait)
        except InterruptedError:
            continue
        if readable:
            arrived = time.monotonic() + ms / 1000
            held.extend((arrived, packet_id) for packet_id in nfq.packets())
    while held:
        nfq.accept(held.popleft()[1])
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or not all(a.isdigit() for a in args) or not 0 <= int(args[0]) <= 65_535:
        print("usage: delayer QUEUE MS (a queue number 0..65535, a latency in ms)", file=sys.stderr)
        return 2
    try:
        return run(int(args[0]), int(args[1]))
    except (OSError, QueueError) as exc:
        print(f"delayer: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
