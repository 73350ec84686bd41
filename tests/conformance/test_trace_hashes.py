"""Trace hashes are part of what a user keeps (a campaign's results, a corpus's expected verdicts):
a change that speeds up the runner must not change them. These are the shipped scenarios' and a few
walks' hashes, each under every fault class a walk draws from, with violations and failures outside
the budget among them."""

from pathlib import Path

import pytest

from isrcheck.conformance import load_schedule, random_walk, run_schedule

SCENARIOS = Path(__file__).resolve().parents[2] / "specs" / "scenarios"

PINNED_SCENARIOS = [
    # (file, protocol or None for the file's own, verdict, property, trace hash)
    ("acks1-loss-on-leader-change.json", None, "pass", None, "94b4084fe35b430331b848320d1b6579"),
    ("clean-restart-then-power-loss.json", None, "pass", None, "18d3f5eaa071a7e3bbc0273c3fc5152a"),
    ("deposed-leader-lost-isr-answer.json", None, "pass", None, "f365ef8d0cc43d7defea41556d8670ec"),
    ("diverged-batch-boundaries.json", None, "pass", None, "680657668992b539dd9da1674a685620"),
    ("healthy-acks-all.json", None, "pass", None, "194d28d2f736755a934f464b1e740f7a"),
    ("healthy-failover.json", None, "pass", None, "ba98bfc0d69f729a61da286cebfceb1b"),
    ("healthy-isr-shrink-expand.json", None, "pass", None, "fd18251f815fea03cad6c0767778e0ae"),
    ("kafka-14139-replaced-disk.json", None, "pass", None, "92570965e35b5b42ecfc24d6266b67d9"),
    ("kip101-scenario1.json", None, "pass", None, "4aea8040f0b55a0812acf45214098509"),
    ("kip101-scenario2.json", None, "pass", None, "822c99bce41e0b3d3b19c1c1b3af5a84"),
    ("kip279-fast-leader-change.json", None, "pass", None, "eccae5111145598f1feeb9d3dfd06e64"),
    ("kip320-stale-fetch.json", None, "pass", None, "b87ae72ed664fdcb9641d99f72a8b656"),
    ("last-replica-standing.json", None, "pass", None, "ca9305eb10f4f782ed7101b5d8fd0bc3"),
    ("partial-fetch-hw-cap.json", None, "pass", None, "176a2c031b61e4e688015b83137b8404"),
    ("torn-power-loss.json", None, "pass", None, "7455a9693e5135af538f0f64ebe36f38"),
    ("unclean-election-loss.json", None, "pass", None, "292b15d9fbce1f7d537b0501af28042f"),
    ("zombie-leader-acks1.json", None, "pass", None, "6340c5348cae102336bba82e54656c96"),
    ("kip101-scenario1.json", "hw-truncation", "violation", "NoLostAckedWrite", "bd58ebb665c9c45504f05338c3db552b"),
    ("kip101-scenario2.json", "hw-truncation", "violation", "StrongIsr", "1acd65718a47394326f06be580e75bcd"),
    ("kip279-fast-leader-change.json", "kip-101", "violation", "LogMatching", "f7e8da8c642bc998406ec581d24f0ac2"),
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
