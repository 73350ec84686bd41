"""The engines a gate runs, one entry each: adding an engine is one line of ``ENGINES`` and a
function ``run(job: EngineJob) -> EngineRun`` at its target; the target's module may also define
``check(options)``, raising ``ConfigError`` for a bad table before any engine runs.

An engine whose target module is not installed is unavailable: a gate config naming it is bad
input (exit 2), never silently skipped.
"""
from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ..schedule import Schedule
from ..verdict import Verdict


@dataclass
class Finding:
    """A failure an engine found: its verdict and the (shrunk) schedule that replays it; an
    engine error has no schedule, only ``error``."""

    verdict: Verdict
    schedule: Schedule | None
    label: str                      # where it came from, e.g. "seed 17" or "StrongIsr at depth 25"
    original_steps: int | None = None
    error: str | None = None


@dataclass
class EngineRun:
    engine: str
    protocol: str
    summary: str = ""               # one line: what was covered (states, schedules, ...)
    seconds: float = 0.0
    findings: list[Finding] = field(default_factory=list)
    results: str | None = None      # where the engine left its own results (a campaign folder)


@dataclass
class EngineJob:
    """What an engine gets: its protocol, its table's options (``protocols`` removed), the
    gate-wide settings, a folder of its own and a shared Spark session (started on first use)."""

    protocol: str
    options: dict
    master: str | None
    shrink_seconds: float
    workdir: Path
    spark: Callable[[], object]
    console: object


@dataclass(frozen=True)
class Engine:
    name: str
    target: str  # "module:function"
    what: str

    @property
    def module(self) -> str:
        return self.target.split(":")[0]

    def available(self) -> bool:
        try:
            if importlib.util.find_spec(self.module) is None:
                return False
        except ModuleNotFoundError:  # a parent package is missing
            return False
        return callable(getattr(importlib.import_module(self.module), self.target.partition(":")[2], None))

    def load(self) -> Callable[[EngineJob], EngineRun]:
        module, _, function = self.target.partition(":")
        return getattr(importlib.import_module(module), function)


# In the order a gate runs them: exhaustive first (fast, shortest counterexamples), Spark last.
ENGINES: tuple[Engine, ...] = (
    Engine("explore", "isrcheck.conformance.gate.explore_engine:run", "breadth-first exploration of the model"),
    Engine("cover", "isrcheck.conformance.cover.gate:run", "every edge of the model's state graph on the implementation"),
    Engine("fuzz", "isrcheck.conformance.gate.fuzz_engine:run", "seeded random crash schedules on Spark"),
)
NAMES = tuple(e.name for e in ENGINES)
