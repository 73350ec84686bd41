"""The ``cover`` driver: explore the model's state graph at a scope, plan a path cover, run its
schedules on Spark in lockstep, aggregate, report.

The plan depends only on the protocol, config and scope, so a rerun after a kill plans the same
schedules, numbered the same, and runs only the index ranges with no completion marker (the fuzz
campaign's store and ledger: ``campaign.store``).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow.parquet as pq

from isrcheck.conformance.engines.campaign import plan as ranges
from isrcheck.conformance.engines.campaign.aggregate import budget_counts
from isrcheck.conformance.engines.campaign.driver import _first_python_error
from isrcheck.conformance.engines.campaign.failures import write_failures
from isrcheck.conformance.engines.campaign.session import JobSession
from isrcheck.conformance.engines.campaign.store import CampaignStore, atomic_write_json
from isrcheck.conformance.engines.cover.executor import CoverSpec, failure_entry, run_chunks
from isrcheck.conformance.engines.cover.graph import build_graph
from isrcheck.conformance.engines.cover.paths import plan_cover
from isrcheck.model import ModelConfig, Scope

if TYPE_CHECKING:
    from isrcheck.conformance.core.sut_spec import SutSpec


class CoverError(RuntimeError):
    """A cover run that cannot go on as asked (foreign directory, Spark job failure)."""


@dataclass
class CoverResult:
    summary: dict
    exit_code: int  # 0: everything covered, nothing failed; 1 otherwise
    failures: list[dict] = field(default_factory=list)


def identity(config: ModelConfig, scope: Scope, sut: SutSpec | None = None) -> dict:
    ident = {"command": "cover", "protocol": config.protocol, "config": config.to_schedule(), "scope": scope.to_json()}
    return ident if sut is None else {**ident, "sut": sut.command}


def run_cover(
    config: ModelConfig,
    scope: Scope,
    out: str | Path,
    *,
    master: str | None = None,
    spark=None,
    partitions: int | None = None,
    shrink_budget_s: float = 10.0,
    sut: SutSpec | None = None,
    say=lambda text: None,
) -> CoverResult:
    """Run (or resume) the cover in ``out`` on ``sut`` (None: the in-process simulation), on
    ``spark`` (a session the caller owns) or one started for ``master``."""
    wall = time.perf_counter()
    session = JobSession("cover", master, spark)
    store = CampaignStore(out, config.protocol)
    try:
        store.bind(identity(config, scope, sut))
        store.remove_orphans()
    except ValueError as exc:
        raise CoverError(str(exc)) from None
    say(f"exploring the state graph of {config.protocol}")
    graph = build_graph(config, scope)
    say(f"{len(graph.states):,} states, {graph.edges:,} edges in {graph.seconds:.1f} s; planning the path cover")
    t0 = time.perf_counter()
    plan = plan_cover(graph)
    plan_seconds = time.perf_counter() - t0
    n = len(plan.schedules)
    say(f"{n:,} schedules, {plan.steps:,} steps and {plan.refusals:,} refused steps in {plan_seconds:.1f} s")
    done = [(c.lo, c.hi) for c in store.completed()]
    todo = sum(hi - lo for lo, hi in ranges.missing((0, n), done))
    with session:
        sc = session.get().sparkContext
        parallelism = sc.defaultParallelism
        tasks = partitions or ranges.default_tasks(n, parallelism, per_task=100)
        chunks = [
            [(lo, hi, plan.schedules[lo:hi]) for lo, hi in chunk] for chunk in ranges.plan_tasks((0, n), tasks, done)
        ]
        spec = CoverSpec(
            str(Path(out).resolve()),
            config.protocol,
            config.to_schedule(),
            tuple(st.to_json() for st in plan.vocabulary),
            shrink_budget_s,
            sut,
            scope.disk_faults,
        )
        t1 = time.perf_counter()
        reports = _run_job(sc, spec, chunks) if chunks else []
        job_seconds = time.perf_counter() - t1
        master_url = sc.master
    rows = pq.read_table(store.partition_dir).to_pylist() if n else []
    if sorted(r["schedule"] for r in rows) != list(range(n)):
        raise CoverError(f"{store.runs} holds {len(rows)} rows for {n} schedules; the dataset is damaged")
    first: dict[str, dict] = {}
    counts: Counter = Counter()
    for r in sorted(rows, key=lambda r: r["schedule"]):
        if r["verdict"] != "pass":
            counts[r["failure_id"]] += 1
            first.setdefault(r["failure_id"], r)
    failures = write_failures(store, [failure_entry(r, counts[fid]) for fid, r in first.items()])
    edges_run = sum(r["edges_run"] for r in rows)
    refusals_run = sum(r["refusals_run"] for r in rows)
    edges_now = sum(rep["edges_run"] for rep in reports)
    by_verdict = dict(sorted(Counter(r["verdict"] for r in rows).items()))
    summary = {
        "protocol": config.protocol,
        "config": config.to_schedule(),
        "scope": scope.to_json(),
        "states": len(graph.states),
        "states_covered": sum(r["states_run"] for r in rows),
        "edges": graph.edges,
        "edges_covered": edges_run,
        "refusals": plan.refusals,
        "refusals_covered": refusals_run,
        "schedules": n,
        "planned_steps": plan.steps,
        "prefix_steps": plan.prefix_steps,
        "steps_run": sum(r["steps"] for r in rows),
        "by_verdict": by_verdict,
        "distinct_failures": len(failures),
        "budgets": budget_counts(
            n,
            Counter(p for r in rows for p in r["outside_budget"]),
            Counter(p for r in rows for p in r["beyond_budget"]),
        ),
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
            for f in failures
        ],
        "run": {
            "explore_seconds": round(graph.seconds, 3),
            "plan_seconds": round(plan_seconds, 3),
            "executed": todo,
            "skipped_completed": n - todo,
            "tasks": len(chunks),
            "job_seconds": round(job_seconds, 3),
            "edges_per_s": round(edges_now / job_seconds, 1) if edges_now and job_seconds > 0 else None,
            "steps_per_s": round(sum(r["steps"] for r in rows) / job_seconds, 1) if todo and job_seconds > 0 else None,
            "wall_time_s": round(time.perf_counter() - wall, 3),
            "master": master_url,
            "parallelism": parallelism,
        },
    }
    atomic_write_json(store.summary_path, summary)
    complete = (edges_run, refusals_run, summary["states_covered"]) == (graph.edges, plan.refusals, len(graph.states))
    return CoverResult(summary, 0 if complete and not failures else 1, failures)


def _run_job(sc, spec: CoverSpec, chunks) -> list[dict]:
    outcome: dict = {}

    def job() -> None:
        try:
            outcome["reports"] = sc.parallelize(chunks, len(chunks)).mapPartitions(partial(run_chunks, spec)).collect()
        except BaseException as exc:  # re-raised on the calling thread
            outcome["error"] = exc

    worker = threading.Thread(target=job, name="isrcheck-cover-job", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(0.2)  # wakes for Ctrl-C
    if "error" in outcome:
        raise CoverError(f"the Spark job failed: {_first_python_error(outcome['error'])}")
    return outcome["reports"]
