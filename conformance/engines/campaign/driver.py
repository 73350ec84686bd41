"""The campaign driver: plan the missing seed ranges, run them on Spark, aggregate, report."""

from __future__ import annotations

import threading
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from isrcheck.conformance.core.schedule import PROTOCOLS
from isrcheck.conformance.engines.campaign import plan
from isrcheck.conformance.engines.campaign.aggregate import aggregate, budget_counts, swarm_summary
from isrcheck.conformance.engines.campaign.executor import TaskSpec, check_part, run_chunks
from isrcheck.conformance.engines.campaign.failures import write_failures
from isrcheck.conformance.engines.campaign.harness import Harness, load_harness
from isrcheck.conformance.engines.campaign.progress import follow
from isrcheck.conformance.engines.campaign.session import JobSession
from isrcheck.conformance.engines.campaign.store import CampaignStore, atomic_write_json
from isrcheck.conformance.generators.refusals import DEFAULT_REFUSALS, REFUSALS
from isrcheck.conformance.vocabulary import SECONDS, SEED

if TYPE_CHECKING:
    from isrcheck.conformance.core.sut_spec import SutSpec


MODES = ("steps", "auto")  # random walks in lockstep; self-driven simulations validated after the fact


class CampaignError(RuntimeError):
    """A campaign that cannot run as asked (bad parameters, foreign directory, Spark job failure)."""


@dataclass(frozen=True)
class CampaignParams:
    """What a campaign fuzzes: seeds [seed, seed + schedules) of one protocol."""

    protocol: str
    schedules: int
    seed: int = 0
    steps: int = 100
    faults: str = "default"
    shrink_budget_s: float = 10.0
    sut: SutSpec | None = None  # --sut: the external system under test (None: in process)
    refusals: float = DEFAULT_REFUSALS  # share of each walk's steps that the model refuses
    swarm: bool = True  # swarm testing (generators.swarm); False: --no-swarm, the uniform walk
    mode: str = "steps"  # "auto": self-driven simulations, each event log validated (campaign.auto)

    def identity(self) -> dict:
        """What the campaign directory holds: its rows, failures and summary are of these seeds
        under these settings, so a rerun must agree on all of them (and then resumes)."""
        ident = {
            "protocol": self.protocol,
            "seed": self.seed,
            "schedules": self.schedules,
            "steps": self.steps,
            "faults": self.faults,
            "refusals": self.refusals,
            "swarm": self.swarm,
        }
        if self.mode != "steps":
            ident = {**ident, "mode": self.mode}
        return ident if self.sut is None else {**ident, "sut": self.sut.command}

    def validate(self) -> None:
        """Raise CampaignError naming the first bad parameter."""
        if self.mode not in MODES:
            raise CampaignError(f"unknown --mode {self.mode!r}; choose one of {', '.join(MODES)}")
        if self.mode == "auto" and self.sut is not None:
            raise CampaignError("--mode auto runs the in-process simulation: it takes no --sut")
        if self.protocol not in PROTOCOLS:
            raise CampaignError(f"unknown --protocol {self.protocol!r}; choose one of {', '.join(PROTOCOLS)}")
        try:
            for option, bound, value in (
                ("--schedules", plan.SCHEDULES, self.schedules),
                ("--seed", SEED, self.seed),
                ("--steps", plan.STEPS, self.steps),
                ("--shrink-budget", SECONDS, self.shrink_budget_s),
                ("--refusals", REFUSALS, self.refusals),
            ):
                bound.check(value, option)
        except ValueError as exc:
            raise CampaignError(str(exc)) from None
        last = self.seed + self.schedules - 1
        if last > SEED.high:
            raise CampaignError(
                f"--seed {self.seed} --schedules {self.schedules}: the last seed, "
                f"{last:,}, is past the largest, {SEED.high:,}"
            )

    def validate_faults(self, harness: Harness) -> None:
        if harness.fault_profiles and self.faults not in harness.fault_profiles:
            raise CampaignError(f"unknown --faults {self.faults!r}; choose one of {', '.join(harness.fault_profiles)}")


@dataclass
class CampaignResult:
    summary: dict
    exit_code: int  # 0 no failure, 1 failures found
    failures: list[dict] = field(default_factory=list)


