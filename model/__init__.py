"""The reference model of one Kafka partition: state, step semantics, exhaustive explorer.

Public API (stable):

- The step alphabet, defined once (``model/alphabet.py``): ``STEPS`` (name -> ``StepKind`` with
  its fields and Kafka mechanism), ``MESSAGE_KINDS``, ``CRASH_KINDS``, ``NONE``, ``MAX_REPLICAS``.
- ``ScheduleConfig(replicas, min_insync_replicas, unclean_leader_election_enable,
  replica_lag_time_max_ticks, request_timeout_ticks, flush_messages)``, a schedule's config with
  its bounds; ``ModelConfig(..., protocol=...)`` adds the protocol variant; ``Scope`` (exploration
  bounds); ``PROTOCOLS`` (name -> Protocol rules: hw-truncation, kip-101, kip-279, kip-320,
  kip-903, kip-966).
- ``State`` (and ``Replica``, ``Controller``, ``Entry``, message tuples): immutable, hashable,
  built from plain values; ``initial_state(config)``; ``History`` (the ghost variables, one
  function of each step and its outputs for model and implementation alike).
- ``Step`` (``Step.from_json(dict)``, ``step.to_json()``), ``enabled(config, state) -> [Step]``,
  ``apply(config, state, step) -> (state, outputs)`` (``step`` a Step or a schedule step dict),
  ``why_disabled(config, state, step) -> str | None``; ``StepRefused`` (with ``reason``) and
  ``InvalidStep`` (malformed step).
- ``explore(config, scope, properties=PROPERTIES, stop_at_first=False) -> ExploreResult`` (states,
  depth, complete, violations with shortest traces as schedule step dicts);
  ``replay(config, steps) -> Replay`` (states and outputs of each step; ``ReplayRefused``).
"""

from .alphabet import CRASH_KINDS, MAX_REPLICAS, MESSAGE_KINDS, NONE, STEPS, InvalidStep, Step, StepKind
from .config import ConfigError, ModelConfig, ScheduleConfig, Scope
from .constraints import in_scope
from .explorer import ExploreResult, Replay, ReplayRefused, Violation, explore, replay
from .history import History
from .protocols import PROTOCOLS, Protocol
from .semantics import StepRefused, apply, enabled, why_disabled
from .state import (
    AlterPartition,
    AlterPartitionResponse,
    Controller,
    Entry,
    FetchRequest,
    FetchResponse,
    HeldRead,
    LeaderAndIsr,
    Replica,
    State,
    end_offset_for,
    initial_state,
)

__all__ = [
    "CRASH_KINDS",
    "History",
    "MAX_REPLICAS",
    "MESSAGE_KINDS",
    "NONE",
    "STEPS",
    "ScheduleConfig",
    "StepKind",
    "AlterPartition",
    "AlterPartitionResponse",
    "ConfigError",
    "ExploreResult",
    "Replay",
    "ReplayRefused",
    "Violation",
    "explore",
    "in_scope",
    "replay",
    "Controller",
    "Entry",
    "FetchRequest",
    "FetchResponse",
    "HeldRead",
    "InvalidStep",
    "LeaderAndIsr",
    "ModelConfig",
    "PROTOCOLS",
    "Protocol",
    "Replica",
    "Scope",
    "State",
    "Step",
    "StepRefused",
    "apply",
    "end_offset_for",
    "enabled",
    "initial_state",
    "why_disabled",
]
