"""SimWorld: the simulated world a Cluster acts on, built and wired, with its snapshots and trace hash.

It builds the clock, the network (whose frames it sorts into the FIFOs of ``MESSAGE_KINDS``), the
controller, each broker on its own file system, and the two clients; it starts the partition as
docs/steps.md's initial state has it, realises crashes, restarts and lost disks on the brokers and
their disks, keeps the last view of each dead broker, and digests every delivered message and
every state change, in order. It decides nothing about which step is possible: ``Cluster`` does.

``start_controller``, ``start_broker``, ``make_filesystem`` and ``broker_snapshot`` are where a
world of another make plugs in its nodes (``isrcheck.impl.sut.processes``: one process each).
"""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import random
import struct
from typing import Any

from ..clients import Consumer, ConsumeResult, Producer, ProduceResult
from ..controller import CONTROLLER_ID, Controller
from ..eventlog import DOWN
from ..protocol import REQUEST, ApiKey, LeaderAndIsrRequest
from ..replication import Broker, ClusterConfig
from ..storage import SimulatedFileSystem, iter_batches
from .clock import SimClock
from .disk import CUT, page_cache_write_back
from .late_heartbeat import LateHeartbeats
from .network import INSTANT, NetworkFaults, SimNetwork
from .snapshot import BrokerSnapshot, ClusterSnapshot, LogView, broker_snapshot, first_bad_batch

# a v2 batch header's maxTimestamp is bytes 35..42: covered by the CRC, carried by no record's
# offset, epoch or value, so a flipped bit there is found only by the CRC check
_MAX_TIMESTAMP_LAST_BYTE = 42

MESSAGE_KINDS = ("fetch_request", "fetch_response", "leader_and_isr", "alter_partition", "alter_partition_response")
_TRACE_HEAD = struct.Struct(">qii")


