"""A namespace per node: real namespaces, real processes, real packets dropped.

Three nodes each run a TCP echo server in their namespace (started with ``exec_prefix``); probes
connect from the root namespace, or from a node's namespace (a socket made by a thread that
entered it), and tell a connection that works from one that times out (a silent DROP) or is
refused (a reset)."""

from __future__ import annotations

import ctypes
import ipaddress
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from isrcheck.conformance.engines.apache import netns
from isrcheck.conformance.engines.apache.netns import CLIENTS, NetnsError, NodeNetwork, cleanup_stale
from isrcheck.conformance.vocabulary import UsageError

UNAVAILABLE = netns.available()
needs_netns = pytest.mark.skipif(UNAVAILABLE is not None, reason=f"network namespaces unavailable: {UNAVAILABLE}")
PORT = 7000
ECHO = """import socketserver, sys
class Echo(socketserver.BaseRequestHandler):
    def handle(self):
        while data := self.request.recv(4096):
            self.request.sendall(data)
socketserver.ThreadingTCPServer.allow_reuse_address = socketserver.ThreadingTCPServer.daemon_threads = True
socketserver.ThreadingTCPServer((sys.argv[1], int(sys.argv[2])), Echo).serve_forever()
"""
_libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNET = 0x40000000


def socket_in(namespace: str | None) -> socket.socket:
    """A TCP socket of ``namespace`` (None: the root namespace). A thread enters the namespace
    (setns changes only the calling thread's) and makes it; the socket stays in it for good."""
    if namespace is None:
        return socket.socket()
    made = []

    def enter():
        fd = os.open(f"/run/netns/{namespace}", os.O_RDONLY)
        try:
            if _libc.setns(fd, CLONE_NEWNET):
                made.append(OSError(ctypes.get_errno(), f"setns {namespace}"))
            else:
                made.append(socket.socket())
        finally:
            os.close(fd)

    thread = threading.Thread(target=enter)
    thread.start()
    thread.join()
    if isinstance(made[0], OSError):
        raise made[0]
    return made[0]


def probe(net: NodeNetwork, src, dst, timeout: float = 0.5) -> str:
    """``"ok"`` if ``src`` (a node, or CLIENTS for the root namespace) gets an echo from ``dst``,
    ``"timeout"`` if the connection or the echo times out, else the error's name."""
    with socket_in(None if src == CLIENTS else net.namespace(src)) as s:
        s.settimeout(timeout)
        try:
            s.connect((net.addresses[dst], PORT))
            s.sendall(b"ping")
            return "ok" if s.recv(4) == b"ping" else "short read"
        except TimeoutError:
            return "timeout"
        except OSError as e:
            return type(e).__name__


def start_echo_servers(net: NodeNetwork) -> list[subprocess.Popen]:
    servers = [
        subprocess.Popen(net.exec_prefix(node) + [sys.executable, "-c", ECHO, address, str(PORT)])
        for node, address in net.addresses.items()
    ]
    deadline = time.monotonic() + 10
    for node in net.addresses:
        while probe(net, CLIENTS, node, timeout=0.2) != "ok":
            assert time.monotonic() < deadline, f"the echo server of {node} did not come up"
            time.sleep(0.05)
    return servers


def namespaces() -> set[str]:
    return {
        line.split()[0]
        for line in subprocess.run(
            ["ip", "netns", "list"], capture_output=True, text=True, check=True
        ).stdout.splitlines()
    }


def links() -> set[str]:
    return {
        link["ifname"]
        for link in json.loads(
            subprocess.run(["ip", "-j", "link", "show"], capture_output=True, text=True, check=True).stdout
        )
    }


@pytest.fixture(scope="module")
def net(tmp_path_factory):
    """Nodes a, b and c, each running an echo server; every test starts and ends with no cut."""
    if UNAVAILABLE is not None:
        pytest.skip(f"network namespaces unavailable: {UNAVAILABLE}")
    with NodeNetwork("echo", ["a", "b", "c"], tmp_path_factory.mktemp("netns")) as network:
        servers = start_echo_servers(network)
        yield network
        for server in servers:
            server.kill()
            server.wait()


