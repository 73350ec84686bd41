"""What runs on a Spark executor for ``cover``: the planned schedules of an index range in
lockstep, the refused steps tried at their points, failures shrunk on the spot, one Parquet file
per range written atomically, then its completion marker (the fuzz campaign's store)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Iterator

import pyarrow as pa

from isrcheck.conformance import shrink  # the package's export: importing the module by name would shadow it
from isrcheck.conformance.core.lockstep import Lockstep
from isrcheck.conformance.core.schedule import Schedule, load_config
from isrcheck.conformance.engines.campaign.executor import (
    FAILURE_FIELDS,
    VERDICT_FIELDS,
    error_columns,
    failure_columns,
    verdict_columns,
    write_part,
)
from isrcheck.conformance.engines.cover.paths import CoverSchedule
from isrcheck.conformance.generators.refusals import refused_steps

if TYPE_CHECKING:
    from isrcheck.conformance.core.sut_spec import SutSpec

ROW_SCHEMA = pa.schema(
    [
        ("schedule", pa.int64()),
        ("steps", pa.int32()),  # steps run, refused ones included
        ("edges", pa.int32()),  # edges this schedule is the first to take
        ("edges_run", pa.int32()),  # of those, taken before any failure
        ("refusals", pa.int32()),  # refused steps planned
        ("refusals_run", pa.int32()),  # of those, refused by both sides before any failure
        ("states_run", pa.int32()),  # nodes this schedule is the first to reach, refusals tried there
        ("disk_paths", pa.list_(pa.string())),  # the disk faults and recovery paths run (lockstep's disk:* coverage)
        *VERDICT_FIELDS,
        *FAILURE_FIELDS,
    ]
)


@dataclass(frozen=True)
class CoverSpec:
    out: str
    protocol: str
    config: dict  # the schedule config
    vocabulary: tuple  # step dicts; plans name steps by their position here
    shrink_budget_s: float
    sut: SutSpec | None = None  # the system under test (None: in process); one process per worker
    disk_faults: bool = False  # refused disk faults are tried too (the scope takes disk faults)


def run_schedule_of_plan(spec: CoverSpec, index: int, plan: CoverSchedule) -> dict:
    """One planned schedule in lockstep; a failure is shrunk and kept in the row."""
    started = time.perf_counter()
    config = load_config(spec.config)
    run = Lockstep(spec.protocol, config, sut=spec.sut)
    taken: list[dict] = []
    points, ends = set(plan.refusal_points), set(plan.edge_ends)
    edges_run = refusals_run = states_run = 0
    failed = False
    for pos in range(len(plan.steps) + 1):
        if pos in points:
            for st in refused_steps(run.cfg, run.state, run.enabled_steps(), spec.disk_faults):
                taken.append(st.to_json())
                if run.step(st) is not None:
                    failed = True
                    break
                refusals_run += 1
            states_run += not failed
        if failed or pos == len(plan.steps):
            break
        taken.append(spec.vocabulary[plan.steps[pos]])
        if run.step(taken[-1]) is not None:
            break
        edges_run += (pos + 1) in ends
    verdict = run.verdict()
    row = {
        "schedule": index,
        "steps": len(taken),
        "edges": len(plan.edge_ends),
        "edges_run": edges_run,
        "refusals": plan.refusals,
        "refusals_run": refusals_run,
        "states_run": states_run,
        "disk_paths": [c for c in verdict.coverage or () if c.startswith("disk:")],
        **verdict_columns(verdict, (time.perf_counter() - started) * 1000.0),
        "failure_id": None,
        "shrunk_steps": None,
        "shrink_ms": None,
        "failure": None,
    }
    if verdict.kind != "pass":
        schedule = Schedule(
            spec.protocol,
            config,
            tuple(taken),
            name=f"cover-{spec.protocol}-{index}",
            description=f"isrcheck cover, schedule {index}",
        )
        row.update(failure_columns(shrink, schedule, verdict, spec.shrink_budget_s, spec.sut))
    return row


def _guarded(spec: CoverSpec, index: int, plan: CoverSchedule) -> dict:
    """A harness crash on one schedule is an ``error`` row (a finding), not a lost task."""
    try:
        return run_schedule_of_plan(spec, index, plan)
    except Exception as exc:  # noqa: BLE001 - recorded in the row
        return {
            "schedule": index,
            "steps": 0,
            "edges": len(plan.edge_ends),
            "edges_run": 0,
            "refusals": plan.refusals,
            "refusals_run": 0,
            "states_run": 0,
            "disk_paths": [],
            **error_columns({"schedule": index}, exc),
        }


def run_range(spec: CoverSpec, lo: int, hi: int, plans: list[CoverSchedule]) -> dict:
    """Schedules [lo, hi): their Parquet file, atomically, then the range's completion marker."""
    started = time.perf_counter()
    rows = [_guarded(spec, lo + i, plan) for i, plan in enumerate(plans)]
    failures = write_part(spec.out, spec.protocol, lo, hi, rows, ROW_SCHEMA)
    return {
        "lo": lo,
        "hi": hi,
        "rows": len(rows),
        "failures": failures,
        "edges_run": sum(r["edges_run"] for r in rows),
        "seconds": time.perf_counter() - started,
    }


def run_chunks(spec: CoverSpec, chunks: Iterable[list[tuple[int, int, list]]]) -> Iterator[dict]:
    """mapPartitions body: every range of every chunk of this Spark partition."""
    for chunk in chunks:
        for lo, hi, plans in chunk:
            yield run_range(spec, lo, hi, plans)


def failure_entry(row: dict, count: int) -> dict:
    """A row as ``campaign.failures.write_failures`` takes it (the schedule index as its seed)."""
    return {
        "failure_id": row["failure_id"],
        "verdict": row["verdict"],
        "property": row["property"],
        "seed": row["schedule"],
        "seeds": count,
        "first_bad_step": row["first_bad_step"],
        "steps": row["steps"],
        "shrunk_steps": row["shrunk_steps"],
        "trace_hash": row["trace_hash"],
        "failure": json.loads(row["failure"]),
    }
