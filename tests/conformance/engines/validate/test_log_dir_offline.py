"""LogDirOffline on real processes (engines/validate/timeliness.py): a broker logs its log directory
going offline (``log_dir_offline``, no step) before it halts, so a broker that went on serving it is
caught by what it logged after (a step, or a ``timers`` line: its timers still ran)."""

from __future__ import annotations

import asyncio
import json

from node_bugs import planted

from isrcheck.conformance.engines.validate.timeliness import check_path
from isrcheck.conformance.engines.validate.validation import validate_path
from isrcheck.impl.clients import Producer
from isrcheck.impl.real import TcpTransport
from isrcheck.impl.real.processes import ProcessCluster
from isrcheck.impl.replication import ClusterConfig

CONFIG = dict(
    replicas=3,
    min_insync_replicas=2,
    replica_lag_time_max_ms=1000,
    request_timeout_ms=5000,
    broker_heartbeat_interval_ms=50,
    broker_session_timeout_ms=600,
    replica_fetch_backoff_ms=20,
)


async def _produce(cluster: ProcessCluster) -> bool:
    transport = TcpTransport(asyncio.get_running_loop(), ports=cluster.ports)
    producer = Producer(transport, lambda result: None)
    for i in range(3):
        producer.send(0, b"a%d" % i, -1, 2000)
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.3)
    halted = await asyncio.to_thread(cluster.fail_disk, 1, "write:EIO", 2.0)  # a follower's checkpoint write
    await asyncio.sleep(0.5)
    transport.unregister(producer.endpoint.node_id)
    return halted


def _run(tmp_path) -> tuple[str, bool]:
    events = tmp_path / "events"
    cluster = ProcessCluster(ClusterConfig(protocol="kip-320", **CONFIG), str(tmp_path / "cluster"), events=str(events))
    cluster.start()
    try:
        halted = asyncio.run(asyncio.wait_for(_produce(cluster), 60))
    finally:
        cluster.stop()
    return str(events), halted


def test_a_broker_logs_its_log_directory_offline_before_it_halts(tmp_path):
    events, halted = _run(tmp_path)
    assert halted
    lines = [json.loads(x) for x in (tmp_path / "events" / "broker-1.jsonl").read_text().splitlines()[1:]]
    steps = [x["step"] for x in lines]
    assert steps[-2:] == ["log_dir_offline", "fail_disk"] and lines[-2]["error"] == "EIO"
    assert validate_path(events)[0].explained
    assert check_path(events, real=True) == []


def test_a_broker_that_serves_its_offline_log_directory_is_caught(tmp_path, monkeypatch):
    planted(monkeypatch, "serves-offline-log-dir")
    events, halted = _run(tmp_path)
    assert not halted  # it never halted
    late = check_path(events, real=True)
    assert late and {x.property for x in late} == {"LogDirOffline"}
    assert "broker 1 logged its log directory offline (EIO)" in late[0].why
