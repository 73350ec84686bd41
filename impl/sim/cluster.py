"""Cluster: the step API of N brokers and a controller on the deterministic simulation (``SimWorld``).

Construction::

    c = Cluster(ClusterConfig(protocol="kip-320", replicas=3, min_insync_replicas=2), mode="steps", seed=0)

The initial state is docs/steps.md's: broker 0 leads leader epoch 0 with every replica in the ISR,
every broker has applied that LeaderAndIsr, the logs are empty, nothing is in flight.

**Step mode** (``mode="steps"``): nothing happens by itself. Each step of docs/steps.md is one
call; an impossible step raises ``ClusterError`` (with ``reason``) and changes nothing:

    produce(broker, values, acks)         consume(broker)    # values: one batch (or one bytes value)
    send_fetch(follower, max_batches=0)
    read_fetch(follower)                  # split_fetch_handling: the leader reads, handle_fetch completes
    read_fetch_hw(follower)          # split_fetch_handling: the HW alone, read_fetch the LEO and batches
    handle_fetch(follower)                = deliver("fetch_request", follower), or completes a read
    handle_fetch_response(follower)       = deliver("fetch_response", follower)
    deliver_leader_and_isr(broker, index) = deliver("leader_and_isr", broker, index)
    remove_fetcher(broker)                # split_become_follower: a new follower's stale fetcher replaced
    update_metadata_cache(broker)         # metadata_cache: the controller's registrations to its cache
    handle_alter_partition(leader)        = deliver("alter_partition", leader)
    handle_alter_partition_response(leader) = deliver("alter_partition_response", leader)
    drop(kind, replica, index=0)
    shrink_isr(leader)  expand_isr(leader)  elect(target=-1)  fence(broker)  rejoin(broker)
    unfence(broker)                       # unfence_at_heartbeat: the heartbeat that shows it caught up
    controlled_shutdown(broker)           # kraft_controlled_shutdown: handleBrokerInControlledShutdown
    crash(broker, kind, survive=0, torn=False, tail="cut")  # "clean" | "process" | "power"
    restart(broker)  lose_disk(broker)  flush(broker)  checkpoint_hw(broker)  advance(ms)
    corrupt(broker)  fail_disk(broker, io)       # io: "write:EIO", "fsync:ENOSPC", "read:EIO", ...
    corrupt_live(broker)                         # a flushed batch of a live broker damaged on disk

Client traffic (produce, consume, broker registration) is delivered at once. The only timer is
DelayedProduce expiration, fired by ``advance``. ``take_client_responses()`` returns the produce
and consume results (``ProduceResult``, ``ConsumeResult``) received since the last call, in order;
``in_flight()`` lists ``(kind, replica, index, decoded message)``; ``snapshot()`` returns a
``ClusterSnapshot`` of frozen dataclasses.

**Auto mode** (``mode="auto"``): fetchers poll, the network delivers with seeded delays and
faults (``NetworkFaults``), heartbeats and session timeouts drive fencing and elections, the ISR
shrinks and expands on its own. Drive it with ``run_for(ms)`` and ``run_until_quiescent()``;
``partition(a, b)`` / ``heal()`` cut and restore links; the step calls above still work.

``trace_hash()`` digests every delivered message and every state change, in order.

The cluster guards each step and takes it; the world (``world``, a ``SimWorld``) builds and wires
the clock, network, controller, brokers, their file systems and the clients, realises crashes and
restarts on them, and keeps the snapshots and the trace. Its pieces read as the cluster's own
attributes (``brokers``, ``controller``, ``network``, ``clock``, ``filesystems``, ...).
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any, Sequence

from ..clients import CONSUMER_ID, PRODUCER_ID, ConsumeResult, ProduceResult
from ..controller import CONTROLLER_ID
from ..protocol import CODEC, ApiKey
from ..replication import CRASH_KINDS, DISK_IO, Broker, ClusterConfig
from .disk import CUT, TAILS, TooFewUnflushedBatches
from .network import NetworkFaults
from .snapshot import ClusterSnapshot
from .world import MESSAGE_KINDS, SimWorld

MODES = ("steps", "auto")


class ClusterError(Exception):
    """A step that is not possible in the current state; nothing changed. ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Cluster:
    """The steps on the brokers, controller and clients of one ``SimWorld`` (see the module docstring)."""

    # the world's pieces, read-only, for the cluster's users (its own steps go through ``world``)
    config = property(attrgetter("world.config"))
    auto = property(attrgetter("world.auto"))
    rng = property(attrgetter("world.rng"))
    clock = property(attrgetter("world.clock"))
    network = property(attrgetter("world.network"))
    controller = property(attrgetter("world.controller"))
    filesystems = property(attrgetter("world.filesystems"))
    brokers = property(attrgetter("world.brokers"))
    producer = property(attrgetter("world.producer"))
    consumer = property(attrgetter("world.consumer"))

    def __init__(
        self,
        config: ClusterConfig,
        mode: str = "steps",
        seed: int = 0,
        faults: NetworkFaults | None = None,
        *,
        world: SimWorld | None = None,
        events=None,
    ) -> None:
        """``world``: one built for ``config`` and ``mode`` elsewhere (default: a ``SimWorld``);
        ``events``: an EventLog (isrcheck.impl.eventlog) the nodes write their protocol events to."""
        if mode not in MODES:
            raise ValueError(f"mode: expected one of {', '.join(MODES)}, got {mode!r}")
        if world is not None and (world.config != config or world.auto != (mode == "auto")):
            raise ValueError(f"world: built for another config or mode than {mode!r}")
        self.mode = mode
        self.seed = seed
        self.world = world if world is not None else SimWorld(config, mode == "auto", seed, faults, events)
        self.stats = {"crashes": 0, "power_losses": 0, "restarts": 0}

    # -- client requests ----------------------------------------------------------------------
    def produce(self, broker: int, values: bytes | Sequence[bytes], acks: int) -> None:
        """A producer sends the record ``values`` (or one value) as one batch to ``broker`` with
        ``acks`` (0, 1 or -1)."""
        if acks not in (0, 1, -1):
            raise ClusterError(f"acks must be 0, 1 or -1, got {acks!r}")
        if not isinstance(values, (bytes, bytearray)) and len(values) == 0:
            raise ClusterError("a produce carries at least one record")
        self._need_serving(broker)
        self.world.producer.send(broker, values, acks, self.world.config.request_timeout_ms)
        self._settle()

    def consume(self, broker: int) -> None:
        """A consumer fetches from ``broker`` from offset 0."""
        self._need_serving(broker)
        self.world.consumer.fetch(broker, 0)
        self._settle()

    def take_client_responses(self) -> list[ProduceResult | ConsumeResult]:
        responses = self.world.client_responses
        out, responses[:] = list(responses), []
        return out

    # -- protocol steps -----------------------------------------------------------------------
    def send_fetch(self, follower: int, max_batches: int = 0) -> None:
        """The follower's fetcher sends one request; a Fetch asks for at most ``max_batches`` whole
        batches (0: no limit)."""
        if isinstance(max_batches, bool) or not isinstance(max_batches, int) or max_batches < 0:
            raise ClusterError(f"max_batches must be an integer >= 0, got {max_batches!r}")
        b = self._need_alive(follower)
        fetcher = b.replica_manager.fetcher
        leader = fetcher.tag[0]  # a stale fetcher fetches from its old leader
        if fetcher.stale is not None and leader in (-1, follower):  # it was leader, or knew none
            raise ClusterError(f"broker {follower} has no fetcher until remove_fetcher (none before its makeFollower)")
        if leader < 0:
            raise ClusterError(f"broker {follower} knows no leader")
        if leader == follower:
            raise ClusterError(f"broker {follower} is the leader")
        if fetcher.outstanding is not None:
            raise ClusterError(f"follower {follower} has a fetch outstanding")
        fetcher.send(max_batches)
        self._settle()

    def deliver(self, kind: str, replica: int, index: int = 0) -> None:
        """Hand the ``index``-th oldest in-flight message of (kind, replica) to its destination."""
        self.world.network.deliver(self._envelope(kind, replica, index))
        self._settle()

    def drop(self, kind: str, replica: int, index: int = 0) -> None:
        """Lose the ``index``-th oldest in-flight message of (kind, replica)."""
        self.world.network.drop(self._envelope(kind, replica, index))
        self.world.trace_event("drop", kind, replica, index)
        self._settle()

    def read_fetch(self, follower: int) -> None:
        """The leader reads for ``follower``'s oldest fetch request and holds the read; ``handle_fetch``
        completes the handling (split_fetch_handling: Kafka's fetchRecords reads, releases the
        partition's lock, then updates the follower's state). With a read of ``follower`` held whose
        HW alone was read (``read_fetch_hw``), its LEO and batches."""
        holder = self._holder(follower) if self.world.config.split_fetch_handling else None
        if holder is not None and holder.replica_manager.held_fetches[follower].hw_only:
            holder.replica_manager.read_fetch_batches(follower)
            self.world.trace_event("read_fetch_batches", holder.broker_id, follower)
            self._settle()
            return
        self._read_request(follower, hw_only=False)

    def read_fetch_hw(self, follower: int) -> None:
        """As ``read_fetch``, the leader reading the HW alone; ``read_fetch`` reads the LEO and the
        batches (Kafka's readRecords reads the HW, the LEO, then the records, each on its own)."""
        self._read_request(follower, hw_only=True)

    def _read_request(self, follower: int, hw_only: bool) -> None:
        if not self.world.config.split_fetch_handling:
            raise ClusterError("split_fetch_handling is off: a leader handles a fetch whole (handle_fetch)")
        env = self._fetch_request(follower)
        holder = self._holder(follower)
        if holder is not None:
            raise ClusterError(
                f"broker {holder.broker_id} holds a read of follower {follower} (its next request waits)"
            )
        header = CODEC.decode_header(env.frame)
        if header.api_key != ApiKey.FETCH:
            raise ClusterError(
                f"the oldest fetch request of follower {follower} reads no records (its answer: epoch_end)"
            )
        rm = self.world.brokers[env.dst].replica_manager
        read = rm.read_fetch_hw if hw_only else rm.read_fetch
        reason = read(env.src, header, CODEC.decode_body(header, env.frame), env)
        if reason is not None:
            raise ClusterError(reason)
        self.world.network.hold(env)
        self._settle()

    def handle_fetch(self, follower: int) -> None:
        """The leader completes the handling of ``follower``'s Fetch it read (``read_fetch``), or
        handles its oldest fetch request whole."""
        holder = self._holder(follower) if self.world.config.split_fetch_handling else None
        if holder is not None:
            rm = holder.replica_manager
            if rm.held_fetches[follower].hw_only:
                raise ClusterError(
                    f"broker {holder.broker_id} has read only the HW of follower {follower}'s fetch (read_fetch next)"
                )
            self.world.network.release(rm.held_fetches[follower].handle)
            rm.complete_fetch(follower)
            self.world.trace_event("complete_fetch", holder.broker_id, follower)
            self._settle()
            return
        self._fetch_request(follower)
        self.deliver("fetch_request", follower)

    def _fetch_request(self, follower: int):
        """``follower``'s oldest fetch request, if its destination handles requests (else it waits)."""
        env = self._envelope("fetch_request", follower, 0)
        leader = self.world.brokers[env.dst]
        if leader.alive and leader.replica_manager.starting:
            raise ClusterError(f"broker {leader.broker_id} is not registered yet")  # the request waits
        return env

    def _holder(self, follower: int) -> Broker | None:
        """The live broker holding a read of ``follower``'s Fetch (split_fetch_handling), if one does."""
        return next((b for b in self.world.brokers if b.alive and follower in b.replica_manager.held_fetches), None)

    def handle_fetch_response(self, follower: int) -> None:
        self.deliver("fetch_response", follower)

    def deliver_leader_and_isr(self, broker: int, index: int = 0) -> None:
        b = self.world.brokers[broker]
        if b.alive and b.replica_manager.holds_hw_only_read():  # makeLeader's write lock waits for the reader
            raise ClusterError(f"broker {broker} holds a fetch read of the HW only (its batches' read holds the lock)")
        self.deliver("leader_and_isr", broker, index)

    def remove_fetcher(self, broker: int) -> None:
        """``broker`` replaces the fetcher it kept on becoming a follower in a newer leader epoch
        (split_become_follower: Kafka's removeFetcherForPartitions, then addFetcherForPartitions)."""
        if not self.world.config.split_become_follower:
            raise ClusterError("split_become_follower is off: deliver_leader_and_isr replaces the fetcher")
        b = self.world.brokers[broker]
        if not b.alive:
            raise ClusterError(f"broker {broker} is down")
        reason = b.replica_manager.remove_fetcher(b.partition.partition_id)
        if reason is not None:
            raise ClusterError(reason)
        self.world.trace_event("remove_fetcher", broker)
        self._settle()

    def update_metadata_cache(self, broker: int) -> None:
        """``broker``'s metadata cache takes the controller's current registrations (metadata_cache:
        KRaftMetadataCache.setImage of the image its metadata log replay reached)."""
        if not self.world.config.metadata_cache:
            raise ClusterError("metadata_cache is off: brokers hold no metadata cache")
        b = self._need_alive(broker)
        alive = self._alive_broker_epochs()
        if b.replica_manager.metadata_cache.broker_epochs == alive:
            raise ClusterError(f"the metadata cache of broker {broker} holds the controller's registrations")
        b.replica_manager.update_metadata_cache(alive, self.world.controller.metadata_version)
        self.world.trace_event("update_metadata_cache", broker)
        self._settle()

    def handle_alter_partition(self, leader: int) -> None:
        self.deliver("alter_partition", leader)

    def handle_alter_partition_response(self, leader: int) -> None:
        self.deliver("alter_partition_response", leader)

    def shrink_isr(self, leader: int) -> None:
        p = self._need_leader(leader)
        if not p.maybe_shrink_isr():
            raise ClusterError("no ISR follower is out of sync for longer than replica.lag.time.max.ms")
        self._log_proposal(leader, "shrink_isr")
        self._settle()

    def expand_isr(self, leader: int, follower: int = -1) -> None:
        """Partition.maybeExpandIsr: with ``follower``, that one alone (Kafka adds the fetching one)."""
        p = self._need_leader(leader)
        if not p.maybe_expand_isr(only=None if follower < 0 else follower):
            raise ClusterError(
                ("no follower outside the ISR" if follower < 0 else f"follower {follower} is in the ISR or has not")
                + " caught up to the high watermark"
                + (" in this leader epoch" if p.variant.hw_reached_epoch_to_expand else "")
            )
        self._log_proposal(leader, "expand_isr")
        self._settle()

    def elect(self, target: int = -1) -> None:
        """Leader election for a leaderless partition, or with a ``target`` a leader move to it."""
        c = self.world.controller
        if target != -1:
            self._need_replica(target)
            self._need_active(target)
            if target not in c.isr:
                raise ClusterError(f"broker {target} is not in the ISR {list(c.isr)}")
            if target == c.leader:
                raise ClusterError(f"broker {target} is already the leader")
            c.move_leader(target)
            self._settle()
            return
        if c.leader != -1:
            raise ClusterError(f"the controller has a leader ({c.leader})")
        if c.eligible_leader() == -1:
            raise ClusterError(
                "no eligible replica (every ISR member is fenced"
                + (")" if c.unclean else " and unclean election is disabled)")
            )
        c.elect()
        self._settle()

    def fence(self, broker: int) -> None:
        """The broker's session expires. A live broker fenced so is a zombie: it goes on with its last
        LeaderAndIsr, and the controller rejects its AlterPartition."""
        self._need_replica(broker)
        c = self.world.controller
        if broker in c.fenced:
            raise ClusterError(f"broker {broker} is already fenced")
        if c.registration_fenced(broker):  # awaiting unfence: the session's end writes nothing
            raise ClusterError(f"broker {broker} awaits unfence (its registration is fenced)")
        c.fence(broker)
        self._settle()

    def rejoin(self, broker: int) -> None:
        """A live fenced broker registers again: a new broker epoch, then its LeaderAndIsr."""
        b = self._need_alive(broker)
        if broker not in self.world.controller.fenced:
            raise ClusterError(f"broker {broker} is not fenced")
        if b.replica_manager.starting:
            raise ClusterError(f"broker {broker} is not registered yet (it registers by register)")
        self.world.trace_event("rejoin", broker)
        b.register()
        self._settle()

    def unfence(self, broker: int) -> None:
        """The controller unfences ``broker`` at the heartbeat that shows it caught up with its registration
        (unfence_at_heartbeat: BrokerHeartbeatManager.calculateNextBrokerState): a zombie, or a registration
        awaiting unfence. Its broker epoch stays; a fenced one is sent the current state."""
        if not self.world.config.unfence_at_heartbeat:
            raise ClusterError("unfence_at_heartbeat is off: a registration unfences at once")
        b = self._need_alive(broker)
        c = self.world.controller
        if b.broker_epoch < 0:
            raise ClusterError(f"broker {broker} is not registered")
        if b.replica_manager.starting:
            raise ClusterError(f"broker {broker} has not caught up with its registration")
        if not c.registration_fenced(broker):  # in controlled shutdown or not
            raise ClusterError(f"broker {broker} is neither fenced nor awaiting unfence")
        c.unfence(broker)
        self._settle()

    def controlled_shutdown(self, broker: int) -> None:
        """``broker`` asks to shut down (kraft_controlled_shutdown): the controller's
        handleBrokerInControlledShutdown takes it out of the ISR and elects elsewhere where it led; it
        stays up and unfenced, no longer active, until its fence or registration."""
        if not self.world.config.kraft_controlled_shutdown:
            raise ClusterError(
                "kraft_controlled_shutdown is off: a controlled shutdown is elect with a target, then fence"
            )
        b = self._need_alive(broker)
        c = self.world.controller
        if b.replica_manager.starting or b.broker_epoch < 0:
            raise ClusterError(f"broker {broker} is not registered")
        if broker in c.in_controlled_shutdown:  # fenced is never in controlled shutdown: the model's reason first
            raise ClusterError(f"broker {broker} is in controlled shutdown already")
        self._need_active(broker)
        self.world.trace_event("controlled_shutdown", broker)
        c.controlled_shutdown(broker)
        self._settle()

    def crash(self, broker: int, kind: str, survive: int = 0, torn: bool = False, tail: str = CUT) -> None:
        """Stop ``broker``: ``clean`` shutdown, ``process`` crash or ``power`` loss, which keeps the
        first ``survive`` unflushed batches and with ``torn`` half of the next one, the rest of it
        garbage with a ``tail`` of ``stale`` or ``random``."""
        if kind not in CRASH_KINDS:
            raise ClusterError(f"crash kind must be one of {', '.join(CRASH_KINDS)}, got {kind!r}")
        if isinstance(survive, bool) or not isinstance(survive, int) or survive < 0 or not isinstance(torn, bool):
            raise ClusterError(f"survive must be an integer >= 0 and torn a bool, got {survive!r}, {torn!r}")
        if kind != "power" and (survive or torn):
            raise ClusterError(f"survive and torn belong to a power loss, not a {kind} crash")
        if tail not in TAILS or (tail != CUT and not torn):
            raise ClusterError(
                f"tail must be one of {', '.join(TAILS)}, and not cut only for a torn power loss, got {tail!r}"
            )
        self._need_alive(broker)
        try:
            self.world.crash_broker(broker, kind, survive, torn, tail)
        except TooFewUnflushedBatches as exc:
            raise ClusterError(f"broker {broker} has {exc}") from None
        self.stats["crashes"] += 1
        self.stats["power_losses"] += kind == "power"
        self.world.trace_event(
            "crash", broker, kind, *((survive, torn) if survive or torn else ()), *((tail,) if tail != CUT else ())
        )
        self._settle()

    def restart(self, broker: int) -> None:
        """Start ``broker`` again: log recovery, HW from its checkpoint. Before KIP-903 here it
        registers at once; before the controller fenced it this is a fast bounce that keeps its ISR
        membership and leadership. From KIP-903 on (KRaft) it starts on the replayed metadata log,
        the controller's current state applied (the simulation hands it over at once), and
        registers by ``register`` (in auto mode it asks until the old session expired)."""
        self._need_down(broker)
        b = self.world.restart_broker(broker)
        self.stats["restarts"] += 1
        self.world.trace_event("restart", broker, b.log.log_end_offset)
        if not self.world.config.variant.start_before_registration:
            b.register()
            self._settle()  # its registration answered (auto mode: when it arrives)
            self._replayed_registrations(b)
        else:
            self._replayed_registrations(b)
            b.replay_metadata(self.world.controller.metadata(broker))
            if self.world.auto:
                b.register()  # asked again until the old session expired
        self._settle()

    def _replayed_registrations(self, b: Broker) -> None:
        """A restarted broker's metadata cache (metadata_cache): the registrations it replayed, the
        controller's current ones, part of the restart (not logged on their own)."""
        if self.world.config.metadata_cache:
            c = self.world.controller
            b.replica_manager.update_metadata_cache(self._alive_broker_epochs(), c.metadata_version, logged=False)

    def _alive_broker_epochs(self) -> tuple[int, ...]:
        """The controller's registrations as a cache takes them in a driven run: a broker registered and not yet
        caught up with its registration (starting, with a broker epoch) held fenced, as KRaft's controller
        holds it till the heartbeat after its catch-up."""
        behind = {
            b.broker_id for b in self.world.brokers if b.alive and b.replica_manager.starting and b.broker_epoch >= 0
        }
        return self.world.controller.alive_broker_epochs(behind)

    def register(self, broker: int) -> None:
        """The controller accepts started ``broker``'s registration (KRaft): only once its previous
        session ended (DUPLICATE_BROKER_REGISTRATION before), which this step says happened (sessions
        never expire by themselves here); one the controller did not fence yet, the registration takes
        out first. The broker serves once it applied the LeaderAndIsr of its registration
        (``deliver_leader_and_isr``)."""
        b = self._need_alive(broker)
        # accepted already, though the LeaderAndIsr of it may not be applied yet (starting still)
        if not b.replica_manager.starting or b.broker_epoch >= 0:
            raise ClusterError(f"broker {broker} is registered")
        self.world.controller.expire_session(broker)
        self.world.trace_event("register", broker)
        b.register()  # it serves once it applied the LeaderAndIsr of its registration
        self._settle()

    def lose_disk(self, broker: int) -> None:
        """The log directory of a down broker is replaced by an empty one (KAFKA-14139): log and
        checkpoints are gone; its next start begins empty."""
        self._need_down(broker)
        self.world.lose_disk(broker)
        self.world.trace_event("lose_disk", broker)

    def corrupt(self, broker: int) -> None:
        """A flushed batch of a down broker that lost power is damaged at rest (bit rot): its restart's
        log recovery finds the bad CRC and truncates there (docs/steps.md, "Disk faults")."""
        self._need_down(broker)
        view = self.world.snapshot().brokers[broker]
        if not view.power_lost:
            raise ClusterError(f"broker {broker} did not lose power (its restart would not re-validate the log)")
        if view.durable == 0:
            raise ClusterError(f"broker {broker} has no flushed batch")
        self.world.corrupt_at_rest(broker)
        self.world.trace_event("corrupt", broker)

    def corrupt_live(self, broker: int) -> None:
        """A flushed batch of live ``broker`` is damaged on its disk, unknown to the broker: the next
        read of it meets the bad CRC (docs/steps.md, "Disk faults")."""
        self._need_alive(broker)
        view = self.world.snapshot().brokers[broker]
        if view.durable == 0:
            raise ClusterError(f"broker {broker} has no flushed batch")
        if view.bad_batch >= 0:
            raise ClusterError(f"broker {broker} already has a damaged batch")
        self.world.corrupt_live(broker)
        self.world.trace_event("corrupt_live", broker)

    def fail_disk(self, broker: int, io: str) -> None:
        """An I/O operation of live ``broker``'s log directory fails (``io``, e.g. ``fsync:EIO``): the
        directory goes offline (LogDirFailureChannel), the broker halts, the controller fences it."""
        if io not in DISK_IO:
            raise ClusterError(f"io must be one of {', '.join(DISK_IO)}, got {io!r}")
        b = self._need_alive(broker)
        operation = io.split(":")[0]
        if operation == "fsync" and b.durable_offset == b.log.log_end_offset:
            raise ClusterError(f"broker {broker} has nothing unflushed to fsync")
        if operation == "read" and b.log.log_end_offset == b.log.log_start_offset:
            raise ClusterError(f"broker {broker} has nothing to read")
        if not self.world.fail_disk(broker, operation, io.split(":")[1]):
            raise ClusterError(f"broker {broker}'s {operation} did not reach its disk")
        self.stats["crashes"] += 1
        self.world.trace_event("fail_disk", broker, io)
        self._settle()

    def checkpoint_hw(self, broker: int) -> None:
        """ReplicaManager.checkpointHighWatermarks: the HW to replication-offset-checkpoint, no log flush."""
        b = self._need_alive(broker)
        if b.hw_checkpoint == b.partition.high_watermark:
            raise ClusterError(
                f"broker {broker}'s replication-offset-checkpoint already holds its HW {b.hw_checkpoint}"
            )
        b.checkpoint_high_watermarks()
        self.world.trace_event("checkpoint_hw", broker)

    def flush(self, broker: int) -> None:
        b = self._need_alive(broker)
        if b.durable_offset == b.log.log_end_offset and b.hw_checkpoint == b.partition.high_watermark:
            raise ClusterError(f"broker {broker} has nothing to flush")
        b.flush()
        self.world.trace_event("flush", broker)
        self._settle()

    def advance(self, ms: int) -> None:
        """Move the clock forward; due timers fire in order."""
        if ms < 0:
            raise ClusterError(f"cannot advance the clock by {ms} ms")
        self.world.clock.advance(ms)
        self._settle()

    # -- auto mode ----------------------------------------------------------------------------
    def run_for(self, ms: int) -> None:
        self.advance(ms)

    def partition(self, a: int, b: int) -> None:
        """Cut the link between nodes ``a`` and ``b`` (broker ids, ``CONTROLLER_ID``, client ids)."""
        self.world.network.partition(a, b)
        self.world.trace_event("partition", a, b)

    def heal(self, a: int | None = None, b: int | None = None) -> None:
        """Restore the link between ``a`` and ``b``, or every link when called without arguments."""
        self.world.network.heal(a, b)
        self.world.trace_event("heal", a, b)

    def quiescent(self) -> bool:
        """Every live replica is in the ISR with the leader's log and HW; nothing waits in a purgatory."""
        c = self.world.controller
        if c.leader < 0 or not self.world.brokers[c.leader].alive:
            return False
        lead = self.world.brokers[c.leader].partition
        if not lead.is_leader or lead.leader_epoch != c.leader_epoch or lead.pending_isr is not None:
            return False
        leo, hw = lead.log.log_end_offset, lead.high_watermark
        if hw != leo or lead.purgatory.pending:
            return False
        for b in self.world.brokers:
            if b.alive and (
                b.partition.log.log_end_offset != leo
                or b.partition.high_watermark != hw
                or b.partition.leader_epoch != c.leader_epoch
                or b.broker_id not in c.isr
            ):
                return False
        return True

    def run_until_quiescent(self, max_ms: int = 60_000, step_ms: int = 10) -> bool:
        """Run the clock until ``quiescent()`` holds (True) or ``max_ms`` passed (False)."""
        end = self.world.clock.now_ms() + max_ms
        while self.world.clock.now_ms() < end:
            if self.quiescent():
                return True
            self.advance(min(step_ms, end - self.world.clock.now_ms()))
        return self.quiescent()

    # -- views --------------------------------------------------------------------------------
    def in_flight(self) -> list[tuple[str, int, int, Any]]:
        """Every protocol message in flight as (kind, replica, index, decoded message)."""
        out, queue = [], self.world.network.queue
        for kind in MESSAGE_KINDS:
            for r in range(self.world.config.replicas):
                for i, env in enumerate(queue((kind, r))):
                    out.append((kind, r, i, CODEC.decode_body(CODEC.decode_header(env.frame), env.frame)))
        return out

    def snapshot(self) -> ClusterSnapshot:
        return self.world.snapshot()

    def trace_hash(self) -> str:
        return self.world.trace_hash()

    # -- internals ----------------------------------------------------------------------------
    def _need_replica(self, broker: int) -> Broker:
        n = self.world.config.replicas
        if not isinstance(broker, int) or not 0 <= broker < n:
            raise ClusterError(f"no broker {broker!r} (replicas are 0..{n - 1})")
        return self.world.brokers[broker]

    def _need_down(self, broker: int) -> Broker:
        b = self._need_replica(broker)
        if b.alive:
            raise ClusterError(f"broker {broker} is alive")
        return b

    def _need_active(self, broker: int) -> None:
        """The controller holds ``broker`` active: neither fenced, nor awaiting unfence, nor in controlled shutdown."""
        c = self.world.controller
        if broker in c.fenced:
            raise ClusterError(f"broker {broker} is fenced")
        if c.registration_fenced(broker):
            raise ClusterError(f"broker {broker} awaits unfence")
        if broker in c.in_controlled_shutdown:
            raise ClusterError(f"broker {broker} is in controlled shutdown")

    def _need_alive(self, broker: int) -> Broker:
        b = self._need_replica(broker)
        if not b.alive:
            raise ClusterError(f"broker {broker} is down")
        return b

    def _need_serving(self, broker: int) -> Broker:
        """A live broker that handles requests: not one still starting (KRaft, not yet registered).
        A self-driven run sends anyway: the request goes unanswered, as to a closed listener."""
        b = self._need_alive(broker)
        if b.replica_manager.starting and not self.world.auto:
            raise ClusterError(f"broker {broker} is not registered yet")
        return b

    def _log_proposal(self, leader: int, step: str) -> None:
        """Log an ISR proposal a step made, as auto mode logs its own (ReplicaManager), so that the
        validator finds the AlterPartition the controller handles."""
        b = self.world.brokers[leader]
        events = b.replica_manager.events
        if events is not None:
            events.broker(b.partition, step, {"replica": leader}, corr=b.partition.last_isr_request)

    def _need_leader(self, broker: int):
        p = self._need_serving(broker).partition
        if not p.is_leader:
            raise ClusterError(f"broker {broker} is not the leader in its own view")
        if p.pending_isr is not None:
            raise ClusterError(f"broker {broker} has an ISR change in flight")
        if p.variant.committed_partition_state and p.isr_request_unanswered():
            raise ClusterError(f"an AlterPartition of broker {broker} awaits its answer")
        return p

    def _envelope(self, kind: str, replica: int, index: int):
        if kind not in MESSAGE_KINDS:
            raise ClusterError(f"unknown message kind {kind!r} (known: {', '.join(MESSAGE_KINDS)})")
        self._need_replica(replica)
        queue = self.world.network.queue((kind, replica))
        if not isinstance(index, int) or not 0 <= index < len(queue):
            raise ClusterError(f"no {kind} #{index} of replica {replica} in flight")
        return queue[index]

    def _settle(self) -> None:
        """Step mode: client and registration traffic arrives at once."""
        if not self.world.auto:
            deliver_instant = self.world.network.deliver_instant
            while deliver_instant():
                pass


__all__ = ["Cluster", "ClusterError", "MESSAGE_KINDS", "CRASH_KINDS", "CONTROLLER_ID", "PRODUCER_ID", "CONSUMER_ID"]
