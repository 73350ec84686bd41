"""The soak's faults: the seeded plan (deterministic, its kinds, the max-down bound, quiet phases),
the hooks executor running real shell commands, the transport's cut links, and on real 3-broker
Kafka-mode ProcessClusters: a partition isolating a leader, a paused leader, a lost disk, and a
whole plan of every kind played by the ProcessCluster executor.

Cluster tests watch the controller's own record of the partition (DIR/controller/metadata.json):
its leader and ISR are what the controller decided, so a fenced leader shows as a new leader and
an ISR without it, and a rejoined broker as an ISR with it again.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
import uuid

import pytest
from kafka import KafkaConsumer, KafkaProducer

from isrcheck.conformance.engines.soak.faults import (
    DOWN_KINDS,
    FAULT_KINDS,
    Fault,
    FaultPlan,
    HookError,
    HooksExecutor,
    ProcessClusterFaults,
    UnknownFaultKind,
    parse_fault_kinds,
)
from isrcheck.conformance.vocabulary import UsageError
from isrcheck.impl.controller import CONTROLLER_ID
from isrcheck.impl.network import NodeEndpoint
from isrcheck.impl.protocol import ApiKey, BrokerHeartbeatRequest, BrokerHeartbeatResponse, Errors
from isrcheck.impl.real import TcpTransport
from isrcheck.impl.real.netfile import read_cut_peers
from isrcheck.impl.real.node import journal_path
from isrcheck.impl.real.processes import ProcessCluster, free_ports
from isrcheck.impl.real.serve import SERVE_DEFAULTS, wait_until_serving
from isrcheck.impl.replication import ClusterConfig

BROKERS = [0, 1, 2]
NODES = [*BROKERS, CONTROLLER_ID]
FAST_TIMINGS = dict(
    broker_session_timeout_ms=1500,
    broker_heartbeat_interval_ms=250,
    replica_lag_time_max_ms=3000,
    replica_fetch_wait_max_ms=200,
    request_timeout_ms=5000,
)
TOPIC = "soak"  # one partition: broker 0 leads it at creation, every broker in its ISR


# -- parse_fault_kinds ----------------------------------------------------------------------------
def test_parse_fault_kinds():
    assert parse_fault_kinds("kill,pause") == ("kill", "pause")
    assert parse_fault_kinds(" pause , kill,pause ") == ("kill", "pause")  # FAULT_KINDS order, once each
    assert parse_fault_kinds("all") == FAULT_KINDS
    assert parse_fault_kinds("none") == parse_fault_kinds("") == ()
    assert parse_fault_kinds("ioerror,kill") == ("kill", "ioerror") and "ioerror" not in parse_fault_kinds("all")
    with pytest.raises(ValueError, match=r"unknown fault kind 'crash'.*kill, stop, pause, power, disk, partition"):
        parse_fault_kinds("kill,crash")
    with pytest.raises(UnknownFaultKind, match="'all'"):
        parse_fault_kinds("kill,all")


def test_parse_fault_kinds_as_an_argparse_type(capsys):
    parser = argparse.ArgumentParser(prog="soak")
    parser.add_argument("--faults", type=parse_fault_kinds)
    assert parser.parse_args(["--faults", "partition,disk"]).faults == ("disk", "partition")
    with pytest.raises(SystemExit):
        parser.parse_args(["--faults", "kil"])
    assert "unknown fault kind 'kil'" in capsys.readouterr().err


# -- the plan -------------------------------------------------------------------------------------
def plan(kinds=FAULT_KINDS, seed=1, duration=600.0, max_down=1, **timing) -> FaultPlan:
    return FaultPlan(kinds, duration, seed, BROKERS, [CONTROLLER_ID], max_down, **timing)


def test_the_plan_is_deterministic_for_a_seed():
    assert plan(seed=7).faults == plan(seed=7).faults
    assert plan(seed=7).faults != plan(seed=8).faults
    assert len(plan(seed=7).faults) > 50


@pytest.mark.parametrize("kinds", [("pause",), ("kill", "partition"), FAULT_KINDS])
def test_the_plan_uses_only_its_kinds_and_every_one_of_them(kinds):
    p = plan(kinds)
    assert {f.kind for f in p.faults} == set(kinds)
    for f in p.faults:
        if f.kind == "partition":  # two groups splitting every node, the cut-off one first and not the larger
            assert f.groups[0] == f.nodes and sorted(f.groups[0] + f.groups[1]) == sorted(NODES)
            assert 1 <= len(f.nodes) <= len(NODES) // 2
        else:
            assert f.groups == () and set(f.nodes) <= set(BROKERS)
    # a phase takes a random non-empty subset of the kinds: both single kinds and several together
    if len(kinds) > 1:
        per_phase = [{f.kind for f in p.faults if a <= f.start_s < b} for a, b in p.phases]
        assert min(map(len, per_phase)) == 1 and max(map(len, per_phase)) > 1


@pytest.mark.parametrize("max_down", [1, 2])
def test_the_plan_never_takes_more_brokers_down_than_max_down(max_down):
    p = plan(max_down=max_down)
    moments = sorted({f.start_s for f in p.faults})
    most = max(len(p.down_at(t)) for t in moments)
    assert most == max_down  # reached, never passed
    for t in moments:  # down_at counts what the faults say: check it against them directly
        active = [f for f in p.faults if f.kind in DOWN_KINDS and f.start_s <= t < f.end_s]
        nodes = [n for f in active for n in f.nodes]
        assert len(nodes) == len(set(nodes)) <= max_down
    assert plan(max_down=0).faults and all(f.kind == "partition" for f in plan(max_down=0).faults)
    assert plan(("kill", "pause"), max_down=0).faults == []


def test_the_plan_alternates_fault_phases_with_quiet_ones():
    p = plan(fault_s=(2.0, 5.0), quiet_s=(3.0, 6.0), duration=300.0)
    assert p.phases[0][0] >= 3.0  # it starts quiet
    for (_, end), (start, _) in zip(p.phases, p.phases[1:]):
        assert 3.0 <= start - end <= 6.0
    for a, b in p.phases:
        assert 2.0 <= b - a <= 5.0
    for f in p.faults:  # each fault inside a phase, so every quiet phase is free of them
        assert any(a <= f.start_s < f.end_s <= b for a, b in p.phases), f
        assert f.end_s <= 300.0
    partitions = sorted((f.start_s, f.end_s) for f in p.faults if f.kind == "partition")
    assert all(e <= s for (_, e), (s, _) in zip(partitions, partitions[1:]))  # one at a time


def test_no_kinds_or_too_short_a_run_is_an_empty_plan():
    assert plan(()).faults == []
    assert plan(duration=1.0).faults == []  # the first quiet phase alone is 2 s at least


# -- the hooks executor ---------------------------------------------------------------------------
def write_hooks(tmp_path, log, **extra) -> str:
    hooks = {"nodes": ["k1", "k2", "k3"], "controllers": ["c1"]}
    for action in ("kill", "stop", "restart", "pause", "resume", "power", "disk"):
        hooks[action] = f"echo {action} {{node}} >> {log}"
    hooks["partition"] = f"echo partition {{nodes}} / {{others}} >> {log}"
    hooks["heal"] = f"echo heal {{all}} >> {log}; awk 'BEGIN {{ exit 0 }}'"  # other braces stay
    hooks.update(extra)
    path = tmp_path / "hooks.json"
    path.write_text(json.dumps(hooks))
    return str(path)


def test_hooks_run_the_mapped_commands(tmp_path):
    log = tmp_path / "log"
    hooks = HooksExecutor.load(write_hooks(tmp_path, log))
    assert hooks.kinds == FAULT_KINDS and hooks.brokers == ["k1", "k2", "k3"] and hooks.controllers == ["c1"]
    hooks.begin(Fault("kill", ("k1", "k3"), 0, 1))
    hooks.end(Fault("kill", ("k1", "k3"), 0, 1))
    hooks.begin(Fault("pause", ("k2",), 0, 1))
    hooks.end(Fault("pause", ("k2",), 0, 1))
    hooks.begin(Fault("disk", ("k2",), 0, 1))
    split = (("k2", "c1"), ("k1", "k3"))
    hooks.begin(Fault("partition", split[0], 0, 1, split))
    hooks.end(Fault("partition", split[0], 0, 1, split))
    assert log.read_text().splitlines() == [
        "kill k1",
        "kill k3",
        "restart k1",
        "restart k3",
        "pause k2",
        "resume k2",
        "disk k2",
        "partition k2 c1 / k1 k3",
        "heal k1 k2 k3 c1",
    ]


def test_a_plan_played_through_hooks_records_every_fault(tmp_path):
    log = tmp_path / "log"
    hooks = HooksExecutor.load(write_hooks(tmp_path, log))
    p = FaultPlan.for_executor(hooks, FAULT_KINDS, 2.5, seed=3, max_down=2, fault_s=(0.3, 0.5), quiet_s=(0.2, 0.3))
    assert len(p.faults) >= 4
    started = time.monotonic_ns()
    records = asyncio.run(p.run(hooks, started))
    assert [(r["kind"], r["nodes"]) for r in records] == [(f.kind, list(f.nodes)) for f in p.faults]
    for r, f in zip(records, p.faults):
        # not before its time, ended once healed (how late a loaded machine runs a hook is no finding)
        assert f.start_s * 1e9 <= r["start"] < r["end"] and r["end"] >= f.end_s * 1e9
        assert ("groups" in r) == (f.kind == "partition")
    lines = log.read_text().splitlines()
    expected = []
    for t, begins, f in sorted(
        [(f.start_s, 1, f) for f in p.faults] + [(f.end_s, 0, f) for f in p.faults], key=lambda e: e[:2]
    ):
        action = f.kind if begins else {"pause": "resume", "partition": "heal"}.get(f.kind, "restart")
        if f.kind == "partition":
            expected.append(
                f"partition {' '.join(f.groups[0])} / {' '.join(f.groups[1])}" if begins else "heal k1 k2 k3 c1"
            )
        else:
            expected += [f"{action} {n}" for n in f.nodes]
    assert lines == expected


def test_a_failing_hook_is_reported_by_name_with_its_command_and_stderr(tmp_path):
    log = tmp_path / "log"
    hooks = HooksExecutor.load(write_hooks(tmp_path, log, kill="echo no such host {node} >&2; exit 3"))
    with pytest.raises(HookError) as caught:
        hooks.begin(Fault("kill", ("k2",), 0, 1))
    message = str(caught.value)
    assert "'kill'" in message and "exit code 3" in message
    assert "echo no such host k2 >&2; exit 3" in message and "stderr: no such host k2" in message
    assert isinstance(caught.value, UsageError)  # exit 2 for the command line

    slow = HooksExecutor.load(write_hooks(tmp_path, log, timeout_s=0.3, pause="sleep 30"))
    begun = time.monotonic()
    with pytest.raises(HookError, match=r"'pause' timed out after 0.3 s: sleep 30"):
        slow.begin(Fault("pause", ("k1",), 0, 1))
    assert time.monotonic() - begun < 5


def test_a_failing_hook_stops_the_plan_and_what_it_began_is_ended(tmp_path):
    log = tmp_path / "log"
    hooks = HooksExecutor.load(write_hooks(tmp_path, log, resume="exit 1"))
    p = FaultPlan(("pause",), 2.0, 0, hooks.brokers, max_down=1, fault_s=(0.2, 0.3), quiet_s=(0.1, 0.2))
    with pytest.raises(HookError, match="'resume' failed"):
        asyncio.run(p.run(hooks))
    [record] = p.records  # the first pause: its resume failed, and failed again when retried
    assert record["end"] is None and "'resume' failed" in record["error"]

    hooks = HooksExecutor.load(write_hooks(tmp_path, log, kill="exit 1"))
    p = FaultPlan(("kill",), 2.0, 0, hooks.brokers, fault_s=(0.2, 0.3), quiet_s=(0.1, 0.2))
    log.write_text("")
    with pytest.raises(HookError, match="'kill' failed"):
        asyncio.run(p.run(hooks))
    assert log.read_text().splitlines() == [f"restart {p.faults[0].nodes[0]}"]  # brought back all the same
    assert p.records[0]["end"] is not None


def test_a_hooks_file_is_checked(tmp_path):
    path = tmp_path / "hooks.json"
    path.write_text(json.dumps({"nodes": [1, 2], "kill": "true", "restart": "true", "pause": "true"}))
    hooks = HooksExecutor.load(str(path))
    assert hooks.kinds == ("kill",)
    hooks.require(["kill"])
    with pytest.raises(UsageError, match=r"fault kinds pause, partition need the hooks resume, partition, heal"):
        hooks.require(["kill", "pause", "partition"])
    path.write_text(json.dumps({"kill": "true", "reboot": "true"}))
    with pytest.raises(UsageError, match="unknown hook reboot"):
        HooksExecutor.load(str(path), nodes=[0])
    path.write_text(json.dumps({"kill": 3}))
    with pytest.raises(UsageError, match="the command of kill must be a non-empty string"):
        HooksExecutor.load(str(path), nodes=[0])
    path.write_text(json.dumps({"kill": "true"}))
    with pytest.raises(UsageError, match="no nodes"):
        HooksExecutor.load(str(path))
    assert HooksExecutor.load(str(path), nodes=[0, 1]).brokers == [0, 1]
    path.write_text("{")
    with pytest.raises(UsageError, match="not JSON"):
        HooksExecutor.load(str(path), nodes=[0])


# -- the transport's cut links --------------------------------------------------------------------
async def _cut_scenario():
    loop = asyncio.get_running_loop()
    transports = {1: TcpTransport(loop), 2: TcpTransport(loop)}  # two "processes"
    endpoints, got = {}, {1: [], 2: []}
    for node, transport in transports.items():
        endpoints[node] = NodeEndpoint(node, transport)
        endpoints[node].handlers[ApiKey.BROKER_HEARTBEAT] = lambda src, header, req, node=node: (
            got[node].append(req.broker_epoch)
            or (BrokerHeartbeatResponse(Errors.NONE, False) if req.broker_epoch % 2 == 0 else None)
        )
        transport.register(node, endpoints[node])
    transports[1].addresses[2] = transports[2].addresses[2]
    transports[2].addresses[1] = transports[1].addresses[1]
    answers = []

    def ask(src, dst, epoch):  # an even epoch is answered, an odd one left waiting
        endpoints[src].send_request(
            dst,
            ApiKey.BROKER_HEARTBEAT,
            0,
            BrokerHeartbeatRequest(src, epoch),
            lambda resp: answers.append((epoch, None if resp is None else resp.error)),
        )

    async def until(condition):
        for _ in range(200):
            if condition():
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"timed out: answers {answers}, got {got}")

    ask(1, 2, 10)
    ask(1, 2, 11)
    await until(lambda: got[2] == [10, 11] and answers == [(10, 0)])
    transports[1].cut([2])  # the waiting request is lost at once
    assert answers == [(10, 0), (11, None)]
    ask(1, 2, 12)  # a request to a cut peer: lost too, never delivered
    await until(lambda: len(answers) == 3)
    assert answers[2] == (12, None)
    ask(2, 1, 21)  # from the other side, not cut yet: dropped, its connection
    await until(lambda: len(answers) == 4)  # closed, so it is lost there too
    assert answers[3] == (21, None) and got[1] == []
    transports[1].heal()
    ask(1, 2, 14)
    ask(2, 1, 22)
    await until(lambda: len(answers) == 6)
    assert sorted(answers[4:]) == [(14, 0), (22, 0)] and got == {1: [22], 2: [10, 11, 14]}
    for node, transport in transports.items():
        transport.unregister(node)


def test_a_cut_link_drops_frames_both_ways_and_reports_requests_lost_until_healed():
    asyncio.run(asyncio.wait_for(_cut_scenario(), 20))


def test_the_net_file_names_each_node_its_cut_peers(tmp_path):
    cluster = ProcessCluster(ClusterConfig(protocol="kip-320", replicas=3, min_insync_replicas=2), str(tmp_path))
    assert cluster.partition([[0], [CONTROLLER_ID]]) == [[0], [CONTROLLER_ID], [1, 2]]
    path = cluster.net_file
    assert read_cut_peers(path, 0) == {1, 2, CONTROLLER_ID}
    assert read_cut_peers(path, 1) == {0, CONTROLLER_ID}
    assert read_cut_peers(path, CONTROLLER_ID) == {0, 1, 2}
    before = os.stat(path).st_mtime_ns
    cluster.heal()
    assert read_cut_peers(path, 0) == set() and os.stat(path).st_mtime_ns > before
    with pytest.raises(ValueError, match="in two groups"):
        cluster.partition([[0, 1], [1]])
    with pytest.raises(ValueError, match="unknown nodes"):
        cluster.partition([[7]])


# -- real clusters --------------------------------------------------------------------------------
class Cluster:
    """A running 3-broker Kafka-mode ProcessCluster with topic ``soak`` (one partition)."""

    def __init__(self, directory, journal: bool) -> None:
        config = ClusterConfig(
            protocol="kip-320", replicas=3, min_insync_replicas=2, **{**SERVE_DEFAULTS, **FAST_TIMINGS}
        )
        self.ports = free_ports(3)
        self.kafka = dict(
            listeners={str(b): p for b, p in enumerate(self.ports)},
            topics=[[TOPIC, 1]],
            cluster_id=uuid.uuid4().hex,
            auto_create_topics=False,
            num_partitions=1,
            journal=journal,
        )
        self.directory = directory
        self.processes = ProcessCluster(config, str(directory), kafka=self.kafka)

    def bootstrap(self, brokers=BROKERS) -> str:
        return ",".join(f"127.0.0.1:{self.ports[b]}" for b in brokers)

    def state(self) -> tuple[int, tuple[int, ...]]:
        """(leader, ISR) of the topic's partition, as the controller last decided."""
        with open(self.directory / "controller" / "metadata.json", encoding="utf-8") as f:
            [p] = [p for p in json.load(f)["partitions"] if p["topic"] == TOPIC]
        return p["leader"], tuple(p["isr"])

    def wait_for(self, condition, what: str, timeout: float = 15.0):
        deadline = time.monotonic() + timeout
        while True:
            try:
                value = condition()
                if value:
                    return value
            except (OSError, ValueError):  # mid-write, or not there yet
                pass
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out after {timeout} s waiting until {what}; controller: (leader, ISR) {self.state()}"
                )
            time.sleep(0.05)

    def wait_for_full_isr(self) -> int:
        return self.wait_for(
            lambda: self.state()[1] == (0, 1, 2) and self.state()[0] >= 0 and (self.state()[0],) or None,
            "the ISR is every broker again",
        )[0]

    def produce(self, n: int, tag: str, brokers=BROKERS) -> None:
        """``n`` acks=all records, bootstrapping from ``brokers`` (a paused one would hold the client)."""
        producer = KafkaProducer(
            bootstrap_servers=self.bootstrap(brokers), acks="all", retries=5, linger_ms=5, request_timeout_ms=5000
        )
        try:
            for i in range(n):
                producer.send(TOPIC, f"{tag}-{i}".encode() * 10)
            producer.flush(timeout=20)
        finally:
            producer.close()

    def log_bytes(self, broker: int) -> bytes | None:
        path = self.directory / f"broker-{broker}" / f"{TOPIC}-0" / "00000000000000000000.log"
        return path.read_bytes() if path.exists() else None

    def node_log(self, node) -> str:
        return (self.directory / f"{node}.log").read_text(errors="replace")


