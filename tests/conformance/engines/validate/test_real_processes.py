"""Event logs of real processes: each node process writes its own file, a Lamport clock on every
frame orders a receive after its send across processes, a restarted process goes on with its
file, a killed writer's unfinished last line ends its log; a real cluster's log is explained; a broker
logs its log directory going offline before it halts (timeliness' LogDirOffline)."""

from __future__ import annotations

import asyncio
import json
import signal
import socket
from pathlib import Path

import pytest
from kafka import KafkaProducer
from node_bugs import planted

from isrcheck.conformance.engines.validate.events import read_trace
from isrcheck.conformance.engines.validate.timeliness import check_path
from isrcheck.conformance.engines.validate.validation import validate_path
from isrcheck.conformance.vocabulary import UsageError
from isrcheck.impl.clients import Producer
from isrcheck.impl.controller import CONTROLLER_ID
from isrcheck.impl.eventlog import DOWN, EventLog, run_header
from isrcheck.impl.network import NodeEndpoint
from isrcheck.impl.protocol import ApiKey, BrokerHeartbeatRequest, BrokerHeartbeatResponse, Errors
from isrcheck.impl.real import TcpTransport
from isrcheck.impl.real.processes import DISK_IO, ProcessCluster, free_ports
from isrcheck.impl.replication import ClusterConfig
from isrcheck.model import PROTOCOLS

CONFIG = dict(
    replicas=3,
    min_insync_replicas=2,
    replica_lag_time_max_ms=1000,
    request_timeout_ms=5000,
    broker_heartbeat_interval_ms=50,
    broker_session_timeout_ms=600,
    replica_fetch_backoff_ms=20,
)


def _log(tmp_path: Path, clock: list, resume: bool = False) -> EventLog:
    return EventLog(
        str(tmp_path),
        run_header(ClusterConfig(**CONFIG)),
        CONTROLLER_ID,
        lambda: clock[0],
        resume=resume,
        line_buffered=True,
    )


# -- the Lamport clock, across two "processes" -------------------------------------------------------
async def _heartbeat_between_processes(tmp_path: Path) -> tuple[EventLog, EventLog, list]:
    loop = asyncio.get_running_loop()
    now = [0]
    logs = {1: _log(tmp_path, now), 2: _log(tmp_path, now)}
    transports = {1: TcpTransport(loop), 2: TcpTransport(loop)}
    answered = loop.create_future()
    for node, transport in transports.items():
        transport.clock = logs[node]
        endpoint = NodeEndpoint(node, transport)
        endpoint.handlers[ApiKey.BROKER_HEARTBEAT] = lambda src, header, req: BrokerHeartbeatResponse(
            Errors.NONE, False
        )
        transport.register(node, endpoint)
        if node == 1:
            sender = endpoint
    transports[1].addresses[2] = transports[2].addresses[2]
    transports[2].addresses[1] = transports[1].addresses[1]
    for _ in range(5):  # node 1 has logged five events before it sends
        logs[1].emit(1, "flush", DOWN, {"replica": 1})
    sender.send_request(2, ApiKey.BROKER_HEARTBEAT, 0, BrokerHeartbeatRequest(1, 0), answered.set_result)
    await asyncio.wait_for(answered, 5)
    received = logs[2].stamp()
    for node, transport in transports.items():
        transport.unregister(node)
    return logs[1], logs[2], [received]


def test_a_frame_carries_its_senders_clock_and_the_receiver_logs_after_it(tmp_path):
    sender, receiver, [received] = asyncio.run(_heartbeat_between_processes(tmp_path))
    assert sender.stamp() == 5 and received >= 5  # the request carried the sender's clock
    receiver.emit(2, "flush", DOWN, {"replica": 2})  # what the receive causes is logged after the send
    sender.close()
    receiver.close()
    lines = [json.loads(x) for x in (tmp_path / "broker-2.jsonl").read_text().splitlines()]
    assert lines[-1]["lc"] > 5


