"""Broker: one Kafka broker process hosting a replica of the partition (Kafka's BrokerServer).

It owns the partition's log on its machine's file system, the ReplicaManager, and the
BrokerLifecycleManager duties: registration with the controller (a new broker epoch on every
start, and again when a live broker the controller fenced comes back) and, in auto mode,
heartbeats. Its own ``replication-offset-checkpoint`` in the data directory holds the HW, written
by ``checkpoint_high_watermarks`` (on a flush, a clean shutdown, on demand, and in auto mode every
``replica_high_watermark_checkpoint_interval_ms`` if set); at start the HW is min(checkpoint, LEO).

``shutdown`` is a controlled shutdown (flush the log, checkpoint the HW, close); ``halt`` is the
process dying. What the machine's file system keeps after a halt is the runtime's business.

A broker of a single-partition run hosts topic ``isr`` partition 0 from the start (its log in
``isr-0``). A ``kafka`` broker (``isrcheck serve``) starts with none and hosts what the controller's
LeaderAndIsr names, each partition's log in ``<topic>-<index>`` as Kafka lays out a log directory,
every partition's HW in the one checkpoint file, and deletes the log of a partition whose topic was
deleted; its heartbeats say which partition epochs it applied (BrokerHeartbeat v1).
"""

from __future__ import annotations

import errno
import json
from typing import Callable

from ..controller import CONTROLLER_ID, DEFAULT_TOPIC
from ..network import NodeEndpoint
from ..protocol import (
    ApiKey,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerRegistrationResponse,
    Errors,
    LeaderAndIsrRequest,
)
from ..runtime import ProcessScheduler, Scheduler, Transport
from ..storage import FileSystem, Log, LogConfig
from ..storage.checkpoints import CheckpointFile
from .config import ClusterConfig
from .log_dir_failure import LogDirFailureChannel
from .partition import Partition
from .replica_manager import ReplicaManager

DATA_DIR = "/var/lib/kafka/data"  # the default log.dirs; each broker has its own file system
PARTITION_DIR_NAME = f"{DEFAULT_TOPIC}-0"
HW_CHECKPOINT_NAME = "replication-offset-checkpoint"
CLEAN_SHUTDOWN_NAME = ".kafka_cleanshutdown"  # CleanShutdownFileHandler: written last by a clean shutdown
# the broker epoch, written at registration and never fsynced: it lives in the page cache, so a
# process crash leaves it and a power loss or a lost disk does not (KIP-966's unclean shutdown)
RUNNING_NAME = ".kafka_running"
PARTITION_ID = 0
# the ways a broker stops, least destructive first: ``shutdown`` (clean), ``halt`` with the page
# cache kept (a process crash), ``halt`` with what was not fsynced gone (a power loss)
CRASH_KINDS = ("clean", "process", "power")
# the operations a failing log directory fails, with their errno (fail_disk; Kafka's LogDirFailureChannel)
DISK_IO = ("write:EIO", "write:ENOSPC", "fsync:EIO", "fsync:ENOSPC", "read:EIO")


def data_maybe_lost(fs: FileSystem, data_dir: str) -> bool:
    """Neither a clean shutdown nor the page cache left a broker epoch in ``data_dir`` (a power loss
    or a lost disk; or a clean shutdown before registering again after one, which writes -1): the
    broker's next registration is unclean (KIP-966)."""
    for name in (CLEAN_SHUTDOWN_NAME, RUNNING_NAME):
        path = fs.join(data_dir, name)
        if fs.exists(path):
            try:
                if int(json.loads(fs.read_file(path))["brokerEpoch"]) >= 0:
                    return False
            except (ValueError, KeyError, TypeError):
                pass
    return True


