"""One gate run: replay the corpus (expected verdicts), then run each configured engine on each
of its protocols, save new failures into the corpus. Pure work; the command reports it."""
from __future__ import annotations

import importlib
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from isrcheck.conformance.progress import Progress
from isrcheck.conformance.core.verdict import Verdict
from isrcheck.conformance.engines.gate.config import ConfigError, GateConfig
from isrcheck.conformance.engines.gate.corpus import Case, collect, replay, save_failure
from isrcheck.conformance.engines.gate.engines import ENGINES
from isrcheck.conformance.engines.gate.job import EngineJob, EngineRun, Finding


@dataclass
class CaseResult:
    case: Case
    verdict: Verdict
    seconds: float

    @property
    def ok(self) -> bool:
        return self.case.expected.matches(self.verdict)


@dataclass
class GateResult:
    cases: list[CaseResult] = field(default_factory=list)
    unused: list[Path] = field(default_factory=list)
    runs: list[EngineRun] = field(default_factory=list)
    saved: dict[int, Path] = field(default_factory=dict)   # id(finding) -> its corpus file
    new: set[Path] = field(default_factory=set)            # the corpus files this run wrote
    seconds: float = 0.0

    @property
    def findings(self) -> list[tuple[EngineRun, Finding]]:
        return [(r, f) for r in self.runs for f in r.findings]

    @property
    def exit_code(self) -> int:
        return 1 if any(not c.ok for c in self.cases) or self.findings else 0


def engines_to_run(config: GateConfig) -> list:
    """The configured engines, in ENGINES order; one that is not installed is bad input."""
    chosen = []
    for engine in ENGINES:
        if engine.name not in config.engines:
            continue
        if not engine.available():
            raise ConfigError(f"{config.source}: [tool.isrcheck.gate.{engine.name}] is configured, but "
                              f"this isrcheck has no {engine.name} engine ({engine.module} is not installed)")
        check = getattr(importlib.import_module(engine.module), "check", None)  # refuse a bad table now
        if check is not None:
            try:
                check(config.engine_options(engine.name))
            except ConfigError as exc:
                raise ConfigError(f"{config.source}: {exc}") from None
        chosen.append(engine)
    return chosen


def run_gate(config: GateConfig, workdir: Path, console, save: Path | None) -> GateResult:
    """``save``: the corpus folder new failures go to (None: not saved)."""
    start = time.perf_counter()
    engines = engines_to_run(config)  # bad engine tables stop the run before any work
    result = GateResult()
    cases, result.unused = collect(config.folders, config.protocols)
    with Progress("gate corpus", len(cases), "schedules", console=console) as progress:
        for case in cases:
            t0 = time.perf_counter()
            verdict = replay(case)
            result.cases.append(CaseResult(case, verdict, time.perf_counter() - t0))
            progress.advance(note=case.name)
    spark = _SharedSpark(config.master)
    try:
        for engine in engines:
            for protocol in config.engine_protocols(engine.name):
                folder = workdir / engine.name / protocol
                if folder.exists():  # the gate's own results of an earlier run: start afresh
                    shutil.rmtree(folder)
                folder.mkdir(parents=True)
                console.print(f"gate: {engine.name} {protocol} ...", markup=False, highlight=False)
                job = EngineJob(protocol, config.engine_options(engine.name), config.master,
                                config.shrink_seconds, folder, spark.get, console)
                run = engine.load()(job)
                result.runs.append(run)
                console.print(f"gate: {engine.name} {protocol}: {run.summary}; {len(run.findings)} "
                              f"failure(s) in {run.seconds:.1f} s", markup=False, highlight=False)
    finally:
        spark.stop()
    if save is not None:
        for run, finding in result.findings:
            if finding.schedule is not None:
                path, new = save_failure(save, run.engine, finding.schedule, finding.verdict, finding.label)
                result.saved[id(finding)] = path
                if new:
                    result.new.add(path)
    result.seconds = time.perf_counter() - start
    return result


class _SharedSpark:
    """One Spark session for every Spark engine of the run, started only if one asks."""

    def __init__(self, master: str | None) -> None:
        self.master, self.session = master, None

    def get(self):
        if self.session is None:
            from isrcheck.conformance.engines.campaign.session import SparkUnavailable, start_spark
            try:
                self.session = start_spark(self.master, app_name="isrcheck-gate")
            except SparkUnavailable as exc:
                raise ConfigError(str(exc)) from None
        return self.session

    def stop(self) -> None:
        if self.session is not None:
            self.session.stop()
            self.session = None