@pytest.fixture
def healed(net):
    net.heal()
    net.undelay()
    yield net
    net.heal()
    net.undelay()


def test_the_root_namespace_reaches_every_node_and_the_nodes_each_other(healed):
    net = healed
    assert net.setup() == net.addresses and len(set(net.addresses.values())) == 3
    assert net.client_address == str(net.subnet.network_address + 1)
    assert all(ipaddress.ip_address(address) in net.subnet for address in net.addresses.values())
    for node in "abc":
        assert probe(net, CLIENTS, node) == "ok"
        for other in "abc":
            assert probe(net, node, other) == "ok", (node, other)


def test_a_cut_silently_drops_new_and_established_connections_until_healed(healed):
    net = healed
    with socket_in(net.namespace("a")) as established:
        established.settimeout(2)
        established.connect((net.addresses["b"], PORT))
        established.sendall(b"1")
        assert established.recv(1) == b"1"

        net.cut("a", "b")
        assert net.cuts() == {frozenset("ab")}
        started = time.monotonic()
        assert probe(net, "a", "b") == "timeout" and probe(net, "b", "a") == "timeout"  # no reset: a DROP
        assert time.monotonic() - started >= 0.9
        assert probe(net, "a", "c") == probe(net, "c", "b") == "ok"
        assert probe(net, CLIENTS, "a") == probe(net, CLIENTS, "b") == "ok"
        established.settimeout(0.5)
        established.sendall(b"2")
        with pytest.raises(TimeoutError):
            established.recv(1)

        net.heal("b", "a")
        assert net.cuts() == set()
        established.settimeout(5)
        assert established.recv(1) == b"2"  # the retransmission gets through
        assert probe(net, "a", "b") == "ok"


def kafka_request(api_key: int, body: bytes = b"xy") -> bytes:
    """A frame that starts as a Kafka request does: its size, then its API key."""
    return (len(body) + 2).to_bytes(4, "big") + api_key.to_bytes(2, "big") + body


def test_the_hold_rule_matches_a_requests_api_key_after_its_size():
    assert (
        netns.hold_rule("10.213.5.2", 19094, 56, "held_0")
        == "ip saddr 10.213.5.2 tcp dport 19094 @ih,32,16 0x38 counter name held_0 drop"
    )
    assert netns.hold_rule("10.213.5.2", 19094, 73, "delivered_0", "").endswith("0x49 counter name delivered_0")


def test_a_hold_keeps_one_request_kind_on_one_link_until_released_then_holds_later_ones(healed):
    net = healed
    with socket_in(net.namespace("a")) as conn, socket_in(net.namespace("c")) as other:
        for s in (conn, other):
            s.settimeout(5)
            s.connect((net.addresses["b"], PORT))
        net.hold("a", "b", PORT, 56)
        conn.sendall(kafka_request(18))  # another request passes
        assert conn.recv(64) == kafka_request(18)
        other.sendall(kafka_request(56))  # so does the same request from another node
        assert other.recv(64) == kafka_request(56)
        conn.sendall(kafka_request(56, b"held"))
        conn.settimeout(1)
        with pytest.raises(TimeoutError):
            conn.recv(64)
        held, _ = net.hold_counts("a", "b", PORT, 56)
        assert held >= 1 and net.delivered_since_release("a", "b", PORT, 56) == 0
        net.release("a", "b", PORT, 56)
        conn.settimeout(10)
        assert conn.recv(64) == kafka_request(56, b"held")  # TCP's retransmission gets through
        assert net.delivered_since_release("a", "b", PORT, 56) >= 1
        net.rearm("a", "b", PORT, 56)  # later ones are held again
        conn.sendall(kafka_request(56, b"next"))
        conn.settimeout(1)
        with pytest.raises(TimeoutError):
            conn.recv(64)
        net.release_all()
        conn.settimeout(10)
        assert conn.recv(64) == kafka_request(56, b"next")