@pytest.fixture(params=[False], ids=["plain"])
def cluster(request, tmp_path):
    c = Cluster(tmp_path, journal=request.param)
    try:
        c.processes.start()
        assert wait_until_serving(c.ports, [(TOPIC, 1)], timeout_s=20)
        assert c.state() == (0, (0, 1, 2))
        yield c
    finally:
        c.processes.stop()


journaled = pytest.mark.parametrize("cluster", [True], ids=["journal"], indirect=True)


def test_a_partition_isolating_the_leader_gets_it_fenced_and_heal_lets_it_rejoin(cluster):
    cluster.produce(20, "before")
    groups = cluster.processes.partition([[0]])  # the leader alone; the other brokers with the controller
    assert groups == [[0], [1, 2, CONTROLLER_ID]]
    leader = cluster.wait_for(lambda: cluster.state()[0] in (1, 2) and cluster.state()[0], "a new leader is elected")
    assert 0 not in cluster.state()[1]  # fenced: out of the ISR too
    assert cluster.wait_for(lambda: "net cut 1 2 3000" in cluster.node_log(0), "broker 0 logs its cut links")
    assert "net cut 0" in cluster.node_log("controller")
    # Kafka clients still reach the isolated broker: it answers Metadata (as a stale leader)
    assert wait_until_serving([cluster.ports[0]], [(TOPIC, 1)], timeout_s=2)
    cluster.produce(20, "during", brokers=[1, 2])  # the majority side serves writes
    cluster.processes.heal()
    assert cluster.wait_for_full_isr() == leader  # rejoined as a follower, leadership kept by the new one
    cluster.wait_for(lambda: cluster.log_bytes(0) == cluster.log_bytes(leader), "broker 0 holds the leader's log")


