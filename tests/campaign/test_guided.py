"""``isrcheck fuzz --guided``: rounds whose new-coverage schedules join the corpus of parents;
reproducible, resumable, and within the fault budget (kip-320 passes)."""
import json
import random

import pyarrow.parquet as pq
import pytest

from isrcheck.conformance import random_walk
from isrcheck.conformance.engines.campaign import CampaignParams
from isrcheck.conformance.engines.campaign.guided import FAULTS, Mutants, mutate, run_guided
from isrcheck.conformance.cli.main import main


def _rows(out):
    rows = []
    for r in sorted(out.glob("round-*")):
        rows += pq.read_table(r / "runs").to_pylist()
    return sorted((row["seed"], row["round"], row["parents"], row["verdict"], row["trace_hash"]) for row in rows)


def test_mutations_splice_parents_and_change_faults_and_replicas():
    parents = [(s, random_walk(s, "kip-320", 30, "default", impl=False)[0].to_json()) for s in range(3)]
    rng = random.Random(5)
    seen = set()
    for _ in range(40):
        child, used = mutate(rng, parents, 3, 40)
        assert len(child) <= 40 and set(used) <= {0, 1, 2} and used
        seen.add(len(used))
        assert all(st["step"] for st in child)
    assert seen == {1, 2}  # some children splice two parents
    assert "crash" in FAULTS and "drop" in FAULTS


def test_guided_rounds_grow_coverage_reproducibly_and_resume(spark, tmp_path):
    params = CampaignParams("kip-320", schedules=24, steps=30, shrink_budget_s=1.0)
    a = run_guided(params, tmp_path / "a", 3, spark=spark)
    assert a["by_verdict"] == {"pass": 24} and len(a["coverage_growth"]) == 3
    growth = [g["distinct_coverage"] for g in a["coverage_growth"]]
    assert growth == sorted(growth) and growth[-1] > growth[0]
    rows = _rows(tmp_path / "a")
    assert [r[0] for r in rows] == list(range(24))
    # round 0 is random walks; later rounds are mutants with parents, but for a share of fresh walks
    assert all(r[2] == [] for r in rows if r[1] == 0)
    later = [r for r in rows if r[1] > 0]
    assert all(bool(r[2]) != Mutants.explores(r[0]) for r in later)
    assert any(r[2] for r in later) and any(not r[2] for r in later)
    assert [g["parents"] for g in a["coverage_growth"]] == sorted(g["parents"] for g in a["coverage_growth"])
    b = run_guided(params, tmp_path / "b", 3, spark=spark)
    assert _rows(tmp_path / "b") == rows and b["coverage_growth"] == a["coverage_growth"]
    again = run_guided(params, tmp_path / "a", 3, spark=spark)  # resumes: nothing left to run
    assert again["coverage_growth"] == a["coverage_growth"] and _rows(tmp_path / "a") == rows
    assert json.loads((tmp_path / "a" / "summary.json").read_text())["guided"] is True


def test_guided_bad_rounds_exit_2(tmp_path, capsys):
    assert main(["fuzz", "--protocol", "kip-320", "--schedules", "5", "--guided", "--rounds", "0",
                 "--out", str(tmp_path / "g")]) == 2
    assert "--rounds" in capsys.readouterr().err