def test_a_partition_cuts_between_groups_not_within_nor_from_clients(healed):
    net = healed
    net.partition([["a"], ["b", "c"]])
    assert net.cuts() == {frozenset("ab"), frozenset("ac")}
    assert probe(net, "a", "b") == probe(net, "c", "a") == "timeout"
    assert probe(net, "b", "c") == probe(net, "c", "b") == "ok"
    assert all(probe(net, CLIENTS, node) == "ok" for node in "abc")
    net.heal("a")
    assert net.cuts() == set() and probe(net, "a", "c") == "ok"


def test_a_node_isolated_from_clients_still_reaches_the_other_nodes(healed):
    net = healed
    net.isolate_from_clients("c")
    assert net.cuts() == {frozenset(("c", CLIENTS))}
    assert probe(net, CLIENTS, "c") == "timeout"
    assert probe(net, "a", "c") == probe(net, "c", "b") == probe(net, CLIENTS, "a") == "ok"
    net.heal("c", CLIENTS)
    assert probe(net, CLIENTS, "c") == "ok"


def test_links_and_groups_name_nodes_of_the_network(healed):
    net = healed
    for bad in (
        lambda: net.cut("a", "z"),
        lambda: net.cut("a", "a"),
        lambda: net.partition([["a"], ["a", "b"]]),
        lambda: net.exec_prefix("z"),
    ):
        with pytest.raises(NetnsError):
            bad()
    assert net.cuts() == set()


def round_trip(net: NodeNetwork, src, dst) -> float:
    """Seconds an echo from ``src`` (a node or CLIENTS) to ``dst`` takes, on a connection made first."""
    with socket_in(None if src == CLIENTS else net.namespace(src)) as s:
        s.settimeout(10)
        s.connect((net.addresses[dst], PORT))
        began = time.monotonic()
        s.sendall(b"ping")
        assert s.recv(4) == b"ping"
        return time.monotonic() - began


def queue_rules(net: NodeNetwork, node) -> list[str]:
    rules = subprocess.run(net.exec_prefix(node) + ["iptables", "-w", "-S", "OUTPUT"], capture_output=True, text=True)
    return [line for line in rules.stdout.splitlines() if "NFQUEUE" in line]


def test_a_delayed_link_has_its_latency_both_ways_and_undelay_removes_it(healed):
    net = healed
    net.delay("a", "b", 150)
    assert net.delays() == {frozenset("ab"): 150}
    assert round_trip(net, "a", "b") >= 0.3 and round_trip(net, "b", "a") >= 0.3  # 150 ms each way
    assert round_trip(net, "a", "c") < 0.3 and round_trip(net, CLIENTS, "a") < 0.3  # other links keep theirs
    assert len(queue_rules(net, "a")) == len(queue_rules(net, "b")) == 1 and queue_rules(net, "c") == []
    delayers = list(net._delayers.values())
    assert len(delayers) == 2 and all(p.poll() is None for p in delayers)
    with socket_in(net.namespace("a")) as conn:  # what a delayer holds when it stops still arrives
        conn.settimeout(10)
        conn.connect((net.addresses["b"], PORT))
        conn.sendall(b"late")
        net.undelay("b")
        assert conn.recv(4) == b"late"
    assert net.delays() == {} and queue_rules(net, "a") == queue_rules(net, "b") == []
    assert [p.returncode for p in delayers] == [0, 0]


def test_delays_name_two_nodes_and_a_latency(healed):
    net = healed
    for bad in (
        lambda: net.delay("a", "a", 10),
        lambda: net.delay("a", CLIENTS, 10),
        lambda: net.delay("a", "z", 10),
        lambda: net.delay("a", "b", 0),
    ):
        with pytest.raises(NetnsError):
            bad()
    assert net.delays() == {} and net._delayers == {}


@needs_netns
def test_teardown_stops_the_delayers_and_their_rules_go_with_the_namespaces(tmp_path):
    net = NodeNetwork("slow", [1, 2], tmp_path)
    net.setup()
    made = {net.namespace(1), net.namespace(2)}
    net.delay(1, 2, 5_000)
    delayers = list(net._delayers.values())
    net.teardown()
    assert not made & namespaces() and all(p.poll() is not None for p in delayers)
    assert net.delays() == {}


