"""What runs on a Spark executor: generate, run and shrink the schedules of a seed range, then
write the range's rows as one Parquet file (atomically) and record the range as completed.

Everything here is a plain function of its arguments, so a task ships only a small frozen spec
and a list of seed ranges, and the executor imports isrcheck from the installed package.
"""

from __future__ import annotations

import hashlib
import io
import time
import traceback
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from isrcheck.conformance.core.schedule import load_config
from isrcheck.conformance.engines.campaign.auto import run_auto_seed
from isrcheck.conformance.engines.campaign.harness import Harness, canonical, load_harness
from isrcheck.conformance.engines.campaign.store import CampaignStore, atomic_write_bytes
from isrcheck.conformance.generators.profiles import profile_of
from isrcheck.conformance.generators.refusals import DEFAULT_REFUSALS

if TYPE_CHECKING:
    from isrcheck.conformance.core.sut_spec import SutSpec
    from isrcheck.conformance.core.verdict import Verdict

# One row per schedule. `protocol` is not a column of the files: it is the Hive partition
# (runs/protocol=<P>/), which Spark and pyarrow readers turn back into a column.
# The columns every runner's rows end with (fuzz, guided fuzz, cover): the verdict, then the
# failure shrunk on the spot.
VERDICT_FIELDS = [
    ("verdict", pa.string()),
    ("property", pa.string()),
    ("first_bad_step", pa.int32()),
    ("duration_ms", pa.float64()),
    ("trace_hash", pa.string()),
    ("beyond_budget", pa.list_(pa.string())),  # properties broken only outside their fault budget
    ("outside_budget", pa.list_(pa.string())),  # properties whose budget the run left (checked up to there)
    ("also", pa.list_(pa.string())),  # the other properties violated at the same step
]
FAILURE_FIELDS = [
    ("failure_id", pa.string()),
    ("shrunk_steps", pa.int32()),
    ("shrink_ms", pa.float64()),
    ("failure", pa.string()),  # JSON: original and shrunk schedules with their verdicts
]
ROW_SCHEMA = pa.schema(
    [
        ("seed", pa.int64()),
        ("config_hash", pa.string()),
        ("steps", pa.int32()),
        *VERDICT_FIELDS,
        ("coverage", pa.list_(pa.string())),
        ("swarm", pa.string()),  # JSON: the seed's swarm (null: a uniform walk, --no-swarm)
        ("swarm_features", pa.list_(pa.string())),  # what the swarm kept (generators.swarm.Swarm.features)
        *FAILURE_FIELDS,
    ]
)


@dataclass(frozen=True)
class TaskSpec:
    """Everything an executor needs besides its seed ranges (kept small: it ships with every task)."""

    out: str
    protocol: str
    steps: int
    faults: str
    shrink_budget_s: float
    harness: Harness | None = None  # None: the shipped isrcheck.conformance
    sut: SutSpec | None = None  # --sut (None: in process): one process per worker, kept for its schedules
    refusals: float = DEFAULT_REFUSALS  # share of each walk's steps that the model refuses
    swarm: bool = True  # each walk keeps to its seed's swarm (generators.swarm); False: --no-swarm
    mode: str = "steps"  # "auto": each seed a self-driven simulation, its event log validated (campaign.auto)


def short_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def failure_signature(verdict, shrunk: dict) -> str:
    """What makes two failures the same finding: the verdict and the property it broke, or for a
    divergence (no property) the kind of step where model and implementation first disagree.

    Random walks reach a state by many paths, so even shrunk schedules rarely coincide step
    for step; every failing seed keeps its own schedules in the Parquet row regardless.
    """
    if verdict.property:
        return f"{verdict.kind}-{verdict.property}"
    steps, bad = shrunk.get("steps", ()), verdict.step
    at = steps[bad]["step"] if isinstance(bad, int) and 0 <= bad < len(steps) else "end"
    return f"{verdict.kind}-at-{at}"


