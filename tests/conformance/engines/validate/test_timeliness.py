"""Timeliness of self-driven runs (engines/validate/timeliness.py): bugs of timers that trace
validation explains (the model lets a step wait forever) are caught by their Kafka bounds, in
simulated time, by ``fuzz --mode auto`` and ``sim``; correct runs miss no deadline. On real
processes a deadline is missed only where the node's ``timers`` lines show it ran its timers past
it: a loaded loop that runs everything late is no finding (hand-written logs of both shapes)."""

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


# the DelayedFetch that never expires takes 40 to 80 s of fuzzing: in the slow run
@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.slow) if n == "delayed-fetch-never-expires" else n for n in PLANTED],
)
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


# -- real processes: a deadline is missed only where the node's ``timers`` lines show it ---------------
def _state(leo=0, isr=(0, 1, 2), pending=None) -> dict:
    return {
        "leo": leo,
        "hw": 0,
        "leader": 0,
        "epoch": 0,
        "isr": list(isr),
        "pe": 0,
        "last_epoch": -1,
        "pending": pending,
    }


def _real_log(tmp_path, wait_ms: int, lines: dict) -> str:
    """A real cluster's log (kip-320, 3 brokers, the soak's lag time): ``lines`` node -> its events
    as (t, step, fields); ``timers`` lines as (t, "timers", due)."""
    config = dict(
        replicas=3,
        min_insync_replicas=2,
        unclean_leader_election_enable=False,
        replica_lag_time_max_ms=3000,
        request_timeout_ms=5000,
        flush_messages=None,
        replica_fetch_wait_max_ms=wait_ms,
    )
    header = {"format": "isrcheck-events", "version": 1, "protocol": "kip-320", "config": config}
    lc = 0
    for node, events in lines.items():
        out = [json.dumps({**header, "node": node})]
        for seq, (t, step, extra) in enumerate(events, 1):
            lc += 1
            line = {"node": node, "seq": seq, "lc": lc, "t": t, "step": step}
            line.update({"due": extra} if step == "timers" else {"state": _state(), **extra})
            out.append(json.dumps(line))
        (tmp_path / f"broker-{node}.jsonl").write_text("\n".join(out) + "\n")
    return str(tmp_path)


def _parked_fetch(completed_at: int, timers: list[tuple[int, int]]) -> dict:
    """Broker 1's fetch at its leader's LEO, parked at 1 ms (200 ms wait) and completed at
    ``completed_at``; the leader's loop is busy throughout (consumers answered every 300 ms, no
    node silent long), its ``timers`` lines (t, due) as given."""
    leader = [(1, "handle_fetch", {"replica": 1, "msg": [1, 1]})]
    leader += [(t, "consume", {"replica": 0, "msg": [4000, t]}) for t in (300, 600, 900, 1200)]
    leader += [(completed_at, "handle_fetch", {"replica": 1, "msg": [1, 1]})]
    leader += [(t, "timers", due) for t, due in timers]
    leader.sort(key=lambda x: x[0])
    return {0: leader, 1: [(0, "send_fetch", {"replica": 1, "max_batches": 0, "corr": 1})]}


def test_a_delayed_fetch_answered_late_by_a_loaded_loop_is_no_finding(tmp_path):
    """Seed 20's shape (a DelayedFetch answered 1,204 ms after its park, 200 ms wait): every timer
    of the leader ran late, the expiry first, as the loop runs timers in the order they fall due.
    A fixed slack of 1,000 ms called it late; the ``timers`` lines show the loop was behind."""
    path = _real_log(tmp_path, 200, _parked_fetch(1400, [(1395, 101), (1401, 201), (1402, 301)]))
    assert validate_path(path)[0].explained
    assert check_path(path, real=True) == []


def test_a_delayed_fetch_still_parked_after_its_leader_ran_later_timers_is_late(tmp_path):
    """The leader ran its timer due at 301 ms (at 330 ms) and the fetch parked at 1 ms with a
    200 ms wait was not answered before: its expiry never ran."""
    path = _real_log(tmp_path, 200, _parked_fetch(1400, [(120, 101), (250, 201), (330, 301)]))
    [late] = check_path(path, real=True)
    assert late.property == "DelayedFetchExpiry" and late.event.t == 1
    assert "timers due before 301 ms ran" in late.why and "answered by 201 ms" in late.why


def _lagging_followers(shrunk_at: int, timers: list[tuple[int, int]]) -> dict:
    """Both followers fetch once at 1 ms (caught up: the log is empty) and never again; the leader
    proposes them out at ``shrunk_at`` (lag 3 s, checked every 1.5 s: out by 4,501 ms)."""
    fetches = [(1, "handle_fetch", {"replica": f, "msg": [f, 1]}) for f in (1, 2)]
    shrink = (shrunk_at, "shrink_isr", {"replica": 0, "corr": 1, "state": _state(pending=[0])})
    leader = sorted(fetches + [shrink] + [(t, "timers", due) for t, due in timers], key=lambda x: x[0])
    return {0: leader, **{f: [(0, "send_fetch", {"replica": f, "max_batches": 0, "corr": 1})] for f in (1, 2)}}


def test_a_shrink_late_by_a_stalled_loop_is_no_finding(tmp_path):
    path = _real_log(tmp_path, 0, _lagging_followers(6000, [(4000, 3900), (5999, 4400), (6001, 4500), (6002, 4600)]))
    assert validate_path(path)[0].explained
    assert check_path(path, real=True) == []