class SimWorld:
    """Clock, network, controller, brokers on their file systems and clients of one simulation."""

    def __init__(
        self, config: ClusterConfig, auto: bool, seed: int, faults: NetworkFaults | None = None, events=None
    ) -> None:
        """``events``: an EventLog (isrcheck.impl.eventlog) every node writes its protocol events to."""
        self.config = config
        self.events = events
        self.auto = auto
        self.rng = random.Random(seed)
        self.clock = SimClock()
        if events is not None:
            events.now_ms = self.clock.now_ms
        self._hash = hashlib.blake2b(digest_size=16)
        self.network = SimNetwork(
            self.clock,
            self.classify,
            random.Random(self.rng.getrandbits(64)),
            (faults or NetworkFaults()) if auto else None,
            self.trace_delivery,
        )
        self.late_heartbeats = LateHeartbeats(self.network, self.clock, CONTROLLER_ID) if auto else None
        self.controller = self.start_controller()
        self.filesystems = [self.make_filesystem(b) for b in range(config.replicas)]
        self.brokers = [self.start_broker(b, 0) for b in range(config.replicas)]
        self._frozen: dict[int, BrokerSnapshot] = {}  # last view of each dead broker
        self._log_views: dict[int, LogView] = {}
        self._damaged = False  # a live broker's log was damaged (corrupt_live): snapshots check CRCs
        self.client_responses: list[ProduceResult | ConsumeResult] = []  # in the order received
        self.producer = Producer(self.network, self.client_responses.append)
        self.consumer = Consumer(self.network, self.client_responses.append, config.variant.fetch_version)
        everyone = tuple(range(config.replicas))
        for b, broker in enumerate(self.brokers):  # the created partition: broker 0 leads epoch 0
            epoch = self.controller.broker_epochs[b]
            broker.bootstrap(
                epoch,
                LeaderAndIsrRequest(epoch, 0, 0, 0, 0, everyone, everyone),
                self.controller.alive_broker_epochs(),
            )

    # -- the nodes --------------------------------------------------------------------------------
    def start_controller(self) -> Controller:
        return Controller.for_cluster(
            self.config, self.clock, self.network, self.auto, self._controller_event, events=self.events
        )

    def _controller_event(self, *fields: Any) -> None:
        self.trace_event(*fields)
        if fields[1] == "fence" and self.late_heartbeats is not None:  # a heartbeat held back may arrive now
            self.late_heartbeats.fenced(fields[2], self.controller.broker_epochs[fields[2]])

    def make_filesystem(self, broker_id: int):
        """The disk of ``broker_id``'s machine; it outlives the broker's incarnations."""
        return SimulatedFileSystem()

    def start_broker(self, broker_id: int, incarnation: int) -> Broker:
        b = Broker(
            broker_id,
            self.config,
            self.filesystems[broker_id],
            self.clock,
            self.network,
            auto=self.auto,
            incarnation=incarnation,
            on_event=self.trace_event,
            events=self.events,
        )
        b.on_log_dir_offline = lambda error: self.log_dir_offline(broker_id)
        return b

    # -- faults and restarts ----------------------------------------------------------------------
    def crash_broker(self, broker: int, kind: str, survive: int = 0, torn: bool = False, tail: str = CUT) -> None:
        """Stop live ``broker`` as ``kind`` of ``CRASH_KINDS`` says and keep its last view. A power
        loss keeps the first ``survive`` unflushed batches and with ``torn`` half of the next one;
        in auto mode without either, a seeded number of them, maybe with a torn next one (as a step
        says it, docs/steps.md's ``crash``: the page cache writes the log back in order, and nothing
        else that was never fsynced). TooFewUnflushedBatches, before anything changed, if the page
        cache holds fewer unflushed batches than that."""
        b = self.brokers[broker]
        if self.late_heartbeats is not None:  # a heartbeat on the wire outlives its sender
            self.late_heartbeats.hold(broker, self.controller.broker_epochs[broker])
        if kind == "power" and self.auto and not (survive or torn):
            rng = random.Random(self.rng.getrandbits(64))
            unflushed = len(b.log.unflushed_batches())
            survive = rng.randint(0, unflushed)
            torn = survive < unflushed and rng.random() < 0.5
        write_back = page_cache_write_back(b.log, survive, torn, tail, broker) if kind == "power" else None
        if kind == "clean":
            b.flush()
        view = self.broker_snapshot(b)
        durable, lost = view.durable if write_back is None else write_back.durable, kind == "power"
        if kind != "clean" and view.bad_batch >= 0:  # no clean shutdown file: recovery will cut at the damage
            durable, lost = min(durable, view.bad_batch), True
        self._frozen[broker] = dataclasses.replace(
            view,
            alive=False,
            pending_produces=(),
            fetch_outstanding=False,
            power_lost=lost,
            durable=durable,
            unregistered=False,
            held_reads=(),  # its handlings die with it
            stale_fetcher=(),  # and its fetchers
        )
        if kind == "clean":
            b.shutdown()
        else:
            b.halt()
            fs = self.filesystems[broker]
            if kind == "process":
                fs.process_crash()
            else:  # exactly what was written back
                fs.power_loss(written_back=write_back.lengths)
                for path, (position, garbage) in write_back.garbage.items():
                    fs.corrupt(path, position, garbage)
        self._frozen[broker] = dataclasses.replace(
            self._frozen[broker], unclean_shutdown=self.brokers[broker].data_maybe_lost
        )
        if self.events is not None:
            self.events.emit(broker, "crash", DOWN, {"replica": broker, "kind": kind})

    def restart_broker(self, broker: int) -> Broker:
        """The next incarnation of down ``broker``, started on its disk (log recovery), not yet
        registered."""
        b = self.start_broker(broker, self.brokers[broker].incarnation + 1)
        self.brokers[broker] = b
        del self._frozen[broker]
        return b

    def lose_disk(self, broker: int) -> None:
        """Down ``broker``'s log directory is replaced by an empty one."""
        self.filesystems[broker].lose_directory(self.brokers[broker].data_dir)
        self._frozen[broker] = dataclasses.replace(
            self._frozen[broker],
            log=(),
            durable=0,
            hw=0,
            hw_checkpoint=0,
            power_lost=True,
            bad_batch=-1,
            unclean_shutdown=self.brokers[broker].data_maybe_lost,
        )

    def corrupt_at_rest(self, broker: int) -> int:
        """Damage the last durable batch of down ``broker``'s log on its disk (one byte its CRC
        covers, as bit rot does); returns that batch's base offset. LookupError if there is none."""
        view = self._frozen[broker]
        base = self._damage(broker, view.durable, lambda size: size - 1, 0xFF)
        self._frozen[broker] = dataclasses.replace(view, durable=base)
        return base

    def corrupt_live(self, broker: int) -> int:
        """Damage the last durable batch of live ``broker``'s log on its disk (a bit of its max
        timestamp); returns that batch's base offset. The broker is not told: its next read of
        the batch meets the bad CRC. LookupError if it has no durable batch."""
        base = self._damage(broker, self.brokers[broker].durable_offset, lambda size: _MAX_TIMESTAMP_LAST_BYTE, 0x01)
        self._damaged = True
        return base

    def _damage(self, broker: int, end: int, at, flip: int) -> int:
        """XOR ``flip`` into the byte at ``at(batch size)`` of the batch of ``broker``'s log ending at
        offset ``end``, on its disk; that batch's base offset. LookupError if no batch ends there."""
        fs = self.filesystems[broker]
        directory = self.brokers[broker].log.dir
        for name in reversed(fs.listdir(directory)):
            if not name.endswith(".log"):
                continue
            path = fs.join(directory, name)
            data, position = fs.read_file(path), 0
            for batch in iter_batches(data):
                if batch.next_offset == end:
                    byte = position + at(batch.size)
                    fs.corrupt(path, byte, bytes([data[byte] ^ flip]))
                    return batch.base_offset
                position += batch.size
        raise LookupError(f"broker {broker} has no durable batch ending at offset {end}")

    def log_dir_offline(self, broker: int, kind: str = "process") -> None:
        """``broker``'s only log directory went offline: the broker halts (a ``crash`` of ``kind``:
        ``power`` after a failed fsync, whose dirty pages the kernel dropped) and the controller
        handles the offline replica as a fence. Also where ``Broker.handle_log_dir_failure`` ends,
        when an I/O error hits a request or a timer (a failed write keeps the page cache)."""
        self.crash_broker(broker, kind)
        if broker not in self.controller.fenced:
            self.controller.fence(broker)

    def fail_disk(self, broker: int, operation: str, code: str) -> bool:
        """Make the next ``operation`` of live ``broker``'s disk fail with errno ``code`` and run that
        operation on the broker (``Broker.disk_io``). If it failed, its log directory is offline:
        the broker halts (its only log directory; after a failed fsync the kernel dropped the dirty
        pages, so what was not durable is gone, as in a power loss) and the controller handles the
        offline replica as a fence. False if the operation did not fail (nothing changed)."""
        fs, b = self.filesystems[broker], self.brokers[broker]
        fs.fail_next(operation, getattr(errno, code))
        if b.disk_io(operation):
            fs.failures.disarm()
            return False
        self.log_dir_offline(broker, "power" if operation == "fsync" else "process")
        return True

    # -- views ------------------------------------------------------------------------------------
    def broker_snapshot(self, b: Broker) -> BrokerSnapshot:
        view = self._log_views.get(b.broker_id)
        if view is None:  # not setdefault: a snapshot per step should not build a LogView per broker
            view = self._log_views[b.broker_id] = LogView()
        snap = broker_snapshot(b, self.config.replicas, view)
        if self._damaged:
            bad = first_bad_batch(b.log)
            if bad >= 0:
                snap = dataclasses.replace(snap, bad_batch=bad)
        return snap

    def snapshot(self) -> ClusterSnapshot:
        brokers = tuple(self._frozen[b.broker_id] if not b.alive else self.broker_snapshot(b) for b in self.brokers)
        return ClusterSnapshot(self.clock.now_ms(), brokers, self.controller.state())

    # -- the network's sorting of frames --------------------------------------------------------
    def classify(self, src: int, dst: int, frame: bytes):
        """The FIFO a frame waits in, ``(kind, replica)``, or ``INSTANT`` (client and registration
        traffic, and whatever is not a replication message between brokers)."""
        if len(frame) < 9:
            return INSTANT
        api, is_request, n = (frame[1] << 8) | frame[2], frame[0] == REQUEST, self.config.replicas
        if api in (ApiKey.FETCH, ApiKey.OFFSET_FOR_LEADER_EPOCH) and src < n and dst < n:
            return ("fetch_request", src) if is_request else ("fetch_response", dst)
        if api == ApiKey.LEADER_AND_ISR:
            return ("leader_and_isr", dst)
        if api == ApiKey.ALTER_PARTITION:
            return ("alter_partition", src) if is_request else ("alter_partition_response", dst)
        return INSTANT

    # -- the trace ------------------------------------------------------------------------------
    def trace_delivery(self, env) -> None:
        self._hash.update(_TRACE_HEAD.pack(self.clock.now_ms(), env.src, env.dst))
        self._hash.update(env.frame)

    def trace_event(self, *fields: Any) -> None:
        self._hash.update(repr((self.clock.now_ms(),) + fields).encode())

    def trace_hash(self) -> str:
        """Every delivered message and state change so far, in order, and the state now."""
        h = self._hash.copy()
        h.update(repr(self.snapshot()).encode())
        return h.hexdigest()


__all__ = ["SimWorld", "MESSAGE_KINDS"]
