"""The adapter: each schedule step becomes exactly one call on the simulated implementation cluster.

The dispatch derives from the step alphabet (``isrcheck.model.alphabet.STEPS``): step ``name``
calls the cluster's method of the same name with the step's field values in the alphabet's
order (``drop(message, replica, index)``, ``crash(replica, kind)``); only ``produce`` (the record
value), ``send_fetch`` (the fetch's tag) and ``tick`` (the clock) need more than that. A step
the cluster has no method for fails when the adapter is built, not in the middle of a run.

The cluster runs in step mode (``Cluster(..., mode="steps")``): nothing happens by itself, only a
``tick`` advances the clock (by ``MS_PER_TICK``) and fires due DelayedProduce timers. "Follower 2
sends a fetch" is ``send_fetch(2)``: broker 2's ReplicaFetcher sends exactly one request;
"leader handles fetch" delivers exactly that request. A step the cluster cannot take raises
``ClusterError``, which the adapter reports as a refusal for the runner to compare with the model's.

Besides the calls, the adapter keeps what the implementation's clients were told (the ghost
variables the history properties read) and which (leader, leader epoch) each fetch was sent
under, keyed by the request's correlation id, for the abstraction function.
"""
from __future__ import annotations

import traceback
from pathlib import Path

from isrcheck.impl.clients import ConsumeResult
from isrcheck.impl.sim import Cluster, ClusterConfig, ClusterError

from isrcheck.model.alphabet import STEPS
from isrcheck.model.history import History

from .abstraction import Abstraction, MS_PER_TICK


class ImplFailure(Exception):
    """The implementation raised something other than ClusterError while taking a step."""


def _where(exc: Exception) -> str:
    frames = traceback.extract_tb(exc.__traceback__)[-3:]
    return "\n".join(f"  at {Path(f.filename).name}:{f.lineno} in {f.name}" for f in frames)


def cluster_config(protocol: str, config) -> ClusterConfig:
    """The implementation's config for a schedule's protocol and ``config`` (ticks -> ms)."""
    return ClusterConfig(
        protocol=protocol, replicas=config.replicas, min_insync_replicas=config.min_insync_replicas,
        unclean_leader_election_enable=config.unclean_leader_election_enable,
        replica_lag_time_max_ms=config.replica_lag_time_max_ticks * MS_PER_TICK,
        request_timeout_ms=config.request_timeout_ticks * MS_PER_TICK,
        flush_messages=config.flush_messages)


class ImplSide:
    """The implementation under test, driven one schedule step at a time."""

    def __init__(self, protocol: str, config) -> None:
        self.cluster = Cluster(cluster_config(protocol, config), mode="steps", seed=0)
        self.abstraction = Abstraction(self.cluster)
        self._dispatch = {name: getattr(self, "_" + name, None) or self._call(name) for name in STEPS}
        self._consumes: dict[int, tuple[tuple, list]] = {}  # broker -> (last records read, their output pairs)

    def _call(self, name: str):
        method = getattr(self.cluster, name, None)
        if method is None:
            raise ImplFailure(f"the implementation has no step {name!r} (Cluster.{name} is missing)")
        return lambda st: method(*st.field_values())

    def _produce(self, st) -> None:
        # docs/steps.md: records take the next ids in order, each written as decimal ASCII.
        first = self.abstraction.history.records_produced + 1
        self.cluster.produce(st.replica, [str(first + i).encode() for i in range(st.records)], st.arg)

    def _tick(self, st) -> None:
        self.cluster.advance(MS_PER_TICK)

    def _send_fetch(self, st) -> None:
        fetcher = self.cluster.brokers[st.replica].replica_manager.fetcher
        self.cluster.send_fetch(st.replica, st.max_batches)
        self.abstraction.fetch_sent(st.replica, fetcher.outstanding, fetcher.sent_under)

    def step(self, st) -> tuple[str | None, list[dict]]:
        """(None, outputs) if the cluster took the step, else (the refusal reason, [])."""
        before = self.abstraction.state() if st.name in History.READS_BEFORE else None
        if st.name == "handle_alter_partition":
            self.abstraction.alter_partition_handled(st.replica)
        try:
            self._dispatch[st.name](st)
        except ClusterError as exc:
            return exc.reason, []
        except Exception as exc:  # the system under test broke: that is a finding, not a harness crash
            raise ImplFailure(f"{type(exc).__name__}: {exc}\n{_where(exc)}") from exc
        outputs = [self._output(r) for r in self.cluster.take_client_responses()]
        self.abstraction.step_taken(st, outputs, before)
        return None, outputs

    def abstract_state(self):
        return self.abstraction.state()

    def _output(self, result) -> dict:
        """A client response in docs/steps.md's output form (record ids back from the values)."""
        if isinstance(result, ConsumeResult):
            return {"type": "consume", "replica": result.replica, "error": result.error, "hw": result.hw,
                    "records": self._consumed(result.replica, result.records)}
        return {"type": "produce", "replica": result.replica, "record": int(result.value), "records": result.count,
                "acks": result.acks, "error": result.error, "offset": result.offset}

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
