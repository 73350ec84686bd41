"""A real-time soak of the implementation as real processes (Jepsen style).

The controller and every broker run as their own OS process (``isrcheck.impl.real.processes``),
talking TCP on localhost, logs in real directories with real fsyncs. Producers (acks=all, each
with one request outstanding) and a consumer (reading from offset 0 from the broker it believes
leads) run concurrently on a wall clock, while a seeded fault loop crashes one broker at a time
(SIGTERM clean shutdown, SIGKILL process crash, SIGKILL plus discarding what was not fsynced as a
power loss) and restarts it. Clients find the leader by trying: a NOT_LEADER_OR_FOLLOWER or an
unanswered request moves them to the next broker.

At the end the faults stop, every broker runs again, and a final read from the broker that
serves it (its HW steady and past every acknowledged offset) stands for the established leader's
log: the whole log below the HW, fetched on from each answer's next offset (an answer holds at
most about 1 MiB, fetch.max.bytes). Every client answer goes through the model's ghost history (``History.after``, as in
lockstep), and the history properties of ``isrcheck.specs`` are checked on it: an acknowledged
write missing from the final read is ``NoLostAckedWrite``, two reads disagreeing on an offset
``NoDivergentRead``, a consumer seeing the HW go back ``MonotonicHighWatermark``, and so on.
"""
from __future__ import annotations

import asyncio
import json
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from isrcheck.impl.clients import Consumer, Producer
from isrcheck.impl.real import TcpTransport
from isrcheck.impl.real.processes import ProcessCluster
from isrcheck.impl.replication import ClusterConfig
from isrcheck.model import ModelConfig, Step, initial_state
from isrcheck.model.history import EMPTY_HISTORY
from isrcheck.model.state import Entry
from isrcheck.specs import PROPERTIES

FAULTS = {"none": (), "crash": ("clean", "process"), "power": ("clean", "process", "power")}
HISTORY = tuple(p for p in PROPERTIES if p.kind == "history")


@dataclass
class SoakResult:
    protocol: str
    seconds: float
    produced: int = 0                 # produce requests sent
    acked: int = 0                    # acknowledged acks=all writes
    errors: dict = field(default_factory=dict)  # produce error name -> count ("unanswered" too)
    reads: int = 0
    faults: list = field(default_factory=list)  # [seconds since start, kind, broker]
    lost_bytes: int = 0               # what power losses discarded
    final_hw: int = -1
    anomalies: list = field(default_factory=list)  # history properties that fail

    @property
    def acked_per_s(self) -> float:
        return self.acked / self.seconds if self.seconds else 0.0

    def to_json(self) -> dict:
        return {"protocol": self.protocol, "seconds": round(self.seconds, 3), "produced": self.produced,
                "acked": self.acked, "acked_per_s": round(self.acked_per_s, 1), "errors": self.errors,
                "reads": self.reads, "faults": self.faults, "lost_bytes": self.lost_bytes,
                "final_hw": self.final_hw, "anomalies": self.anomalies}


def soak_config(protocol: str, replicas: int, min_insync_replicas: int) -> ClusterConfig:
    """Wall-clock settings: sessions expire in 1.5 s, a follower leaves the ISR after 2 s behind, a
    produce waits at most 1.5 s for the ISR (a client gives up on an answer 1 s after that)."""
    return ClusterConfig(protocol=protocol, replicas=replicas, min_insync_replicas=min_insync_replicas,
                         replica_lag_time_max_ms=2000, request_timeout_ms=1500,
                         broker_heartbeat_interval_ms=50, broker_session_timeout_ms=1500,
                         replica_fetch_backoff_ms=5)


class _Clients:
    """Producers and a consumer on this process's event loop, recording every answer."""

    def __init__(self, config: ClusterConfig, cluster: ProcessCluster, history_file) -> None:
        loop = asyncio.get_running_loop()
        self.config, self.n = config, config.replicas
        self.transport = TcpTransport(loop, ports=cluster.ports)
        self._waiting: dict[object, asyncio.Future] = {}
        self.producer = Producer(self.transport, self._answer)
        self.consumer = Consumer(self.transport, self._answer, config.variant.fetch_version)
        self.history = EMPTY_HISTORY
        self.leader = 0
        self.next_id = 1
        self.started = time.monotonic()
        self.file = history_file

    def _answer(self, result) -> None:
        key = result.value if hasattr(result, "value") else ("consume", result.replica)
        future = self._waiting.pop(key, None)
        if future is not None and not future.done():
            future.set_result(result)

    def _record(self, op: dict, raw_step: dict, answered: bool = True) -> None:
        """Into the ghost history (an unanswered request told the client nothing) and the history file."""
        self.history = self.history.after(Step.from_json(raw_step), [op] if answered else [], None)
        self.file.write(json.dumps({"t": round(time.monotonic() - self.started, 4), **op}) + "\n")

    async def _ask(self, key, send, timeout_s: float):
        future = asyncio.get_running_loop().create_future()
        self._waiting[key] = future
        send()
        try:
            return await asyncio.wait_for(future, timeout_s)
        except asyncio.TimeoutError:
            self._waiting.pop(key, None)
            return None

    async def produce(self, result: SoakResult) -> bool:
        rid, broker = self.next_id, self.leader
        self.next_id += 1
        value = str(rid).encode()
        answer = await self._ask(value, lambda: self.producer.send(broker, value, -1, self.config.request_timeout_ms),
                                 self.config.request_timeout_ms / 1000 + 1.0)
        result.produced += 1
        error = "unanswered" if answer is None else answer.error
        self._record({"type": "produce", "replica": broker, "record": rid, "records": 1, "acks": -1, "error": error,
                      "offset": -1 if answer is None else answer.offset},
                     {"step": "produce", "replica": broker, "acks": -1}, answer is not None)
        if error == "NONE":
            result.acked += 1
            return True
        result.errors[error] = result.errors.get(error, 0) + 1
        if broker == self.leader:
            self.leader = (broker + 1) % self.n
        return False

    async def consume(self, broker: int | None = None, offset: int = 0):
        broker = self.leader if broker is None else broker
        answer = await self._ask(("consume", broker), lambda: self.consumer.fetch(broker, offset), 5.0)
        if answer is None:
            return None
        self._record({"type": "consume", "replica": broker, "error": answer.error, "hw": answer.hw,
                      "records": [[o, int(v)] for o, v in answer.records]}, {"step": "consume", "replica": broker})
        if answer.error != "NONE" and broker == self.leader:
            self.leader = (broker + 1) % self.n
        return answer