class Broker:
    """One broker process: endpoint, log, ReplicaManager, lifecycle."""

    def __init__(
        self,
        broker_id: int,
        config: ClusterConfig,
        fs: FileSystem,
        scheduler: Scheduler,
        transport: Transport,
        auto: bool = False,
        incarnation: int = 0,
        on_event: Callable[..., None] | None = None,
        data_dir: str = DATA_DIR,
        kafka: bool = False,
        events=None,
    ) -> None:
        self.broker_id = broker_id
        self.events = events  # an EventLog (isrcheck.impl.eventlog) when the run logs its events
        self.config = config
        self.fs = fs
        self.scheduler = ProcessScheduler(scheduler)
        self.transport = transport
        self.auto = auto
        self.incarnation = incarnation
        self.on_event = on_event
        self.data_dir = data_dir
        self._heartbeating = False
        self.kafka = kafka
        # BrokerLifecycleManager.initialCatchUpFuture: a heartbeat answer said this process applied
        # every partition state of its registration; ``on_caught_up`` runs once then (a Kafka broker
        # enables request processing on its client listener there)
        self.caught_up = False
        self.on_caught_up: Callable[[], None] | None = None
        self.log_dir_failure_channel = LogDirFailureChannel()
        if events is not None:  # logged before the broker stops serving the directory (halts)
            self.log_dir_failure_channel.on_offline = lambda _directory, error: events.log_dir_offline(
                broker_id, errno.errorcode.get(error.errno, str(error.errno))
            )
        fs.makedirs(data_dir)
        self.hw_checkpoint_file = CheckpointFile(fs, fs.join(data_dir, HW_CHECKPOINT_NAME), 2)
        self.hw_checkpoints: dict[int, int] = dict(self.hw_checkpoint_file.read() or [])  # partition id -> HW
        self.clean_shutdown_file = fs.join(data_dir, CLEAN_SHUTDOWN_NAME)
        self.running_file = fs.join(data_dir, RUNNING_NAME)
        self.previous_broker_epoch = self._take_epoch_file(self.clean_shutdown_file)
        running_epoch = self._take_epoch_file(self.running_file)
        if self.previous_broker_epoch < 0:
            self.previous_broker_epoch = running_epoch
        if self.previous_broker_epoch >= 0:  # kept for the next start until a registration gives a new
            self._write_running_file(self.previous_broker_epoch)  # one: a crash before it loses nothing
        self.log_config = LogConfig(flush_messages=config.flush_messages, retention_ms=None, segment_ms=None)
        self.endpoint = NodeEndpoint(broker_id, transport)
        self.replica_manager = ReplicaManager(
            broker_id,
            config,
            self._open_log,
            self.scheduler,
            self.endpoint,
            auto,
            on_event,
            kafka,
            events,
            self._delete_log,
        )
        if not kafka:
            self.replica_manager.get_or_create_partition(PARTITION_ID, DEFAULT_TOPIC, 0)
        # a restart (not a new cluster's bootstrap) under KRaft's rule starts before it registers
        self.replica_manager.starting = incarnation > 0 and config.variant.start_before_registration
        self.alive = True
        # an I/O error in a request handler or a timer takes the log directory offline (Kafka's
        # LocalLog.maybeHandleIOException); the runtime ends the process (None: only ``halt``)
        self.on_log_dir_offline: Callable[[OSError], None] | None = None
        self.endpoint.on_io_error = self.scheduler.on_io_error = self.handle_log_dir_failure
        transport.register(broker_id, self.endpoint)
        if events is not None and incarnation > 0:  # log recovery done, not yet registered
            if kafka:  # its partitions' logs are opened as LeaderAndIsr names them: a restart of each
                events.emit(broker_id, "restart", "{}", {"replica": broker_id})
            else:
                events.broker(self.partition, "restart", {"replica": broker_id})

    def _open_log(self, partition_id: int, topic: str, index: int) -> tuple[Log, int]:
        """LogManager.getOrCreateLog: the partition's log in ``<topic>-<index>``, recovered if it
        exists, with the HW the checkpoint file holds for it."""
        directory = self.fs.join(self.data_dir, f"{topic}-{index}")
        self.fs.makedirs(directory)
        log = Log.open(directory, self.log_config, self.fs, clock=self.scheduler.now_ms)
        return log, self.hw_checkpoints.get(partition_id, 0)

    def _delete_log(self, partition_id: int, topic: str, index: int, log: Log | None) -> None:
        """UnifiedLog.delete for a deleted topic's partition: the log (if open) closed, its directory
        removed with every file in it, its HW out of the checkpoint file."""
        if log is not None:
            log.close()
        directory = self.fs.join(self.data_dir, f"{topic}-{index}")
        if self.fs.exists(directory):
            for name in self.fs.listdir(directory):
                self.fs.remove(self.fs.join(directory, name))
            self.fs.rmdir(directory)
            self.fs.fsync_dir(self.data_dir)
        if partition_id in self.hw_checkpoints:
            self.hw_checkpoints = {pid: hw for pid, hw in self.hw_checkpoints.items() if pid != partition_id}
            self.hw_checkpoint_file.write(sorted(self.hw_checkpoints.items()))
        if self.on_event is not None:
            self.on_event(self.broker_id, f"{topic}-{index}", "deleted", directory)

    # -- the first partition: what single-partition runs read ---------------------------------
    @property
    def partition(self):
        return self.replica_manager.partition

    @property
    def log(self) -> Log:
        return self.replica_manager.partition.log

    @property
    def hw_checkpoint(self) -> int:
        return self.hw_checkpoints.get(PARTITION_ID, 0)

    # -- lifecycle ----------------------------------------------------------------------------
    @property
    def broker_epoch(self) -> int:
        return self.replica_manager.broker_epoch

    def bootstrap(
        self, broker_epoch: int, state: LeaderAndIsrRequest | None, alive_broker_epochs: tuple[int, ...] = ()
    ) -> None:
        """Join a newly created cluster: registered already, the partition (if any) just created;
        ``alive_broker_epochs`` the registrations its metadata cache starts with (metadata_cache)."""
        self.replica_manager.registered(broker_epoch)
        self.replica_manager.update_metadata_cache(alive_broker_epochs, logged=False)
        self._write_running_file()
        if state is not None:  # docs/steps.md's initial state: every follower's fetcher in place
            self.replica_manager.apply_leader_and_isr(state, split=False)
        self._start_heartbeats()

    def replay_metadata(self, states) -> None:
        """KRaft's start on the metadata log: apply the controller's current partition states (as
        LeaderAndIsrs: ``makeLeader``/``makeFollower``) before registering."""
        for req in states:
            self.replica_manager.apply_leader_and_isr(req)

    def register(self) -> None:
        """BrokerRegistration after a restart, or by a live broker that was fenced: the controller
        answers with a new broker epoch. It names the previous broker epoch unless this process
        follows a shutdown that may have lost data (a power loss, a lost disk): then -1 (KIP-966's
        unclean shutdown detection)."""
        previous = self.broker_epoch if self.broker_epoch >= 0 else self.previous_broker_epoch
        self.endpoint.send_request(
            CONTROLLER_ID,
            ApiKey.BROKER_REGISTRATION,
            self.config.variant.registration_version,
            BrokerRegistrationRequest(self.broker_id, self.incarnation, previous),
            self._on_registered,
        )

    def _take_epoch_file(self, path: str) -> int:
        """The broker epoch in ``path``, or -1 if it is missing or unreadable (a power loss leaves
        the never-fsynced one empty or torn); the file is removed, so the next start finds only
        what this process writes."""
        if not self.fs.exists(path):
            return -1
        try:
            epoch = int(json.loads(self.fs.read_file(path))["brokerEpoch"])
        except (ValueError, KeyError, TypeError):
            epoch = -1
        self.fs.remove(path)
        self.fs.fsync_dir(self.data_dir)  # else a power loss brings back a clean shutdown file
        return epoch

    def _write_running_file(self, epoch: int | None = None) -> None:
        """The broker epoch (or ``epoch``) to the page cache only (no fsync: see RUNNING_NAME); none
        where the unclean shutdown is detected as Apache Kafka does, by the clean shutdown file alone."""
        if self.config.unclean_shutdown_detection != "page-cache":
            return
        if self.fs.exists(self.running_file):
            self.fs.remove(self.running_file)
        handle = self.fs.open(self.running_file)
        try:
            handle.append(
                json.dumps({"version": 0, "brokerEpoch": self.broker_epoch if epoch is None else epoch}).encode()
            )
        finally:
            handle.close()

    @property
    def data_maybe_lost(self) -> bool:
        """See ``data_maybe_lost``: read from this broker's disk, e.g. after it stopped."""
        return data_maybe_lost(self.fs, self.data_dir)

    def _on_registered(self, resp: BrokerRegistrationResponse | None) -> None:
        if resp is not None and resp.error == Errors.NONE:
            self.replica_manager.registered(resp.broker_epoch)
            self._write_running_file()
            self._start_heartbeats()
        elif self.auto:  # not fenced yet, or lost: try again later
            self.scheduler.schedule(self.config.broker_heartbeat_interval_ms, self.register)

    def _start_heartbeats(self) -> None:
        if self.auto and not self._heartbeating:
            self._heartbeating = True
            self.scheduler.schedule(self.config.broker_heartbeat_interval_ms, self._heartbeat)
            if self.config.replica_high_watermark_checkpoint_interval_ms:
                self._schedule_hw_checkpoint()

    def _schedule_hw_checkpoint(self) -> None:
        """replica.high.watermark.checkpoint.interval.ms: the HW reaches the disk on a schedule."""

        def run() -> None:
            changed = self._partitions_changed(lambda p: p.high_watermark != self.hw_checkpoints.get(p.partition_id, 0))
            self.checkpoint_high_watermarks()
            for p in changed:
                self.events.broker(p, "checkpoint_hw", {"replica": self.broker_id})
            self._schedule_hw_checkpoint()

        self.scheduler.schedule(self.config.replica_high_watermark_checkpoint_interval_ms, run)

    def _heartbeat(self) -> None:
        rm = self.replica_manager
        if self.kafka:
            req = BrokerHeartbeatRequest(self.broker_id, self.broker_epoch, -1, -1, rm.applied_partition_epochs)
        else:
            req = BrokerHeartbeatRequest(
                self.broker_id, self.broker_epoch, rm.partition.leader_epoch, rm.partition.partition_epoch
            )
        self.endpoint.send_request(
            CONTROLLER_ID, ApiKey.BROKER_HEARTBEAT, 1 if self.kafka else 0, req, self._on_heartbeat
        )
        self.scheduler.schedule(self.config.broker_heartbeat_interval_ms, self._heartbeat)

    def _on_heartbeat(self, resp: BrokerHeartbeatResponse | None) -> None:
        """Liveness is the controller's judgement (a lost heartbeat is just late); v1's answer says
        which brokers are live, for clients' Metadata even before any partition exists."""
        if resp is not None and resp.error == Errors.NONE and self.kafka:
            self.replica_manager.live_brokers = resp.live_brokers
            if resp.is_caught_up and not self.caught_up:
                self.caught_up = True
                if self.on_caught_up is not None:
                    self.on_caught_up()

    # -- durability ---------------------------------------------------------------------------
    def checkpoint_high_watermarks(self, always: bool = False) -> None:
        """ReplicaManager.checkpointHighWatermarks: every hosted partition's HW to
        replication-offset-checkpoint (fsynced), when one changed (``always``: as Kafka's timer does,
        whether or not). The broker's view of the checkpoint changes only once the write returned."""
        changed = {
            pid: p.high_watermark
            for pid, p in self.replica_manager.partitions.items()
            if p.high_watermark != self.hw_checkpoints.get(pid, 0)
        }
        if changed or always:
            checkpoints = {**self.hw_checkpoints, **changed}
            self.hw_checkpoint_file.write(sorted(checkpoints.items()))
            self.hw_checkpoints = checkpoints

    def flush(self) -> None:
        """fsync every log and checkpoint the HWs."""
        changed = self._partitions_changed(
            lambda p: (
                p.log.recovery_point != p.log.log_end_offset
                or p.high_watermark != self.hw_checkpoints.get(p.partition_id, 0)
            )
        )
        for p in self.replica_manager.partitions.values():
            p.log.flush()
        self.checkpoint_high_watermarks()
        for p in changed:
            self.events.broker(p, "flush", {"replica": self.broker_id})

    def _partitions_changed(self, changed: Callable[[Partition], bool]) -> list[Partition]:
        """The hosted partitions a flush or HW checkpoint changes, for the event log (none without one)."""
        if self.events is None:
            return []
        return [p for p in self.replica_manager.partitions.values() if changed(p)]

    def read_log_end(self) -> None:
        """Read the last batch of the first partition's log, as serving a fetch of it does."""
        log = self.log
        if log.log_end_offset > log.log_start_offset:
            log.read(log.log_end_offset - 1)

    def disk_io(self, operation: str) -> bool:
        """One I/O operation of the log directory, through the LogDirFailureChannel: ``write`` the
        HW checkpoint, ``fsync`` the logs (a flush), ``read`` the log. False: it failed and the
        directory is offline, so the runtime halts the broker (its only log directory)."""
        run = {
            "write": lambda: self.checkpoint_high_watermarks(always=True),
            "fsync": self.flush,
            "read": self.read_log_end,
        }[operation]
        return self.log_dir_failure_channel.run(self.data_dir, run)

    def handle_log_dir_failure(self, error: OSError) -> None:
        """An I/O error where the broker did not expect one (a produce's or a fetched batch's append,
        a timer's checkpoint): LogDirFailureChannel.maybeAddOfflineLogDir, then, its only log
        directory being offline, the halt of LogManager.handleLogDirFailure. The request that hit
        it is never answered, so nothing its failed write held is acknowledged."""
        self.log_dir_failure_channel.maybe_add_offline_log_dir(self.data_dir, error)
        self.halt()
        if self.on_log_dir_offline is not None:
            self.on_log_dir_offline(error)

    @property
    def durable_offset(self) -> int:
        """The fsynced prefix of the first partition's log (the recovery point)."""
        return self.log.recovery_point

    def shutdown(self) -> None:
        """Controlled shutdown: checkpoint the HWs, flush and close the logs, then stop."""
        self.checkpoint_high_watermarks()
        for p in self.replica_manager.partitions.values():
            p.log.close()
        # not registered yet: the epoch the previous shutdown left (-1: unclean, and it stays so); Apache
        # Kafka's detection writes the epoch it has (BrokerServer.shutdown: lifecycleManager.brokerEpoch, -1)
        kept = self.config.unclean_shutdown_detection == "page-cache"
        epoch = self.broker_epoch if self.broker_epoch >= 0 or not kept else self.previous_broker_epoch
        self.fs.write_file_atomically(
            self.clean_shutdown_file, json.dumps({"version": 0, "brokerEpoch": epoch}).encode()
        )
        self.halt()

    def halt(self) -> None:
        """The process stops at once (a crash): timers die, connections close, nothing is flushed."""
        self.alive = False
        self.scheduler.alive = False
        self.replica_manager.shutdown()
        self.transport.unregister(self.broker_id)
