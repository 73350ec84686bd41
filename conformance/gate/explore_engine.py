"""The explorer as a gate engine: breadth-first search of the model in the configured scope;
each counterexample (already shortest) is replayed in lockstep on the implementation, checking
every property."""
from __future__ import annotations

import dataclasses
import time

from isrcheck.model import ModelConfig, Scope, explore
from isrcheck.model.config import ConfigError as ModelConfigError
from isrcheck.model.config import ScheduleConfig

from ..lockstep import run_schedule
from ..progress import Progress
from ..schedule import Schedule
from .config import ConfigError
from .engines import EngineJob, EngineRun, Finding

_CONFIG = tuple(f.name for f in dataclasses.fields(ScheduleConfig))
_SCOPE = tuple(f.name for f in dataclasses.fields(Scope))
_DEFAULT_CONFIG = {"replicas": 3, "min_insync_replicas": 2}  # isrcheck explore's defaults
_TUPLES = ("acks", "crash_kinds")


def _split(options: dict) -> tuple[dict, dict]:
    config, scope = dict(_DEFAULT_CONFIG), {}
    for key in sorted(options):
        value = options[key]
        if key in _CONFIG:
            config[key] = value
        elif key in _SCOPE:
            scope[key] = tuple(value) if key in _TUPLES and isinstance(value, list) else value
        else:
            raise ConfigError(f"[tool.isrcheck.gate.explore].{key}: unknown key (known: protocols, "
                              f"{', '.join(_CONFIG + _SCOPE)})")
    return config, scope


def check(options: dict) -> None:
    """Refuse a bad table before any engine runs."""
    config, scope = _split(options)
    try:
        ScheduleConfig.from_json(config)
        Scope(**scope)
    except ModelConfigError as exc:
        raise ConfigError(f"[tool.isrcheck.gate.explore].{exc.field}: {exc.detail}") from None


def run(job: EngineJob) -> EngineRun:
    check(job.options)
    config, scope = _split(job.options)
    model_config = ModelConfig.of(job.protocol, ScheduleConfig.from_json(config))
    start = time.perf_counter()
    with Progress(f"explore {job.protocol}", None, "states", console=job.console) as progress:
        result = explore(model_config, Scope(**scope),
                         progress=lambda states, depth, _s: progress.update(states, note=f"depth {depth}"))
        progress.update(result.states)
    out = EngineRun("explore", job.protocol,
                    f"{result.states:,} states, depth {result.depth}, "
                    f"{'complete' if result.complete else 'NOT complete'}")
    for v in result.violations:
        schedule = Schedule.from_json({
            "version": 1, "protocol": job.protocol, "config": model_config.to_schedule(), "steps": v.trace,
            "name": f"{job.protocol}-{v.property}",
            "description": f"shortest counterexample to {v.property} found by isrcheck explore"})
        # The verdict of a full replay (every property, on the implementation too) is what the
        # corpus will replay; another property may fail first on the same trace.
        out.findings.append(Finding(run_schedule(schedule), schedule, f"{v.property} at depth {v.depth}"))
    out.seconds = time.perf_counter() - start
    return out
