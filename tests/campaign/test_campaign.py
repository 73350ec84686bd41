"""Campaigns on embedded Spark: Parquet rows, failures, resume, partition independence.

One local[2] SparkSession is shared by the whole module (JVM start-up costs seconds).
"""
import json
import os
import signal
import subprocess
import sys
import time

import pyarrow.parquet as pq
import pytest

from isrcheck.conformance import load_schedule, random_walk
from isrcheck.conformance.campaign import CampaignParams, run_campaign, start_spark
from isrcheck.conformance.cli import main


@pytest.fixture(scope="module")
def spark():
    session = start_spark("local[2]")
    yield session
    session.stop()


def _campaign(spark, out, protocol="kip-320", schedules=60, seed=0, partitions=None,
              faults="default", steps=30):
    params = CampaignParams(protocol, schedules=schedules, seed=seed, steps=steps, faults=faults,
                            shrink_budget_s=1.0)
    return run_campaign(params, out, spark=spark, partitions=partitions)


def _keys(path):
    table = pq.read_table(path / "runs", columns=["seed", "verdict", "trace_hash"])
    return sorted(zip(*(table.column(c).to_pylist() for c in ("seed", "verdict", "trace_hash"))))


def test_rows_are_the_same_whatever_the_number_of_partitions(spark, tmp_path):
    one = _campaign(spark, tmp_path / "one", schedules=50, seed=7, partitions=1)
    five = _campaign(spark, tmp_path / "five", schedules=50, seed=7, partitions=5)
    assert one.summary["run"]["tasks"] == 1 and five.summary["run"]["tasks"] == 5
    assert _keys(tmp_path / "one") == _keys(tmp_path / "five")
    assert [k[0] for k in _keys(tmp_path / "one")] == list(range(7, 57))
    assert one.summary["by_verdict"] == five.summary["by_verdict"]
    assert one.summary["distinct_coverage"] == five.summary["distinct_coverage"] > 0


def test_parquet_rows_are_readable_by_pyarrow_and_spark(spark, tmp_path):
    result = _campaign(spark, tmp_path / "c", schedules=40, faults="none")
    assert result.exit_code == 0 and result.summary["by_verdict"] == {"pass": 40}
    table = pq.read_table(tmp_path / "c" / "runs")
    assert table.num_rows == 40
    assert set(table.column("protocol").to_pylist()) == {"kip-320"}
    df = spark.read.parquet(str(tmp_path / "c" / "runs"))
    assert df.count() == 40 and df.where("verdict = 'pass'").count() == 40
    summary = json.loads((tmp_path / "c" / "summary.json").read_text())
    assert summary["run"]["parallelism"] == 2 and summary["run"]["master"] == "local[2]"
    growth = summary["coverage_growth"]
    assert growth[-1]["schedules"] == 40 and growth[-1]["distinct"] == summary["distinct_coverage"]
    assert [g["distinct"] for g in growth] == sorted(g["distinct"] for g in growth)
    assert summary["distinct_abstract_states"] == growth[-1]["abstract_states"] > 0
    assert sum(summary["coverage_by_kind"].values()) == summary["distinct_coverage"]
    # Spark's figure agrees with counting the rows directly.
    items = {i for cov in table.column("coverage").to_pylist() for i in cov}
    assert len(items) == summary["distinct_coverage"]
    assert len({i for i in items if i.startswith("s:")}) == summary["distinct_abstract_states"]


