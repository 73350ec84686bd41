"""``isrcheck validate`` given a run's directory rather than its log: a soak's folder, a cluster's
data directory, a fuzz campaign and its failures; where it holds none, or several, it says where
they are (exit 2). (A real soak's and a served cluster's: tests/soak/test_soak.py,
tests/validate/test_real_processes.py.)"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from isrcheck.impl.real.processes import EVENT_LOG_FILE
from isrcheck.impl.sim.workload import run_simulation


@pytest.fixture(scope="module")
def log(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sim") / "events"
    run_simulation("kip-320", 3, 1, 60, events_dir=str(out))
    return out


def _validate(isrcheck_cli, path) -> tuple[int, str, str]:
    proc = isrcheck_cli("validate", path)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stdout, proc.stderr


def test_a_soak_folder_is_validated_by_its_events(isrcheck_cli, tmp_path, log):
    """The folder's history.jsonl is the clients', not an event log: the log is events/."""
    run = tmp_path / "soak"
    shutil.copytree(log, run / "events")
    (run / "history.jsonl").write_text('{"index":0,"time":0,"process":0,"type":"invoke","f":"send"}\n')
    code, out, err = _validate(isrcheck_cli, run)
    assert code == 0 and out.startswith("explained:") and f"the event log of {run} is {run / 'events'}" in err
    shutil.rmtree(run / "events")  # a soak that ran with --no-validate
    code, _, err = _validate(isrcheck_cli, run)
    assert code == 2 and "a soak's folder without an event log" in err and "--no-validate" in err


def test_a_clusters_data_directory_leads_to_the_log_it_names(isrcheck_cli, tmp_path, log):
    data = tmp_path / "cluster"
    data.mkdir()
    (data / "meta.properties").write_text("cluster.id=x\n")
    code, _, err = _validate(isrcheck_cli, data)  # served without --events
    assert code == 2 and "logged no events" in err and "--events" in err
    (data / EVENT_LOG_FILE).write_text(f"{log}\n")
    code, out, err = _validate(isrcheck_cli, data)
    assert code == 0 and out.startswith("explained:") and str(log) in err
    (data / EVENT_LOG_FILE).write_text(f"{tmp_path / 'gone'}\n")
    code, _, err = _validate(isrcheck_cli, data)
    assert code == 2 and f"logged its events to {tmp_path / 'gone'}, which holds no event log now" in err


def test_a_campaign_its_failures_and_a_failure_lead_to_its_one_log(isrcheck_cli, tmp_path, log):
    campaign = tmp_path / "C"
    failures = campaign / "failures"
    shutil.copytree(log, failures / "violation-NoLostAckedWrite.events")
    (failures / "violation-NoLostAckedWrite.json").write_text('{"auto": {"seed": 1}}')
    (failures / "index.json").write_text("[]")
    for path in (campaign, failures, failures / "violation-NoLostAckedWrite.json"):
        code, out, err = _validate(isrcheck_cli, path)
        assert code == 0 and out.startswith("explained:"), err
        assert f"is {failures / 'violation-NoLostAckedWrite.events'}" in err
    shutil.copytree(log, failures / "divergence-at-shrink_isr.events")
    code, _, err = _validate(isrcheck_cli, campaign)
    assert code == 2 and "a campaign with 2 event logs, give one: " in err
    assert str(failures / "divergence-at-shrink_isr.events") in err and "violation-NoLostAckedWrite.events" in err


def test_a_campaign_of_schedules_and_a_schedule_say_what_replays_them(isrcheck_cli, tmp_path):
    failures = tmp_path / "C" / "failures"
    failures.mkdir(parents=True)
    (failures / "violation-StrongIsr.json").write_text('{"protocol": "kip-101", "steps": []}')
    code, _, err = _validate(isrcheck_cli, tmp_path / "C")
    assert code == 2 and "keep no event log" in err and "isrcheck check" in err
    code, _, err = _validate(isrcheck_cli, failures / "violation-StrongIsr.json")
    assert code == 2 and f"isrcheck check {failures / 'violation-StrongIsr.json'}" in err


def test_a_directory_with_no_log_says_where_runs_keep_theirs(isrcheck_cli, tmp_path):
    (tmp_path / "notes.txt").write_text("not a run\n")
    code, _, err = _validate(isrcheck_cli, tmp_path)
    assert code == 2 and "no event log here" in err and "DIR/events" in err and "failures/<id>.events" in err
    (tmp_path / "notes.jsonl").write_text('{"format": "something else"}\n')  # meant as one: the line is named
    code, _, err = _validate(isrcheck_cli, tmp_path)
    assert code == 2 and f"{tmp_path / 'notes.jsonl'}:1: not an isrcheck event log" in err
