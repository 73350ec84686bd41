"""isrcheck validate given a run's directory: a soak's --dir, a served cluster's --dir holding its
--events, a campaign's folder: it finds the event log inside, or says where it is (exit 2). The
folders are laid out as those commands lay them out, around a short simulation's log."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from isrcheck.conformance.engines.validate.locate import event_log_in
from isrcheck.conformance.vocabulary import UsageError
from isrcheck.impl.sim.workload import run_simulation

RECORDING = Path(__file__).resolve().parents[3] / "apache" / "recordings" / "clean-4.4.0"


@pytest.fixture(scope="module")
def log(tmp_path_factory) -> Path:
    """A short self-driven run's event log, copied into each folder."""
    out = tmp_path_factory.mktemp("sim") / "events"
    run_simulation("kip-320", 3, 1, 40, events_dir=str(out))
    return out


def _soak_dir(root: Path, events: Path | None) -> Path:
    """A soak's --dir: its client history (JSON lines, not an event log), results, the cluster's data."""
    d = root / "soak"
    (d / "cluster" / "broker-0" / "soak-0").mkdir(parents=True)
    (d / "history.jsonl").write_text(json.dumps({"type": "invoke", "f": "send", "process": 0}) + "\n")
    (d / "results.json").write_text("{}\n")
    if events is not None:
        shutil.copytree(events, d / "events")
    return d


def test_a_soaks_directory_is_validated_by_its_event_log(tmp_path, log, isrcheck_cli):
    d = _soak_dir(tmp_path, log)
    assert event_log_in(str(d)) == str(d / "events")
    done = isrcheck_cli("validate", d)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("explained: ")
    assert f"the event log in {d} is {d / 'events'}" in done.stderr
    done = isrcheck_cli("validate", d, "--json")  # stdout stays one JSON object
    assert json.loads(done.stdout)["verdict"] == "explained"


def test_a_soak_of_apache_kafka_is_validated_by_its_recording(tmp_path):
    """--cluster kafka --kafka-events: D/events is the Java agent's recording, translated first."""
    d = _soak_dir(tmp_path, RECORDING)
    assert event_log_in(str(d)) == str(d / "events")


def test_a_soak_that_kept_no_event_log_is_refused_saying_why(tmp_path, isrcheck_cli):
    d = _soak_dir(tmp_path, None)
    done = isrcheck_cli("validate", d)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "no event log in it or below it; a soak's directory (--dir) keeps its event log in events/" in done.stderr
    assert "Traceback" not in done.stderr and "history.jsonl" not in done.stderr


def test_a_served_clusters_directory_and_its_events(tmp_path, log):
    """serve --events DIR is the log itself; serve --dir D --events D/events is found in D; a data
    directory without it names serve --events."""
    served = tmp_path / "served"
    (served / "broker-0" / "t-0").mkdir(parents=True)
    (served / "controller").mkdir()
    (served / "controller" / "metadata.json").write_text("{}\n")
    (served / "meta.properties").write_text("cluster.id=x\n")
    with pytest.raises(
        UsageError,
        match=r"a served cluster's data directory \(serve --dir\): its event log is "
        r"the directory given to serve --events",
    ):
        event_log_in(str(served))
    shutil.copytree(log, served / "events")
    assert event_log_in(str(served / "events")) == str(served / "events")
    assert event_log_in(str(served)) == str(served / "events")


def test_a_campaigns_failure_folder_is_validated_by_its_event_log(tmp_path, log, isrcheck_cli):
    """fuzz --mode auto keeps a failure's log in failures/NAME.events: found from the campaign's
    folder and from failures/; two failures are named, for the user to pick one."""
    failures = tmp_path / "C" / "failures"
    shutil.copytree(log, failures / "violation-NoLostAckedWrite.events")
    (failures / "violation-NoLostAckedWrite.json").write_text("{}\n")
    (failures / "index.json").write_text("[]\n")
    (tmp_path / "C" / "rows").mkdir()
    one = str(failures / "violation-NoLostAckedWrite.events")
    assert event_log_in(str(tmp_path / "C")) == one
    assert event_log_in(str(failures)) == one
    shutil.copytree(log, failures / "divergence-at-produce.events")
    done = isrcheck_cli("validate", tmp_path / "C")
    assert done.returncode == 2
    assert f"holds 2 event logs, give one: {failures / 'divergence-at-produce.events'}, {one}" in done.stderr


def test_a_campaign_without_event_logs_says_lockstep_failures_are_schedules(tmp_path):
    (tmp_path / "C" / "failures").mkdir(parents=True)
    (tmp_path / "C" / "failures" / "violation-StrongIsr.json").write_text("{}\n")
    with pytest.raises(UsageError, match="isrcheck check FILE replays it"):
        event_log_in(str(tmp_path / "C"))


def test_a_log_or_a_directory_of_other_files_is_read_as_given(tmp_path, log):
    """A log is never looked past; a directory of no run is read as before (read_trace names its
    first bad line)."""
    assert event_log_in(str(log)) == str(log)
    assert event_log_in(str(log / "broker-0.jsonl")) == str(log / "broker-0.jsonl")
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.jsonl").write_text("{}\n")
    assert event_log_in(str(other)) == str(other)
