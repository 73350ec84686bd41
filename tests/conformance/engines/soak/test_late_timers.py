"""A soak of isrcheck's cluster with a timer bug planted in its brokers (``node_bugs``), which trace
validation explains (the model lets a step wait forever): the nodes' ``timers`` lines show that
the leader ran its timers past the deadline, so the missed deadline is the anomaly ``event-log-late``.
The same run without a bug misses none (test_soak.py's soaks end with no anomaly)."""

from node_bugs import planted

from isrcheck.conformance.engines.soak.driver import SoakOptions, run_soak


def test_a_delayed_fetch_that_never_expires_is_late_in_a_soak(tmp_path, monkeypatch):
    planted(monkeypatch, "follower-fetch-never-expires")
    result = run_soak(SoakOptions(duration_s=6, seed=1, directory=str(tmp_path / "run")))
    assert result.validation.explained, result.validation.lines
    assert result.anomalies == ["event-log-late"], result.exit_reason()
    late = result.validation.late
    assert {x.property for x in late} == {"DelayedFetchExpiry"}
    assert "timers(due=" in late[0].why  # what showed the leader ran its timers past the deadline
