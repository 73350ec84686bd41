"""Fault budgets: the ledger a run keeps, each budget's verdict on it, and how the runner reports a
property that breaks outside its budget (never as a violation, never in silence)."""

from __future__ import annotations

import collections

from isrcheck.conformance.core.lockstep import Lockstep, run_schedule
from isrcheck.conformance.core.schedule import ScheduleConfig, load_schedule
from isrcheck.conformance.generators.walk import random_walk
from isrcheck.model import ModelConfig, Step, apply, initial_state
from isrcheck.model.budget import EMPTY_LEDGER, FaultLedger
from isrcheck.specs import PROPERTIES
from isrcheck.specs.budgets import CONVERGENCE, DURABILITY, DURABLE_LOGS, EVERY_FAULT, QUORUM, READS


def ledger_of(protocol: str, steps, **config) -> FaultLedger:
    cfg = ModelConfig(protocol=protocol, **config)
    state, ledger = initial_state(cfg), EMPTY_LEDGER
    for raw in steps:
        st = Step.from_json(raw)
        if st.name == "register" and not cfg.rules.start_before_registration:
            continue  # the restart registered (before kip-903): the harness takes the step as done
        after, _ = apply(cfg, state, st)
        ledger, state = ledger.after(state, st, after), after
    return ledger


def fetch_round(r: int) -> list[dict]:
    return [{"step": s, "replica": r} for s in ("send_fetch", "handle_fetch", "handle_fetch_response")]


def test_every_property_has_a_budget_with_its_source():
    assert {p.id: p.budget for p in PROPERTIES} == {
        "LeaderInIsr": EVERY_FAULT,
        "WeakIsr": DURABLE_LOGS,
        "StrongIsr": CONVERGENCE,
        "LogMatching": CONVERGENCE,
        "HighWatermarkBound": EVERY_FAULT,
        "ReplicationQuorumSuperset": QUORUM,
        "ElrCompleteness": READS,
        "NoLostAckedWrite": DURABILITY,
        "LeaderCompleteness": READS,
        "NoDivergentRead": READS,
        "MonotonicHighWatermark": READS,
        "NoUncommittedRead": READS,
        "NoDuplicateOffsets": EVERY_FAULT,
    }
    assert "KIP-966" in DURABILITY.source and "KIP-101" in CONVERGENCE.source and "KIP-320" in READS.source


def test_the_ledger_counts_brokers_that_lost_data_once_each_and_nothing_else():
    crash = [{"step": "crash", "replica": 1, "kind": "process"}, {"step": "restart", "replica": 1}]
    assert ledger_of("kip-320", crash) == EMPTY_LEDGER  # a process crash keeps the page cache
    power = [
        {"step": "crash", "replica": 1, "kind": "power"},
        {"step": "lose_disk", "replica": 1},
        {"step": "restart", "replica": 1},
        {"step": "crash", "replica": 2, "kind": "power"},
    ]
    assert ledger_of("kip-320", power).losers == (1, 2)


def test_budgets_name_what_took_the_run_outside_them():
    config = ScheduleConfig(replicas=3, min_insync_replicas=2)
    one, two = FaultLedger(losers=(1,)), FaultLedger(losers=(0, 2))
    assert DURABILITY.exceeded(one, config) is None and CONVERGENCE.exceeded(two, config) is None
    assert DURABILITY.exceeded(two, config) == (
        "brokers 0, 2 lost data (power loss or lost disk); the budget allows at most min.insync.replicas - 1 = 1"
    )
    assert DURABLE_LOGS.exceeded(one, config) == "broker 1 lost data (power loss or lost disk); the budget allows none"
    assert (
        EVERY_FAULT.exceeded(
            FaultLedger((0, 1, 2), True, ("last-replica-standing",)),
            ScheduleConfig(unclean_leader_election_enable=True),
        )
        is None
    )
    assert (
        DURABILITY.exceeded(EMPTY_LEDGER, ScheduleConfig(unclean_leader_election_enable=True))
        == "unclean leader election is enabled"
    )
    stale = FaultLedger(stale_reads=True)
    assert DURABILITY.exceeded(stale, config) is None and "deposed leader" in READS.exceeded(stale, config)
    # a known loss is outside the budget only on the variants that suffer it, and only for the
    # budgets that name it: Last Replica Standing loses writes but does not make logs diverge
    lrs = FaultLedger(known=("last-replica-standing",))
    kip320, kip966 = (
        ModelConfig(protocol="kip-320").rules.known_losses,
        ModelConfig(protocol="kip-966").rules.known_losses,
    )
    assert "last-replica-standing" in DURABILITY.exceeded(lrs, config, kip320)
    assert DURABILITY.exceeded(lrs, config, kip966) is None and CONVERGENCE.exceeded(lrs, config, kip320) is None