@pytest.mark.slow  # a cluster of its own; the plan tests cover pause
def test_a_paused_leader_is_fenced_and_rejoins_after_it_resumes(cluster):
    cluster.produce(20, "before")
    cluster.processes.pause(0)
    leader = cluster.wait_for(lambda: cluster.state()[0] in (1, 2) and cluster.state()[0], "a new leader is elected")
    assert 0 not in cluster.state()[1] and cluster.processes.alive(0)
    cluster.produce(20, "during", brokers=[1, 2])
    cluster.processes.resume(0)
    assert cluster.wait_for_full_isr() == leader
    cluster.wait_for(lambda: cluster.log_bytes(0) == cluster.log_bytes(leader), "broker 0 holds the leader's log")
    assert "unfence 0" in cluster.node_log("controller")


@pytest.mark.slow  # a cluster of its own
@journaled
def test_a_lost_disk_comes_back_empty_and_catches_up(cluster):
    cluster.produce(50, "before")
    cluster.wait_for(lambda: cluster.log_bytes(1) == cluster.log_bytes(0), "broker 1 holds the leader's log")
    data_dir = cluster.processes.data_dir(1)
    assert os.path.exists(journal_path(data_dir))
    cluster.processes.lose_disk(1)
    assert not os.path.exists(data_dir) and not os.path.exists(journal_path(data_dir))
    cluster.wait_for(lambda: 1 not in cluster.state()[1], "broker 1 is fenced")
    cluster.produce(20, "while-down")
    cluster.processes.restart(1)
    assert cluster.wait_for_full_isr() == 0
    cluster.wait_for(lambda: cluster.log_bytes(1) == cluster.log_bytes(0), "broker 1 holds the leader's log")
    assert cluster.node_log("controller").count("register 1 ") == 2  # at creation, and again on the new disk


