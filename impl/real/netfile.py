"""The net file: the links a cluster of real processes has cut and the requests it holds, which
every node polls (``node``'s ``--net-file``) and applies to its ``TcpTransport``.

The file is one JSON object::

    {"cut": [[0, 1], [0, 3000]], "hold": [[0, 3000, "alter_partition", 0]], "delay": [[1, 2, 300]],
     "groups": [[0], [1, 3000]]}

``cut`` lists the pairs of node ids (brokers, and the controller as 3000) whose link is cut, both
ways. ``hold`` lists ``[from, to, request, released]``: the requests of that kind (a Kafka API
key's name, ``alter_partition``, ``fetch``, ...) that node ``from`` sends to node ``to`` wait in
order inside ``from``'s transport instead of going out; the first ``released`` of them have been
let through (a count that only grows: releasing the requests held so far keeps holding later ones,
as a leader's next AlterPartition). An entry that goes away sends every request it still held.
``delay`` lists ``[a, b, ms]``: the link between nodes ``a`` and ``b`` has ``ms`` milliseconds of
latency (1..MAX_DELAY_MS), both ways: every frame each sends the other is handed over ``ms`` after
it arrived, in order (``TcpTransport.set_delays``); a node's links are delayed by naming each.
``groups`` is for people and is not read. A missing file, or ``{"cut": []}``, cuts, holds and delays
nothing. Write it atomically (a temporary file renamed over it), as ``write_net_file`` does.

Each node that holds requests says how many (``held``) and how many of them it sent on
(``delivered``) in its status file beside the net file, ``net-held-<node>.json``
(``held_status_path``): ``{"hold": [[from, to, request, held, delivered], ...]}``, rewritten
atomically whenever a count changes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from dataclasses import dataclass, field

from ..protocol import ApiKey

NET_POLL_S = 0.1  # how often a node looks at its --net-file
MAX_DELAY_MS = 60_000  # a link's latency in the net file, at most (beyond it, cut the link)

_log = logging.getLogger("isrcheck.node")


@dataclass
class NetSpec:
    """What the net file says to one node: the peers its links are cut from, and the requests it
    holds, ``(to, api_key) -> released``."""

    cut: set[int] = field(default_factory=set)
    holds: dict[tuple[int, int], int] = field(default_factory=dict)
    delays: dict[int, int] = field(default_factory=dict)  # peer -> ms of latency on the link to it


def cut_pairs(groups) -> list[list[int]]:
    """Every pair of nodes of different ``groups`` (each an iterable of node ids), smaller id first."""
    groups = [sorted({int(n) for n in g}) for g in groups]
    return sorted([min(a, b), max(a, b)] for i, g in enumerate(groups) for h in groups[i + 1 :] for a in g for b in h)


def write_net_file(path: str, groups=(), *, cut=None, hold=(), delay=()) -> None:
    """Write the net file atomically: the links between nodes of different ``groups`` cut, and the
    pairs ``cut``; the requests ``hold`` held (``[from, to, request, released]`` entries); the links
    ``delay`` delayed (``[a, b, ms]``); nothing given: every link healed, nothing held or delayed.
    Each write gets a modification time after the previous one's, so that a node's ``stat`` sees
    every change."""
    groups = [sorted({int(n) for n in g}) for g in groups]
    pairs = {tuple(p) for p in cut_pairs(groups)} | {(min(a, b), max(a, b)) for a, b in (cut or ())}
    temp = path + ".tmp"
    with open(temp, "w", encoding="utf-8") as f:
        doc = {"cut": sorted(map(list, pairs)), "hold": [list(h) for h in hold], "delay": [list(d) for d in delay]}
        json.dump({**doc, "groups": groups}, f)
        f.write("\n")
    try:
        previous = os.stat(path).st_mtime_ns
    except FileNotFoundError:
        previous = 0
    now = max(time.time_ns(), previous + 1_000_000)
    os.utime(temp, ns=(now, now))
    os.replace(temp, path)


def _is_id(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def api_key_of(request: str) -> int:
    """The API key a request's name in the net file stands for; ValueError for an unknown name."""
    known = {k.name.lower(): int(k) for k in ApiKey}
    if request not in known:
        raise ValueError(f"unknown request {request!r} (requests: {', '.join(known)})")
    return known[request]


def read_net_file(path: str, node: int) -> NetSpec:
    """What the net file at ``path`` says to ``node`` (nothing if it is missing); ValueError naming
    the path and the entry if it is not a net file."""
    try:
        with open(path, encoding="utf-8") as f:
            spec = json.load(f)
    except FileNotFoundError:
        return NetSpec()
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not JSON ({exc})") from None
    pairs = spec.get("cut") if isinstance(spec, dict) else None
    if not isinstance(pairs, list) or not all(
        isinstance(p, list) and len(p) == 2 and all(map(_is_id, p)) for p in pairs
    ):
        raise ValueError(f'{path}: expected {{"cut": [[node, node], ...]}}')
    holds = spec.get("hold", [])
    if not isinstance(holds, list):
        raise ValueError(f"{path}: hold: expected a list of [from, to, request, released]")
    out = NetSpec(cut={b if a == node else a for a, b in pairs if node in (a, b) and a != b})
    for i, entry in enumerate(holds):
        if not (
            isinstance(entry, list)
            and len(entry) == 4
            and _is_id(entry[0])
            and _is_id(entry[1])
            and isinstance(entry[2], str)
            and _is_id(entry[3])
            and entry[3] >= 0
        ):
            raise ValueError(f"{path}: hold[{i}]: expected [from, to, request, released], got {entry!r}")
        try:
            key = api_key_of(entry[2])
        except ValueError as exc:
            raise ValueError(f"{path}: hold[{i}]: {exc}") from None
        if entry[0] == node:
            out.holds[(entry[1], key)] = entry[3]
    out.delays = _delays(path, spec.get("delay", []), node)
    return out


