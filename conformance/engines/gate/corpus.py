"""The regression corpus: schedule files with their expected verdicts, replayed before any engine
runs, and where the engines' new failures are saved (shrunk, with their verdict) so the next run
replays them first."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from isrcheck.conformance.core.lockstep import run_schedule
from isrcheck.conformance.core.schedule import Expected, Schedule, ScheduleError, load_schedule
from isrcheck.conformance.core.verdict import Verdict

if TYPE_CHECKING:
    from isrcheck.conformance.core.sut_spec import SutSpec


@dataclass(frozen=True)
class Case:
    """One corpus schedule on one protocol it states an expectation for."""

    path: Path
    folder: Path
    schedule: Schedule  # already under ``protocol``
    expected: Expected

    @property
    def protocol(self) -> str:
        return self.schedule.protocol

    @property
    def name(self) -> str:
        return f"{self.path.stem}[{self.protocol}]"


def collect(folders: tuple[Path, ...], protocols: tuple[str, ...]) -> tuple[list[Case], list[Path]]:
    """Every (file, protocol) with an expectation on one of ``protocols``, in file order, and the
    files that expect nothing on them. A file that is not a valid schedule, or a folder that is
    not there, is bad input."""
    cases, unused = [], []
    for folder in folders:
        if not folder.is_dir():
            raise ScheduleError(f"corpus: folder {folder} does not exist")
        for path in sorted(folder.glob("*.json")):
            try:
                schedule = load_schedule(path)
            except ScheduleError as exc:
                raise ScheduleError(f"corpus: {exc}") from None
            wanted = [p for p in protocols if p in schedule.expected]
            if not wanted:
                unused.append(path)
            cases.extend(Case(path, folder, schedule.with_protocol(p), schedule.expected[p]) for p in wanted)
    return cases, unused


def replay(case: Case, sut: SutSpec | None = None) -> Verdict:
    return run_schedule(case.schedule, sut=sut)


def save_failure(folder: Path, engine: str, schedule: Schedule, verdict: Verdict, label: str) -> tuple[Path, bool]:
    """Write the failure as ``<engine>-<protocol>-<what>-<hash>.json`` expecting its verdict;
    the path, and False when that very schedule was already there (found again, not new)."""
    what = verdict.property or (
        f"at-{schedule.steps[verdict.step]['step']}"
        if verdict.step is not None and verdict.step < len(schedule.steps)
        else "end"
    )
    digest = hashlib.sha256(Schedule(schedule.protocol, schedule.config, schedule.steps).dumps().encode()).hexdigest()[
        :10
    ]
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{engine}-{schedule.protocol}-{verdict.kind}-{what}-{digest}")
    path = folder / f"{stem}.json"
    if path.exists():
        return path, False
    expected = Expected(verdict.kind, verdict.property if verdict.kind == "violation" else None)
    doc = Schedule(
        schedule.protocol,
        schedule.config,
        schedule.steps,
        {schedule.protocol: expected},
        name=stem,
        description=f"Found by isrcheck gate ({engine}, {label}): {verdict.summary()}.",
    )
    folder.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(doc.dumps(), encoding="utf-8")
    tmp.replace(path)
    return path, True
