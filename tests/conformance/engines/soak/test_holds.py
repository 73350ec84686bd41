"""Held requests on isrcheck's own cluster: the transport keeps one API key's requests on one link
while every other frame flows, releases those held so far and keeps holding later ones; the net
file's ``hold`` entries, their errors, and the status a node writes; ProcessCluster's ``cut``,
``hold``, ``release`` and ``heal``."""

from __future__ import annotations

import asyncio
import json

import pytest

from isrcheck.impl.controller import CONTROLLER_ID
from isrcheck.impl.network import NodeEndpoint
from isrcheck.impl.protocol import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    ApiKey,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    Errors,
)
from isrcheck.impl.real import TcpTransport
from isrcheck.impl.real.netfile import NetWatcher, read_held_status, read_net_file, write_net_file
from isrcheck.impl.real.processes import ProcessCluster
from isrcheck.impl.replication import ClusterConfig

AP = int(ApiKey.ALTER_PARTITION)


async def _hold_scenario(tmp_path):
    loop = asyncio.get_running_loop()
    transports = {1: TcpTransport(loop), 2: TcpTransport(loop)}
    endpoints, got = {}, []
    for node, transport in transports.items():
        endpoints[node] = NodeEndpoint(node, transport)
        endpoints[node].handlers[ApiKey.BROKER_HEARTBEAT] = lambda src, h, req: (
            got.append(("heartbeat", req.broker_epoch)) or BrokerHeartbeatResponse(Errors.NONE, False)
        )
        endpoints[node].handlers[ApiKey.ALTER_PARTITION] = lambda src, h, req: (
            got.append(("alter", req.leader_epoch)) or AlterPartitionResponse(Errors.NONE)
        )
        transport.register(node, endpoints[node])
    transports[1].addresses[2] = transports[2].addresses[2]
    transports[2].addresses[1] = transports[1].addresses[1]
    answers = []

    def alter(epoch):
        endpoints[1].send_request(
            2,
            ApiKey.ALTER_PARTITION,
            0,
            AlterPartitionRequest(1, 1, 0, epoch),
            lambda resp: answers.append(("alter", epoch)),
        )

    async def until(condition):
        for _ in range(300):
            if condition():
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"timed out: got {got}, answers {answers}")

    net = str(tmp_path / "net.json")
    watcher = NetWatcher(net, 1, transports[1])
    write_net_file(net, hold=[[1, 2, "alter_partition", 0]])
    watcher.poll()
    alter(5)
    alter(6)
    endpoints[1].send_request(
        2, ApiKey.BROKER_HEARTBEAT, 0, BrokerHeartbeatRequest(1, 8), lambda resp: answers.append(("heartbeat", 8))
    )
    await until(lambda: answers == [("heartbeat", 8)])  # the heartbeat passes the held requests
    assert got == [("heartbeat", 8)] and transports[1].hold_counts() == {(1, 2, AP): (2, 0)}
    watcher.poll()
    assert read_held_status(net, 1) == {(1, 2, "alter_partition"): (2, 0)}
    write_net_file(net, hold=[[1, 2, "alter_partition", 1]])  # the first held one goes, the second stays
    watcher.poll()
    await until(lambda: ("alter", 5) in answers)
    alter(7)  # held: the hold goes on
    await asyncio.sleep(0.1)
    assert got == [("heartbeat", 8), ("alter", 5)] and transports[1].hold_counts() == {(1, 2, AP): (3, 1)}
    watcher.poll()
    assert read_held_status(net, 1) == {(1, 2, "alter_partition"): (3, 1)}
    write_net_file(net)  # the hold ends: the rest go, in order
    watcher.poll()
    await until(lambda: len(got) == 4)
    assert got[2:] == [("alter", 6), ("alter", 7)] and transports[1].hold_counts() == {}
    for node, transport in transports.items():
        transport.unregister(node)


def test_a_hold_keeps_one_request_kind_while_others_flow_and_releases_in_order(tmp_path):
    asyncio.run(asyncio.wait_for(_hold_scenario(tmp_path), 20))


def test_the_net_file_names_each_sender_its_holds(tmp_path):
    path = str(tmp_path / "net.json")
    write_net_file(path, cut=[[1, 0]], hold=[[0, CONTROLLER_ID, "alter_partition", 2]])
    assert read_net_file(path, 0).holds == {(CONTROLLER_ID, AP): 2} and read_net_file(path, 0).cut == {1}
    assert read_net_file(path, CONTROLLER_ID).holds == {}  # the receiver holds nothing


@pytest.mark.parametrize(
    "doc, message",
    [
        ({"cut": [], "hold": {"0": 1}}, "hold: expected a list"),
        ({"cut": [], "hold": [[0, 3000, "alter_partition"]]}, r"hold\[0\]: expected \[from, to, request, released\]"),
        ({"cut": [], "hold": [[0, 3000, "alter_partition", -1]]}, r"hold\[0\]: expected"),
        (
            {"cut": [], "hold": [[0, 3000, "AlterPartition", 0]]},
            r"hold\[0\]: unknown request 'AlterPartition' "
            r"\(requests: produce, fetch",
        ),
        ({"cut": [[0]]}, 'expected {"cut"'),
    ],
)
def test_a_bad_net_file_is_refused_naming_the_entry(tmp_path, doc, message):
    path = tmp_path / "net.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=message):
        read_net_file(str(path), 0)


def test_a_net_file_that_is_no_json_is_refused(tmp_path):
    path = tmp_path / "net.json"
    path.write_text("{")
    with pytest.raises(ValueError, match=r"net.json: not JSON"):
        read_net_file(str(path), 0)


def test_process_cluster_cut_hold_release_heal(tmp_path):
    cluster = ProcessCluster(ClusterConfig(protocol="kip-320", replicas=2, min_insync_replicas=1), str(tmp_path))
    cluster.cut(1, 0)
    cluster.hold(0, CONTROLLER_ID, "alter_partition")
    spec = read_net_file(cluster.net_file, 0)
    assert spec.cut == {1} and spec.holds == {(CONTROLLER_ID, AP): 0}
    (tmp_path / "net-held-0.json").write_text(json.dumps({"hold": [[0, CONTROLLER_ID, "alter_partition", 3, 0]]}))
    assert cluster.held(0, CONTROLLER_ID, "alter_partition") == (3, 0)
    cluster.release(0, CONTROLLER_ID, "alter_partition")  # what was held so far
    assert read_net_file(cluster.net_file, 0).holds == {(CONTROLLER_ID, AP): 3}
    cluster.heal()
    assert read_net_file(cluster.net_file, 0) == read_net_file(str(tmp_path / "none.json"), 0)
    with pytest.raises(ValueError, match="unknown nodes"):
        cluster.cut(0, 7)
    with pytest.raises(ValueError, match="unknown request"):
        cluster.hold(0, CONTROLLER_ID, "alter")
