"""Each node of a local cluster in its own network namespace, so that chosen links can be cut.

The soak's ``partition`` fault needs real network isolation between JVM processes on one machine.
A run's layout, with ``N`` its own /24 of 10.213.0.0/16::

    root namespace               switch namespace isrk-N         node namespaces isrk-N-<node>
    isrk-N 10.213.N.1  <-veth->  uplink - br0 - n0  <-veth->  eth0 10.213.N.2   (first node)
    (clients, the harness)                  `- n1  <-veth->  eth0 10.213.N.3   (second node) ...

* A node's processes run in its namespace (argv prefixed with ``exec_prefix(node)``) and bind to
  its address. Clients stay in the root namespace and reach every node at its address; a partition
  between nodes leaves them connected unless a plan also cuts ``(node, CLIENTS)``.
* A cut is an nftables DROP on input in the namespaces of both ends (a table ``inet isrcheck`` of
  our own, with a set of cut-off source addresses): silent, as in Jepsen's iptables nemesis, so TCP
  sees timeouts, not resets, and established connections stop delivering. Input only: a DROP on
  output is seen by the sender's own kernel (a UDP send fails with EPERM), not lost on the way.
  The rules live and die with the namespaces: the host's firewall is never touched, and a killed
  run leaves no rule behind.
* A hold (``hold(src, dst, port, api_key)``) keeps one kind of Kafka request from one node to
  another's port from arriving while every other segment flows: a rule in the receiver's
  namespace drops the TCP segments from the sender's address to that port whose payload starts
  with a request of that API key (``@ih,32,16``: the two bytes after the request's 4-byte size),
  counting them (``held``); the sender's TCP retransmits them until ``release`` deletes the rule,
  and a rule behind it counts those that pass (``delivered``). ``rearm`` puts the drop back once
  the held request passed, so that later ones are held again.
* A delayed link (``delay(a, b, ms)``) has ``ms`` of latency both ways: in each end's namespace an
  iptables ``NFQUEUE`` rule on output sends the packets for the other end to a queue of their own,
  which a ``delayer`` process of that namespace lets through ``ms`` later, in order (netem would do
  it, but not every kernel has it; iptables' nf_tables back end puts the rule in a table ``ip
  filter`` of the namespace). The packets wait outside the sending process: a paused or killed
  sender's packets still arrive. ``undelay`` deletes the rules and stops the delayers, which let
  what they hold through; the namespaces take both with them at teardown.
* The bridge has a namespace of its own: where br_netfilter is active (built in on some kernels,
  loaded by Docker, which also sets the FORWARD policy to DROP) bridged frames go through the
  bridge's namespace's iptables, which in the root namespace may drop them; in ours they are empty.
* Each run registers itself (owner pid and start time, names, subnet) under ``REGISTRY`` holding a
  lock, before it creates anything, and takes the next /24 (in turn, so that a name or address is
  not reused soon after) that no registered run holds and no route overlaps: concurrent runs
  (pytest-xdist workers) never share one, and ``cleanup_stale`` deletes exactly what runs whose
  owner died left behind.

Needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN) and the Debian packages iproute2 and nftables (delays: iptables
too). IPv4 only.
"""

from __future__ import annotations

import fcntl
import ipaddress
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
from contextlib import contextmanager, suppress
from pathlib import Path

from isrcheck.conformance.vocabulary import UsageError

PREFIX = "isrk-"
SUBNETS = ipaddress.ip_network("10.213.0.0/16")
REGISTRY = Path("/run/isrcheck/netns")
CLIENTS = "clients"  # the root namespace, as one end of a cut: cut(node, CLIENTS)
NEED_ROOT = "network namespaces need root (CAP_SYS_ADMIN): run as root or use faults without partition"
_PACKAGES = {"ip": "iproute2", "nft": "nftables"}
DELAYER_START_S = 30.0
_NODE = re.compile(r"[A-Za-z0-9_.-]{1,32}\Z")
_OCTET = re.compile(re.escape(PREFIX) + r"(\d+)(?:-|\Z)")
_CAP_NET_ADMIN, _CAP_SYS_ADMIN = 12, 21
_RULES = """table inet isrcheck {
    set cut { type ipv4_addr; }
    chain input { type filter hook input priority 0; policy accept; ip saddr @cut drop; }
}
"""


