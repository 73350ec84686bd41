"""The same brokers, controller and producer on real TCP sockets, wall-clock timers and OS files:
the replication code runs unchanged outside the simulation."""

import asyncio

from isrcheck.impl.clients import Producer
from isrcheck.impl.controller import Controller
from isrcheck.impl.protocol import LeaderAndIsrRequest
from isrcheck.impl.real import AsyncioScheduler, TcpTransport
from isrcheck.impl.replication import ClusterConfig
from isrcheck.impl.replication.broker import Broker
from isrcheck.impl.storage import OsFileSystem

CONFIG = ClusterConfig(
    protocol="kip-320",
    replicas=3,
    min_insync_replicas=2,
    replica_lag_time_max_ms=2000,
    request_timeout_ms=20_000,
    broker_heartbeat_interval_ms=50,
    broker_session_timeout_ms=1500,
    replica_fetch_backoff_ms=5,
)


async def _wait_for(condition, timeout_s=20.0):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not condition():
        assert loop.time() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def _scenario(tmp_path):
    loop = asyncio.get_running_loop()
    scheduler, transport = AsyncioScheduler(loop), TcpTransport(loop)
    controller = Controller(
        3,
        False,
        scheduler,
        transport,
        auto=True,
        session_timeout_ms=CONFIG.broker_session_timeout_ms,
        check_interval_ms=CONFIG.broker_heartbeat_interval_ms,
    )
    brokers = [
        Broker(b, CONFIG, OsFileSystem(), scheduler, transport, auto=True, data_dir=str(tmp_path / f"broker-{b}"))
        for b in range(3)
    ]
    for b, broker in enumerate(brokers):
        epoch = controller.broker_epochs[b]
        broker.bootstrap(epoch, LeaderAndIsrRequest(epoch, 0, 0, 0, 0, (0, 1, 2), (0, 1, 2)))
    results = []
    producer = Producer(transport, results.append)
    producer.send(0, b"first", -1, CONFIG.request_timeout_ms)
    await _wait_for(lambda: results)
    assert (results[0].error, results[0].offset) == ("NONE", 0)

    brokers[0].halt()  # the leader's process dies: sessions expire, the controller elects again
    await _wait_for(lambda: controller.leader in (1, 2))
    leader = controller.leader
    producer.send(leader, b"second", -1, CONFIG.request_timeout_ms)
    await _wait_for(lambda: len(results) == 2)
    assert (results[1].error, results[1].offset) == ("NONE", 1)
    follower = brokers[3 - leader]
    await _wait_for(lambda: follower.partition.high_watermark == 2)
    records = follower.log.read(0).records
    for b in brokers[1:]:
        b.shutdown()
    return records


def test_brokers_replicate_and_fail_over_on_real_sockets_and_files(tmp_path):
    records = asyncio.run(asyncio.wait_for(_scenario(tmp_path), 60))
    assert [(r.offset, r.value) for r in records] == [(0, b"first"), (1, b"second")]
    assert (tmp_path / "broker-1" / "isr-0" / "00000000000000000000.log").exists()
