"""Trace hashes are part of what a user keeps (a campaign's results, a corpus's expected verdicts):
a change that speeds up the runner must not change them. These are the shipped scenarios' and a few
walks' hashes, each under every fault class a walk draws from, with violations and failures outside
the budget among them."""

from pathlib import Path

import pytest

from isrcheck.conformance import load_schedule, random_walk, run_schedule

SCENARIOS = Path(__file__).resolve().parents[2] / "specs" / "scenarios"

PINNED_SCENARIOS = [
    # (file, protocol or None for the file's own, verdict, property, trace hash); eleven moved with
    # KRaft's restart split (from kip-903 a restart registers by its own step, `register`, which the
    # scenarios now take after each restart)
    ("acks1-loss-on-leader-change.json", None, "pass", None, "caa18fa89d5e9663a4b237c071941447"),
    ("clean-restart-then-power-loss.json", None, "pass", None, "a0e84f8bfa83442cccb942f10e9d31a8"),
    ("deposed-leader-lost-isr-answer.json", None, "pass", None, "f365ef8d0cc43d7defea41556d8670ec"),
    ("diverged-batch-boundaries.json", None, "pass", None, "680657668992b539dd9da1674a685620"),
    ("healthy-acks-all.json", None, "pass", None, "cb220925affe7dd165d8ae8adad26505"),
    ("healthy-failover.json", None, "pass", None, "8394104bb019ddf1045ac38ef763055a"),
    ("healthy-isr-shrink-expand.json", None, "pass", None, "393ae2926319b0b2de97fdfc69d0a7e0"),
    ("kafka-14139-replaced-disk.json", None, "pass", None, "db2870c403d40960fa5333fbb01a3599"),
    ("kip101-scenario1.json", None, "pass", None, "3d7288bd558ba8ef2318858efc271525"),
    ("kip101-scenario2.json", None, "pass", None, "cccf9d0a6846e8b41ade8db079672607"),
    ("kip279-fast-leader-change.json", None, "pass", None, "7033f2a7f78b36ee694140c582b2b4ee"),
    ("kip320-stale-fetch.json", None, "pass", None, "92b39f12090143002371b1ec15256e2a"),
    ("last-replica-standing.json", None, "pass", None, "d5152bb23466e553ab9d7eea5f9ce46a"),
    ("partial-fetch-hw-cap.json", None, "pass", None, "176a2c031b61e4e688015b83137b8404"),
    ("torn-power-loss.json", None, "pass", None, "a6b3d9dc4df97ca7d3a12cdacb7fbffa"),
    ("unclean-election-loss.json", None, "pass", None, "292b15d9fbce1f7d537b0501af28042f"),
    ("zombie-leader-acks1.json", None, "pass", None, "61e42d348ee80ba87e1218a791c64b00"),
    ("kip101-scenario1.json", "hw-truncation", "violation", "NoLostAckedWrite", "9f795cd059d0ddb5817907b711f49a66"),
    ("kip101-scenario2.json", "hw-truncation", "violation", "StrongIsr", "c8c6a0f4cf5975be2d8120575e8425ce"),
    ("kip279-fast-leader-change.json", "kip-101", "violation", "LogMatching", "b7abf097729fa7b20d7b8f0b1a248aa1"),
]

PINNED_WALKS = [
    # (seed, protocol, fault profile, trace hash) of walks of 120 steps; all moved when the alphabet
    # the generator weighs and draws kinds from gained `register` (KRaft's restart split, docs/steps.md);
    # the pre-kip-903 ones when the refused steps left out a `register` taken as made by its restart, the
    # kip-903/kip-966 ones with KRaft's partition state (one AlterPartition awaits its answer), the
    # kip-903 one again when a registration no longer waited for a fence (its own records take it out)
    (3, "kip-320", "default", "88b8fe8bc78ccb70ab36702e925c62a1"),  # the default: every fault class
    (5, "kip-101", "default", "fe5ff02e69c7d38a5159daf0fb38532a"),
    (3, "kip-320", "classic", "f8de53a9fcfde672e2e2cc2daac2efa7"),  # the former default, kept by name
    (5, "kip-101", "classic", "868b0f5b18c0ee44603d297cbff96cce"),
    (11, "kip-966", "all", "5ac30f93a810753709585fcfd7bc61ce"),
    (2, "hw-truncation", "all", "5b3685b7426f9d372bfd97ee458ffbee"),
    (8, "kip-903", "disk", "86bdc4d470d2770263327067d0ed9b07"),
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
