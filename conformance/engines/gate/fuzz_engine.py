"""The Spark fuzz campaign as a gate engine, within a budget of schedules, seconds or both.

A budget in seconds runs consecutive seed blocks (each its own campaign folder, all on one Spark
session, at least one) until the time is spent, counted once Spark is up; a budget in schedules
alone is one campaign. Failures come
back shrunk by the campaign; the gate turns them into findings.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import TYPE_CHECKING

from isrcheck.conformance.core.lockstep import run_schedule
from isrcheck.conformance.core.schedule import ScheduleError, load_schedule
from isrcheck.conformance.core.verdict import Verdict
from isrcheck.conformance.engines.campaign.driver import MODES, CampaignError, CampaignParams, run_campaign
from isrcheck.conformance.engines.campaign.plan import SCHEDULES, STEPS
from isrcheck.conformance.engines.gate.config import ConfigError
from isrcheck.conformance.engines.gate.job import EngineJob, EngineRun, Finding
from isrcheck.conformance.vocabulary import SECONDS, SEED

if TYPE_CHECKING:
    from isrcheck.conformance.core.sut_spec import SutSpec

_KEYS = ("schedules", "seconds", "steps", "faults", "seed", "block", "mode")
BLOCK = 50  # schedules per campaign when the budget is in seconds


def _options(options: dict) -> dict:
    where = "[tool.isrcheck.gate.fuzz]"
    for key in sorted(options):
        if key not in _KEYS:
            raise ConfigError(f"{where}.{key}: unknown key (known: protocols, {', '.join(_KEYS)})")
    if "schedules" not in options and "seconds" not in options:
        raise ConfigError(f"{where}: a budget is needed: schedules = N, seconds = S, or both")
    for key, bound in (
        ("schedules", SCHEDULES),
        ("seconds", SECONDS),
        ("steps", STEPS),
        ("seed", SEED),
        ("block", SCHEDULES),
    ):
        if key in options:
            problem = bound.problem(options[key])
            if problem:
                raise ConfigError(f"{where}.{key}: {problem}")
    faults = options.get("faults", "default")
    # hypothesis: only when the fuzz engine's options are built
    from isrcheck.conformance.generators.walk import FAULT_PROFILES

    if faults not in FAULT_PROFILES:
        raise ConfigError(f"{where}.faults: unknown fault profile {faults!r} (known: {', '.join(FAULT_PROFILES)})")
    mode = options.get("mode", "steps")
    if mode not in MODES:
        raise ConfigError(f"{where}.mode: expected one of {', '.join(MODES)}, got {mode!r}")
    return {
        "schedules": options.get("schedules"),
        "seconds": options.get("seconds"),
        "steps": options.get("steps", 100),
        "faults": faults,
        "seed": options.get("seed", 0),
        "block": options.get("block", BLOCK),
        "mode": mode,
    }


def check(options: dict) -> None:
    _options(options)


def run(job: EngineJob) -> EngineRun:
    o = _options(job.options)
    start = time.perf_counter()
    spark = job.spark()  # the budget counts from here: Spark's start-up is not fuzzing
    deadline = time.perf_counter() + o["seconds"] if o["seconds"] else math.inf
    left = o["schedules"] if o["schedules"] else math.inf
    block = left if o["seconds"] is None else min(o["block"], left)
    seed, ran, verdicts = o["seed"], 0, {}
    out = EngineRun("fuzz", job.protocol, results=str(job.workdir))
    while left > 0 and (ran == 0 or time.perf_counter() < deadline):  # at least one block
        n = int(min(block, left))
        params = CampaignParams(
            job.protocol,
            n,
            seed=seed,
            steps=o["steps"],
            faults=o["faults"],
            shrink_budget_s=job.shrink_seconds,
            sut=job.sut if o["mode"] == "steps" else None,
            mode=o["mode"],
            swarm=o["mode"] == "steps",
        )
        folder = Path(job.workdir) / f"seeds-{seed}-{seed + n - 1}"
        try:
            result = run_campaign(params, folder, spark=spark, progress=True, console=job.console)
        except CampaignError as exc:
            raise ConfigError(f"fuzz {job.protocol}: {exc}") from None
        for kind, count in result.summary["by_verdict"].items():
            verdicts[kind] = verdicts.get(kind, 0) + count
        for failure in result.failures:
            out.findings.append(finding(folder, failure, job.sut))
        ran, seed, left = ran + n, seed + n, left - n
    out.seconds = time.perf_counter() - start
    counts = ", ".join(f"{k} {v}" for k, v in sorted(verdicts.items()))
    what = "self-driven runs validated" if o["mode"] == "auto" else "schedules"
    out.summary = f"{ran} {what} of {o['steps']} steps (seeds {o['seed']}..{seed - 1}, faults {o['faults']}): {counts}"
    return out


def finding(folder: Path, failure: dict, sut: SutSpec | None) -> Finding:
    """A failure of a campaign's summary (fuzz or cover) as a gate finding, with its shrunk schedule
    and its verdict there, replayed on ``sut``."""
    verdict = Verdict(failure["verdict"], failure["property"], failure["first_bad_step"])
    label = f"seed {failure['seed']} ({failure['seeds']} seeds)"
    if failure["file"].endswith(".events"):  # a self-driven run (mode auto): its log and its validation
        detail = (folder / failure["file"]).with_suffix(".json").read_text(encoding="utf-8")
        return Finding(verdict, None, label, error=f"isrcheck validate {folder / failure['file']}\n{detail}")
    if failure.get("original_file") is None:  # the harness raised: only the error file
        return Finding(verdict, None, label, error=(folder / failure["file"]).read_text(encoding="utf-8"))
    try:
        schedule = load_schedule(folder / failure["file"])
    except ScheduleError as exc:
        return Finding(verdict, None, label, error=str(exc))
    # The shrunk schedule's own verdict (its first bad step within the shrunk steps).
    return Finding(run_schedule(schedule, sut=sut), schedule, label, original_steps=failure["steps"])
