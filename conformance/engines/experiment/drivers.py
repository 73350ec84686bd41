"""The clusters an experiment's plan runs on, behind one small interface (``ClusterDriver``):
``start``, the faults a plan names (``kill``, ``stop``, ``pause``, ``resume``, ``power``,
``lose_disk``, ``restart``, ``partition``, ``cut``, ``hold_requests``, ``release_requests``,
``delay``, ``undelay``, ``heal``), ``view`` (Metadata of the experiment's topic, as a client reads
it), ``requests_state`` (where a hold of requests is) and ``close``.

* ``OwnDriver``: isrcheck's own cluster in Kafka mode (``ProcessCluster``, the soak's
  ``own_cluster``: journaled brokers, fast timings) under one protocol variant.
* ``ApacheDriver``: Apache Kafka (``KafkaCluster``) of a release, ELR on or off, the lazy file system
  under the brokers' logs when the plan plays power losses, a network namespace per node when it
  plays partitions, cuts, holds or delays (a held request is an nftables drop of its TCP segments,
  which the sender retransmits; a delayed link's packets wait in a queue of the sender's namespace:
  ``netns``).

``parse_cluster("isrcheck[:PROTOCOL]" | "kafka:VERSION", elr)`` reads the command line's choice as a
``ClusterChoice``, which names the variant the cluster implements (Kafka 4.x with ELR: kip-966;
without: kip-903) and makes a driver per repetition.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from isrcheck.conformance.core.schedule import PROTOCOLS
from isrcheck.conformance.engines.apache.admin import ClusterView, cluster_view
from isrcheck.conformance.engines.apache.cluster import CONTROLLER_ID as APACHE_CONTROLLER_ID
from isrcheck.conformance.engines.apache.cluster import KafkaCluster, KafkaSettings, free_port_base
from isrcheck.conformance.engines.apache.distribution import DEFAULT_VERSION, Distribution, check_version, distribution
from isrcheck.conformance.engines.experiment.spec import REQUESTS
from isrcheck.conformance.engines.soak.driver import own_cluster
from isrcheck.conformance.vocabulary import UsageError
from isrcheck.impl.controller import CONTROLLER_ID
from isrcheck.impl.protocol import ApiKey

TOPIC = "experiment"
DEFAULT_PROTOCOL = "kip-966"
NETWORK_STEPS = {"partition", "cut", "hold-requests", "delay"}  # Apache Kafka: a network namespace per node


HOLDING, RELEASED, DELIVERED = "holding", "released", "delivered"  # a hold's course
DELIVERY_SETTLE_S = 3.0  # Apache Kafka: a release is delivered once nothing more passed for this long
# the reason in a controller's "Rejecting AlterPartition ... because REASON" line (4.0: "... in the new
# ISR [...]. (logger)", 4.4: "... in the new ISR. Proposed ISR was ...")
_REASON = re.compile(r" because (.*?)(?: in the new ISR|\. Proposed ISR|\. \(org\.apache|$)")


def _own_request(api_key: int) -> str | None:
    """The net file's name of an API key isrcheck's brokers send (None: one they never send)."""
    return ApiKey(api_key).name.lower() if api_key in set(ApiKey) else None


@dataclass(frozen=True)
class ClusterChoice:
    kind: str  # "isrcheck" or "kafka"
    protocol: str | None = None
    version: str | None = None
    elr: bool | None = None  # Kafka: None the release's default
    kafka_home: str | None = None

    def variant(self, elr: bool | None = None) -> str:
        """The protocol variant this cluster implements (``elr``: the experiment forces ELR)."""
        if self.kind == "isrcheck":
            return self.protocol or DEFAULT_PROTOCOL
        return "kip-966" if self.effective_elr(elr) else "kip-903"

    @property
    def unclean_shutdown_detection(self) -> str:
        """How the cluster's controller learns that a broker may have lost data (docs/steps.md,
        "Config"): Apache Kafka by its clean shutdown file, isrcheck's brokers by the page cache."""
        return "clean-shutdown-file" if self.kind == "kafka" else "page-cache"

    def effective_elr(self, elr: bool | None = None) -> bool:
        if elr is not None:
            return elr
        if self.elr is not None:
            return self.elr

        return Distribution(self.version, Path()).default_elr()

    def label(self, elr: bool | None = None) -> str:
        if self.kind == "isrcheck":
            return f"isrcheck ({self.variant()})"
        return f"Kafka {self.version} (ELR {'on' if self.effective_elr(elr) else 'off'})"

    def driver(self, spec, folder: Path, kinds: set[str], say) -> "ClusterDriver":
        if self.kind == "isrcheck":
            return OwnDriver(self.variant(), spec, folder, say)
        return ApacheDriver(self, spec, folder, kinds, say)


