"""What a gate engine is given and what it gives back: the job, its run and its findings. Engines and
the gate's registry both import this, so an engine never imports the registry that names it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from isrcheck.conformance.core.schedule import Schedule
from isrcheck.conformance.core.verdict import Verdict

if TYPE_CHECKING:
    from isrcheck.conformance.core.sut_spec import SutSpec


@dataclass
class Finding:
    """A failure an engine found: its verdict and the (shrunk) schedule that replays it; an
    engine error has no schedule, only ``error``."""

    verdict: Verdict
    schedule: Schedule | None
    label: str  # where it came from, e.g. "seed 17" or "StrongIsr at depth 25"
    original_steps: int | None = None
    error: str | None = None


@dataclass
class EngineRun:
    engine: str
    protocol: str
    summary: str = ""  # one line: what was covered (states, schedules, ...)
    seconds: float = 0.0
    findings: list[Finding] = field(default_factory=list)
    results: str | None = None  # where the engine left its own results (a campaign folder)


@dataclass
class EngineJob:
    """What an engine gets: its protocol, its table's options (``protocols`` removed), the
    gate-wide settings, a folder of its own, a shared Spark session (started on first use) and
    the system under test to run schedules on (None: the in-process simulation)."""

    protocol: str
    options: dict
    master: str | None
    shrink_seconds: float
    workdir: Path
    spark: Callable[[], object]
    console: object
    sut: SutSpec | None = None
