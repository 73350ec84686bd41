"""The exhaustive explorer: the TLA+ variant table, fault budgets, traces, determinism."""

import dataclasses
import json
import os
import subprocess
import sys

import pytest
from explorer_scopes import (
    DEFAULT,
    KAFKA_14139,
    KIP101_SCENARIO1,
    LAST_REPLICA_STANDING,
    SMALL,
    UNCLEAN_SCOPE,
    WITH_READS,
)

from isrcheck.model import ModelConfig, Scope, explore, initial_state, replay
from isrcheck.model.explorer import reachable_states, state_key, successors
from isrcheck.specs import BY_ID, PROPERTIES


def check_trace(config, violation):
    """The trace replays on the model, ends in a state violating the property, and no earlier
    state of it does (BFS: nothing shorter exists)."""
    run = replay(config, violation.trace)
    prop = BY_ID[violation.property]
    assert not prop.check(run.states[-1])
    assert all(prop.check(s) for s in run.states[:-1])
    assert len(violation.trace) == violation.depth
    json.dumps(violation.trace)  # schedule steps: JSON-ready


def outside_budget(config, violation) -> str:
    """Why the trace, replayed in lockstep on the model, breaks the property only outside its
    fault budget (it must: a loss Kafka itself has there); the reason the runner gives."""
    from isrcheck.conformance.core.lockstep import Lockstep

    run = Lockstep(config.protocol, config, impl=False)
    for st in violation.trace:
        assert run.step(st) is None, run.outcome.summary()
    verdict = run.verdict()
    assert verdict.kind == "pass", verdict.summary()
    return next(why for p, _, why in verdict.beyond_budget if p == violation.property)


@pytest.fixture(scope="module")
def kip320_default():
    return explore(ModelConfig(protocol="kip-320"), DEFAULT)


@pytest.mark.parametrize(
    "protocol",
    [
        "hw-truncation",  # the two below search about a minute each: slow
        pytest.param("kip-101", marks=pytest.mark.slow),
        pytest.param("kip-279", marks=pytest.mark.slow),
    ],
)
def test_pre_kip320_variants_violate_strong_isr_or_log_matching(protocol):
    # The TLA+ specs find StrongIsr for all three. Here a leader changes only after a crash and
    # fence, so a deposed leader never keeps presuming leadership (no zombies); the violations
    # found are a follower's stale state meeting a re-elected leader: hw-truncation's follower
    # truncating to a lagging HW, and kip-101/kip-279 serving a Fetch of an older leader epoch.
    config = ModelConfig(protocol=protocol)
    result = explore(config, DEFAULT, [BY_ID["StrongIsr"], BY_ID["LogMatching"]], stop_at_first=True)
    assert result.violations, f"{protocol}: no violation in {result.states} states"
    violation = result.violations[0]
    assert violation.property in ("StrongIsr", "LogMatching")
    check_trace(config, violation)


@pytest.mark.slow  # 205,013 states: a minute and a half of one core (smaller complete scopes run below)
def test_kip320_explores_the_default_scope_completely_without_violation(kip320_default):
    assert kip320_default.complete
    assert kip320_default.violations == []
    assert kip320_default.states >= 10_000
    assert kip320_default.depth > 10


@pytest.mark.slow  # 18 s; specs/scenarios/kip101-scenario1.json pins the same verdicts by protocol
def test_kip101_scenario1_a_fast_bounce_loses_an_acknowledged_write_before_kip101_only():
    # KIP-101 scenario 1: a follower restarts before the controller noticed, truncates to its
    # lagging HW when it follows the leader again, then is elected once the leader fails
    scope = KIP101_SCENARIO1
    props = [BY_ID["StrongIsr"], BY_ID["NoLostAckedWrite"]]
    config = ModelConfig(protocol="hw-truncation")
    result = explore(config, scope, props)
    assert {v.property for v in result.violations} == {"StrongIsr", "NoLostAckedWrite"}
    lost = next(v for v in result.violations if v.property == "NoLostAckedWrite")
    assert {"step": "restart", "replica": 1} in lost.trace and {"step": "fence", "replica": 1} not in lost.trace
    for v in result.violations:
        check_trace(config, v)
    assert explore(ModelConfig(protocol="kip-101"), scope, props).violations == []