def test_a_restarted_process_goes_on_with_its_file_after_cutting_a_torn_line(tmp_path):
    now = [10]
    first = _log(tmp_path, now)
    for _ in range(3):
        first.emit(1, "flush", DOWN, {"replica": 1})
    first.receive(40)
    first.emit(1, "flush", DOWN, {"replica": 1})
    first.close()
    path = tmp_path / "broker-1.jsonl"
    with open(path, "a", encoding="utf-8") as f:
        f.write('{"node":1,"seq":5,"lc":4')  # killed in the middle of a line
    # the validator reads the torn line as the end of the log, not as bad input
    assert [e.seq for e in read_trace(str(tmp_path)).events] == [1, 2, 3, 4]
    now[0] = 20
    second = _log(tmp_path, now, resume=True)
    second.emit(1, "restart", DOWN, {"replica": 1})
    second.close()
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert lines[0]["format"] == "isrcheck-events" and sum("format" in x for x in lines) == 1
    assert [(x["seq"], x["lc"]) for x in lines[1:]] == [(1, 1), (2, 2), (3, 3), (4, 41), (5, 42)]


def test_a_torn_line_before_the_end_is_bad_input(tmp_path):
    log = _log(tmp_path, [0])
    log.emit(1, "flush", DOWN, {"replica": 1})
    log.close()
    path = tmp_path / "broker-1.jsonl"
    path.write_text(path.read_text() + '{"node":1,"seq":2\n' + path.read_text().splitlines()[1] + "\n")
    with pytest.raises(UsageError, match=r"broker-1.jsonl:3: not a JSON line"):
        read_trace(str(tmp_path))


def test_events_merge_by_time_then_clock(tmp_path):
    """A node that logged little (a low clock) but later in time comes after; equal times go by clock."""
    now = [0]
    a, b = _log(tmp_path, now), _log(tmp_path, now)
    now[0] = 5
    b.receive(100)
    b.emit(2, "flush", DOWN, {"replica": 2})  # t 5, lc 101
    now[0] = 7
    a.emit(1, "flush", DOWN, {"replica": 1})  # t 7, lc 1: later in time
    b.emit(2, "checkpoint_hw", DOWN, {"replica": 2})  # t 7, lc 102
    a.close()
    b.close()
    assert [(e.node, e.t, e.lc) for e in read_trace(str(tmp_path)).events] == [(2, 5, 101), (1, 7, 1), (2, 7, 102)]


# -- a real cluster ------------------------------------------------------------------------------
async def _produce(cluster: ProcessCluster, kind: str) -> list:
    transport = TcpTransport(asyncio.get_running_loop(), ports=cluster.ports)
    results: list = []
    producer = Producer(transport, results.append)

    async def send(values, acks):
        for v in values:
            producer.send(0, v, acks, 5000)
            await asyncio.sleep(0.04)

    await send([b"a%d" % i for i in range(6)], -1)
    await asyncio.sleep(0.3)
    if kind in DISK_IO:  # a follower's disk fails: it halts
        assert cluster.fail_disk(1, kind)
    else:  # a follower dies: its session expires, the ISR shrinks
        cluster.crash(1, kind)
    # 1.8 MB it has to catch up with: the leader's answers are cut by bytes (replica.fetch.max.bytes)
    await send([b"b%d" % i + bytes(300_000) for i in range(6)], 1)
    await asyncio.sleep(1.0)
    cluster.restart(1)  # a new incarnation: log recovery, registration, catching up
    await asyncio.sleep(1.2)
    await send([b"c%d" % i for i in range(4)], -1)
    await asyncio.sleep(0.3)
    transport.unregister(producer.endpoint.node_id)
    return results


def _real_run(tmp_path: Path, protocol: str, kind: str) -> tuple[Path, list]:
    events = tmp_path / "events"
    cluster = ProcessCluster(ClusterConfig(protocol=protocol, **CONFIG), str(tmp_path / "cluster"), events=str(events))
    cluster.start()
    try:
        results = asyncio.run(asyncio.wait_for(_produce(cluster, kind), 60))
    finally:
        cluster.stop()
    return events, results


