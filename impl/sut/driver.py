"""The simulation driven one schedule step at a time: what both the in-process conformance adapter
and ``python -m isrcheck.impl.sut`` drive.

Each step is exactly one call on a step-mode ``Cluster`` (nothing happens by itself; a ``tick``
advances the clock by one tick). A step the cluster cannot take raises ``ClusterError``: the
driver answers it as a refusal with its reason. Produced records take the next ids in order,
written as decimal ASCII (docs/steps.md), and client responses come back in docs/steps.md's
output form.
"""

from __future__ import annotations

from ..clients import ConsumeResult
from ..replication import ClusterConfig
from ..sim import Cluster, ClusterError
from .report import MS_PER_TICK, Report

# the schedule's config fields (docs/steps.md, "Config"); times in ticks
CONFIG_FIELDS = (
    "replicas",
    "min_insync_replicas",
    "unclean_leader_election_enable",
    "replica_lag_time_max_ticks",
    "request_timeout_ticks",
    "flush_messages",
    "unclean_shutdown_detection",
    "split_fetch_handling",
    "split_become_follower",
    "hw_waits_for_caught_up",
    "catch_up_at_previous_fetch",
    "metadata_cache",
    "unfence_at_heartbeat",
    "kraft_controlled_shutdown",
)


def cluster_config(protocol: str, config: dict) -> ClusterConfig:
    """The implementation's config for a schedule's protocol and config (ticks -> ms). Raises
    ValueError (InvalidConfigError) naming a field that is unknown or out of range."""
    unknown = sorted(k for k in config if k not in CONFIG_FIELDS)
    if unknown:
        raise ValueError(f"config.{unknown[0][:40]}: unknown config field")
    defaults = ClusterConfig()
    lag = config.get("replica_lag_time_max_ticks", defaults.replica_lag_time_max_ms // MS_PER_TICK)
    timeout = config.get("request_timeout_ticks", defaults.request_timeout_ms // MS_PER_TICK)
    for name, value in (("replica_lag_time_max_ticks", lag), ("request_timeout_ticks", timeout)):
        if type(value) is not int:
            raise ValueError(f"config.{name}: expected an integer, got {str(value)[:40]!r}")
    return ClusterConfig(
        protocol=protocol,
        replicas=config.get("replicas", defaults.replicas),
        min_insync_replicas=config.get("min_insync_replicas", defaults.min_insync_replicas),
        unclean_leader_election_enable=config.get(
            "unclean_leader_election_enable", defaults.unclean_leader_election_enable
        ),
        replica_lag_time_max_ms=lag * MS_PER_TICK,
        request_timeout_ms=timeout * MS_PER_TICK,
        flush_messages=config.get("flush_messages", defaults.flush_messages),
        unclean_shutdown_detection=config.get("unclean_shutdown_detection", defaults.unclean_shutdown_detection),
        split_fetch_handling=config.get("split_fetch_handling", defaults.split_fetch_handling),
        split_become_follower=config.get("split_become_follower", defaults.split_become_follower),
        hw_waits_for_caught_up=config.get("hw_waits_for_caught_up", defaults.hw_waits_for_caught_up),
        catch_up_at_previous_fetch=config.get("catch_up_at_previous_fetch", defaults.catch_up_at_previous_fetch),
        metadata_cache=config.get("metadata_cache", defaults.metadata_cache),
        unfence_at_heartbeat=config.get("unfence_at_heartbeat", defaults.unfence_at_heartbeat),
        kraft_controlled_shutdown=config.get("kraft_controlled_shutdown", defaults.kraft_controlled_shutdown),
    )


class SimDriver:
    """One schedule's cluster; ``step(name, values)`` -> ``(refusal reason or None, outputs)``."""

    def __init__(self, config: ClusterConfig, cluster_factory=None) -> None:
        """``cluster_factory(config)``: a step-mode cluster (default: the simulation, in this process)."""
        self.cluster = cluster_factory(config) if cluster_factory else Cluster(config, mode="steps", seed=0)
        self.report = Report(self.cluster)
        self.records_produced = 0
        self._consumes: dict[int, tuple[tuple, list]] = {}  # broker -> (last records read, their output pairs)

    def step(self, name: str, values: tuple) -> tuple[str | None, list[dict]]:
        """Take one step (fields in ``steps.STEPS`` order); other exceptions than ClusterError are
        the implementation failing and propagate."""
        cluster = self.cluster
        try:
            if name == "produce":
                replica, acks, records = values
                first = self.records_produced + 1
                cluster.produce(replica, [str(first + i).encode() for i in range(records)], acks)
                self.records_produced += records
            elif name == "tick":
                cluster.advance(MS_PER_TICK)
            else:
                if name == "handle_alter_partition":
                    self.report.note_alter_partition_handling(values[0])
                getattr(cluster, name)(*values)
                if name == "send_fetch":
                    self.report.note_fetch_sent(values[0])
        except ClusterError as exc:
            return exc.reason, []
        return None, [self._output(r) for r in cluster.take_client_responses()]

    def close(self) -> None:
        """End what the cluster runs outside this process (broker processes)."""
        close = getattr(self.cluster, "close", None)
        if close is not None:
            close()

    def _output(self, result) -> dict:
        """A client response in docs/steps.md's output form (record ids back from the values)."""
        if isinstance(result, ConsumeResult):
            return {
                "type": "consume",
                "replica": result.replica,
                "error": result.error,
                "hw": result.hw,
                "records": self._consumed(result.replica, result.records),
            }
        return {
            "type": "produce",
            "replica": result.replica,
            "record": int(result.value),
            "records": result.count,
            "acks": result.acks,
            "error": result.error,
            "offset": result.offset,
        }

    def _consumed(self, replica: int, records: tuple) -> list:
        """``[offset, record id]`` of each record a consume returned. A consume reads from offset 0,
        and the client's records of a broker extend those of its last read: only the new ones are
        converted (the pairs of the prefix, never modified, are shared with the last output)."""
        last, pairs = self._consumes.get(replica, ((), []))
        n = len(last)
        if not (n and len(records) >= n and records[:n] == last):
            n, pairs = 0, []
        pairs = pairs[:n] + [[offset, int(value)] for offset, value in records[n:]]
        self._consumes[replica] = (records, pairs)
        return pairs
