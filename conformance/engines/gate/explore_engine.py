"""The explorer as a gate engine: breadth-first search of the model in the configured scope;
each counterexample (already shortest) is replayed in lockstep on the implementation, checking
every property."""

from __future__ import annotations

import dataclasses
import time

from isrcheck.conformance.core.lockstep import run_schedule
from isrcheck.conformance.core.schedule import Schedule
from isrcheck.conformance.engines.gate.config import ConfigError
from isrcheck.conformance.engines.gate.job import EngineJob, EngineRun, Finding
from isrcheck.conformance.progress import Progress
from isrcheck.model import ModelConfig, Scope, explore
from isrcheck.model.config import ConfigError as ModelConfigError
from isrcheck.model.config import ScheduleConfig

_CONFIG = tuple(f.name for f in dataclasses.fields(ScheduleConfig))
_SCOPE = tuple(f.name for f in dataclasses.fields(Scope))
_DEFAULT_CONFIG = {"replicas": 3, "min_insync_replicas": 2}  # isrcheck explore's defaults
_TUPLES = ("acks", "crash_kinds")


def split(options: dict, table: str = "explore") -> tuple[dict, dict]:
    """A scope table's keys as (cluster config, explorer scope); ``table`` names it in errors
    (``cover`` takes the same keys)."""
    config, scope = dict(_DEFAULT_CONFIG), {}
    for key in sorted(options):
        value = options[key]
        if key in _CONFIG:
            config[key] = value
        elif key in _SCOPE:
            scope[key] = tuple(value) if key in _TUPLES and isinstance(value, list) else value
        else:
            raise ConfigError(
                f"[tool.isrcheck.gate.{table}].{key}: unknown key (known: protocols, {', '.join(_CONFIG + _SCOPE)})"
            )
    return config, scope


def scope_of(options: dict, protocol: str, table: str = "explore") -> tuple[ModelConfig, Scope]:
    """The model config and scope of a table, or ConfigError naming the bad key."""
    config, scope = split(options, table)
    try:
        return ModelConfig.of(protocol, ScheduleConfig.from_json(config)), Scope(**scope)
    except ModelConfigError as exc:
        raise ConfigError(f"[tool.isrcheck.gate.{table}].{exc.field}: {exc.detail}") from None


def check(options: dict) -> None:
    """Refuse a bad table before any engine runs."""
    scope_of(options, "kip-320")


def run(job: EngineJob) -> EngineRun:
    model_config, scope = scope_of(job.options, job.protocol)
    start = time.perf_counter()
    with Progress(f"explore {job.protocol}", None, "states", console=job.console) as progress:
        result = explore(
            model_config, scope, progress=lambda states, depth, _s: progress.update(states, note=f"depth {depth}")
        )
        progress.update(result.states)
    out = EngineRun(
        "explore",
        job.protocol,
        f"{result.states:,} states, depth {result.depth}, {'complete' if result.complete else 'NOT complete'}",
    )
    for v in result.violations:
        schedule = Schedule.from_json(
            {
                "version": 1,
                "protocol": job.protocol,
                "config": model_config.to_schedule(),
                "steps": v.trace,
                "name": f"{job.protocol}-{v.property}",
                "description": f"shortest counterexample to {v.property} found by isrcheck explore",
            }
        )
        # The verdict of a full replay (every property, on the implementation too) is what the
        # corpus will replay; another property may fail first on the same trace.
        out.findings.append(Finding(run_schedule(schedule, sut=job.sut), schedule, f"{v.property} at depth {v.depth}"))
    out.seconds = time.perf_counter() - start
    return out