class NetnsError(UsageError):
    """A network namespace could not be made, changed or removed; the message says what to do."""


def _failed(argv, stderr: str) -> NetnsError:
    lines = stderr.strip().splitlines()
    return NetnsError(f"`{' '.join(argv)}` failed: {lines[-1] if lines else 'no message'}")


def _run(*argv: str, stdin: str | None = None) -> str:
    try:
        done = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise NetnsError(_not_found(argv[0])) from None
    if done.returncode:
        raise _failed(argv, done.stderr)
    return done.stdout


def _run_all(commands: list[tuple[list[str], str | None]]) -> None:
    """The commands at once (one per namespace, so a partition lands everywhere together)."""
    started = [
        (
            argv,
            stdin,
            subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True),
        )
        for argv, stdin in commands
    ]
    errors = []
    for argv, stdin, process in started:
        stderr = process.communicate(stdin, timeout=60)[1]
        if process.returncode:
            errors.append(_failed(argv, stderr))
    if errors:
        raise errors[0]


def _not_found(tool: str) -> str:
    return f"`{tool}` not found on PATH: install the Debian package {_PACKAGES[tool]} (or put /usr/sbin on PATH)"


def _in(namespace: str, *argv: str) -> list[str]:
    return ["ip", "netns", "exec", namespace, *argv]


def _missing() -> str | None:
    """Why namespaces cannot be made here, from the tools and privileges alone; None if they can."""
    for tool in _PACKAGES:
        if shutil.which(tool) is None:
            return _not_found(tool)
    caps = _capabilities()
    if not (caps >> _CAP_SYS_ADMIN & 1 and caps >> _CAP_NET_ADMIN & 1):
        return NEED_ROOT
    return None


def _capabilities() -> int:
    """This process's effective capabilities, a bit mask."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1], 16) for line in status.splitlines() if line.startswith("CapEff:")), 0)


@contextmanager
def _registry_lock():
    REGISTRY.mkdir(parents=True, exist_ok=True)
    with open(REGISTRY / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when closed, or when its holder dies
        yield


def available() -> str | None:
    """None if network namespaces and nftables work here, else why not (one line)."""
    reason = _missing()
    if reason:
        return reason
    probe = f"{PREFIX}probe-{os.getpid()}"
    try:
        with _registry_lock():
            try:
                _run("ip", "netns", "add", probe)
                _run(*_in(probe, "nft", "-f", "-"), stdin=_RULES)
            finally:
                _delete_namespaces([probe])
    except (NetnsError, OSError) as e:
        return str(e)
    return None


def _namespaces() -> list[str]:
    return [line.split()[0] for line in _run("ip", "netns", "list").splitlines() if line.strip()]


def _links() -> list[str]:
    return [link["ifname"] for link in json.loads(_run("ip", "-j", "link", "show") or "[]")]


def _delete_namespaces(names: list[str]) -> list[str]:
    """Deletes those of ``names`` that exist, killing the processes left inside; returns them."""
    gone = [name for name in _namespaces() if name in names]
    for name in gone:
        for pid in _run("ip", "netns", "pids", name).split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
        _run("ip", "netns", "del", name)
    return gone


def _started(pid: int) -> int | None:
    """The start time of live process ``pid`` (to tell it from a later one with its pid), or None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return None if fields[0] in "ZX" else int(fields[19])


def cleanup_stale() -> list[str]:
    """Deletes every ``isrk-`` namespace and link no live run registered (those of runs whose owner
    died, and any half-made one), and their registry entries; returns the names deleted."""
    if _missing():
        return []
    with _registry_lock():
        live, dead = set(), []
        for path in REGISTRY.glob("*.json"):
            try:
                entry = json.loads(path.read_text())
                alive = _started(entry["owner"]) == entry["owner_start"]
            except (OSError, ValueError, KeyError, TypeError):
                alive = False
            if alive:
                live |= {entry["uplink"], *entry["namespaces"]}
            else:
                dead.append(path)
        removed = [link for link in _links() if link.startswith(PREFIX) and link not in live]
        for link in removed:
            _run("ip", "link", "del", link)
        removed += _delete_namespaces([n for n in _namespaces() if n.startswith(PREFIX) and n not in live])
        for path in dead:
            path.unlink(missing_ok=True)
        return removed


