"""The engines a gate runs, one entry each: adding an engine is one line of ``ENGINES`` and a
function ``run(job: EngineJob) -> EngineRun`` at its target; the target's module may also define
``check(options)``, raising ``ConfigError`` for a bad table before any engine runs.

An engine whose target module is not installed is unavailable: a gate config naming it is bad
input (exit 2), never silently skipped.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from typing import Callable

from isrcheck.conformance.engines.gate.job import EngineJob, EngineRun


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
    Engine("explore", "isrcheck.conformance.engines.gate.explore_engine:run", "breadth-first exploration of the model"),
    Engine(
        "cover",
        "isrcheck.conformance.engines.cover.gate:run",
        "every edge of the model's state graph on the implementation",
    ),
    Engine("fuzz", "isrcheck.conformance.engines.gate.fuzz_engine:run", "seeded random crash schedules on Spark"),
)
NAMES = tuple(e.name for e in ENGINES)