def test_a_shrink_missing_after_the_leader_ran_later_timers_is_late(tmp_path):
    path = _real_log(tmp_path, 0, _lagging_followers(6000, [(4500, 4500), (4601, 4600)]))
    late = check_path(path, real=True)
    assert [(x.property, x.event.fields["due"]) for x in late] == [("IsrExpiry", 4600)] * 2  # both followers


def test_a_parked_fetch_completed_by_the_leadership_moving_away_is_answered(tmp_path):
    """What the 10-minute soak of seed 1 showed 18 times: a LeaderAndIsr moves the leadership to
    broker 1 and completes the parked fetch at once (logged with broker 1 leading); that is its
    answer, though the broker no longer leads."""
    moved = {**_state(), "leader": 1, "epoch": 1, "pe": 1}
    message = {"leader": 1, "leader_epoch": 1, "isr": [0, 1, 2], "partition_epoch": 1}
    lines = _parked_fetch(2000, [(2001, 2001)])
    lines[0] = [x for x in lines[0] if x[0] < 2000] + [
        (100, "deliver_leader_and_isr", {"replica": 0, "message": message, "msg": [3000, 1], "state": moved}),
        (100, "handle_fetch", {"replica": 1, "msg": [1, 1], "state": moved}),
        (400, "timers", 400),
    ]
    lines[0].sort(key=lambda x: x[0])
    assert check_path(_real_log(tmp_path, 200, lines), real=True) == []


def test_the_lag_rules_second_clause_is_taken_when_a_follower_fetch_trails_an_append(tmp_path):
    """What the 10-minute soak of seed 1 met after its leader was paused: a produce handled just
    before a follower's fetch (both queued while the leader was paused) leaves the fetch one record
    below the LEO but at the LEO of the follower's previous fetch, so Kafka (and the implementation)
    count the follower caught up as of that previous fetch (``Replica.updateFetchStateOrThrow``);
    the leader then shrinks the ISR by the other follower only. The model leaves that clause out
    (docs/steps.md, "Outside the contract"): the validator takes it after the fetch."""

    def st(leo, hw=0, pending=None, last_epoch=0):
        return {**_state(leo, pending=pending), "hw": hw, "last_epoch": last_epoch}

    def fetch(t, f, corr, leo):
        return (t, "handle_fetch", {"replica": f, "msg": [f, corr], "state": st(leo, last_epoch=0 if leo else -1)})

    produce = {"replica": 0, "acks": 1, "records": 1}
    lines = {
        0: [
            fetch(1, 1, 1, 0),
            fetch(1, 2, 1, 0),
            (100, "produce", {**produce, "msg": [4000, 1], "state": st(1)}),
            fetch(100, 1, 1, 1),  # the parked fetch completed by the append: follower 1 at 0
            (2500, "produce", {**produce, "msg": [4000, 2], "state": st(2)}),
            (2500, "produce", {**produce, "msg": [4000, 3], "state": st(3)}),
            # at 1: below the LEO, at the LEO of its previous fetch (100 ms); its answer cut by bytes
            (2500, "handle_fetch", {"replica": 1, "msg": [1, 2], "batches": 1, "state": st(3)}),
            (3050, "shrink_isr", {"replica": 0, "corr": 1, "state": st(3, pending=[0, 1])}),
        ],
        1: [
            (0, "send_fetch", {"replica": 1, "max_batches": 0, "corr": 1}),
            (101, "handle_fetch_response", {"replica": 1, "msg": [0, 1], "state": st(1)}),
            (101, "send_fetch", {"replica": 1, "max_batches": 0, "corr": 2, "state": st(1)}),
            (2501, "handle_fetch_response", {"replica": 1, "msg": [0, 2], "state": st(2)}),
        ],
        2: [(0, "send_fetch", {"replica": 2, "max_batches": 0, "corr": 1})],
    }
    verdict = validate_path(_real_log(tmp_path, 200, lines))[0]
    assert verdict.explained, verdict.event.describe() + str([r.reasons for r in verdict.refusals])
    assert {"step": "lag_credit", "replica": 0, "follower": 1, "since": 100} in verdict.steps


def test_a_stale_fetchers_fetch_counts_in_the_leader_epoch_its_send_names(tmp_path):
    """Follower 1 applied leader epoch 1 (split_become_follower) and its stale fetcher fetched from
    leader 0, still leading epoch 0, at its LEO at 3,000 ms: caught up then, in the epoch its
    ``send_fetch`` names (``stale_fetcher``), not the follower's; without the name it is not."""

    def lines(tag: dict) -> dict:
        fetches = [(1, "handle_fetch", {"replica": f, "msg": [f, 1]}) for f in (1, 2)]
        fetches += [(3000, "handle_fetch", {"replica": f, "msg": [f, 2]}) for f in (1, 2)]
        timers = [(t, "timers", t) for t in (4000, 5000, 6000, 6001)]
        moved = {**_state(), "leader": 2, "epoch": 1, "pe": 1}  # follower 1's view: leader 2, epoch 1
        return {
            0: sorted(fetches + timers, key=lambda x: x[0]),
            1: [
                (0, "send_fetch", {"replica": 1, "max_batches": 0, "corr": 1}),
                (2999, "send_fetch", {"replica": 1, "max_batches": 0, "corr": 2, "state": moved, **tag}),
            ],
            2: [(0, "send_fetch", {"replica": 2, "max_batches": 0, "corr": c}) for c in (1, 2)],
        }

    assert check_path(_real_log(tmp_path, 0, lines({"stale_fetcher": [0, 0]})), real=True) == []
    late = check_path(_real_log(tmp_path, 0, lines({})), real=True)
    assert [(x.property, "broker 1 still in the ISR" in x.why) for x in late] == [("IsrExpiry", True)]
