"""The soak's faults played on an Apache Kafka cluster's JVM processes (``cluster.KafkaCluster``).

Each kind of ``soak.faults`` is done to the processes and their disks themselves, not through a
hooks file: ``kill`` SIGKILL; ``stop`` SIGTERM and Kafka's clean (controlled) shutdown; ``pause``
SIGSTOP / SIGCONT; ``power`` SIGKILL and every write the broker's file system held unsynced dropped
(lazyfs); ``disk`` SIGKILL and the log directory replaced by an empty, formatted one; ``ioerror``
the broker's next write, fsync or read fails (lazyfs), Kafka takes its only log directory offline
and the broker halts; a failed fsync loses the unsynced writes too, as Linux drops the dirty pages
it could not write back; ``partition`` the links between groups of nodes cut (a network namespace
per node; clients keep reaching every broker). Each ends with a restart (resume, heal).

A fault that loses data (``power``, ``disk``, ``ioerror`` of an fsync) ends only once its broker is
back in the ISR of every partition it hosts (``end`` waits, up to ``REJOIN_TIMEOUT_S``): its record
spans the whole time the broker's copy was short, which is what the soak's fault budget counts.
"""

from __future__ import annotations

import time
from typing import Iterable

from isrcheck.conformance.engines.apache.admin import cluster_view
from isrcheck.conformance.engines.apache.cluster import CONTROLLER_ID, KafkaCluster
from isrcheck.conformance.engines.soak.faults import KINDS, Fault, end_on_processes, io_error
from isrcheck.conformance.vocabulary import UsageError

HALT_TIMEOUT_S = 10.0  # an armed I/O error halts the broker at its next such operation (a read the page
# cache serves never reaches the file system: then the broker is killed instead, and the run says so)
# a broker cut off from the controller waits for a controlled shutdown that cannot come: the stop
# fault gives it this long, then kills it (the record says so)
STOP_TIMEOUT_S = 20.0
REJOIN_TIMEOUT_S = 90.0
LOSES_DATA = ("power", "disk")


class ApacheKafkaFaults:
    """The soak's executor for an Apache Kafka cluster: brokers by node id, the controller as
    ``CONTROLLER_ID`` (partitions only)."""

    def __init__(self, cluster: KafkaCluster, say=lambda line: None) -> None:
        self.cluster, self.say = cluster, say
        self.brokers = list(cluster.brokers)
        self.controllers = [CONTROLLER_ID]
        s = cluster.settings
        self.kinds = tuple(
            k
            for k in KINDS
            if (k not in ("power", "ioerror") or s.lazyfs) and (k != "partition" or s.network == "netns")
        )

    def require(self, kinds: Iterable[str]) -> None:
        missing = [k for k in kinds if k not in self.kinds]
        if missing:
            raise UsageError(
                f"fault kind{'s' * (len(missing) > 1)} {', '.join(missing)} cannot be played on this "
                f"Apache Kafka cluster (power and ioerror need the lazy file system, partition a "
                f"network namespace per node)"
            )

    def begin(self, fault: Fault) -> None:
        c = self.cluster
        if fault.kind == "partition":
            c.partition(fault.groups or [fault.nodes])
            return
        for b in fault.nodes:
            if fault.kind == "disk":
                c.lose_disk(b)
            elif not c.alive(b):
                continue  # it died by itself: ``end`` restarts it
            elif fault.kind == "kill":
                c.kill(b)
            elif fault.kind == "stop":
                if not c.terminate(b, STOP_TIMEOUT_S):
                    self.say(
                        f"broker {b}: no clean shutdown within {STOP_TIMEOUT_S:.0f} s (cut off from the "
                        f"controller?): killed"
                    )
            elif fault.kind == "pause":
                c.pause(b)
            elif fault.kind == "power":
                c.power_loss(b)
            elif fault.kind == "ioerror":
                self._io_error(fault, b)

    def _io_error(self, fault: Fault, broker: int) -> None:
        operation, errno_name = io_error(fault, journaled=True).split(":")
        c = self.cluster
        c.fail_io(broker, operation, errno_name)
        deadline = time.monotonic() + HALT_TIMEOUT_S
        while c.alive(broker) and time.monotonic() < deadline:
            time.sleep(0.05)
        if c.alive(broker):
            self.say(
                f"broker {broker}: no {operation} failed within {HALT_TIMEOUT_S:.0f} s of arming {errno_name}; "
                f"killed instead"
            )
            c.kill(broker)
            c.node(broker).fs.disarm()
        if operation == "fsync":
            c.node(broker).fs.drop()  # the dirty pages an fsync could not write back are gone

    def end(self, fault: Fault) -> None:
        end_on_processes(self.cluster, fault)
        lost = fault.kind in LOSES_DATA or (
            fault.kind == "ioerror" and io_error(fault, journaled=True).startswith("fsync")
        )
        if lost:
            self._wait_until_in_sync(fault.nodes)

    def _wait_until_in_sync(self, brokers) -> None:
        """Until every partition that ``brokers`` replicate has them in its ISR again, as each
        restarted broker itself tells: it answers clients only once it has caught up with the
        metadata log since its restart (``BrokerServer``'s initial catch-up), which holds its removal
        from the ISR if the controller took it out, so a view from before the fault (a survivor's,
        before the controller noticed) can never pass for its return."""
        deadline = time.monotonic() + REJOIN_TIMEOUT_S
        pending = list(brokers)
        while pending and time.monotonic() < deadline:
            b = pending[0]
            view = cluster_view([self.cluster.node(b).address])
            if (
                view is not None
                and view.partitions
                and all(b in p.isr and p.leader >= 0 for p in view.partitions.values() if b in p.replicas)
            ):
                pending.pop(0)
                continue
            time.sleep(0.2)
        if not pending:
            return
        self.say(f"brokers {list(brokers)} not back in every ISR within {REJOIN_TIMEOUT_S:.0f} s of their restart")


__all__ = ["ApacheKafkaFaults"]