@pytest.mark.slow  # a cluster of its own
@journaled
def test_a_leader_whose_fsync_fails_halts_and_the_controller_elects_elsewhere(cluster):
    cluster.produce(30, "before")
    cluster.wait_for(lambda: cluster.log_bytes(1) == cluster.log_bytes(0), "broker 1 holds the leader's log")
    assert cluster.processes.fail_disk(0, "fsync:EIO")  # the leader's log directory goes offline
    assert not cluster.processes.alive(0) and "log_dir_offline 0 fsync EIO" in cluster.node_log(0)
    leader = cluster.wait_for(lambda: cluster.state()[0] in (1, 2) and cluster.state()[0], "a new leader is elected")
    cluster.produce(20, "after", brokers=[1, 2])
    cluster.processes.restart(0)
    assert cluster.wait_for_full_isr() == leader
    cluster.wait_for(lambda: cluster.log_bytes(0) == cluster.log_bytes(leader), "broker 0 holds the leader's log")


@pytest.mark.slow  # a cluster of its own
def test_a_leader_whose_disk_fills_up_under_a_produce_halts_and_acknowledges_nothing_it_did_not_write(cluster):
    cluster.produce(10, "before")
    cluster.processes.arm_disk_failure(0, "write:ENOSPC")  # the leader's next append fails
    cluster.produce(20, "during", brokers=[1, 2])  # the first attempt dies with broker 0; retried
    cluster.wait_for(lambda: not cluster.processes.alive(0), "broker 0 halts")
    assert cluster.processes.processes[0].returncode == 1
    assert "log_dir_offline 0 io ENOSPC" in cluster.node_log(0)
    leader = cluster.wait_for(lambda: cluster.state()[0] in (1, 2) and cluster.state()[0], "a new leader")
    consumer = KafkaConsumer(
        TOPIC,
        bootstrap_servers=cluster.bootstrap([leader]),
        auto_offset_reset="earliest",
        consumer_timeout_ms=3000,
        enable_auto_commit=False,
    )
    try:
        values = {m.value for m in consumer}
    finally:
        consumer.close()
    for tag, n in (("before", 10), ("during", 20)):  # every acknowledged record is there
        assert {f"{tag}-{i}".encode() * 10 for i in range(n)} <= values
    cluster.processes.restart(0)
    assert cluster.wait_for_full_isr() == leader