def run_campaign(
    params: CampaignParams,
    out: str | Path,
    *,
    master: str | None = None,
    partitions: int | None = None,
    spark=None,
    harness: Harness | None = None,
    progress: bool = False,
    console: Console | None = None,
) -> CampaignResult:
    """Run (or resume) the campaign in ``out``; ``spark`` reuses a session the caller owns."""
    wall_start = time.perf_counter()
    params.validate()
    if partitions is not None:
        try:
            plan.PARTITIONS.check(partitions, "--partitions")
        except ValueError as exc:
            raise CampaignError(str(exc)) from None
    session = JobSession("fuzz", master, spark)
    params.validate_faults(harness or load_harness())
    store = CampaignStore(out, params.protocol)
    try:
        store.bind(params.identity())
        removed = store.remove_orphans()
        console = console or Console(stderr=True)
        damaged = _set_aside_damaged(store, console)
    except ValueError as exc:
        raise CampaignError(str(exc)) from None
    except OSError as exc:
        raise CampaignError(f"cannot use --out {out}: {exc.strerror or exc}") from None
    requested = (params.seed, params.seed + params.schedules)
    done = [(c.lo, c.hi) for c in store.completed()]
    gaps = plan.missing(requested, done)
    todo = sum(hi - lo for lo, hi in gaps)

    with session:
        spark = session.get()
        sc = spark.sparkContext
        parallelism = sc.defaultParallelism
        tasks = partitions or plan.default_tasks(params.schedules, parallelism)
        chunks = plan.plan_tasks(requested, tasks, done)
        spec = TaskSpec(
            out=str(Path(out).resolve()),
            protocol=params.protocol,
            steps=params.steps,
            faults=params.faults,
            shrink_budget_s=params.shrink_budget_s,
            harness=harness,
            sut=params.sut,
            refusals=params.refusals,
            swarm=params.swarm,
            mode=params.mode,
        )
        job_start = time.perf_counter()
        ranges = _run_job(sc, spec, chunks, store, gaps, progress, console) if chunks else []
        job_seconds = time.perf_counter() - job_start
        task_seconds = sum(r["seconds"] for r in ranges)
        with (
            console.status("aggregating the results with Spark", spinner="dots")
            if progress and console.is_terminal
            else nullcontext()
        ):
            agg = aggregate(spark, str(store.partition_dir), *requested)
        master_url = sc.master
        spark_version = spark.version
    if agg.schedules != params.schedules or agg.duplicate_seeds:
        raise CampaignError(
            f"{store.runs} holds {agg.schedules} rows for {params.schedules} "
            f"seeds ({agg.duplicate_seeds} duplicates); the dataset is damaged"
        )
    failures = write_failures(store, agg.distinct_failures)
    failing = sum(n for kind, n in agg.by_verdict.items() if kind != "pass")
    summary = {
        "protocol": params.protocol,
        "seed": params.seed,
        "schedules": params.schedules,
        "steps": params.steps,
        "faults": params.faults,
        "shrink_budget_s": params.shrink_budget_s,
        "refusals": params.refusals,
        "swarm": swarm_summary(params.swarm, agg.swarm_features),
        "mode": params.mode,
        "config_hashes": agg.config_hashes,
        "by_verdict": agg.by_verdict,
        "by_property": agg.by_property,
        "violated": agg.violated,
        "budgets": budget_counts(params.schedules, agg.outside_budget, agg.beyond_budget),
        "failing_schedules": failing,
        "distinct_failures": len(failures),
        "failures": [
            {
                k: f[k]
                for k in (
                    "id",
                    "verdict",
                    "property",
                    "seed",
                    "seeds",
                    "first_bad_step",
                    "steps",
                    "shrunk_steps",
                    "file",
                    "original_file",
                )
            }
            | ({"replay": f["replay"]} if "replay" in f else {})
            for f in failures
        ],
        "distinct_coverage": agg.distinct_coverage,
        "distinct_abstract_states": agg.coverage_by_kind.get("abstract_states", 0),
        "coverage_by_kind": agg.coverage_by_kind,
        "coverage_growth": agg.coverage_growth,
        "schedules_with_step": agg.schedules_with_step,
        "mean_schedule_ms": round(agg.mean_duration_ms, 3),
        "run": {
            "executed": todo,
            "skipped_completed": params.schedules - todo,
            "tasks": len(chunks),
            "removed_orphans": len(removed),
            "rerun_damaged": len(damaged),
            "job_seconds": round(job_seconds, 3),
            "schedules_per_s": round(todo / job_seconds, 1) if todo and job_seconds > 0 else None,
            # Time executors spent inside tasks over what the job offered them: what is missing
            # from 1.0 is Spark's scheduling, serialization and idle cores at the tail.
            "task_seconds": round(task_seconds, 3),
            "executor_busy": round(task_seconds / (job_seconds * parallelism), 3) if todo and job_seconds > 0 else None,
            "wall_time_s": round(time.perf_counter() - wall_start, 3),
            "master": master_url,
            "parallelism": parallelism,
            "spark_version": spark_version,
        },
    }
    atomic_write_json(store.summary_path, summary)
    return CampaignResult(summary=summary, exit_code=1 if failing else 0, failures=failures)


def _set_aside_damaged(store: CampaignStore, console: Console) -> list:
    """Completed ranges whose Parquet file no longer holds their rows (truncated, damaged,
    replaced): each file is moved aside, kept for inspection, and its seeds are run again."""
    damaged = []
    for c in store.completed():
        path = store.part_path(c.lo, c.hi)
        problem = check_part(path, c.lo, c.hi, c.rows)
        if problem:
            aside = store.set_aside(path)
            console.print(
                f"isrcheck fuzz: {path.name} is damaged ({problem}); set aside as "
                f"{aside.name}, seeds {c.lo}..{c.hi - 1} run again",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
            damaged.append(c)
    return damaged


def _run_job(sc, spec: TaskSpec, chunks, store: CampaignStore, gaps, progress: bool, console: Console) -> list[dict]:
    """One Spark partition per chunk; the driver thread keeps the bar moving meanwhile.
    Returns the small per-range reports of the executors (bounds, rows, failures, seconds)."""
    outcome: dict = {}

    def job() -> None:
        try:
            rdd = sc.parallelize(chunks, len(chunks))
            outcome["ranges"] = rdd.mapPartitions(partial(run_chunks, spec)).collect()
        except BaseException as exc:  # re-raised on the calling thread below
            outcome["error"] = exc

    worker = threading.Thread(target=job, name="isrcheck-fuzz-job", daemon=True)
    worker.start()
    follow(worker, sc, store, gaps, console, enabled=progress, label=f"fuzz {spec.protocol}")
    if "error" in outcome:
        raise CampaignError(f"the Spark job failed: {_first_python_error(outcome['error'])}")
    return outcome["ranges"]


def _first_python_error(exc: BaseException) -> str:
    """The Python exception line inside a Py4J/Spark error, not the JVM stack around it."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    for ln in reversed(lines):
        if ln.split(":", 1)[0].endswith(("Error", "Exception", "Unavailable")) and "at " not in ln[:3]:
            return ln[:500]
    return (lines[0] if lines else type(exc).__name__)[:500]