def test_failures_are_shrunk_deduplicated_and_replay_with_isrcheck_check(spark, tmp_path, capsys):
    out = tmp_path / "c"
    result = _campaign(spark, out, protocol="hw-truncation", schedules=40, steps=100)
    assert result.exit_code == 1
    summary = result.summary
    assert summary["failing_schedules"] == sum(v for k, v in summary["by_verdict"].items()
                                               if k != "pass") > 0
    index = json.loads((out / "failures" / "index.json").read_text())
    assert [e["id"] for e in index] == [f["id"] for f in summary["failures"]]
    assert len({e["id"] for e in index}) == len(index) == summary["distinct_failures"]
    assert sum(e["seeds"] for e in index) == summary["failing_schedules"]
    rows = {r["seed"]: r for r in pq.read_table(out / "runs").to_pylist()}
    for entry in index[:3]:
        row = rows[entry["seed"]]
        assert row["failure_id"] == entry["id"] and row["verdict"] == entry["verdict"]
        for key, seen in (("original_file", "original_verdict"), ("file", "shrunk_verdict")):
            capsys.readouterr()
            assert main(["check", str(out / entry[key]), "--json"]) == 1
            replay = json.loads(capsys.readouterr().out)
            assert (replay["verdict"], replay["property"]) == \
                (entry[seen]["verdict"], entry[seen]["property"])
            assert replay["as_expected"] is True
            if key == "original_file":  # the very run the campaign recorded
                assert replay["trace_hash"] == row["trace_hash"]
                assert len(load_schedule(out / entry[key]).steps) == row["steps"]
        assert entry["shrunk_steps"] <= row["steps"]


def test_rerun_skips_completed_ranges_and_extends_to_new_seeds(spark, tmp_path):
    first = _campaign(spark, tmp_path / "c", schedules=30, faults="none")
    again = _campaign(spark, tmp_path / "c", schedules=30, faults="none")
    assert again.summary["run"]["executed"] == 0 and again.summary["run"]["skipped_completed"] == 30
    more = _campaign(spark, tmp_path / "c", schedules=45, faults="none")
    assert more.summary["run"]["executed"] == 15
    seeds = [k[0] for k in _keys(tmp_path / "c")]
    assert seeds == list(range(45))
    assert first.summary["by_verdict"] == {"pass": 30}


def test_killed_campaign_resumes_with_every_seed_exactly_once(spark, tmp_path):
    out = tmp_path / "c"
    cmd = [sys.executable, "-m", "isrcheck.conformance.campaign", "--protocol", "kip-320",
           "--schedules", "240", "--steps", "30", "--faults", "none", "--partitions", "24",
           "--master", "local[2]", "--out", str(out)]
    log = tmp_path / "stderr.txt"
    with open(log, "wb") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while len(list((out / "ranges").glob("*.json"))) < 3:
            assert proc.poll() is None, f"the campaign ended before the kill: {log.read_text()}"
            assert time.monotonic() < deadline, "no task completed in time"
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the driver, its JVM and its Python workers
        proc.wait()
    done = [json.loads(p.read_text()) for p in (out / "ranges").glob("*.json")]
    assert 3 <= len(done) < 24
    # What the killed run left is a readable dataset holding at least its completed ranges,
    # with the very rows this process computes for those seeds (another process, hash seed, JVM).
    left = pq.read_table(out / "runs", columns=["seed", "verdict", "trace_hash"]).to_pylist()
    assert len(left) >= sum(d["rows"] for d in done)
    for row in left[:5]:
        _, verdict = random_walk(row["seed"], "kip-320", 30, faults="none")
        assert (verdict.kind, verdict.trace_hash) == (row["verdict"], row["trace_hash"])

    params = CampaignParams("kip-320", schedules=240, steps=30, faults="none")
    resumed = run_campaign(params, out, spark=spark, partitions=24)  # the same command again
    run = resumed.summary["run"]
    assert run["skipped_completed"] >= sum(d["rows"] for d in done)
    assert run["executed"] + run["skipped_completed"] == 240
    seeds = pq.read_table(out / "runs", columns=["seed"]).column("seed").to_pylist()
    assert sorted(seeds) == list(range(240))
    assert resumed.exit_code == 0 and resumed.summary["by_verdict"] == {"pass": 240}
    assert not list(out.rglob(".*.tmp"))