def test_history_properties_are_checked_on_consumer_reads():
    # KIP-320's OFFSET_NOT_AVAILABLE keeps a new leader's lagging HW from consumers; kip-279
    # shows it, so consumers see the high watermark go back
    found = explore(ModelConfig(protocol="kip-279"), WITH_READS, [BY_ID["MonotonicHighWatermark"]], stop_at_first=True)
    assert [v.property for v in found.violations] == ["MonotonicHighWatermark"]
    check_trace(ModelConfig(protocol="kip-279"), found.violations[0])
    clean = explore(ModelConfig(protocol="kip-320"), WITH_READS)
    assert clean.complete and clean.violations == []


def test_unclean_election_loses_an_acknowledged_write():
    config = ModelConfig(protocol="kip-320", unclean_leader_election_enable=True)
    result = explore(
        config, UNCLEAN_SCOPE, [BY_ID["NoLostAckedWrite"], BY_ID["StrongIsr"]], stop_at_first=True, budgets=False
    )
    assert result.violations and result.violations[0].property in ("NoLostAckedWrite", "StrongIsr")
    check_trace(config, result.violations[0])
    assert outside_budget(config, result.violations[0]) == "unclean leader election is enabled"
    run = replay(config, result.violations[0].trace)
    assert run.states[-1].controller.isr == (run.states[-1].controller.leader,)  # elected outside the ISR
    # the same two-replica cluster with and without unclean election: the loss is outside the
    # budget, reported as such and not as a violation
    scope = Scope(max_records=1, max_epoch=4, max_crashes=2)
    props = [BY_ID["NoLostAckedWrite"]]
    unclean = explore(
        ModelConfig(protocol="kip-320", replicas=2, min_insync_replicas=1, unclean_leader_election_enable=True),
        scope,
        props,
    )
    assert unclean.violations == [] and [b.property for b in unclean.beyond_budget] == ["NoLostAckedWrite"]
    clean = explore(ModelConfig(protocol="kip-320", replicas=2, min_insync_replicas=1), scope, props)
    assert clean.complete and clean.violations == [] and clean.beyond_budget == []


@pytest.mark.slow
def test_clean_election_keeps_acknowledged_writes_in_the_unclean_scope():
    result = explore(ModelConfig(protocol="kip-320"), UNCLEAN_SCOPE, [BY_ID["NoLostAckedWrite"], BY_ID["StrongIsr"]])
    assert result.complete and result.violations == []


def test_min_isr_power_losses_lose_an_acknowledged_write_and_fewer_do_not():
    # two replicas, min ISR 2, every crash a power loss: the write is on both, so losing it takes
    # min ISR = 2 power losses
    config = ModelConfig(protocol="kip-320", replicas=2, min_insync_replicas=2)
    within = explore(
        config, Scope(max_records=1, max_crashes=2, max_power_losses=1, crash_kinds=()), [BY_ID["NoLostAckedWrite"]]
    )
    assert within.complete and within.violations == []
    beyond = explore(
        config, Scope(max_records=1, max_crashes=2, max_power_losses=2, crash_kinds=()), [BY_ID["NoLostAckedWrite"]]
    )
    assert beyond.complete and beyond.violations == []
    assert [b.property for b in beyond.beyond_budget] == ["NoLostAckedWrite"]
    check_trace(config, beyond.beyond_budget[0])
    assert sum(s.get("kind") == "power" for s in beyond.beyond_budget[0].trace) == 2
    assert (
        beyond.beyond_budget[0].reason
        == outside_budget(config, beyond.beyond_budget[0])
        == ("brokers 0, 1 lost data (power loss or lost disk); the budget allows at most min.insync.replicas - 1 = 1")
    )


@pytest.mark.slow  # 45 to 95 s of exploration; the budgets' own tests run by default
def test_within_the_fault_budget_no_acknowledged_write_is_lost():
    # three replicas, two crashes of which one a power loss, unclean election off, leaving out
    # the two cases Kafka itself loses data in (the next two tests)
    scope = Scope(max_records=1, max_crashes=2, max_power_losses=1, exclude_known_losses=True)
    result = explore(ModelConfig(protocol="kip-320"), scope, [BY_ID["NoLostAckedWrite"], BY_ID["StrongIsr"]])
    assert result.complete and result.violations == []
    assert result.states > 10_000


