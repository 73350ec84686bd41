"""A soak of isrcheck's cluster with a timer bug planted in its brokers (``node_bugs``), which trace
validation explains (the model lets a step wait forever): the nodes' ``timers`` lines show that
the leader ran its timers past the deadline, so the missed deadline is the anomaly ``event-log-late``.
The same run without a bug misses none (test_soak.py's soaks end with no anomaly)."""

import pytest
from node_bugs import planted

from isrcheck.conformance.engines.soak.driver import SoakOptions, run_soak
from isrcheck.conformance.engines.soak.faults import Fault


def test_a_delayed_fetch_that_never_expires_is_late_in_a_soak(tmp_path, monkeypatch):
    planted(monkeypatch, "follower-fetch-never-expires")
    result = run_soak(SoakOptions(duration_s=6, seed=1, directory=str(tmp_path / "run")))
    assert result.validation.explained, result.validation.lines
    assert result.anomalies == ["event-log-late"], result.exit_reason()
    late = result.validation.late
    assert {x.property for x in late} == {"DelayedFetchExpiry"}
    assert "timers(due=" in late[0].why  # what showed the leader ran its timers past the deadline


def _followers_stopped(tmp_path):
    """Broker 0 leads every partition at first; both followers are paused (SIGSTOP) from 2 s to 9 s: the acks=all
    batches parked then wait for a HW that cannot move (kip-966: not below min.insync.replicas) and
    expire after the request's timeout (librdkafka's request.timeout.ms, 3 s)."""
    return run_soak(
        SoakOptions(
            protocol="kip-966",
            duration_s=14,
            script=(Fault("pause", (1, 2), 2.0, 9.0),),
            seed=1,
            directory=str(tmp_path / "run"),
        )
    )


def test_parked_produces_that_expire_on_time_are_no_finding(tmp_path):
    result = _followers_stopped(tmp_path)
    assert result.validation.explained, result.validation.lines
    assert not result.validation.late, result.validation.lines
    expired = sum(f.read_text().count('"produce_expired"') for f in (tmp_path / "run" / "events").glob("*.jsonl"))
    assert expired > 0  # the scenario reached DelayedProduce's expiry


@pytest.mark.slow  # 20 s; the DelayedFetch twin below runs in the default tests
def test_a_delayed_produce_that_never_expires_is_late_in_a_soak(tmp_path, monkeypatch):
    planted(monkeypatch, "delayed-produce-never-expires")
    result = _followers_stopped(tmp_path)
    assert result.validation.explained, result.validation.lines
    assert "DelayedProduceExpiry" in {x.property for x in result.validation.late}, result.validation.lines