def test_a_real_cluster_killed_and_restarted_is_explained(tmp_path):
    """The controller and three brokers as OS processes; a follower SIGKILLed and restarted."""
    events, results = _real_run(tmp_path, "kip-320", "process")
    assert sum(r.error == "NONE" for r in results) >= 12
    assert sorted(p.name for p in events.iterdir()) == [
        "broker-0.jsonl",
        "broker-1.jsonl",
        "broker-2.jsonl",
        "controller.jsonl",
    ]
    steps = [json.loads(x)["step"] for x in (events / "broker-1.jsonl").read_text().splitlines()[1:]]
    assert steps.index("crash") < steps.index("restart")  # one file for both incarnations
    verdict, n, _ = validate_path(str(events))
    assert verdict.explained, verdict.to_json()
    assert n > 200 and {"crash", "fence", "restart", "produce", "byte_limit"} <= {st["step"] for st in verdict.steps}
    # edited: a follower's HW after the restart raised by one is refused at that very event
    path = events / "broker-1.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    after = lines.index(next(x for x in lines if x.get("step") == "restart"))
    i = next(i for i, x in enumerate(lines) if i > after and x.get("step") == "handle_fetch_response")
    lines[i]["state"]["hw"] += 1
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    verdict, _, _ = validate_path(str(events))
    assert not verdict.explained and (verdict.event.node, verdict.event.seq) == (1, lines[i]["seq"])


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["clean", "power"])
@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_real_clusters_of_every_variant_and_crash_kind_are_explained(tmp_path, protocol, kind):
    events, _ = _real_run(tmp_path, protocol, kind)
    verdict, _, _ = validate_path(str(events))
    assert verdict.explained, verdict.to_json()


async def _produce_into_a_full_disk(cluster: ProcessCluster) -> list:
    transport = TcpTransport(asyncio.get_running_loop(), ports=cluster.ports)
    results: list = []
    producer = Producer(transport, results.append)
    for i in range(4):
        producer.send(0, b"a%d" % i, -1, 5000)
        await asyncio.sleep(0.04)
    await asyncio.sleep(0.3)
    cluster.arm_disk_failure(0, "write:ENOSPC")  # the leader's next write fails: the append of b0
    await asyncio.sleep(0.2)
    producer.send(0, b"b0", 1, 2000)
    await asyncio.sleep(2.0)  # broker 0 halted; fenced on session expiry, elected elsewhere
    cluster.restart(0)
    await asyncio.sleep(1.5)
    transport.unregister(producer.endpoint.node_id)
    return results, producer.unanswered


@pytest.mark.slow
def test_a_leader_halted_by_a_full_disk_under_a_produce_is_explained(tmp_path):
    events = tmp_path / "events"
    cluster = ProcessCluster(ClusterConfig(protocol="kip-320", **CONFIG), str(tmp_path / "cluster"), events=str(events))
    cluster.start()
    try:
        results, unanswered = asyncio.run(asyncio.wait_for(_produce_into_a_full_disk(cluster), 60))
    finally:
        cluster.stop()
    assert [r.error for r in results] == ["NONE"] * 4 and unanswered == 1  # b0 never acknowledged
    assert _halts(events / "broker-0.jsonl") == [("fail_disk", "write:ENOSPC")]
    verdict, _, _ = validate_path(str(events))
    assert verdict.explained, verdict.to_json()
    assert {"crash", "fence", "restart"} <= {st["step"] for st in verdict.steps}


def _halts(path: Path) -> list[tuple]:
    """How a broker's file says its processes stopped: (step, kind or io)."""
    lines = [json.loads(x) for x in path.read_text().splitlines()[1:]]
    return [(x["step"], x.get("kind", x.get("io"))) for x in lines if x["step"] in ("crash", "fail_disk")]


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["kip-320", "kip-966"])
def test_a_follower_whose_fsync_fails_is_logged_as_its_disk_failure_and_explained(tmp_path, protocol):
    """The disk of a follower fails an fsync (ProcessCluster.fail_disk, as the soak's ioerror): the
    broker halts, its dirty pages are dropped, and its machine logs ``fail_disk`` with the io, which
    the model explains as a power loss's halt (kip-966: an unclean shutdown at its registration)."""
    events, results = _real_run(tmp_path, protocol, "fsync:EIO")
    assert sum(r.error == "NONE" for r in results) >= 12
    assert _halts(events / "broker-1.jsonl") == [("fail_disk", "fsync:EIO")]
    verdict, _, _ = validate_path(str(events))
    assert verdict.explained, verdict.to_json()
    assert {("crash", "power"), ("fence", None)} <= {(st["step"], st.get("kind")) for st in verdict.steps}