def test_kip903_isr_expansion_on_a_pre_restart_leo():
    # KAFKA-14139: the leader proposes a follower for the ISR on the LEO it fetched before it lost
    # power; the controller accepts once the follower restarted, with a shorter log
    config = ModelConfig(protocol="kip-320")
    scope = KAFKA_14139
    result = explore(config, scope, [BY_ID["StrongIsr"]], stop_at_first=True, budgets=False)
    assert [v.property for v in result.violations] == ["StrongIsr"]
    check_trace(config, result.violations[0])
    assert "stale-isr-expansion" in outside_budget(config, result.violations[0])
    steps = [(s["step"], s.get("kind")) for s in result.violations[0].trace]
    assert steps.index(("crash", "power")) < steps.index(("expand_isr", None)) < steps.index(("restart", None))
    assert steps[-1] == ("handle_alter_partition", None)
    fixed = explore(
        config, Scope(max_records=1, max_crashes=1, max_power_losses=1, exclude_known_losses=True), [BY_ID["StrongIsr"]]
    )
    assert fixed.complete and fixed.violations == []


def test_last_replica_standing_loses_an_acknowledged_write_with_one_power_loss():
    # KIP-966's motivating case: the ISR shrinks to one member that lost its unflushed data
    config = ModelConfig(protocol="kip-320", replicas=2, min_insync_replicas=2)
    scope = LAST_REPLICA_STANDING
    result = explore(config, scope, [BY_ID["NoLostAckedWrite"]], stop_at_first=True, budgets=False)
    assert [v.property for v in result.violations] == ["NoLostAckedWrite"]
    check_trace(config, result.violations[0])
    assert "last-replica-standing" in outside_budget(config, result.violations[0])
    run = replay(config, result.violations[0].trace)
    assert sum(s.get("kind") == "power" for s in result.violations[0].trace) == 1
    lost = next(
        i for i, s in enumerate(run.states) if len(s.controller.isr) == 1 and s.replicas[s.controller.isr[0]].power_lost
    )
    assert lost > 0  # the sole ISR member is the one that lost power
    fixed = explore(
        config,
        Scope(max_records=1, max_crashes=2, max_power_losses=1, exclude_known_losses=True),
        [BY_ID["NoLostAckedWrite"]],
    )
    assert fixed.complete and fixed.violations == []


@pytest.mark.parametrize(
    "scope",
    [
        Scope(max_records=1, max_epoch=2, max_crashes=1, consumes=False, flushes=False),
        # the disk faults that read the fsynced length and the HW checkpoint after the crashes and
        # power losses are spent: a failed fsync or write, a corruption under a live broker
        Scope(
            max_records=1,
            max_epoch=1,
            max_crashes=0,
            max_power_losses=0,
            consumes=True,
            flushes=True,
            max_disk_failures=1,
            max_fsync_failures=1,
            max_live_corruptions=1,
        ),
    ],
    ids=["default", "disk"],
)
def test_state_keys_merge_only_states_with_the_same_future(scope):
    config = ModelConfig(protocol="kip-320")
    s = initial_state(config)
    seen = {}
    frontier = [s]

    def next_keys(state):
        return {state_key(scope, t) for _steps, t, _inside in successors(config, scope, state)}

    for _depth in range(8):
        nxt = []
        for state in frontier:
            for _steps, t, _inside in successors(config, scope, state):
                key = state_key(scope, t)
                if key in seen:
                    other = seen[key]
                    # same key: the same property verdicts, and one step leads to the same keys
                    # (delivering an ignored LeaderAndIsr leads back to the key itself)
                    assert [p.check(t) for p in PROPERTIES] == [p.check(other) for p in PROPERTIES]
                    assert next_keys(t) - {key} == next_keys(other) - {key}
                else:
                    seen[key] = t
                    nxt.append(t)
        frontier = nxt
    assert len(seen) > 100


