"""``isrcheck cover`` as a gate engine: every edge and refused step of the model's state graph at
the table's scope (``[tool.isrcheck.gate.cover]``, the explorer's keys), run on the
implementation on the gate's Spark session. Failures come back shrunk; coverage short of the
totals is a finding too (the gate cannot call a scope covered that was not)."""

from __future__ import annotations

import time

from isrcheck.conformance.core.verdict import Verdict
from isrcheck.conformance.engines.cover.driver import CoverError, run_cover
from isrcheck.conformance.engines.gate.config import ConfigError
from isrcheck.conformance.engines.gate.explore_engine import scope_of
from isrcheck.conformance.engines.gate.fuzz_engine import finding
from isrcheck.conformance.engines.gate.job import EngineJob, EngineRun, Finding


def check(options: dict) -> None:
    scope_of(options, "kip-320", "cover")


def run(job: EngineJob) -> EngineRun:
    config, scope = scope_of(job.options, job.protocol, "cover")
    start = time.perf_counter()
    try:
        result = run_cover(
            config, scope, job.workdir, spark=job.spark(), shrink_budget_s=job.shrink_seconds, sut=job.sut
        )
    except CoverError as exc:
        raise ConfigError(f"cover {job.protocol}: {exc}") from None
    s = result.summary
    out = EngineRun(
        "cover",
        job.protocol,
        results=str(job.workdir),
        seconds=time.perf_counter() - start,
        summary=f"{s['states_covered']:,}/{s['states']:,} states, {s['edges_covered']:,}/{s['edges']:,} "
        f"edges, {s['refusals_covered']:,}/{s['refusals']:,} refusals, {s['schedules']:,} schedules",
    )
    out.findings = [finding(job.workdir, failure, job.sut) for failure in result.failures]
    if (s["states_covered"], s["edges_covered"], s["refusals_covered"]) != (s["states"], s["edges"], s["refusals"]):
        out.findings.append(
            Finding(
                Verdict("divergence", None, None),
                None,
                "coverage",
                error=f"coverage short of the totals: {out.summary}",
            )
        )
    return out