# -- isrcheck serve --events ----------------------------------------------------------------------
def _free_base(n: int) -> int:
    """A port p such that p .. p + n - 1 are free (serve's brokers listen on --port + b)."""
    for _ in range(50):
        base = free_ports(1)[0]
        if base + n <= 65535 and all(_bindable(base + i) for i in range(n)):
            return base
    raise AssertionError(f"no {n} consecutive free ports")


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.mark.parametrize(
    "stop, validate", [(signal.SIGTERM, True), pytest.param(signal.SIGINT, False, marks=pytest.mark.slow)]
)
def test_serve_writes_its_event_log_and_validates_it_when_stopped(
    tmp_path, isrcheck_cli, isrcheck_serve, stop, validate
):
    """``isrcheck serve --events DIR``: every node's protocol events in DIR while Kafka clients use
    the cluster; stopped by SIGTERM (or Ctrl-C), the log is validated against the model, unless
    ``--no-validate``; bad input before anything starts."""
    base, events = _free_base(3), tmp_path / "events"
    proc, banner = isrcheck_serve(
        "--replicas",
        "3",
        "--dir",
        tmp_path / "cluster",
        "--topic",
        "orders:2",
        "--port",
        base,
        "--events",
        events,
        *([] if validate else ["--no-validate"]),
    )
    try:
        assert f"event log:         {events}" in banner, banner
        producer = KafkaProducer(bootstrap_servers=f"127.0.0.1:{base}", acks="all")
        for i in range(20):
            producer.send("orders", b"v%d" % i, partition=i % 2)
        producer.flush(30)
        producer.close()
    finally:
        proc.send_signal(stop)
        out = proc.stdout.read()
    assert proc.wait(timeout=120) == 0, out
    assert sorted(p.name for p in events.iterdir()) == [
        "broker-0.jsonl",
        "broker-1.jsonl",
        "broker-2.jsonl",
        "controller.jsonl",
    ]
    produced = sum('"step":"produce"' in line for p in events.iterdir() for line in p.read_text().splitlines())
    assert produced >= 2  # at least a batch per partition, each logged by its leader
    if validate:
        assert "event log (" in out and "explained:" in out and "2 partitions each on its own" in out, out
    else:
        assert "validating" not in out, out
    again = isrcheck_cli(
        "serve", "--dir", str(tmp_path / "cluster"), "--port", str(base), "--events", str(tmp_path / "new-events")
    )
    assert again.returncode == 2 and "holds a cluster that ran before" in again.stderr, again.stderr
    assert "Traceback" not in again.stderr and not (tmp_path / "new-events").exists()


async def _fail_a_followers_disk(cluster: ProcessCluster) -> bool:
    transport = TcpTransport(asyncio.get_running_loop(), ports=cluster.ports)
    producer = Producer(transport, lambda result: None)  # LogDirOffline: a broker logs its log directory
    # going offline before it halts, so one that went on serving it is caught by what it logged after
    for i in range(3):
        producer.send(0, b"a%d" % i, -1, 2000)
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.3)
    halted = await asyncio.to_thread(cluster.fail_disk, 1, "write:EIO", 2.0)  # a follower's checkpoint write
    await asyncio.sleep(0.5)
    transport.unregister(producer.endpoint.node_id)
    return halted


def _disk_failure_run(tmp_path) -> tuple[str, bool]:
    events = tmp_path / "events"
    cluster = ProcessCluster(ClusterConfig(protocol="kip-320", **CONFIG), str(tmp_path / "cluster"), events=str(events))
    cluster.start()
    try:
        halted = asyncio.run(asyncio.wait_for(_fail_a_followers_disk(cluster), 60))
    finally:
        cluster.stop()
    return str(events), halted


def test_a_broker_logs_its_log_directory_offline_before_it_halts(tmp_path):
    events, halted = _disk_failure_run(tmp_path)
    assert halted
    lines = [json.loads(x) for x in (tmp_path / "events" / "broker-1.jsonl").read_text().splitlines()[1:]]
    steps = [x["step"] for x in lines]
    assert steps[-2:] == ["log_dir_offline", "fail_disk"] and lines[-2]["error"] == "EIO"
    assert validate_path(events)[0].explained
    assert check_path(events, real=True) == []


def test_a_broker_that_serves_its_offline_log_directory_is_caught(tmp_path, monkeypatch):
    planted(monkeypatch, "serves-offline-log-dir")
    events, halted = _disk_failure_run(tmp_path)
    assert not halted  # it never halted
    late = check_path(events, real=True)
    assert late and {x.property for x in late} == {"LogDirOffline"}
    assert "broker 1 logged its log directory offline (EIO)" in late[0].why