def test_exploration_is_deterministic_across_hash_seeds():
    code = (
        "import json; from isrcheck.model import *; r = explore(ModelConfig(protocol='hw-truncation'), "
        "Scope(max_records=1, max_epoch=2, max_crashes=1, consumes=False, flushes=False)); "
        "print(json.dumps([r.states, r.transitions, [v.to_json() for v in r.violations]]))"
    )
    outs = []
    for seed in ("1", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        outs.append(
            subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
        )
    assert outs[0] == outs[1]
    assert json.loads(outs[0])[2]


def test_cli_json_and_exit_codes():
    base = [
        sys.executable,
        "-m",
        "isrcheck.conformance.cli.main",
        "explore",
        "--max-records",
        "1",
        "--max-crashes",
        "1",
        "--max-epoch",
        "2",
    ]
    bad = subprocess.run(base + ["--protocol", "kip-999"], capture_output=True, text=True)
    assert bad.returncode == 2 and "unknown protocol" in bad.stderr and "Traceback" not in bad.stderr
    bad = subprocess.run(base + ["--protocol", "kip-320", "--min-isr", "4"], capture_output=True, text=True)
    assert bad.returncode == 2 and "min_insync_replicas" in bad.stderr
    ok = subprocess.run(base + ["--protocol", "kip-320", "--json"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    doc = json.loads(ok.stdout)
    assert set(doc) >= {"protocol", "scope", "states", "depth", "complete", "seconds", "violations"}
    assert doc["complete"] and doc["violations"] == [] and doc["protocol"] == "kip-320"
    found = subprocess.run(
        base + ["--protocol", "hw-truncation", "--property", "StrongIsr"], capture_output=True, text=True
    )
    assert found.returncode == 1
    assert "StrongIsr violated" in found.stdout and "deliver_leader_and_isr" in found.stdout


def test_cli_saves_counterexamples_as_schedules(tmp_path):
    from isrcheck.conformance.core.schedule import load_schedule

    cmd = [
        sys.executable,
        "-m",
        "isrcheck.conformance.cli.main",
        "explore",
        "--protocol",
        "hw-truncation",
        "--max-records",
        "1",
        "--max-crashes",
        "1",
        "--max-epoch",
        "2",
        "--property",
        "StrongIsr",
        "--json",
        "--save",
        str(tmp_path / "out"),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    trace = json.loads(done.stdout)["violations"][0]["trace"]
    schedule = load_schedule(tmp_path / "out" / "hw-truncation-StrongIsr.json")
    assert schedule.protocol == "hw-truncation" and [dict(s) for s in schedule.steps] == trace
    assert not BY_ID["StrongIsr"].check(replay(ModelConfig(protocol="hw-truncation"), schedule.steps).states[-1])


def test_saved_counterexamples_expect_their_property_and_check_reports_it(tmp_path):
    """Both ISR properties fail at the last step of StrongIsr's shortest trace: the saved file
    expects StrongIsr, and check names it, so the file enters a corpus as saved."""
    from isrcheck.conformance.core.schedule import load_schedule

    cli = [sys.executable, "-m", "isrcheck.conformance.cli.main"]
    done = subprocess.run(
        cli
        + [
            "explore",
            "--protocol",
            "hw-truncation",
            "--max-records",
            "1",
            "--max-crashes",
            "1",
            "--max-epoch",
            "2",
            "--save",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1, done.stderr
    for prop in ("StrongIsr", "WeakIsr"):
        path = tmp_path / f"hw-truncation-{prop}.json"
        assert load_schedule(path).expected["hw-truncation"].to_json() == {"verdict": "violation", "property": prop}
        check = subprocess.run(cli + ["check", str(path), "--expected"], capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr
        assert f"[hw-truncation]: violation of {prop} at step" in check.stdout
        assert f"expected: violation of {prop} -> as expected" in check.stdout


def test_a_counterexample_that_fails_earlier_on_another_property_expects_what_replays(tmp_path):
    """A trace on which another property fails first (one left out by --property) is saved
    expecting that failure, and says so."""
    from types import SimpleNamespace

    from isrcheck.conformance.cli.explore import _save
    from isrcheck.conformance.core.schedule import load_schedule
    from isrcheck.model.explorer import Violation

    config = ModelConfig(protocol="hw-truncation")
    (weak,) = explore(config, Scope(max_records=1, max_crashes=1, max_epoch=2), [BY_ID["WeakIsr"]]).violations
    claimed = Violation("LeaderCompleteness", weak.depth, weak.trace)
    _save(str(tmp_path), config, SimpleNamespace(violations=[claimed]))
    schedule = load_schedule(tmp_path / "hw-truncation-LeaderCompleteness.json")
    assert schedule.expected["hw-truncation"].to_json() == {"verdict": "violation", "property": "WeakIsr"}
    assert schedule.description.endswith(f"replayed with every property: violation of WeakIsr at step {weak.depth - 1}")


@pytest.mark.slow  # 50 to 110 s of exploration
def test_broker_epochs_and_elr_close_the_two_losses_kafka_had():
    # KAFKA-14139's scope: StrongIsr breaks on kip-320 only; Last Replica Standing's scope: the
    # acknowledged write is lost on kip-320 and kip-903, not on kip-966 (KIP-903, KIP-966). kip-966
    # breaks ElrCompleteness there only by the loss Kafka 4.x keeps: an ISR expansion counting a Fetch
    # a follower's earlier incarnation sent before it registered (broker epoch -1), from before it lost power
    stale = KAFKA_14139
    lrs = LAST_REPLICA_STANDING
    two = {"replicas": 2, "min_insync_replicas": 2}
    for protocol, stale_breaks, lrs_loss in (
        ("kip-320", True, "last-replica-standing"),
        ("kip-903", False, "last-replica-standing"),
        ("kip-966", False, "unregistered-stale-isr-expansion"),
    ):
        result = explore(ModelConfig(protocol=protocol), stale, [BY_ID["StrongIsr"]], budgets=False)
        assert result.complete and bool(result.violations) == stale_breaks, protocol
        result = explore(
            ModelConfig(protocol=protocol, **two),
            lrs,
            [BY_ID["NoLostAckedWrite"], BY_ID["LeaderCompleteness"], BY_ID["ElrCompleteness"]],
            budgets=False,
        )
        assert result.complete and result.violations, protocol
        check_trace(ModelConfig(protocol=protocol, **two), result.violations[0])
        assert lrs_loss in outside_budget(ModelConfig(protocol=protocol, **two), result.violations[0])


class _Recorder:
    """A state (or replica) that notes the fields a property reads ("logs" for a replica's log)."""

    def __init__(self, obj, seen: set, replica: bool = False):
        self._obj, self._seen, self._replica = obj, seen, replica

    def __getattr__(self, name):
        value = getattr(self._obj, name)
        if self._replica:
            self._seen.add("logs" if name == "log" else "replicas")
        elif name == "replicas":
            return tuple(_Recorder(r, self._seen, replica=True) for r in value)
        else:
            self._seen.add(name)
        return value


@pytest.mark.parametrize("protocol", ["kip-320", "kip-966"])
def test_properties_read_only_what_they_declare(protocol):
    # the explorer skips a property where what it declares it reads is unchanged from a parent
    # that passed it: a property reading more than it declares would go unchecked there
    config = ModelConfig(protocol=protocol)
    for s in reachable_states(config, WITH_READS, max_states=2000):
        for p in PROPERTIES:
            seen: set = set()
            p.check(_Recorder(s, seen))
            declared = set(p.reads) | ({"logs"} if "replicas" in p.reads else set())  # a log is in its replica
            assert seen <= declared, (p.id, seen - declared)


@pytest.mark.parametrize(
    "protocol,scope",
    [
        ("hw-truncation", Scope(max_records=1, max_epoch=3, max_crashes=1)),
        ("hw-truncation", WITH_READS),
        ("kip-966", Scope(max_records=2, max_epoch=2, max_crashes=1, max_power_losses=1, max_disk_losses=1)),
    ],
)
def test_skipping_unchanged_property_checks_finds_what_checking_every_state_finds(protocol, scope):
    config = ModelConfig(protocol=protocol, replicas=2, min_insync_replicas=1)
    every = [dataclasses.replace(p, reads=None) for p in PROPERTIES]  # unknown reads: always checked
    fast, full = explore(config, scope, symmetry=False), explore(config, scope, every, symmetry=False)
    assert (fast.states, fast.transitions) == (full.states, full.transitions)
    assert [v.to_json() for v in fast.violations] == [v.to_json() for v in full.violations]
    assert [b.to_json() for b in fast.beyond_budget] == [b.to_json() for b in full.beyond_budget]
    assert fast.violations or fast.beyond_budget  # something to find


def test_exploring_leaves_no_cycles_behind_for_the_collector_it_turns_off():
    """``explore`` runs with Python's cycle collector off: its states, frontier and traces are freed
    by reference counting alone, with a violation found or not, so a gate or a test session
    exploring scope after scope holds no garbage; and the collector is back on afterwards."""
    import gc

    scope = SMALL
    gc.collect()
    found = [explore(ModelConfig(protocol=p), scope).violations != [] for p in ("hw-truncation", "kip-320")]
    assert found == [True, False] and gc.isenabled()
    assert gc.collect() == 0
