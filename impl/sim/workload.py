"""A seeded random workload with faults, run on the auto-mode Cluster (``isrcheck sim``).

Every choice comes from one ``random.Random(seed)``: client requests (produce with acks 0/1/all,
consume), clock advances, and faults — broker crashes of each kind (clean, process, power; the
leader is a preferred victim, so leadership moves), restarts, link partitions and heals, explicit
loss of an in-flight message, and log flushes — on top of the network's own seeded delays, drops,
duplicates and reorders. After the workload every link is healed, every broker restarted, and the
cluster runs until quiescent; the summary says what clients saw and whether the logs agree.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass

from ..clients import ConsumeResult, ProduceResult
from ..controller import CONTROLLER_ID
from ..eventlog import EventLog, run_header
from ..replication import CRASH_KINDS, ClusterConfig
from .cluster import Cluster
from .network import NetworkFaults
from .world import MESSAGE_KINDS

DEFAULT_FAULTS = NetworkFaults(
    min_delay_ms=1, max_delay_ms=5, drop_rate=0.02, duplicate_rate=0.01, reorder_rate=0.05, disconnect_detect_ms=50
)


@dataclass(frozen=True)
class SimSummary:
    """What one ``isrcheck sim`` run saw, as printed by ``--json``."""

    protocol: str
    replicas: int
    seed: int
    steps: int
    produced: int
    acked: int  # produce responses with error NONE (any acks)
    acked_all: int  # ... of which acks=all
    committed: int  # the leader's high watermark at the end
    lost_acked: int  # acknowledged acks=all records missing below the final HW
    divergent_reads: int  # consumes that returned another record at an offset read before
    leader_changes: int
    isr_changes: int
    crashes: int
    power_losses: int  # ... of which lost the page cache
    restarts: int
    partitions: int
    messages_delivered: int
    messages_lost: int
    sim_ms: int
    quiescent: bool
    logs_agree: bool  # live replicas' logs identical below their HW at the end
    trace_hash: str

    def to_json(self) -> dict:
        return asdict(self)


def sim_config(protocol: str, replicas: int) -> ClusterConfig:
    """Kafka-like timings scaled to milliseconds of simulated time."""
    return ClusterConfig(
        protocol=protocol,
        replicas=replicas,
        min_insync_replicas=min(2, replicas),
        replica_lag_time_max_ms=100,
        request_timeout_ms=1000,
        replica_fetch_backoff_ms=5,
        broker_heartbeat_interval_ms=10,
        broker_session_timeout_ms=60,
        replica_high_watermark_checkpoint_interval_ms=50,
    )


class Workload:
    """The seeded workload driving an auto-mode Cluster."""

    def __init__(
        self,
        config: ClusterConfig,
        seed: int,
        faults: bool = True,
        crash_kinds: tuple[str, ...] = CRASH_KINDS,
        events_dir: str | None = None,
    ) -> None:
        """``events_dir``: where every node writes its protocol events (isrcheck.impl.eventlog)."""
        self.rng = random.Random(seed)
        self.seed = seed
        self.faults = faults
        self.crash_kinds = crash_kinds
        self.events = None if events_dir is None else EventLog(events_dir, run_header(config), CONTROLLER_ID)
        self.cluster = Cluster(
            config,
            mode="auto",
            seed=self.rng.getrandbits(64),
            faults=DEFAULT_FAULTS if faults else NetworkFaults(),
            events=self.events,
        )
        self.n = config.replicas
        self.produced = 0
        self.partitions = 0
        self.responses: list = []
        self.consumer_position = 0  # consumers re-read a short window below the last HW they saw
        self.read: dict[int, bytes] = {}  # offset -> the record consumers got there first
        self.divergent_reads = 0
        self.max_down = 1 if self.n > 1 else 0

    # -- one step -----------------------------------------------------------------------------
    def step(self) -> None:
        self._collect()
        roll = self.rng.random()
        if roll < 0.40:
            self._produce()
        elif roll < 0.50:
            self._consume()
        elif roll < 0.80 or not self.faults:
            self.cluster.run_for(self.rng.randint(1, 30))
        else:
            self._fault()

    def _target(self) -> int:
        """Clients follow the controller's metadata; now and then they ask a random broker."""
        leader = self.cluster.controller.leader
        if leader < 0 or self.rng.random() < 0.1:
            return self.rng.randrange(self.n)
        return leader

    def _produce(self) -> None:
        broker = self._target()
        acks = self.rng.choice((-1, -1, 1, 0))
        self.produced += 1
        if self.cluster.brokers[broker].alive:
            self.cluster.produce(broker, str(self.produced).encode(), acks)

    def _consume(self) -> None:
        broker = self._target()
        if self.cluster.brokers[broker].alive:
            self.cluster.consumer.fetch(broker, max(0, self.consumer_position - 10))

    def _collect(self) -> None:
        for r in self.cluster.take_client_responses():
            self.responses.append(r)
            if isinstance(r, ConsumeResult) and r.error == "NONE":
                self.consumer_position = max(self.consumer_position, r.hw)
                for offset, value in r.records:
                    if self.read.setdefault(offset, value) != value:
                        self.divergent_reads += 1

    def _fault(self) -> None:
        c, rng = self.cluster, self.rng
        down = [b.broker_id for b in c.brokers if not b.alive]
        kind = rng.choice(("crash", "crash", "restart", "partition", "heal", "drop", "flush"))
        if kind == "crash" and len(down) < self.max_down and self.crash_kinds:
            leader = c.controller.leader
            victim = leader if leader >= 0 and rng.random() < 0.5 else rng.randrange(self.n)
            if c.brokers[victim].alive:
                c.crash(victim, rng.choice(self.crash_kinds))
        elif kind == "restart" and down:
            b = rng.choice(down)
            if b in c.controller.fenced:
                c.restart(b)
        elif kind == "partition" and self.n > 1:
            a = rng.randrange(self.n)
            other = rng.choice([x for x in range(self.n) if x != a] + [CONTROLLER_ID])
            c.partition(a, other)
            self.partitions += 1
        elif kind == "heal":
            c.heal()
        elif kind == "drop":
            flights = c.network.in_flight()
            protocol = [e for e in flights if isinstance(e.tag, tuple) and e.tag[0] in MESSAGE_KINDS]
            if protocol:
                env = rng.choice(protocol)
                kind_, replica = env.tag
                c.drop(kind_, replica, c.network.queue(env.tag).index(env))
        elif kind == "flush":
            b = c.brokers[rng.randrange(self.n)]
            if b.alive:
                b.flush()

    # -- the end ------------------------------------------------------------------------------
    def finish(self) -> bool:
        """Heal, restart every broker once fenced, run to quiescence."""
        c = self.cluster
        c.heal()
        for _ in range(100):
            down = [b.broker_id for b in c.brokers if not b.alive]
            if not down:
                break
            c.run_for(c.config.broker_session_timeout_ms)
            for b in down:
                if b in c.controller.fenced:
                    c.restart(b)
        return c.run_until_quiescent(max_ms=120_000)

    def summary(self, steps: int, quiescent: bool) -> SimSummary:
        c = self.cluster
        self._collect()
        responses = self.responses
        acked = [r for r in responses if isinstance(r, ProduceResult) and r.error == "NONE"]
        acked_all = [r for r in acked if r.acks == -1]
        snap = c.snapshot()
        leader = snap.controller.leader
        lead = snap.brokers[leader] if leader >= 0 else None
        committed = lead.hw if lead is not None else 0
        committed_values = {e.value for e in lead.log[:committed]} if lead is not None else set()
        live = [b for b in snap.brokers if b.alive]
        agree = lead is not None and all(b.log[: b.hw] == lead.log[: b.hw] for b in live)
        net = c.network
        return SimSummary(
            c.config.protocol,
            self.n,
            self.seed,
            steps,
            self.produced,
            len(acked),
            len(acked_all),
            committed,
            sum(1 for r in acked_all if r.value not in committed_values),
            self.divergent_reads,
            c.controller.elections,
            c.controller.isr_changes,
            c.stats["crashes"],
            c.stats["power_losses"],
            c.stats["restarts"],
            self.partitions,
            net.delivered,
            net.lost,
            c.clock.now_ms(),
            quiescent,
            agree,
            c.trace_hash(),
        )


def run_simulation(
    protocol: str,
    replicas: int,
    seed: int,
    steps: int,
    faults: bool = True,
    crash_kinds: tuple[str, ...] = CRASH_KINDS,
    events_dir: str | None = None,
) -> SimSummary:
    """One seeded run; with ``events_dir`` every node's protocol events are written there."""
    work = Workload(sim_config(protocol, replicas), seed, faults, crash_kinds, events_dir)
    for _ in range(steps):
        work.step()
    summary = work.summary(steps, work.finish())
    if work.events is not None:
        work.events.close()
    return summary