def parse_cluster(text: str, elr: str | None = None, kafka_home: str | None = None) -> ClusterChoice:
    """``--cluster`` and ``--elr`` (on, off or None); UsageError on anything else."""
    name, _, rest = text.partition(":")
    if name == "isrcheck":
        if rest and rest not in PROTOCOLS:
            raise UsageError(f"--cluster {text!r}: unknown protocol {rest!r} (protocols: {', '.join(PROTOCOLS)})")
        if elr is not None:
            raise UsageError("--elr is Apache Kafka's; isrcheck's cluster has ELR under --cluster isrcheck:kip-966")
        return ClusterChoice("isrcheck", protocol=rest or None)
    if name == "kafka":
        return ClusterChoice(
            "kafka",
            version=check_version(rest) if rest else DEFAULT_VERSION,
            elr=None if elr is None else elr == "on",
            kafka_home=kafka_home,
        )
    raise UsageError(f"--cluster {text!r}: expected isrcheck, isrcheck:PROTOCOL or kafka:VERSION (e.g. kafka:4.0.2)")


class ClusterDriver:
    """What a plan needs of a cluster (see the module docstring); brokers by id."""

    brokers: list[int]
    controller: int
    bootstrap: str

    def addresses(self) -> list[str]:
        raise NotImplementedError

    def view(self) -> ClusterView | None:
        """Metadata of the experiment's topic from the live broker whose answer is the newest (the
        highest leader epoch of the partition; the first of those): a broker just resumed from a
        pause answers from its metadata of before the pause until it caught up, which would show a
        leader and an ISR long gone."""
        views = [v for v in (cluster_view([a], [TOPIC]) for a in self.addresses()) if v is not None]

        def epoch(view: ClusterView) -> int:
            p = view.partitions.get((TOPIC, 0))
            return p.leader_epoch if p is not None else -1

        return max(views, key=epoch, default=None)

    def describe(self) -> dict:
        """What the run should keep of the cluster (ELR, version)."""
        return {}

    # what both clusters do alike (``self.cluster``: a ProcessCluster or a KafkaCluster)
    def alive(self, b: int) -> bool:
        return self.cluster.alive(b)

    def pause(self, n: int) -> None:
        self.cluster.pause(n)

    def lose_disk(self, b: int) -> None:
        self.cluster.lose_disk(b)

    def partition(self, groups) -> None:
        self.cluster.partition(groups)

    def heal(self) -> None:
        self.cluster.heal()

    def cut(self, a: int, b: int) -> None:
        self.cluster.cut(a, b)

    def delay(self, a: int, b: int, ms: int) -> None:
        self.cluster.delay(a, b, ms)

    def undelay(self, a: int, b: int | None = None) -> None:
        self.cluster.undelay(a, b)

    def hold_report(self) -> dict:
        """The plan's holds: ``{"holds": [[broker, request, held, delivered], ...]}`` (none: {})."""
        names = {key: name for name, key in REQUESTS.items()}
        report = [[b, names.get(key, key), *self._counts(b, key)] for b, key in sorted(self.holds)]
        return {"holds": report} if report else {}

    def controller_evidence(self) -> dict:
        """What the controller's own log says about the experiment (Apache Kafka's; {} without one)."""
        return {}

    def requests_state(self, state: str, nodes: list[int]) -> bool:
        """``held``: each node's holds kept a request back; ``delivered``: a request each node's
        released holds kept reached the controller since the release (spec's module docstring)."""

        def one(node: int) -> bool:
            holds = [
                key for key, status in self.holds.items() if key[0] == node and (status == HOLDING) == (state == "held")
            ]
            return any(self._counts(*key)[0 if state == "held" else 1] > 0 for key in holds)

        return bool(nodes) and all(one(n) for n in nodes)