def test_the_ledger_records_the_known_losses_a_run_enters():
    # Last Replica Standing: the ISR shrinks to the leader, which loses power
    lrs = load_schedule("specs/scenarios/last-replica-standing.json")
    assert "last-replica-standing" in ledger_of("kip-320", lrs.steps, replicas=2, min_insync_replicas=2).known
    # a fast bounce after a power loss: restarted before the controller fenced it
    bounce = [
        {"step": "produce", "replica": 0, "acks": -1},
        *fetch_round(1),
        {"step": "crash", "replica": 1, "kind": "power"},
        {"step": "restart", "replica": 1},
    ]
    assert ledger_of("kip-320", bounce).known == ("fast-bounce-after-loss",)
    # a follower shorter than the leader's HW only by hw-truncation's own truncation is no known loss
    scenario1 = load_schedule("specs/scenarios/kip101-scenario1.json")
    assert ledger_of("hw-truncation", scenario1.steps, replicas=2, min_insync_replicas=1) == EMPTY_LEDGER


def test_a_history_property_is_checked_up_to_where_its_budget_ends():
    """KIP-101 scenario 1 loses an acknowledged write within the budget; two power losses after it
    take the run outside the budget, yet the loss is still a violation, at the last step within."""
    scenario = load_schedule("specs/scenarios/kip101-scenario1.json").with_protocol("hw-truncation")
    plain = run_schedule(scenario)
    assert (plain.kind, plain.property) == ("violation", "NoLostAckedWrite")
    later = scenario.with_steps(list(scenario.steps) + [{"step": "crash", "replica": 1, "kind": "power"}])
    verdict = run_schedule(later)
    assert (verdict.kind, verdict.property, verdict.step) == ("violation", "NoLostAckedWrite", len(scenario.steps) - 1)
    assert "the last within its fault budget" in verdict.diff


def test_outside_the_budget_the_run_goes_on_and_says_so():
    run = Lockstep("kip-320", ScheduleConfig(replicas=2, min_insync_replicas=2))
    steps = [
        {"step": "produce", "replica": 0, "acks": -1},
        *fetch_round(1),
        *fetch_round(1),
        {"step": "crash", "replica": 1, "kind": "power"},
        {"step": "crash", "replica": 0, "kind": "power"},
        {"step": "restart", "replica": 0},
        {"step": "restart", "replica": 1},
    ]
    for st in steps:
        assert run.step(st) is None, run.outcome.summary()
    verdict = run.verdict()
    assert verdict.kind == "pass" and "NoLostAckedWrite" in verdict.outside_budget
    assert "WeakIsr" in verdict.outside_budget and "LeaderInIsr" not in verdict.outside_budget


def test_the_all_profile_takes_every_fault_class_and_finds_nothing_on_kip_966():
    seen: collections.Counter = collections.Counter()
    for seed in range(135):  # an HW checkpoint that changes something is rare: 1 or 2 walks in 100 (seed 123 here)
        schedule, verdict = random_walk(seed, "kip-966", 150, "all", impl=False)
        assert verdict.kind == "pass", verdict.summary()
        run = Lockstep("kip-966", schedule.config, impl=False)
        for raw in schedule.steps:
            st = Step.from_json(raw)
            before = run.state
            run.step(st)
            if run.state is before:
                continue  # refused
            if st.name == "crash":
                seen[f"crash:{st.arg}"] += 1
                seen["power loss of an ISR member"] += st.arg == "power" and st.replica in before.controller.isr
                seen["torn write"] += st.torn
            elif st.name == "restart":
                seen["fast bounce"] += st.replica not in before.controller.fenced
            elif st.name == "fence":
                seen["zombie"] += before.replicas[st.replica].alive
            elif st.name == "elect":
                seen["leader move"] += st.replica != -1
            elif st.name == "send_fetch":
                seen["partial fetch"] += st.max_batches > 0
            else:
                seen[st.name] += 1
    wanted = [
        "crash:clean",
        "crash:process",
        "crash:power",
        "power loss of an ISR member",
        "torn write",
        "lose_disk",
        "fast bounce",
        "zombie",
        "leader move",
        "partial fetch",
        "drop",
        "checkpoint_hw",
        "corrupt",
        "corrupt_live",
        "fail_disk",
    ]
    assert [w for w in wanted if not seen[w]] == []
