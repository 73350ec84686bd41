"""One gate run: replay the corpus (expected verdicts), then run each configured engine on each
of its protocols, save new failures into the corpus. Pure work; the command reports it."""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from isrcheck.conformance.core.verdict import Verdict
from isrcheck.conformance.engines.campaign.session import JobSession
from isrcheck.conformance.engines.gate.config import ConfigError, GateConfig
from isrcheck.conformance.engines.gate.corpus import Case, collect, replay, save_failure
from isrcheck.conformance.engines.gate.engines import ENGINES
from isrcheck.conformance.engines.gate.job import EngineJob, EngineRun, Finding
from isrcheck.conformance.engines.gate.workdir import record, start_afresh
from isrcheck.conformance.progress import Progress

if TYPE_CHECKING:
    from isrcheck.conformance.core.sut_spec import SutSpec


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
    saved: dict[int, Path] = field(default_factory=dict)  # id(finding) -> its corpus file
    new: set[Path] = field(default_factory=set)  # the corpus files this run wrote
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
            raise ConfigError(
                f"{config.source}: [tool.isrcheck.gate.{engine.name}] is configured, but "
                f"this isrcheck has no {engine.name} engine ({engine.module} is not installed)"
            )
        check = getattr(importlib.import_module(engine.module), "check", None)  # refuse a bad table now
        if check is not None:
            try:
                check(config.engine_options(engine.name))
            except ConfigError as exc:
                raise ConfigError(f"{config.source}: {exc}") from None
        chosen.append(engine)
    return chosen


def run_gate(config: GateConfig, workdir: Path, console, save: Path | None, sut: SutSpec | None = None) -> GateResult:
    """``save``: the corpus folder new failures go to (None: not saved); ``sut``: the system under
    test the corpus and every engine run on (None: the in-process simulation)."""
    start = time.perf_counter()
    engines = engines_to_run(config)  # bad engine tables stop the run before any work
    result = GateResult()
    cases, result.unused = collect(config.folders, config.protocols)
    if not cases and not engines:  # a gate that checks nothing must not pass
        raise ConfigError(
            f"{config.source}: [tool.isrcheck.gate]: nothing to run: no corpus schedule expects a "
            f"verdict on {', '.join(config.protocols)} (folders: "
            f"{', '.join(map(str, config.folders)) or 'none'}) and no engine table is configured"
        )
    for engine in engines:  # so do files in --out that the gate did not write
        for protocol in config.engine_protocols(engine.name):
            start_afresh(workdir / engine.name / protocol)
    with Progress("gate corpus", len(cases), "schedules", console=console) as progress:
        for case in cases:
            t0 = time.perf_counter()
            verdict = replay(case, sut)
            result.cases.append(CaseResult(case, verdict, time.perf_counter() - t0))
            progress.advance(note=case.name)
    with JobSession("gate", config.master, lazy=True) as spark:  # one for every Spark engine, if one asks
        for engine in engines:
            for protocol in config.engine_protocols(engine.name):
                folder = workdir / engine.name / protocol
                console.print(f"gate: {engine.name} {protocol} ...", markup=False, highlight=False)
                job = EngineJob(
                    protocol,
                    config.engine_options(engine.name),
                    config.master,
                    config.shrink_seconds,
                    folder,
                    spark.get,
                    console,
                    sut,
                )
                try:
                    run = engine.load()(job)
                finally:  # what the engine wrote, even if it stopped: the next run may remove it
                    record(folder)
                result.runs.append(run)
                console.print(
                    f"gate: {engine.name} {protocol}: {run.summary}; {len(run.findings)} "
                    f"failure(s) in {run.seconds:.1f} s",
                    markup=False,
                    highlight=False,
                )
    if save is not None:
        for run, finding in result.findings:
            if finding.schedule is not None:
                path, new = save_failure(save, run.engine, finding.schedule, finding.verdict, finding.label)
                result.saved[id(finding)] = path
                if new:
                    result.new.add(path)
    result.seconds = time.perf_counter() - start
    return result