@needs_netns
def test_teardown_leaves_nothing_and_twice_is_harmless(tmp_path):
    net = NodeNetwork("gone", [1, 2], tmp_path)
    net.setup()
    switch = net.namespace(1).rsplit("-", 1)[0]
    made = {net.namespace(1), net.namespace(2), switch}
    assert made <= namespaces() and switch in links() and (netns.REGISTRY / f"{switch}.json").exists()
    sleeper = subprocess.Popen(net.exec_prefix(1) + ["sleep", "60"])
    net.cut(1, 2)
    net.teardown()
    net.teardown()
    assert not made & namespaces() and not made & links()
    assert sleeper.wait(timeout=5) == -signal.SIGKILL  # what still ran inside was killed
    assert not (netns.REGISTRY / f"{switch}.json").exists()
    assert json.loads((tmp_path / "netns.json").read_text())["nodes"] == {"1": net.addresses[1], "2": net.addresses[2]}
    with pytest.raises(NetnsError, match="setup"):
        net.cut(1, 2)


@needs_netns
def test_two_networks_at_once_get_different_subnets(tmp_path):
    with NodeNetwork("one", ["a"], tmp_path / "one") as one, NodeNetwork("two", ["a"], tmp_path / "two") as two:
        assert one.subnet != two.subnet and not one.subnet.overlaps(two.subnet)
        assert one.namespace("a") != two.namespace("a")


KILLED_OWNER = """import subprocess, sys, time
from pathlib import Path
from isrcheck.conformance.engines.apache.netns import NodeNetwork
net = NodeNetwork("killed", ["a", "b"], Path(sys.argv[1]))
net.setup()
inside = subprocess.Popen(net.exec_prefix("a") + ["sleep", "600"])
print(net.namespace("a"), net.namespace("b"), inside.pid, flush=True)
time.sleep(600)
"""


@needs_netns
def test_cleanup_removes_what_a_killed_run_left_and_spares_live_ones(tmp_path):
    orphan = f"{netns.PREFIX}orphan-{os.getpid()}"  # a namespace no run registered: one half made
    with NodeNetwork("live", ["x"], tmp_path / "live") as live:
        owner = subprocess.Popen(
            [sys.executable, "-c", KILLED_OWNER, str(tmp_path / "killed")], stdout=subprocess.PIPE, text=True
        )
        a, b, inside = owner.stdout.readline().split()
        owner.kill()
        owner.wait()
        switch = a.rsplit("-", 1)[0]
        subprocess.run(["ip", "netns", "add", orphan], check=True)

        removed = cleanup_stale()  # (another run's cleanup, at once, may have taken some first)
        assert all(name.startswith(netns.PREFIX) for name in removed)
        assert not {a, b, switch, orphan} & namespaces() and switch not in links()
        assert not (netns.REGISTRY / f"{switch}.json").exists()
        assert not alive(int(inside))  # what the dead run left running in its namespace was killed
        live_switch = live.namespace("x").rsplit("-", 1)[0]
        assert {live.namespace("x"), live_switch} <= namespaces() and live_switch in links()


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in "ZX"
    except FileNotFoundError:
        return False


def test_errors_are_usage_errors_that_say_what_to_do(monkeypatch):
    assert issubclass(NetnsError, UsageError)
    with pytest.raises(NetnsError, match="distinct"):
        NodeNetwork("r", ["a", "a"], "x")
    with pytest.raises(NetnsError, match="clients"):
        NodeNetwork("r", ["a", CLIENTS], "x")
    monkeypatch.setattr(netns.shutil, "which", lambda tool: None if tool == "nft" else "/bin/" + tool)
    assert netns.available().startswith("`nft` not found on PATH: install the Debian package nftables")
    with pytest.raises(NetnsError, match="nftables"):
        NodeNetwork("r", ["a"], "x").setup()
    monkeypatch.undo()
    monkeypatch.setattr(netns, "_capabilities", lambda: 0)
    assert netns.available() == netns.NEED_ROOT


@needs_netns
def test_a_failing_command_shows_its_message():
    with pytest.raises(NetnsError, match=r"^`ip netns del isrk-never-made` failed: .*No such file"):
        netns._run("ip", "netns", "del", f"{netns.PREFIX}never-made")