async def _faults(cluster: ProcessCluster, kinds: tuple, rng: random.Random, until: float, result: SoakResult,
                  started: float) -> None:
    loop = asyncio.get_running_loop()
    while kinds and time.monotonic() < until:
        await asyncio.sleep(rng.uniform(0.5, 2.0))
        if time.monotonic() >= until:
            break
        broker, kind = rng.randrange(cluster.config.replicas), rng.choice(kinds)
        result.faults.append([round(time.monotonic() - started, 3), kind, broker])
        await loop.run_in_executor(None, cluster.crash, broker, kind)
        await asyncio.sleep(rng.uniform(0.5, 2.0))
        await loop.run_in_executor(None, cluster.restart, broker)


async def _producer(clients: _Clients, until: float, result: SoakResult) -> None:
    while time.monotonic() < until:
        if not await clients.produce(result):
            await asyncio.sleep(0.02)


async def _reader(clients: _Clients, until: float, result: SoakResult) -> None:
    while time.monotonic() < until:
        if await clients.consume() is not None:
            result.reads += 1
        await asyncio.sleep(0.1)


async def _read_log(clients, broker: int):
    """Everything ``broker`` serves below its HW, fetched on from each answer's next offset until
    the HW of the last answer: (HW, records), or None if an answer failed or brought nothing."""
    answer = await clients.consume(broker)
    if answer is None or answer.error != "NONE":
        return None
    records = answer.records
    while answer.next_offset < answer.hw:
        offset = answer.next_offset
        answer = await clients.consume(broker, offset)
        if answer is None or answer.error != "NONE" or answer.next_offset <= offset:
            return None
        records += answer.records
    return answer.hw, records


async def _final_read(clients, acked_end: int, timeout_s: float = 60.0):
    """A whole read whose HW is past every acknowledged offset and the same twice in a row, from
    the broker that serves it: (broker, HW, records), what the established leader holds below its
    HW; (None, -1, None) if none came within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        for broker in range(clients.n):
            read = await _read_log(clients, broker)
            if read is None or read[0] < acked_end:
                continue
            if last == (broker, read[0]):
                return broker, *read
            last = (broker, read[0])
            break
        await asyncio.sleep(0.5)
    return None, -1, None


async def run_soak(protocol: str, directory: str, seconds: float, faults: str = "crash", seed: int = 0,
                   replicas: int = 3, min_insync_replicas: int = 2, producers: int = 4) -> SoakResult:
    config = soak_config(protocol, replicas, min_insync_replicas)
    Path(directory).mkdir(parents=True, exist_ok=True)
    cluster = ProcessCluster(config, directory)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, cluster.start)
    result = SoakResult(protocol, seconds)
    try:
        with open(Path(directory) / "history.jsonl", "w", encoding="utf-8") as history_file:
            clients = _Clients(config, cluster, history_file)
            started = time.monotonic()
            until = started + seconds
            await asyncio.gather(_faults(cluster, FAULTS[faults], random.Random(seed), until, result, started),
                                 _reader(clients, until, result),
                                 *(_producer(clients, until, result) for _ in range(producers)))
            result.seconds = time.monotonic() - started
            for b in range(replicas):  # everyone back before the final read
                if not cluster.alive(b):
                    await loop.run_in_executor(None, cluster.restart, b)
            acked_end = max((o + 1 for o, _r in clients.history.acked), default=0)
            broker, result.final_hw, final = await _final_read(clients, acked_end)
            result.lost_bytes = cluster.lost_bytes
            result.anomalies = _check(protocol, config, clients.history, broker, final)
    finally:
        await loop.run_in_executor(None, cluster.stop)
    return result


def _check(protocol: str, config: ClusterConfig, history, broker, final) -> list[str]:
    """The history properties over what clients were told, with the final read's records as the
    established leader's log; no final read at all is an anomaly of its own (the cluster did not
    recover)."""
    if final is None:
        return ["NoFinalRead"]
    model = ModelConfig(protocol=protocol, replicas=config.replicas, min_insync_replicas=config.min_insync_replicas)
    state = initial_state(model)
    log = tuple(Entry(o, -1, int(v), o) for o, v in final)
    lead = state.replicas[0]._replace(log=log, leader=broker, leader_epoch=0, alive=True)
    others = tuple(r._replace(log=(), alive=False) for r in state.replicas)
    state = state._replace(replicas=others[:broker] + (lead,) + others[broker + 1:],
                           controller=state.controller._replace(leader=broker, leader_epoch=0),
                           **history._asdict())
    return [p.id for p in HISTORY if not p.check(state)]