def run_seed(spec: TaskSpec, harness: Harness, seed: int) -> dict:
    """One schedule, or an ``error`` row naming the exception if the harness itself raised.

    A harness crash on one seed is a finding to report (exit 1), not a reason to lose the task.
    """
    try:
        return _run_seed(spec, harness, seed)
    except Exception as exc:  # noqa: BLE001 - recorded in the row, replayable by seed
        return {
            "seed": seed,
            "config_hash": "",
            "steps": 0,
            "coverage": [],
            **swarm_columns(spec, seed),
            **error_columns({"seed": seed}, exc),
        }


def error_columns(where: dict, exc: Exception) -> dict:
    """The verdict and failure columns of a row whose run raised: ``where`` names the run."""
    detail = canonical({**where, "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(limit=20)})
    return {
        "verdict": "error",
        "property": type(exc).__name__,
        "first_bad_step": None,
        "duration_ms": 0.0,
        "trace_hash": "",
        "beyond_budget": [],
        "outside_budget": [],
        "also": [],
        "failure_id": f"error-{type(exc).__name__}",
        "shrunk_steps": None,
        "shrink_ms": None,
        "failure": detail,
    }


def verdict_columns(verdict: Verdict, duration_ms: float) -> dict:
    """The columns of ``VERDICT_FIELDS`` for a run's verdict."""
    return {
        "verdict": verdict.kind,
        "property": verdict.property,
        "first_bad_step": verdict.step,
        "duration_ms": duration_ms,
        "trace_hash": verdict.trace_hash,
        "beyond_budget": [p for p, _step, _why in verdict.beyond_budget],
        "outside_budget": list(verdict.outside_budget),
        "also": list(verdict.also),
    }


def failure_columns(shrink, schedule, verdict, budget_s: float, sut: SutSpec | None) -> dict:
    """The failure columns of a row whose run failed: ``shrink`` (the harness's) on ``sut`` within
    ``budget_s``, the finding's signature, and both schedules with their verdicts as JSON."""
    started = time.perf_counter()
    small, small_verdict = shrink(schedule, verdict, time_budget_s=budget_s, sut=sut)
    shrink_ms = (time.perf_counter() - started) * 1000.0
    shrunk = small.to_json()
    return {
        "failure_id": failure_signature(small_verdict, shrunk),
        "shrunk_steps": len(shrunk.get("steps", ())),
        "shrink_ms": shrink_ms,
        "failure": canonical(
            {
                "original": schedule.to_json(),
                "original_verdict": verdict.to_json(),
                "shrunk": shrunk,
                "shrunk_verdict": small_verdict.to_json(),
            }
        ),
    }


def write_part(out: str, protocol: str, lo: int, hi: int, rows: list[dict], schema: pa.Schema) -> int:
    """The rows of range [lo, hi) as its Parquet file, atomically, then the range's completion
    marker; returns how many rows failed."""
    buf = io.BytesIO()
    # Page checksums let a resume tell a damaged part from a good one (check_part).
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), buf, compression="zstd", write_page_checksum=True)
    store = CampaignStore(out, protocol)
    atomic_write_bytes(store.part_path(lo, hi), buf.getvalue())
    failures = sum(1 for r in rows if r["verdict"] != "pass")
    store.record_completed(lo, hi, len(rows), failures)
    return failures


def swarm_columns(spec: TaskSpec, seed: int) -> dict:
    """The row's swarm columns: the seed's swarm and what it kept, or nulls without one."""
    if not spec.swarm:
        return {"swarm": None, "swarm_features": []}
    # hypothesis: only for swarm columns
    from isrcheck.conformance.generators.swarm import seeded_swarm

    profile = profile_of(spec.faults)
    swarm = seeded_swarm(seed, profile, load_config(dict(profile.config)).replicas)
    return {"swarm": canonical(swarm.to_json()), "swarm_features": swarm.features()}