def hold_rule(address: str, port: int, api_key: int, counter: str, verdict: str = "drop") -> str:
    """The nftables rule matching the TCP segments from ``address`` to ``port`` whose payload starts
    a Kafka request of ``api_key`` (a request is its 4-byte size, then its 2-byte API key), counted
    in the named ``counter``; ``verdict`` ``drop``, or ``""`` to count and go on."""
    return f"ip saddr {address} tcp dport {port} @ih,32,16 {api_key:#x} counter name {counter} {verdict}".strip()


class NodeNetwork:
    """The namespaces, links and cuts of one run's nodes (names: strings or ints); a context manager
    (``with NodeNetwork(...) as net``: set up, then torn down)."""

    def __init__(self, run_name: str, nodes: list, state_dir: Path):
        names = [str(node) for node in nodes]
        bad = [name for name in names if not _NODE.match(name) or name == CLIENTS]
        if bad or not names or len(set(names)) < len(names) or len(names) > 250:
            raise NetnsError(
                f"nodes must be 1 to 250 distinct names of up to 32 letters, digits, '.', '_' "
                f"or '-', and none {CLIENTS!r}: got {names}"
            )
        self.run_name, self.nodes, self.state_dir = run_name, list(nodes), Path(state_dir)
        self._by_name = dict(zip(names, nodes))
        self.subnet: ipaddress.IPv4Network | None = None
        self.addresses: dict = {}
        self._cut: set[frozenset] = set()
        # (src, dst, port, api key) -> [counter index, handle of the drop rule (None: released), delivered at release]
        self._holds: dict[tuple, list] = {}
        self._hold_count = 0
        self._delays: dict[frozenset, int] = {}  # link -> ms
        self._delayers: dict[tuple, subprocess.Popen] = {}  # (sending node, receiving node) -> its delayer

    # names, addresses

    @property
    def _base(self) -> str:
        """``isrk-N``: the switch namespace, and the root namespace's link to it."""
        return f"{PREFIX}{self._ready().network_address.packed[2]}"

    def namespace(self, node) -> str:
        """The namespace of ``node``: ``isrk-N-<node>``."""
        return f"{self._base}-{self._node(node)}"

    @property
    def client_address(self) -> str:
        """The root namespace's address on the nodes' subnet: clients' connections come from it."""
        return str(self._ready().network_address + 1)

    def exec_prefix(self, node) -> list[str]:
        """The argv prefix that runs a program in ``node``'s namespace."""
        return _in(self.namespace(node))

    def _ready(self) -> ipaddress.IPv4Network:
        if self.subnet is None:
            raise NetnsError("the node network is not set up: call setup() first")
        return self.subnet

    def _node(self, node):
        self._ready()
        if node == CLIENTS or str(node) not in self._by_name:
            raise NetnsError(f"{node!r} is not a node of this network: {self.nodes}")
        return self._by_name[str(node)]

    # lifecycle

    def setup(self) -> dict:
        """Makes the namespaces, bridge, links and rules; returns each node's address."""
        if self.subnet is not None:
            return dict(self.addresses)
        reason = _missing()
        if reason:
            raise NetnsError(reason)
        try:
            with _registry_lock():
                self.subnet = self._free_subnet()
                hosts = self.subnet.hosts()
                next(hosts)  # .1: the root namespace's
                self.addresses = {node: str(next(hosts)) for node in self.nodes}
                self._record()
            self._build()
        except BaseException:
            with suppress(NetnsError, OSError):
                self.teardown()
            raise
        return dict(self.addresses)

    def _free_subnet(self) -> ipaddress.IPv4Network:
        taken = {
            int(m[1])
            for name in [*(p.stem for p in REGISTRY.glob("*.json")), *_links(), *_namespaces()]
            if (m := _OCTET.match(name))
        }
        routes = [
            ipaddress.ip_network(route["dst"], strict=False)
            for route in json.loads(_run("ip", "-j", "-4", "route", "show", "table", "all") or "[]")
            if route.get("dst", "default") != "default"
        ]
        cursor = REGISTRY / ".next"  # taken in turn, so a name or address is not reused soon after
        subnets = list(SUBNETS.subnets(new_prefix=24))
        text = cursor.read_text().strip() if cursor.exists() else ""
        start = int(text) % len(subnets) if text.isdigit() else 0
        for subnet in subnets[start:] + subnets[:start]:
            octet = subnet.network_address.packed[2]
            if octet not in taken and not any(subnet.overlaps(r) for r in routes):
                cursor.write_text(f"{(octet + 1) % len(subnets)}\n")
                return subnet
        raise NetnsError(f"no free /24 left in {SUBNETS}: run cleanup_stale(), or delete the isrk- namespaces")

    def _record(self) -> None:
        switch = uplink = self._base
        entry = {
            "run": self.run_name,
            "owner": os.getpid(),
            "owner_start": _started(os.getpid()),
            "subnet": str(self.subnet),
            "uplink": uplink,
            "namespaces": [switch, *map(self.namespace, self.nodes)],
            "nodes": {str(node): address for node, address in self.addresses.items()},
        }
        for path in (REGISTRY / f"{switch}.json", self.state_dir / "netns.json"):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.with_suffix(".tmp").write_text(json.dumps(entry, indent=1) + "\n")
            path.with_suffix(".tmp").replace(path)

    def _build(self) -> None:
        switch = uplink = self._base
        spaces = [self.namespace(node) for node in self.nodes]
        _run("ip", "-batch", "-", stdin="".join(f"netns add {n}\n" for n in [switch, *spaces]))
        _run(
            "ip",
            "-batch",
            "-",
            stdin=f"link add {uplink} type veth peer name uplink netns {switch}\n"
            f"addr add {self.client_address}/24 dev {uplink}\n"
            f"link set {uplink} up\n",
        )
        _run(
            "ip",
            "-n",
            switch,
            "-batch",
            "-",
            stdin="link add br0 type bridge\nlink set br0 up\n"
            "link set uplink master br0 up\n"
            + "".join(
                f"link add n{i} type veth peer name eth0 netns {space}\nlink set n{i} master br0 up\n"
                for i, space in enumerate(spaces)
            ),
        )
        _run_all(
            [
                (
                    ["ip", "-n", space, "-batch", "-"],
                    f"link set lo up\naddr add {self.addresses[node]}/24 dev eth0\nlink set eth0 up\n",
                )
                for node, space in zip(self.nodes, spaces)
            ]
        )
        _run_all([(_in(space, "nft", "-f", "-"), _RULES) for space in spaces])

    def hold(self, src, dst, port: int, api_key: int) -> None:
        """Hold the requests of ``api_key`` that ``src`` sends to ``dst``'s ``port`` (see the module
        docstring); holding one already held changes nothing."""
        key = (self._node(src), self._node(dst), port, api_key)
        if key in self._holds:
            return
        index, self._hold_count = self._hold_count, self._hold_count + 1  # counter names never reused
        space = self.namespace(dst)
        for name in (f"held_{index}", f"delivered_{index}"):
            _run(*_in(space, "nft", "add", "counter", "inet", "isrcheck", name))
        _run(
            *_in(
                space,
                "nft",
                "add",
                "rule",
                "inet",
                "isrcheck",
                "input",
                *hold_rule(self.addresses[key[0]], port, api_key, f"delivered_{index}", "").split(),
            )
        )
        self._holds[key] = [index, None, 0]
        self._drop(key)

    def release(self, src, dst, port: int, api_key: int) -> None:
        """The held requests may pass (the sender's next retransmission delivers them)."""
        key = (self._node(src), self._node(dst), port, api_key)
        entry = self._holds[key]
        if entry[1] is not None:
            _run(
                *_in(self.namespace(dst), "nft", "delete", "rule", "inet", "isrcheck", "input", "handle", str(entry[1]))
            )
            entry[1], entry[2] = None, self.hold_counts(src, dst, port, api_key)[1]

    def rearm(self, src, dst, port: int, api_key: int) -> None:
        """Hold again the requests sent from now on (after a release)."""
        key = (self._node(src), self._node(dst), port, api_key)
        if self._holds[key][1] is None:
            self._drop(key)

    def hold_counts(self, src, dst, port: int, api_key: int) -> tuple[int, int]:
        """(segments dropped, segments passed) of the hold, both since it began."""
        key = (self._node(src), self._node(dst), port, api_key)
        index = self._holds[key][0]
        found = json.loads(
            _run(*_in(self.namespace(dst), "nft", "-j", "list", "counters", "table", "inet", "isrcheck"))
        )
        packets = {
            item["counter"]["name"]: item["counter"]["packets"]
            for item in found.get("nftables", [])
            if "counter" in item
        }
        return packets.get(f"held_{index}", 0), packets.get(f"delivered_{index}", 0)

    def delivered_since_release(self, src, dst, port: int, api_key: int) -> int:
        """Segments of the hold that passed since its last release (0 while it holds)."""
        key = (self._node(src), self._node(dst), port, api_key)
        entry = self._holds[key]
        return 0 if entry[1] is not None else self.hold_counts(src, dst, port, api_key)[1] - entry[2]

    def _drop(self, key) -> None:
        src, dst, port, api_key = key
        index = self._holds[key][0]
        echoed = _run(
            *_in(
                self.namespace(dst),
                "nft",
                "--echo",
                "--handle",
                "insert",
                "rule",
                "inet",
                "isrcheck",
                "input",
                *hold_rule(self.addresses[src], port, api_key, f"held_{index}").split(),
            )
        )
        found = re.search(r"# handle (\d+)", echoed)
        if found is None:
            raise NetnsError(f"nft gave no handle for the hold rule: {echoed.strip()!r}")
        self._holds[key][1] = int(found[1])

    def release_all(self) -> None:
        """Every hold ends (its rule deleted); the counters stay."""
        for src, dst, port, api_key in list(self._holds):
            self.release(src, dst, port, api_key)
        self._holds = {}

    def teardown(self) -> None:
        """Deletes the namespaces (killing what still runs in them), links, rules and registry
        entry; idempotent. The record in ``state_dir`` stays, for whoever reads the run."""
        if self.subnet is None:
            return
        self._stop_delayers(list(self._delayers))
        switch = uplink = self._base
        if uplink in _links():
            _run("ip", "link", "del", uplink)  # now: a namespace's own links go when the kernel frees it
        _delete_namespaces([switch, *map(self.namespace, self.nodes)])
        (REGISTRY / f"{switch}.json").unlink(missing_ok=True)
        self.subnet, self._cut, self._holds, self._delays = None, set(), {}, {}

    def __enter__(self) -> NodeNetwork:
        self.setup()
        return self

    def __exit__(self, *exc) -> None:
        self.teardown()

    # faults

    def _end(self, node):
        return CLIENTS if node == CLIENTS else self._node(node)

    def _link(self, a, b) -> frozenset:
        link = frozenset((self._end(a), self._end(b)))
        if len(link) != 2:
            raise NetnsError(f"a link joins two different ends: got {a!r} and {b!r}")
        return link

    def cut(self, a, b) -> None:
        """Drops every packet between ``a`` and ``b`` (nodes, or a node and ``CLIENTS``), both ways."""
        self._change("add", {self._link(a, b)})

    def isolate_from_clients(self, node) -> None:
        """Cuts ``node`` from the root namespace too (``heal(node, CLIENTS)`` undoes it)."""
        self.cut(node, CLIENTS)

    def partition(self, groups: list[list]) -> None:
        """Cuts every link between two groups (added to the cuts already made); nodes in no group,
        and clients unless a group names ``CLIENTS``, keep all their links."""
        ends = [[self._end(node) for node in group] for group in groups]
        flat = [end for group in ends for end in group]
        if len(set(flat)) < len(flat):
            raise NetnsError(f"a node is in two groups of the partition: {groups}")
        self._change(
            "add",
            {
                frozenset((a, b))
                for i, group in enumerate(ends)
                for other in ends[i + 1 :]
                for a in group
                for b in other
            },
        )

    def heal(self, a=None, b=None) -> None:
        """Restores the link ``a``-``b``; with only ``a``, every link of ``a``; with neither, all."""
        if a is None and b is None:  # every set emptied, whatever a failed change left in them
            _run_all(
                [
                    (_in(space, "nft", "flush", "set", "inet", "isrcheck", "cut"), None)
                    for space in map(self.namespace, self.nodes)
                ]
                if self.subnet
                else []
            )
            self._cut = set()
            return
        if b is None:
            end = self._end(a)
            links = {link for link in self._cut if end in link}
        else:
            links = {self._link(a, b)}
        self._change("delete", links)

    def delay(self, a, b, ms: int) -> None:
        """Gives the link between nodes ``a`` and ``b`` ``ms`` milliseconds of latency, both ways
        (replacing an earlier delay of it)."""
        link = self._link(a, b)
        if CLIENTS in link or not isinstance(ms, int) or not 1 <= ms <= 60_000:
            raise NetnsError(f"a delay joins two nodes, with 1..60000 ms: got {a!r}, {b!r}, {ms!r}")
        if shutil.which("iptables") is None:
            raise NetnsError("`iptables` not found on PATH: install the Debian package iptables")
        self.undelay(a, b)
        ends = tuple(link)
        try:
            for here, there in (ends, ends[::-1]):
                self._delayers[(here, there)] = self._delayer(here, there, ms)
                _run(*_in(self.namespace(here), "iptables", "-w", "-A", "OUTPUT", *self._queue_rule(there)))
        except BaseException:
            self._stop_delayers([key for key in self._delayers if set(key) == link])
            raise
        self._delays[link] = ms

    def undelay(self, a=None, b=None) -> None:
        """Ends the latency of the link ``a``-``b``; with only ``a``, of every link of ``a``; with
        neither, of all."""
        if a is None:
            links = set(self._delays)
        elif b is None:
            links = {link for link in self._delays if self._node(a) in link}
        else:
            links = {self._link(a, b)} & set(self._delays)
        for link in links:
            for here, there in (tuple(link), tuple(link)[::-1]):
                _run(*_in(self.namespace(here), "iptables", "-w", "-D", "OUTPUT", *self._queue_rule(there)))
            self._stop_delayers([(here, there) for here, there in self._delayers if {here, there} == link])
            del self._delays[link]

    def delays(self) -> dict[frozenset, int]:
        """The links delayed now (each a frozenset of its two nodes) -> ms."""
        return dict(self._delays)

    def _queue_rule(self, there) -> list[str]:
        """The iptables rule that queues the packets for ``there`` (its queue: its place + 1)."""
        queue = str(self.nodes.index(there) + 1)
        return ["-d", self.addresses[there], "-j", "NFQUEUE", "--queue-num", queue, "--queue-bypass"]

    def _delayer(self, here, there, ms: int) -> subprocess.Popen:
        queue = str(self.nodes.index(there) + 1)
        argv = [*self.exec_prefix(here), sys.executable, "-m", "isrcheck.conformance.engines.apache.delayer"]
        process = subprocess.Popen([*argv, queue, str(ms)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ready, _, _ = select.select([process.stdout], [], [], DELAYER_START_S)
        if not ready or process.stdout.readline().strip() != "ready":
            process.kill()
            error = process.communicate()[1].strip().splitlines()
            raise NetnsError(
                f"the delayer of {self.namespace(here)} did not start: {error[-1] if error else 'no message'}"
            )
        return process

    def _stop_delayers(self, keys: list) -> None:
        """SIGTERM (they let what they hold through), then wait; SIGKILL one that does not exit."""
        stopping = [self._delayers.pop(key) for key in keys if key in self._delayers]
        for process in stopping:
            process.terminate()
        for process in stopping:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            process.stdout.close()
            process.stderr.close()

    def cuts(self) -> set[frozenset]:
        """The links cut now, each a frozenset of its two ends (nodes, or a node and ``CLIENTS``)."""
        return set(self._cut)

    def _change(self, verb: str, links: set[frozenset]) -> None:
        links = {link for link in links if (link in self._cut) == (verb == "delete")}
        sources: dict[str, list[str]] = {}  # namespace -> addresses whose packets it drops
        for link in links:
            a, b = tuple(link)
            for here, there in ((a, b), (b, a)):
                if here != CLIENTS:
                    address = self.client_address if there == CLIENTS else self.addresses[there]
                    sources.setdefault(self.namespace(here), []).append(address)
        _run_all(
            [
                (_in(space, "nft", verb, "element", "inet", "isrcheck", "cut", "{ " + ", ".join(found) + " }"), None)
                for space, found in sources.items()
            ]
        )
        self._cut = self._cut - links if verb == "delete" else self._cut | links
