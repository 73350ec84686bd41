"""Delayed links on isrcheck's own cluster: two real transports, the net file's ``delay`` applied by
each node's watcher; frames handed over no sooner than the link's latency, in order even when the
delay ends behind them, lost when the link is cut while they are delayed; the net file's ``delay``
errors (and a node that starts on a bad file exits 2 naming it); ProcessCluster's ``delay``,
``undelay`` and ``heal``."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import pytest

from isrcheck.impl.controller import CONTROLLER_ID
from isrcheck.impl.network import NodeEndpoint
from isrcheck.impl.protocol import ApiKey, BrokerHeartbeatRequest, BrokerHeartbeatResponse, Errors
from isrcheck.impl.real import TcpTransport
from isrcheck.impl.real.netfile import NetWatcher, read_net_file, write_net_file
from isrcheck.impl.real.processes import ProcessCluster
from isrcheck.impl.replication import ClusterConfig

DELAY_MS = 300


class Pair:
    """Nodes 1 and 2, each on its own transport watching one net file; node 2 answers heartbeats."""

    def __init__(self, tmp_path) -> None:
        loop = asyncio.get_running_loop()
        self.transports = {1: TcpTransport(loop), 2: TcpTransport(loop)}
        self.endpoints, self.got, self.answers, self.lost = {}, [], [], []
        for node, transport in self.transports.items():
            self.endpoints[node] = NodeEndpoint(node, transport)
            self.endpoints[node].handlers[ApiKey.BROKER_HEARTBEAT] = lambda src, h, req: (
                self.got.append((req.broker_epoch, time.monotonic())) or BrokerHeartbeatResponse(Errors.NONE, False)
            )
            transport.register(node, self.endpoints[node])
        self.transports[1].addresses[2] = self.transports[2].addresses[2]
        self.transports[2].addresses[1] = self.transports[1].addresses[1]
        self.net = str(tmp_path / "net.json")
        self.watchers = [NetWatcher(self.net, node, t) for node, t in self.transports.items()]

    def net_file(self, **kwargs) -> None:
        write_net_file(self.net, **kwargs)
        for watcher in self.watchers:
            watcher.poll()

    def heartbeat(self, epoch: int) -> float:
        self.endpoints[1].send_request(
            2,
            ApiKey.BROKER_HEARTBEAT,
            0,
            BrokerHeartbeatRequest(1, epoch),
            lambda resp: self.answers.append((epoch, time.monotonic())),
        )
        return time.monotonic()

    async def until(self, condition, seconds: float = 5) -> None:
        deadline = time.monotonic() + seconds
        while not condition():
            assert time.monotonic() < deadline, f"timed out: got {self.got}, answers {self.answers}"
            await asyncio.sleep(0.01)

    def close(self) -> None:
        for node, transport in self.transports.items():
            transport.unregister(node)


async def _delayed_in_order(tmp_path):
    pair = Pair(tmp_path)
    pair.heartbeat(1)
    await pair.until(lambda: len(pair.answers) == 1)  # connections open both ways
    pair.net_file(delay=[[2, 1, DELAY_MS]])
    assert pair.transports[2].delays == {(1, 2): DELAY_MS} and pair.transports[1].delays == {(2, 1): DELAY_MS}
    sent = pair.heartbeat(2)
    await pair.until(lambda: len(pair.answers) == 2)
    (_, received), (_, answered) = pair.got[1], pair.answers[1]
    assert received - sent >= DELAY_MS / 1000  # the request on the wire, then the response
    assert answered - received >= DELAY_MS / 1000
    pair.heartbeat(3)
    pair.net_file()  # the delay ends behind a delayed request: the next one waits its turn
    pair.heartbeat(4)
    await pair.until(lambda: len(pair.got) == 4)
    assert [epoch for epoch, _ in pair.got] == [1, 2, 3, 4] and pair.transports[2].delays == {}
    pair.close()


def test_a_delayed_link_hands_frames_over_after_its_latency_in_order(tmp_path):
    asyncio.run(asyncio.wait_for(_delayed_in_order(tmp_path), 20))


async def _cut_while_delayed(tmp_path):
    pair = Pair(tmp_path)
    pair.endpoints[1].connection_lost = lambda peer, correlation_id: pair.lost.append(peer)
    pair.net_file(delay=[[1, 2, 2_000]])
    pair.heartbeat(1)
    await pair.until(lambda: pair.transports[2]._incoming)  # the connection is up: the frame is on it
    await asyncio.sleep(0.2)
    pair.net_file(cut=[[1, 2]])
    await pair.until(lambda: pair.lost == [2])  # the request is lost, as on any broken link
    await asyncio.sleep(2.2)
    assert pair.got == [] and pair.answers == []
    pair.close()


def test_a_cut_loses_the_frames_its_link_delayed(tmp_path):
    asyncio.run(asyncio.wait_for(_cut_while_delayed(tmp_path), 20))


def test_the_net_file_names_each_end_its_delayed_links(tmp_path):
    path = str(tmp_path / "net.json")
    write_net_file(path, delay=[[0, 1, 250], [CONTROLLER_ID, 0, 40]])
    assert read_net_file(path, 0).delays == {1: 250, CONTROLLER_ID: 40}
    assert read_net_file(path, 1).delays == {0: 250} and read_net_file(path, 2).delays == {}


@pytest.mark.parametrize(
    "delay, message",
    [
        ({"0": 1}, r"delay: expected a list of \[node, node, ms\]"),
        ([[0, 1]], r"delay\[0\]: expected \[node, node, ms\], got \[0, 1\]"),
        ([[0, 1, "300"]], r"delay\[0\]: expected \[node, node, ms\]"),
        ([[1, 1, 300]], r"delay\[0\]: a link joins two different nodes, got 1 and 1"),
        ([[0, 1, 0]], r"delay\[0\]: expected a latency of 1..60000 ms, got 0"),
        ([[0, 1, 10], [1, 0, 20]], r"delay\[1\]: the link 1-0 is delayed twice"),
    ],
)
def test_a_bad_delay_is_refused_naming_the_file_and_the_entry(tmp_path, delay, message):
    path = tmp_path / "net.json"
    path.write_text(json.dumps({"cut": [], "delay": delay}))
    with pytest.raises(ValueError, match=r"net.json: " + message):
        read_net_file(str(path), 0)


def test_a_node_started_on_a_bad_net_file_exits_2_naming_it(tmp_path):
    path = tmp_path / "net.json"
    path.write_text(json.dumps({"cut": [], "delay": [[0, 1, -5]]}))
    done = subprocess.run(
        [sys.executable, "-m", "isrcheck.impl.real.node", "--node", "0", "--config", "{}", "--ports", '{"0": 0}']
        + ["--data-dir", str(tmp_path / "d"), "--net-file", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"node 0: net file {path}: delay[0]: expected a latency of 1..60000 ms, got -5"
    )


def test_process_cluster_delay_undelay_heal(tmp_path):
    cluster = ProcessCluster(ClusterConfig(protocol="kip-320", replicas=3, min_insync_replicas=1), str(tmp_path))
    for peer in (1, 2, CONTROLLER_ID):  # a node's links
        cluster.delay(0, peer, 200)
    cluster.delay(2, 1, 50)
    assert read_net_file(cluster.net_file, 0).delays == {1: 200, 2: 200, CONTROLLER_ID: 200}
    assert read_net_file(cluster.net_file, 1).delays == {0: 200, 2: 50}
    cluster.undelay(0, 2)
    assert read_net_file(cluster.net_file, 0).delays == {1: 200, CONTROLLER_ID: 200}
    cluster.undelay(0)
    assert read_net_file(cluster.net_file, 0).delays == {} and read_net_file(cluster.net_file, 1).delays == {2: 50}
    cluster.heal()
    assert read_net_file(cluster.net_file, 1).delays == {}
    with pytest.raises(ValueError, match="unknown nodes"):
        cluster.delay(0, 7, 10)
    with pytest.raises(ValueError, match="1..60000 ms"):
        cluster.delay(0, 1, 0)
