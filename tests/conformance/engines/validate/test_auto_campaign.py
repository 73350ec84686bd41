"""isrcheck fuzz --mode auto: self-driven simulations on Spark, each event log validated; rows as
Parquet, failures saved with their trace, resumable as any campaign."""

import json

import pyarrow.parquet as pq
import pytest
from timer_bug import eager_isr_check

from isrcheck.conformance.engines.campaign import CampaignParams, run_campaign
from isrcheck.conformance.engines.campaign.auto import run_auto_seed
from isrcheck.conformance.engines.campaign.driver import CampaignError
from isrcheck.conformance.engines.campaign.executor import TaskSpec, run_locally
from isrcheck.conformance.engines.validate.validation import validate_path
from isrcheck.impl.replication.replica_manager import ReplicaManager


def test_seed_ranges_of_self_driven_runs_become_parquet_rows_without_spark(tmp_path):
    """What each Spark task does, in this process: every seed validated, a row each, a failure
    keeping its whole event log."""
    spec = TaskSpec(
        out=str(tmp_path), protocol="hw-truncation", steps=80, faults="default", shrink_budget_s=1.0, mode="auto"
    )
    done = run_locally(spec, [[(0, 3)], [(3, 5)]])
    assert [(r["lo"], r["hi"], r["rows"]) for r in done] == [(0, 3, 3), (3, 5, 2)]
    rows = pq.read_table(tmp_path / "runs").to_pylist()
    assert sorted(r["seed"] for r in rows) == list(range(5))
    assert {r["verdict"] for r in rows} <= {"pass", "violation"}
    for r in rows:
        if r["verdict"] != "pass":
            assert set(json.loads(r["failure"])["trace"]) >= {"controller.jsonl", "broker-0.jsonl"}


@pytest.mark.slow
def test_a_campaign_of_self_driven_runs_validates_every_seed_and_resumes(spark, tmp_path):
    params = CampaignParams("hw-truncation", schedules=6, seed=0, steps=100, mode="auto")
    out = tmp_path / "auto"
    first = run_campaign(params, out, spark=spark, partitions=2)
    rows = pq.read_table(out / "runs").to_pylist()
    assert sorted(r["seed"] for r in rows) == list(range(6))
    assert {r["verdict"] for r in rows} <= {"pass", "violation"}  # the model explains every run
    assert all(r["steps"] > 50 and "event:send_fetch" in r["coverage"] for r in rows if r["verdict"] == "pass")
    assert first.summary["mode"] == "auto" and first.summary["schedules"] == 6
    for f in first.failures:  # pre-0.11 truncation loses acknowledged writes: saved with the trace
        assert f["file"].endswith(".events")
        verdict, _, _ = validate_path(str(out / f["file"]))
        assert verdict.explained
    again = run_campaign(params, out, spark=spark, partitions=2)
    assert again.summary["run"]["executed"] == 0 and again.summary["by_verdict"] == first.summary["by_verdict"]
    with pytest.raises(CampaignError, match="campaign"):
        run_campaign(CampaignParams("hw-truncation", schedules=6, seed=0, steps=100), out, spark=spark)


def test_a_run_the_model_cannot_explain_is_a_divergence_with_its_trace(monkeypatch):
    monkeypatch.setattr(ReplicaManager, "_isr_check", eager_isr_check(ReplicaManager._isr_check))
    row = next(r for r in (run_auto_seed("kip-320", 150, seed) for seed in range(1, 6)) if r["verdict"] == "divergence")
    assert row["failure_id"] == "divergence-at-shrink_isr" and row["first_bad_step"] > 0
    detail = json.loads(row["failure"])
    assert detail["validation"]["event"]["step"] == "shrink_isr"
    assert sorted(detail["trace"]) == ["broker-0.jsonl", "broker-1.jsonl", "broker-2.jsonl", "controller.jsonl"]


def test_the_gate_turns_a_self_driven_failure_into_a_finding_naming_its_log(tmp_path):
    from isrcheck.conformance.engines.gate.fuzz_engine import finding

    (tmp_path / "failures" / "divergence-at-shrink_isr.events").mkdir(parents=True)
    (tmp_path / "failures" / "divergence-at-shrink_isr.json").write_text('{"validation": {"verdict": "not explained"}}')
    found = finding(
        tmp_path,
        {
            "verdict": "divergence",
            "property": None,
            "first_bad_step": 7,
            "seed": 3,
            "seeds": 1,
            "file": "failures/divergence-at-shrink_isr.events",
            "original_file": None,
        },
        None,
    )
    assert found.schedule is None and "isrcheck validate" in found.error and "not explained" in found.error


def test_a_self_driven_failures_replay_hint_runs_it_again(tmp_path, isrcheck_cli):
    """The failure's index entry names a command that takes the same run again (same trace hash)
    and finds the same broken check; ``isrcheck check`` refuses an event log's directory."""
    from isrcheck.conformance.engines.campaign.failures import write_failures
    from isrcheck.conformance.engines.campaign.store import CampaignStore

    row = run_auto_seed("hw-truncation", 100, 185)  # pre-0.11 truncation loses an acknowledged write
    assert row["verdict"] == "violation" and row["property"] == "NoLostAckedWrite"
    store = CampaignStore(tmp_path / "c", "hw-truncation")
    store.bind({"protocol": "hw-truncation", "steps": 100, "faults": "default", "mode": "auto"})
    entry = {**row, "seeds": 1, "failure": json.loads(row["failure"])}
    (record,) = write_failures(store, [entry])
    assert record["replay"] == "isrcheck sim --protocol hw-truncation --replicas 3 --seed 185 --steps 100"
    done = isrcheck_cli(*record["replay"].split()[1:], "--json")
    assert done.returncode == 1, done.stdout + done.stderr
    replayed = json.loads(done.stdout)
    assert replayed["trace_hash"] == row["trace_hash"] and replayed["lost_acked"]