def _delays(path: str, entries, node: int) -> dict[int, int]:
    """The net file's ``delay`` entries of the links of ``node``: peer -> ms; ValueError naming the entry."""
    if not isinstance(entries, list):
        raise ValueError(f"{path}: delay: expected a list of [node, node, ms]")
    links: dict[frozenset, int] = {}
    for i, entry in enumerate(entries):
        if not (isinstance(entry, list) and len(entry) == 3 and all(map(_is_id, entry))):
            raise ValueError(f"{path}: delay[{i}]: expected [node, node, ms], got {entry!r}")
        a, b, ms = entry
        if a == b:
            raise ValueError(f"{path}: delay[{i}]: a link joins two different nodes, got {a} and {b}")
        if not 1 <= ms <= MAX_DELAY_MS:
            raise ValueError(f"{path}: delay[{i}]: expected a latency of 1..{MAX_DELAY_MS} ms, got {ms}")
        if frozenset((a, b)) in links:
            raise ValueError(f"{path}: delay[{i}]: the link {a}-{b} is delayed twice")
        links[frozenset((a, b))] = ms
    return {next(iter(link - {node})): ms for link, ms in links.items() if node in link}


def read_cut_peers(path: str, node: int) -> set[int]:
    """The peers ``node``'s links are cut from, as the net file at ``path`` says."""
    return read_net_file(path, node).cut


def held_status_path(net_file: str, node: int) -> str:
    return os.path.join(os.path.dirname(net_file), f"net-held-{node}.json")


def read_held_status(net_file: str, node: int) -> dict[tuple[int, int, str], tuple[int, int]]:
    """``(from, to, request) -> (held, delivered)`` as ``node``'s status file says (empty if none)."""
    try:
        with open(held_status_path(net_file, node), encoding="utf-8") as f:
            entries = json.load(f)["hold"]
        return {(a, b, request): (held, delivered) for a, b, request, held, delivered in entries}
    except FileNotFoundError:
        return {}
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{held_status_path(net_file, node)}: not a status file ({exc})") from None


class NetWatcher:
    """Applies the net file to ``transport`` for ``node``: ``poll`` once (a ``stat``, a read only
    when the file changed), ``run`` forever every NET_POLL_S; writes the node's held status when
    its counts change."""

    def __init__(self, path: str, node: int, transport) -> None:
        self.path, self.node, self.transport = path, node, transport
        self._signature: tuple | None = ()  # () never looked; None no file
        self._status: dict | None = None

    def poll(self, strict: bool = False) -> None:
        """Apply the file if it changed; ``strict`` (a node's first look, before it serves): a file
        that is no net file raises ValueError, instead of being logged and kept as it is."""
        self._apply(strict)
        self._report()

    def _apply(self, strict: bool = False) -> None:
        try:
            st = os.stat(self.path)
            signature = (st.st_ino, st.st_mtime_ns, st.st_size)
        except FileNotFoundError:
            signature = None
        if signature == self._signature:
            return
        self._signature = signature
        try:
            spec = read_net_file(self.path, self.node) if signature is not None else NetSpec()
        except (OSError, ValueError) as exc:  # kept as it is until the file changes again
            if strict:
                raise ValueError(f"net file {exc}") from None
            _log.warning("net file: %s", exc)
            return
        current = set(self.transport.cut_peers)
        if spec.cut != current:
            self.transport.heal(current - spec.cut)
            self.transport.cut(spec.cut - current)
            _log.info("net %s %s", "cut" if spec.cut else "healed", " ".join(map(str, sorted(spec.cut))))
        self.transport.set_holds({(self.node, to, key): released for (to, key), released in spec.holds.items()})
        if {peer: ms for (peer, _), ms in self.transport.delays.items()} != spec.delays:
            self.transport.set_delays({(peer, self.node): ms for peer, ms in spec.delays.items()})
            _log.info("net delayed %s", " ".join(f"{p}:{ms}ms" for p, ms in sorted(spec.delays.items())) or "nothing")

    def _report(self) -> None:
        counts = self.transport.hold_counts()
        status = sorted(
            [src, dst, ApiKey(key).name.lower(), held, delivered]
            for (src, dst, key), (held, delivered) in counts.items()
        )
        if status == self._status or (self._status is None and not status):
            return
        self._status = status
        path = held_status_path(self.path, self.node)
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            json.dump({"hold": status}, f)
        os.replace(path + ".tmp", path)

    async def run(self) -> None:
        while True:
            await asyncio.sleep(NET_POLL_S)
            self.poll()


__all__ = [
    "MAX_DELAY_MS",
    "NET_POLL_S",
    "NetSpec",
    "NetWatcher",
    "api_key_of",
    "cut_pairs",
    "held_status_path",
    "read_cut_peers",
    "read_held_status",
    "read_net_file",
    "write_net_file",
]
