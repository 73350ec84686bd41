"""What one executor task does, without Spark: rows, the Parquet file, the ledger, harness errors."""

import json

import pyarrow.parquet as pq

from isrcheck.conformance import random_walk, shrink
from isrcheck.conformance.engines.campaign.executor import TaskSpec, run_range, run_seed
from isrcheck.conformance.engines.campaign.harness import Harness, load_harness
from isrcheck.conformance.engines.campaign.store import CampaignStore
from isrcheck.conformance.generators.profiles import FAULT_PROFILES
from isrcheck.conformance.generators.swarm import seeded_swarm


def _spec(tmp_path, protocol="kip-320", harness=None):
    store = CampaignStore(tmp_path / "c", protocol)
    store.bind({"protocol": protocol, "steps": 20, "faults": "none"})
    return store, TaskSpec(
        out=str(store.root), protocol=protocol, steps=20, faults="none", shrink_budget_s=1.0, harness=harness
    )


def test_a_range_becomes_one_parquet_file_then_a_marker(tmp_path):
    store, spec = _spec(tmp_path)
    report = run_range(spec, load_harness(), 10, 16)
    assert report["rows"] == 6 and report["failures"] == 0
    rows = pq.read_table(store.part_path(10, 16)).to_pylist()
    assert [r["seed"] for r in rows] == list(range(10, 16))
    for row in rows:  # each the seed's swarm walk, its swarm in the row
        schedule, verdict = random_walk(row["seed"], "kip-320", 20, faults="none", swarm=True)
        assert json.loads(row["swarm"]) == seeded_swarm(row["seed"], FAULT_PROFILES["none"], 3).to_json()
        assert row["swarm_features"] and "produce" in row["swarm_features"]
        assert (row["verdict"], row["trace_hash"]) == (verdict.kind, verdict.trace_hash)
        assert row["steps"] == len(schedule.steps) and row["coverage"] == sorted(verdict.coverage)
    assert [(c.lo, c.hi, c.rows) for c in store.completed()] == [(10, 16, 6)]
    assert sorted(p.name for p in store.partition_dir.iterdir()) == [store.part_path(10, 16).name]


def test_a_harness_that_raises_gives_an_error_row_not_a_lost_task(tmp_path):
    def walk(seed, protocol, steps, faults="default", config=None, refusals=0.1, sut=None, swarm=False):
        if seed == 3:
            raise RuntimeError("adapter lost track of broker 2")
        return random_walk(seed, protocol, steps, faults=faults, config=config, refusals=refusals, sut=sut, swarm=swarm)

    _, spec = _spec(tmp_path)
    harness = Harness(walk, shrink, ("none",))
    row = run_seed(spec, harness, 3)
    assert (row["verdict"], row["property"], row["failure_id"]) == ("error", "RuntimeError", "error-RuntimeError")
    detail = json.loads(row["failure"])
    assert detail["seed"] == 3 and "adapter lost track of broker 2" in detail["error"]
    assert "Traceback" in detail["traceback"]
    assert run_seed(spec, harness, 4)["verdict"] == "pass"


def test_failure_files_are_replayable_schedules_with_their_verdict_expected(tmp_path):
    from isrcheck.conformance import load_schedule
    from isrcheck.conformance.engines.campaign.failures import write_failures

    store, _ = _spec(tmp_path, protocol="hw-truncation")
    schedule, verdict = random_walk(1, "hw-truncation", 10, faults="none")
    as_verdict = {"verdict": "violation", "property": "StrongIsr", "step": 4}
    entry = {
        "failure_id": "violation-StrongIsr",
        "verdict": "violation",
        "property": "StrongIsr",
        "seed": 1,
        "seeds": 3,
        "first_bad_step": 4,
        "steps": 10,
        "shrunk_steps": 5,
        "trace_hash": verdict.trace_hash,
        "failure": {
            "original": schedule.to_json(),
            "original_verdict": as_verdict,
            "shrunk": schedule.with_steps(schedule.steps[:5]).to_json(),
            "shrunk_verdict": as_verdict,
        },
    }
    error = {
        "failure_id": "error-KeyError",
        "verdict": "error",
        "property": "KeyError",
        "seed": 9,
        "seeds": 1,
        "first_bad_step": None,
        "steps": 0,
        "shrunk_steps": None,
        "trace_hash": "",
        "failure": {"seed": 9, "error": "KeyError: 2", "traceback": "..."},
    }
    (store.failures).mkdir(parents=True)
    (store.failures / "violation-Stale.json").write_text("{}")  # not ours to delete
    index = write_failures(store, [entry, error])
    assert [i["id"] for i in index] == ["error-KeyError", "violation-StrongIsr"]
    shrunk = load_schedule(store.root / index[1]["file"])
    assert len(shrunk.steps) == 5 and shrunk.expected["hw-truncation"].property == "StrongIsr"
    assert len(load_schedule(store.root / index[1]["original_file"]).steps) == len(schedule.steps)
    assert json.loads((store.root / index[0]["file"]).read_text())["error"] == "KeyError: 2"
    assert sorted(p.name for p in store.failures.iterdir()) == [
        "error-KeyError.error.json",
        "index.json",
        "violation-Stale.json",
        "violation-StrongIsr.json",
        "violation-StrongIsr.original.json",
    ]