class OwnDriver(ClusterDriver):
    def __init__(self, protocol: str, spec, folder: Path, say) -> None:
        self.protocol, self.spec, self.folder, self.say = protocol, spec, folder, say
        self.cluster = None
        self.brokers = list(range(spec.brokers))
        self.holds: dict[tuple[int, int], str] = {}  # (broker, api key) -> HOLDING, RELEASED or DELIVERED

    def start(self) -> None:
        config = {} if self.spec.flush_messages is None else {"flush_messages": self.spec.flush_messages}
        self.cluster, self.bootstrap = own_cluster(
            self.protocol,
            self.spec.brokers,
            self.spec.min_insync_replicas,
            self.spec.unclean_election,
            [(TOPIC, 1)],
            self.folder / "cluster",
            None,
            self.say,
            **config,
        )
        self.controller = CONTROLLER_ID

    def addresses(self) -> list[str]:
        c = self.cluster
        return [a for b, a in enumerate(self.bootstrap.split(",")) if c.alive(b) and b not in c.paused]

    def kill(self, b: int) -> None:
        if self.cluster.alive(b):
            self.cluster.crash(b, "process")

    def stop(self, b: int) -> None:
        if self.cluster.alive(b):
            self.cluster.crash(b, "clean")

    def power(self, b: int) -> None:
        if self.cluster.alive(b):
            self.cluster.crash(b, "power")

    def resume(self, n: int) -> None:
        if n in self.cluster.paused:
            self.cluster.resume(n)

    def restart(self, b: int) -> None:
        if b in self.cluster.paused:
            self.cluster.resume(b)
        elif not self.cluster.alive(b):
            self.cluster.restart(b)

    def hold_requests(self, b: int, api_key: int) -> None:
        name = _own_request(api_key)
        if name is None:
            self.say(f"  isrcheck's brokers send no request of API key {api_key}: nothing to hold")
            return
        self.cluster.hold(b, self.controller, name)
        self.holds[(b, api_key)] = HOLDING

    def release_requests(self, b: int, api_key: int) -> None:
        if (b, api_key) in self.holds:
            self.cluster.release(b, self.controller, _own_request(api_key))
            self.holds[(b, api_key)] = RELEASED

    def _counts(self, b: int, api_key: int) -> tuple[int, int]:
        return self.cluster.held(b, self.controller, _own_request(api_key))

    def heal(self) -> None:
        self.cluster.heal()
        self.holds = {}

    def close(self) -> None:
        if self.cluster is not None:
            self.cluster.stop()

    def describe(self) -> dict:
        return {"cluster": "isrcheck", "protocol": self.protocol}