@pytest.mark.slow  # a cluster of its own
def test_a_power_loss_needs_the_journal(cluster):
    with pytest.raises(ValueError, match="journal"):
        cluster.processes.crash(1, "power")
    assert cluster.processes.alive(1)
    assert "power" not in ProcessClusterFaults(cluster.processes).kinds
    with pytest.raises(UsageError, match="journal"):
        ProcessClusterFaults(cluster.processes).require(["kill", "power"])


@journaled
@pytest.mark.slow
def test_a_plan_of_every_kind_on_a_process_cluster(cluster):
    executor = ProcessClusterFaults(cluster.processes)
    assert executor.kinds == FAULT_KINDS + ("ioerror",)
    p = FaultPlan.for_executor(executor, FAULT_KINDS, 8.0, seed=15, max_down=2, fault_s=(1.5, 2.5), quiet_s=(0.5, 1.0))
    assert {f.kind for f in p.faults} == set(FAULT_KINDS)
    records = asyncio.run(p.run(executor))
    assert [r["kind"] for r in records] == [f.kind for f in p.faults]
    assert all(r["end"] is not None and r["end"] > r["start"] for r in records)
    assert all(cluster.processes.alive(b) for b in BROKERS) and not cluster.processes.paused
    assert cluster.processes.groups == []
    cluster.wait_for_full_isr()
    cluster.produce(10, "after")