def _run_seed(spec: TaskSpec, harness: Harness, seed: int) -> dict:
    """The harness's random walk for ``seed`` (its swarm walk unless the spec says no swarm); a
    failure is shrunk on the spot."""
    if spec.mode == "auto":
        return run_auto_seed(spec.protocol, spec.steps, seed)
    started = time.perf_counter()
    swarm = {"swarm": True} if spec.swarm else {}  # a harness of its own need not know swarms
    schedule, verdict = harness.random_walk(
        seed, spec.protocol, spec.steps, faults=spec.faults, config=None, refusals=spec.refusals, sut=spec.sut, **swarm
    )
    duration_ms = (time.perf_counter() - started) * 1000.0
    row = {
        "seed": seed,
        "config_hash": short_hash(canonical(schedule.to_json()["config"])),
        "steps": len(schedule.steps),
        **verdict_columns(verdict, duration_ms),
        "coverage": sorted(verdict.coverage or ()),
        **swarm_columns(spec, seed),
        "failure_id": None,
        "shrunk_steps": None,
        "shrink_ms": None,
        "failure": None,
    }
    if verdict.kind != "pass":
        row.update(failure_columns(harness.shrink, schedule, verdict, spec.shrink_budget_s, spec.sut))
    return row


def run_range(spec: TaskSpec, harness: Harness, lo: int, hi: int) -> dict:
    """Run seeds [lo, hi), write their Parquet file atomically, then record completion."""
    started = time.perf_counter()
    rows = [run_seed(spec, harness, seed) for seed in range(lo, hi)]
    failures = write_part(spec.out, spec.protocol, lo, hi, rows, ROW_SCHEMA)
    return {"lo": lo, "hi": hi, "rows": len(rows), "failures": failures, "seconds": time.perf_counter() - started}


def check_part(path, lo: int, hi: int, rows: int) -> str | None:
    """Why the Parquet file of completed seeds [lo, hi) cannot be trusted, or None.

    A marker says the file was whole when renamed into place; a disk, a copy or a hand can damage
    it later, and one bad file would fail every aggregation of the campaign. Reads every page
    (checksums verified), in batches, so memory stays bounded whatever the part's size.
    """
    if rows != hi - lo:
        return f"its marker records {rows} rows for {hi - lo} seeds"
    try:
        with pq.ParquetFile(path, page_checksum_verification=True) as part:
            if part.metadata.num_rows != hi - lo:
                return f"{part.metadata.num_rows} rows for {hi - lo} seeds"
            if not part.schema_arrow.equals(ROW_SCHEMA):
                return "its columns are not those of a campaign row"
            for group in range(part.metadata.num_row_groups):  # what readers filter seeds by
                stats = part.metadata.row_group(group).column(0).statistics
                if stats is not None and stats.has_min_max and not lo <= stats.min <= stats.max < hi:
                    return f"its seed statistics say {stats.min}..{stats.max}, not {lo}..{hi - 1}"
            expected = lo
            for batch in part.iter_batches(batch_size=8192):
                seeds = batch.column("seed").to_pylist()
                if seeds != list(range(expected, expected + len(seeds))):
                    return f"its seeds are not {lo}..{hi - 1} in order"
                expected += len(seeds)
    except (OSError, ValueError, pa.ArrowException) as exc:
        lines = str(exc).strip().splitlines()
        return (lines[0] if lines else type(exc).__name__)[:200]
    return None


def run_chunks(spec: TaskSpec, chunks: Iterable[list[tuple[int, int]]]) -> Iterator[dict]:
    """mapPartitions body: every seed range of every chunk in this Spark partition."""
    harness = spec.harness or load_harness()
    for chunk in chunks:
        for lo, hi in chunk:
            yield run_range(spec, harness, lo, hi)


def run_locally(spec: TaskSpec, chunks: list[list[tuple[int, int]]]) -> list[dict]:
    """The same work in this process, without Spark (the benchmark's baseline)."""
    return list(run_chunks(spec, chunks))
