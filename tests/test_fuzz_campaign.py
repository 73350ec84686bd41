"""Campaigns on embedded Spark: Parquet rows, failures, resume, partition independence.

One local[2] SparkSession is shared by the whole module (JVM start-up costs seconds).
"""
import json
import random
import sys
from dataclasses import dataclass

import pyarrow.parquet as pq
import pytest
from pyspark import cloudpickle

from isrcheck.conformance.campaign import CampaignParams, Harness, run_campaign, start_spark


# --- a stand-in harness with the promised signatures (replaced by the real one when it lands) ---
@dataclass(frozen=True)
class _Schedule:
    protocol: str
    steps: tuple

    def to_json(self):
        return {"format": "isrcheck-schedule", "version": 1, "protocol": self.protocol,
                "config": {"replicas": 3}, "steps": [dict(s) for s in self.steps]}


@dataclass(frozen=True)
class _Verdict:
    kind: str
    property: object
    step: object
    trace_hash: str
    coverage: tuple

    def to_json(self):
        return {"verdict": self.kind, "property": self.property, "step": self.step,
                "trace_hash": self.trace_hash, "coverage": list(self.coverage)}


def _judge(protocol, steps):
    import hashlib
    digest = hashlib.sha256(json.dumps([protocol, list(steps)], sort_keys=True).encode()).hexdigest()
    cover = tuple(sorted({f"{a['step']}>{b['step']}" for a, b in zip(steps, steps[1:])}))
    for i in range(1, len(steps)):
        if protocol == "hw-truncation" and steps[i - 1]["step"] == "elect" and steps[i]["step"] == "crash":
            return _Verdict("violation", "StrongIsr", i, digest[:16], cover)
    return _Verdict("pass", None, None, digest[:16], cover)


def _walk(seed, protocol, steps, faults="default", config=None):
    rng = random.Random(seed)
    chosen = tuple({"step": rng.choice(["tick", "elect", "produce", "crash"])} for _ in range(steps))
    return _Schedule(protocol, chosen), _judge(protocol, chosen)


def _shrink(schedule, verdict, time_budget_s=10.0):
    small = schedule.steps[verdict.step - 1:verdict.step + 1]
    return _Schedule(schedule.protocol, small), _judge(schedule.protocol, small)


cloudpickle.register_pickle_by_value(sys.modules[__name__])
HARNESS = Harness(_walk, _shrink, ("default",))
# ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def spark():
    session = start_spark("local[2]")
    yield session
    session.stop()


def _campaign(spark, out, protocol="kip-320", schedules=60, seed=0, partitions=None):
    params = CampaignParams(protocol, schedules=schedules, seed=seed, steps=20)
    return run_campaign(params, out, spark=spark, partitions=partitions, harness=HARNESS)


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
    assert one.summary["distinct_coverage"] == five.summary["distinct_coverage"]


def test_parquet_rows_are_readable_by_pyarrow_and_spark(spark, tmp_path):
    result = _campaign(spark, tmp_path / "c", schedules=40)
    assert result.exit_code == 0 and result.summary["by_verdict"] == {"pass": 40}
    table = pq.read_table(tmp_path / "c" / "runs")
    assert table.num_rows == 40
    assert set(table.column("protocol").to_pylist()) == {"kip-320"}
    df = spark.read.parquet(str(tmp_path / "c" / "runs"))
    assert df.count() == 40 and df.where("verdict = 'pass'").count() == 40
    summary = json.loads((tmp_path / "c" / "summary.json").read_text())
    assert summary["run"]["parallelism"] == 2 and summary["run"]["master"] == "local[2]"
    assert summary["coverage_growth"][-1] == {"schedules": 40, "distinct": summary["distinct_coverage"]}


def test_failures_are_shrunk_deduplicated_and_written_as_schedules(spark, tmp_path):
    result = _campaign(spark, tmp_path / "c", protocol="hw-truncation", schedules=60)
    assert result.exit_code == 1
    failing = result.summary["failing_schedules"]
    assert failing == result.summary["by_verdict"]["violation"] > 0
    assert result.summary["distinct_failures"] == 1  # every seed shrinks to elect, crash
    entry = result.failures[0]
    shrunk = json.loads((tmp_path / "c" / entry["file"]).read_text())
    original = json.loads((tmp_path / "c" / entry["original_file"]).read_text())
    assert [s["step"] for s in shrunk["steps"]] == ["elect", "crash"]
    assert len(original["steps"]) == 20 and entry["seeds"] == failing
    assert shrunk["expected"] == {"hw-truncation": {"verdict": "violation", "property": "StrongIsr"}}
    index = json.loads((tmp_path / "c" / "failures" / "index.json").read_text())
    assert [i["id"] for i in index] == [entry["id"]]


def test_rerun_skips_completed_ranges_and_extends_to_new_seeds(spark, tmp_path):
    first = _campaign(spark, tmp_path / "c", schedules=30)
    again = _campaign(spark, tmp_path / "c", schedules=30)
    assert again.summary["run"]["executed"] == 0 and again.summary["run"]["skipped_completed"] == 30
    more = _campaign(spark, tmp_path / "c", schedules=45)
    assert more.summary["run"]["executed"] == 15
    seeds = [k[0] for k in _keys(tmp_path / "c")]
    assert seeds == list(range(45))
    assert first.summary["by_verdict"] == {"pass": 30}