class ApacheDriver(ClusterDriver):
    def __init__(self, choice: ClusterChoice, spec, folder: Path, kinds: set[str], say) -> None:
        dist = distribution(choice.version, choice.kafka_home, say=say)
        settings = KafkaSettings(
            brokers=spec.brokers,
            port=free_port_base(spec.brokers + 1),
            elr=choice.effective_elr(spec.elr),
            min_insync_replicas=spec.min_insync_replicas,
            unclean_election=spec.unclean_election,
            flush_messages=spec.flush_messages,
            topics=[(TOPIC, 1)],
            # fast enough for a plan: a broker down is fenced in 3 s, a follower stuck leaves the ISR in 5 s
            replica_lag_time_max_ms=5_000,
            broker_session_timeout_ms=3_000,
            broker_heartbeat_interval_ms=500,
            network="netns" if NETWORK_STEPS & kinds else "loopback",
            lazyfs=bool({"power"} & kinds),
            heap="384m",
            extra={"leader.imbalance.check.interval.seconds": 3600},
        )
        self.cluster = KafkaCluster(settings, folder / "cluster", dist, say=say)
        self.brokers, self.controller = list(self.cluster.brokers), APACHE_CONTROLLER_ID
        self.bootstrap = self.cluster.bootstrap
        self.holds: dict[tuple[int, int], str] = {}  # (broker, api key) -> HOLDING, RELEASED or DELIVERED
        self._passed: dict[tuple[int, int], tuple[int, float]] = {}  # released hold -> (segments passed, since)

    def start(self) -> None:
        """Start the cluster; with the lazy file system, what formatting and starting wrote is then
        synced: Linux writes dirty pages back within 30 s, so a plan's power loss loses the plan's
        writes, not a ``bootstrap.checkpoint`` written before it (without which a broker refuses to
        start)."""
        self.cluster.start()
        self.bootstrap = self.cluster.bootstrap
        for b in self.brokers:
            fs = self.cluster.node(b).fs
            if fs is not None:
                fs.sync()

    def addresses(self) -> list[str]:
        return self.cluster.live_addresses()

    def kill(self, b: int) -> None:
        self.cluster.kill(b)

    def stop(self, b: int) -> None:
        self.cluster.terminate(b, 30.0)

    def power(self, b: int) -> None:
        self.cluster.power_loss(b)

    def resume(self, n: int) -> None:
        self.cluster.resume(n)

    def restart(self, b: int) -> None:
        if b in self.cluster.paused:
            self.cluster.resume(b)
        else:
            self.cluster.restart(b)

    def hold_requests(self, b: int, api_key: int) -> None:
        self.cluster.hold(b, api_key)
        self.holds[(b, api_key)] = HOLDING

    def release_requests(self, b: int, api_key: int) -> None:
        self.cluster.release(b, api_key)
        self.holds[(b, api_key)] = RELEASED

    def _counts(self, b: int, api_key: int) -> tuple[int, int]:
        """(held, delivered since the release), in TCP segments. Delivered counts once segments
        passed and then none for DELIVERY_SETTLE_S: Kafka's AlterPartitionManager keeps one request
        in flight and sends what queued behind it (other partitions' changes) as soon as it is
        answered, and those belong to the release too. Then later requests are held again (as on
        isrcheck's cluster)."""
        key = (b, api_key)
        held, delivered = self.cluster.hold_counts(b, api_key)
        if self.holds.get(key) == DELIVERED:
            return held, 1
        if not delivered or self.holds.get(key) != RELEASED:
            return held, 0
        now = time.monotonic()
        seen = self._passed.get(key)
        if seen is None or seen[0] != delivered:
            self._passed[key] = (delivered, now)
            return held, 0
        if now - seen[1] < DELIVERY_SETTLE_S:
            return held, 0
        self.cluster.rearm(b, api_key)
        self.holds[key] = DELIVERED
        return held, delivered

    def heal(self) -> None:
        self.cluster.heal()
        self.holds = {}

    def controller_evidence(self) -> dict:
        """The controller's reasons for rejecting an AlterPartition of the experiment's partition
        (``ReplicationControlManager``'s INFO lines: ``ineligible replicas [1 (broker epoch
        mismatch: ...)]``), each once."""
        reasons = []
        for log in sorted(self.cluster.controller.logs.glob("*.log")):
            with open(log, encoding="utf-8", errors="replace") as f:
                reasons += [
                    _REASON.search(line)[1]
                    for line in f
                    if "Rejecting AlterPartition" in line and f" for {TOPIC}-0 because " in line
                ]
        found = list(dict.fromkeys(reasons))
        return {"alter_partition_rejected": found} if found else {}

    def close(self) -> None:
        self.cluster.stop()

    def describe(self) -> dict:
        return {"cluster": "kafka", "version": self.cluster.dist.version, "elr": self.cluster.elr}


__all__ = ["ApacheDriver", "ClusterChoice", "ClusterDriver", "OwnDriver", "TOPIC", "parse_cluster"]
