"""Timeliness of self-driven runs (engines/validate/timeliness.py): bugs of timers that trace
validation explains (the model lets a step wait forever) are caught by their Kafka bounds, in
simulated time, by ``fuzz --mode auto`` and ``sim``; correct runs miss no deadline."""

from __future__ import annotations

import dataclasses
import json

import pytest
from timer_bug import delayed_fetch_never_expires, isr_timer_never_rearmed, lag_credits_now

from isrcheck.conformance.cli.main import main
from isrcheck.conformance.engines.campaign.auto import run_auto_seed
from isrcheck.conformance.engines.validate.timeliness import check_path
from isrcheck.conformance.engines.validate.validation import validate_path
from isrcheck.impl.replication.delayed_fetch import DelayedFetchPurgatory
from isrcheck.impl.replication.partition import Partition
from isrcheck.impl.replication.replica_manager import ReplicaManager
from isrcheck.impl.sim import workload
from isrcheck.impl.sim.workload import run_simulation
from isrcheck.model import PROTOCOLS

PLANTED = {
    "isr-timer-never-rearmed": (ReplicaManager, "_isr_check", isr_timer_never_rearmed, "IsrExpiry"),
    "lag-credits-now": (Partition, "fetch_from_follower", lag_credits_now, "IsrExpiry"),
    "delayed-fetch-never-expires": (
        DelayedFetchPurgatory,
        "_expire",
        delayed_fetch_never_expires,
        "DelayedFetchExpiry",
    ),
}


def _plant(monkeypatch, name: str) -> str:
    cls, attr, bug, prop = PLANTED[name]
    monkeypatch.setattr(cls, attr, bug(getattr(cls, attr)))
    return prop


@pytest.fixture(params=[0, 20], ids=["no-long-poll", "long-poll"])
def fetch_wait(request, monkeypatch):
    """The simulation's replica.fetch.wait.max.ms: 0 as ``sim_config`` has it, 20 ms as a soak's
    cluster long-polls (parked fetches, DelayedFetch's expiry)."""
    sim_config = workload.sim_config
    monkeypatch.setattr(
        workload,
        "sim_config",
        lambda protocol, replicas: dataclasses.replace(
            sim_config(protocol, replicas), replica_fetch_wait_max_ms=request.param
        ),
    )
    return request.param


@pytest.mark.parametrize("name", list(PLANTED))
def test_fuzz_auto_catches_each_planted_timer_bug_that_validation_explains(monkeypatch, name, fetch_wait):
    if name == "delayed-fetch-never-expires" and not fetch_wait:
        pytest.skip("no fetch is parked without long polls")
    if name == "lag-credits-now" and fetch_wait:
        pytest.skip("with long polls Kafka's own rule credits the previous fetch: 'now' gains one wait at most")
    prop = _plant(monkeypatch, name)
    rows = [run_auto_seed("kip-320", 200, seed) for seed in range(20)]
    assert all(r["verdict"] != "divergence" for r in rows)  # the model explains every run
    late = [r for r in rows if r["property"] == prop]
    assert late and all(r["verdict"] == "violation" and r["failure_id"] == f"violation-{prop}" for r in late)
    assert json.loads(late[0]["failure"])["late"][0]["property"] == prop


def test_sim_exits_1_naming_the_missed_deadline_and_its_kafka_bound(monkeypatch, capsys):
    _plant(monkeypatch, "isr-timer-never-rearmed")
    codes = {seed: main(["sim", "--seed", str(seed)]) for seed in range(8)}
    out = capsys.readouterr().out
    assert 1 in codes.values()
    assert "late: IsrExpiry late at broker" in out and "Partition.maybeShrinkIsr" in out


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_correct_runs_miss_no_deadline(tmp_path, protocol, fetch_wait):
    """Every crash kind, seeded network faults, long polls: no false alarm (bounds in simulated
    time, so a loaded machine changes nothing)."""
    for seed in range(12):
        out = tmp_path / f"{seed}"
        run_simulation(protocol, 3, seed, 200, events_dir=str(out))
        assert validate_path(str(out))[0].explained
        assert check_path(str(out)) == [], (protocol, seed)


@pytest.mark.slow
@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_many_correct_runs_miss_no_deadline(protocol, fetch_wait):
    rows = [run_auto_seed(protocol, 300, seed) for seed in range(200)]
    assert not [r["seed"] for r in rows if r["property"] in ("IsrExpiry", "DelayedFetchExpiry")]
