"""Trace hashes are part of what a user keeps (a campaign's results, a corpus's expected verdicts):
a change that speeds up the runner must not change them. These are the shipped scenarios' and a few
walks' hashes, each under every fault class a walk draws from, with violations and failures outside
the budget among them."""

from pathlib import Path

import pytest

from isrcheck.conformance import load_schedule, random_walk, run_schedule

SCENARIOS = Path(__file__).resolve().parents[2] / "specs" / "scenarios"

PINNED_SCENARIOS = [
    # (file, protocol or None for the file's own, verdict, property, trace hash); they moved with the
    # contract change that answers a fetch with the HW read before its own increment (handle_fetch)
    ("acks1-loss-on-leader-change.json", None, "pass", None, "66a3cbd19cd3573dfe028574dd86c3d3"),
    ("clean-restart-then-power-loss.json", None, "pass", None, "18d3f5eaa071a7e3bbc0273c3fc5152a"),
    ("deposed-leader-lost-isr-answer.json", None, "pass", None, "f365ef8d0cc43d7defea41556d8670ec"),
    ("diverged-batch-boundaries.json", None, "pass", None, "680657668992b539dd9da1674a685620"),
    ("healthy-acks-all.json", None, "pass", None, "cb220925affe7dd165d8ae8adad26505"),
    ("healthy-failover.json", None, "pass", None, "68f80e5fe9706a49e7852917b96d38ac"),
    ("healthy-isr-shrink-expand.json", None, "pass", None, "393ae2926319b0b2de97fdfc69d0a7e0"),
    ("kafka-14139-replaced-disk.json", None, "pass", None, "5c1473a27e99ca309579c69e8d64bb1e"),
    ("kip101-scenario1.json", None, "pass", None, "3d7288bd558ba8ef2318858efc271525"),
    ("kip101-scenario2.json", None, "pass", None, "a3f34fe630f6aeaa6087deb29c695852"),
    ("kip279-fast-leader-change.json", None, "pass", None, "98a72e02e16a9988fb1651f0914d6593"),
    ("kip320-stale-fetch.json", None, "pass", None, "62fc0e0d74414a206068138703c645ee"),
    ("last-replica-standing.json", None, "pass", None, "24c72409c4523abcf7ba7b0ae730845f"),
    ("partial-fetch-hw-cap.json", None, "pass", None, "176a2c031b61e4e688015b83137b8404"),
    ("torn-power-loss.json", None, "pass", None, "7455a9693e5135af538f0f64ebe36f38"),
    ("unclean-election-loss.json", None, "pass", None, "292b15d9fbce1f7d537b0501af28042f"),
    ("zombie-leader-acks1.json", None, "pass", None, "61e42d348ee80ba87e1218a791c64b00"),
    ("kip101-scenario1.json", "hw-truncation", "violation", "NoLostAckedWrite", "9f795cd059d0ddb5817907b711f49a66"),
    ("kip101-scenario2.json", "hw-truncation", "violation", "StrongIsr", "b6c943a51a047714894644e52368caf5"),
    ("kip279-fast-leader-change.json", "kip-101", "violation", "LogMatching", "104b943672ec2542cfd71041abc4b8d0"),
]

PINNED_WALKS = [
    # (seed, protocol, fault profile, trace hash) of walks of 120 steps; six moved with the contract
    # change that keeps a crashed broker's requests in flight as orphans and, from kip-903 on, ends
    # a restarted broker's old session before it registers (docs/steps.md, crash and restart)
    (3, "kip-320", "default", "bc00a320c0816a5fd8a0600925ba90ef"),  # the default: every fault class
    (5, "kip-101", "default", "4b4e77c1d94019b5a8839908fd01e22a"),
    (3, "kip-320", "classic", "9e7367a97f1a082cb853f9114a856708"),  # the former default, kept by name
    (5, "kip-101", "classic", "868b0f5b18c0ee44603d297cbff96cce"),
    (11, "kip-966", "all", "8caec17757cc399d08786dc06ad3588c"),
    (2, "hw-truncation", "all", "286909b80d9a50769ff7edf869385097"),
    (8, "kip-903", "disk", "cb1d041a4702f7f3d9532ed5f263c5bf"),
]


@pytest.mark.parametrize("name, protocol, kind, prop, trace_hash", PINNED_SCENARIOS)
def test_scenario_trace_hashes_are_pinned(name, protocol, kind, prop, trace_hash):
    schedule = load_schedule(SCENARIOS / name)
    verdict = run_schedule(schedule if protocol is None else schedule.with_protocol(protocol))
    assert (verdict.kind, verdict.property, verdict.trace_hash) == (kind, prop, trace_hash)


def test_a_failure_outside_its_budget_keeps_its_hash():
    verdict = run_schedule(load_schedule(SCENARIOS / "unclean-election-loss.json"))
    assert [b[:2] for b in verdict.beyond_budget] == [("NoLostAckedWrite", 13), ("LeaderCompleteness", 13)]
    assert verdict.trace_hash == "292b15d9fbce1f7d537b0501af28042f"


@pytest.mark.parametrize("seed, protocol, faults, trace_hash", PINNED_WALKS)
def test_walk_trace_hashes_are_pinned(seed, protocol, faults, trace_hash):
    schedule, verdict = random_walk(seed, protocol, 120, faults)
    assert verdict.trace_hash == trace_hash
    assert run_schedule(schedule).trace_hash == trace_hash  # a replay of the walk hashes as the walk did
