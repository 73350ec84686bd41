"""Model and implementation in lockstep: the scenarios' expected verdicts, the explorer's
counterexamples replayed on the implementation, and random crash schedules without divergence."""

from pathlib import Path

import pytest

from isrcheck.conformance import Lockstep, Schedule, load_schedule, random_walk, run_schedule
from isrcheck.conformance.core.schedule import ScheduleConfig
from isrcheck.model import ModelConfig, Scope, explore, replay
from isrcheck.specs import BY_ID

PROTOCOLS = ("hw-truncation", "kip-101", "kip-279", "kip-320", "kip-903", "kip-966")
# histories a later fix makes impossible: on those variants some of their steps are refused
PREVENTED_FROM = {
    "kafka-14139-replaced-disk": "kip-903",
    "last-replica-standing": "kip-966",
    "kip101-scenario1": "kip-903",  # its fast bounce: from kip-903 on the old session is fenced first
    "kip101-scenario2": "kip-966",
}


def test_the_known_stories_are_all_there(scenario_files):
    names = {p.stem for p in scenario_files}
    assert {
        "kip101-scenario1",
        "kip101-scenario2",
        "kip279-fast-leader-change",
        "kip320-stale-fetch",
        "last-replica-standing",
        "unclean-election-loss",
        "acks1-loss-on-leader-change",
    } <= names
    assert sum(n.startswith("healthy-") for n in names) >= 3


def test_scenario_gives_its_expected_verdict_on_every_protocol(scenario_file):
    schedule = load_schedule(scenario_file)
    assert set(schedule.expected) == set(PROTOCOLS)
    for protocol, expected in sorted(schedule.expected.items()):
        run = Lockstep.run(schedule.with_protocol(protocol))
        verdict, refused = run.verdict, list(run.refused)
        assert (verdict.kind, verdict.property) == (expected.verdict, expected.property), (
            protocol,
            verdict.summary(),
            verdict.diff,
        )
        fixed = PREVENTED_FROM.get(scenario_file.stem)
        if fixed is None or PROTOCOLS.index(protocol) < PROTOCOLS.index(fixed):
            assert refused == [], (protocol, refused)  # the scenario passes check --strict


def test_the_epoch_kips_fix_what_they_claim_to_fix(scenario):
    """Each KIP's scenario fails on the variants before it and passes from it on."""
    first_fixed = {
        "kip101-scenario1": "kip-101",
        "kip101-scenario2": "kip-101",
        "kip279-fast-leader-change": "kip-279",
        "kip320-stale-fetch": "kip-320",
        "kafka-14139-replaced-disk": "kip-903",
        "last-replica-standing": "kip-966",
    }
    for name, fixed_in in first_fixed.items():
        schedule = load_schedule(scenario(name))
        verdicts = {p: run_schedule(schedule.with_protocol(p)) for p in PROTOCOLS}
        # before the fix: a violation, or (for the losses Kafka documents) a failure outside the
        # budget that names the loss; from the fix on, nothing fails at all
        before = verdicts[PROTOCOLS[PROTOCOLS.index(fixed_in) - 1]]
        assert before.kind == "violation" or any(
            "a loss this variant suffers by design" in why for _p, _i, why in before.beyond_budget
        ), name
        assert all(
            verdicts[p].kind == "pass" and not verdicts[p].beyond_budget for p in PROTOCOLS[PROTOCOLS.index(fixed_in) :]
        ), name


def _fetch_round(r: int) -> list[dict]:
    return [{"step": s, "replica": r} for s in ("send_fetch", "handle_fetch", "handle_fetch_response")]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_both_sides_refuse_to_expand_the_isr_to_a_follower_that_never_fetched(protocol):
    """The leader of a new partition knows no follower's LEO (Kafka's ReplicaState.Empty): a follower
    shrunk out before its first Fetch is not proposed back, by model and implementation alike,
    until it fetches; then the expansion commits."""
    run = Lockstep(protocol, ScheduleConfig())
    expand = {"step": "expand_isr", "replica": 0}
    commit = [
        {"step": "handle_alter_partition", "replica": 0},
        {"step": "handle_alter_partition_response", "replica": 0},
    ]
    steps = [{"step": "tick"}] * 3 + _fetch_round(1) + [{"step": "shrink_isr", "replica": 0}] + commit + [expand]
    for st in steps:
        assert run.step(st) is None, run.verdict().diff
    assert run.state.controller.isr == (0, 1)
    assert [(i, st.name) for i, st, _reason in run.refused] == [(len(steps) - 1, "expand_isr")]
    for st in _fetch_round(2) + [expand] + commit:
        assert run.step(st) is None, run.verdict().diff
    assert run.state.controller.isr == (0, 1, 2) and run.state.replicas[0].isr == (0, 1, 2)
    assert len(run.refused) == 1 and run.verdict().kind == "pass"


def test_the_expansion_to_a_never_fetched_follower_no_longer_loses_an_acknowledged_write():
    """The explorer's 27-step NoLostAckedWrite counterexample (kip-966, process crashes, one power
    loss), each restart followed by its registration (KRaft's): the stale expansion (step 10) and so
    its AlterPartition (step 24) are refused on every variant, and nothing is lost."""
    schedule = load_schedule(Path(__file__).resolve().parents[1] / "corpus" / "never-fetched-follower-expansion.json")
    assert len(schedule.steps) == 29
    for protocol in PROTOCOLS:
        run = Lockstep.run(schedule.with_protocol(protocol))
        verdict, refused = run.verdict, run.refused
        assert verdict.kind == "pass", (protocol, verdict.summary(), verdict.diff)
        assert [(i, st.name) for i, st, _reason in refused] == [(10, "expand_isr"), (24, "handle_alter_partition")]


def _replay_counterexamples(protocol: str, scope: Scope) -> None:
    config = ModelConfig(protocol=protocol)
    result = explore(config, scope, stop_at_first=True)
    assert result.violations, f"{protocol}: the explorer found no violation in {scope}"
    for violation in result.violations:
        schedule = Schedule.from_json(
            Schedule(protocol, ScheduleConfig.from_json(config.to_schedule()), tuple(violation.trace)).to_json()
        )
        verdict = run_schedule(schedule, properties=[violation.property])
        assert (verdict.kind, verdict.property) == ("violation", violation.property), verdict.diff
        assert verdict.step == len(schedule.steps) - 1  # shortest: it fails at the last step, not before


@pytest.mark.parametrize("protocol", ["hw-truncation", "kip-101", "kip-279"])
def test_explorer_counterexamples_replay_on_the_implementation(protocol):
    _replay_counterexamples(protocol, Scope(max_records=1, max_epoch=2, max_crashes=1, consumes=True))


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["hw-truncation", "kip-101", "kip-279"])
def test_explorer_default_scope_counterexamples_replay_on_the_implementation(protocol):
    _replay_counterexamples(protocol, Scope())


def test_random_crash_schedules_on_kip320_neither_diverge_nor_violate_within_the_budget():
    """A slice of the 10,000-schedule figure (see README): crashes of every kind, message loss,
    leader changes, 100+ steps each."""
    kinds = set()
    for seed in range(60):
        schedule, verdict = random_walk(seed, "kip-320", 110, "default")
        assert verdict.kind == "pass", (seed, verdict.summary(), verdict.diff)
        kinds |= {s.get("kind", s.get("message")) for s in schedule.steps if s["step"] in ("crash", "drop")}
        assert len(schedule.steps) == 110
    assert {"clean", "process", "power", "fetch_request", "fetch_response", "leader_and_isr"} <= kinds


def test_walks_beyond_the_budget_find_the_known_losses():
    """Heavy faults (unclean election, frequent power loss) do break kip-320, as Kafka would, and
    only outside the properties' fault budgets: reported as such, never as violations."""
    found = set()
    for seed in range(40):
        _, verdict = random_walk(seed, "kip-320", 150, "heavy")
        assert verdict.kind == "pass", verdict.summary()
        found |= {p for p, _i, _why in verdict.beyond_budget}
    assert "LeaderCompleteness" in found


@pytest.mark.slow
def test_random_crash_schedules_many():
    for seed in range(1000):
        _, verdict = random_walk(seed, "kip-320", 120, "default")
        assert verdict.kind == "pass", (seed, verdict.summary(), verdict.diff)


def test_explore_replay_on_impl_adds_the_implementation_verdict(capsys):
    import json

    from isrcheck.conformance.cli.main import main

    code = main(
        [
            "explore",
            "--protocol",
            "hw-truncation",
            "--max-records",
            "1",
            "--max-crashes",
            "1",
            "--stop-at-first",
            "--replay-on-impl",
            "--json",
        ]
    )
    assert code == 1
    violations = json.loads(capsys.readouterr().out)["violations"]
    assert violations and all(
        (v["impl_verdict"], v["impl_property"]) == ("violation", v["property"]) for v in violations
    )


def _both_isr_properties_fail_at_the_last_step():
    """hw-truncation's shortest StrongIsr counterexample: WeakIsr fails at its last step too."""
    config = ModelConfig(protocol="hw-truncation")
    (violation,) = explore(config, Scope(max_records=1, max_crashes=1, max_epoch=2), [BY_ID["StrongIsr"]]).violations
    return Schedule("hw-truncation", ScheduleConfig.from_json(config.to_schedule()), tuple(violation.trace))


@pytest.mark.parametrize(
    "expected, reported",
    [
        (None, "WeakIsr"),  # the first failing property in specs order
        ("StrongIsr", "StrongIsr"),  # the expected one, as it fails at that step too
        ("WeakIsr", "WeakIsr"),
        ("NoLostAckedWrite", "WeakIsr"),  # expected, but it does not fail there: the first one
    ],
)
def test_a_violation_names_the_expected_property_among_those_failing_at_its_step(expected, reported):
    from isrcheck.conformance.core.schedule import Expected

    found = _both_isr_properties_fail_at_the_last_step()
    schedule = Schedule(
        found.protocol,
        found.config,
        found.steps,
        {} if expected is None else {"hw-truncation": Expected("violation", expected)},
    )
    for verdict in (
        run_schedule(schedule),
        run_schedule(schedule, impl=False),
        Lockstep.run(schedule, record=True).verdict,
    ):
        assert (verdict.kind, verdict.property, verdict.step) == ("violation", reported, len(found.steps) - 1)


def test_skipping_invariants_whose_reads_a_step_left_alone_finds_what_checking_every_step_finds(
    monkeypatch, scenario_files
):
    """The runner checks an invariant only after a step that changed what it reads; checking
    every invariant after every step (every part taken as changed) gives the same verdicts, the
    same failures outside their budgets and the same trace hashes, violations included."""
    from isrcheck.conformance.core import lockstep
    from isrcheck.model.reads import EVERYTHING

    schedules = [
        random_walk(seed, protocol, 120, faults, impl=False)[0]
        for protocol, faults in (("kip-101", "heavy"), ("kip-320", "all"))
        for seed in range(25)
    ]
    schedules += [load_schedule(f).with_protocol(p) for f in scenario_files for p in PROTOCOLS]
    skipping = [run_schedule(s, impl=False) for s in schedules]
    monkeypatch.setattr(lockstep, "changed_parts", lambda before, after: EVERYTHING)
    every = [run_schedule(s, impl=False) for s in schedules]
    assert skipping == every
    assert sum(v.kind == "violation" for v in every) >= 5 and sum(bool(v.beyond_budget) for v in every) >= 5


def test_one_run_records_frames_refusals_and_rejects_bad_steps_as_a_verdict(scenario):
    """``Lockstep.run`` is the one loop: recorded or not it reaches the same verdict, its frames
    are the states the run held, and a step the model rejects makes an invalid schedule, recorded
    or not (a recorded run used to raise)."""
    schedule = load_schedule(scenario("kip101-scenario1")).with_protocol("hw-truncation")
    plain, recorded = Lockstep.run(schedule), Lockstep.run(schedule, record=True)
    assert plain.verdict == recorded.verdict and plain.frames is None and plain.initial is None
    assert [f.index for f in recorded.frames] == list(range(recorded.verdict.step + 1))
    assert [f.step for f in recorded.frames] == list(schedule.steps[: len(recorded.frames)])
    bad = Schedule(schedule.protocol, schedule.config, ({"step": "no_such_step"},))
    for record in (False, True):
        run = Lockstep.run(bad, record=record)
        assert run.verdict.kind == "invalid-schedule" and "no_such_step" in run.verdict.diff


def test_an_orphan_fetch_keeps_its_leader_when_the_next_process_reuses_its_correlation_id():
    """Found by fuzz (kip-320, seed 1491): a follower's two fetches become orphans when its disk
    fails; its next process numbers its requests from 1 again, and its first fetch shares an
    orphan's correlation id. The implementation's report gave the orphan the new fetch's leader
    and leader epoch (a divergence at the send_fetch); each request keeps its own."""
    steps = (
        {"step": "send_fetch", "replica": 2},
        {"step": "elect", "replica": 1},
        {"step": "deliver_leader_and_isr", "replica": 2, "index": 0},
        {"step": "send_fetch", "replica": 2},
        {"step": "fail_disk", "replica": 2, "io": "write:ENOSPC"},
        {"step": "restart", "replica": 2},
        {"step": "elect", "replica": 0},
        {"step": "deliver_leader_and_isr", "replica": 2, "index": 1},
        {"step": "send_fetch", "replica": 2, "max_batches": 2},
    )
    config = {"replicas": 3, "min_insync_replicas": 2, "request_timeout_ticks": 6}
    schedule = Schedule.from_json(
        {"format": "isrcheck-schedule", "version": 1, "protocol": "kip-320", "config": config, "steps": list(steps)}
    )
    assert run_schedule(schedule).kind == "pass"
    queue = replay(ModelConfig(protocol="kip-320", **config), list(steps)).states[-1].fetch_requests[2]
    assert [(m.leader, m.leader_epoch, m.orphan) for m in queue] == [(0, 0, True), (1, 1, True), (0, 2, False)]


def test_an_expansion_names_the_follower_it_adds_on_both_sides():
    """``expand_isr`` with a follower proposes that one alone (Kafka's maybeExpandIsr adds the
    follower whose Fetch it handles); the model and the implementation agree, and refuse a member."""
    run = Lockstep("kip-966", ScheduleConfig(replicas=3, min_insync_replicas=1))
    shrink = [{"step": "tick"}] * 3 + [{"step": "shrink_isr", "replica": 0}]
    answer = [
        {"step": "handle_alter_partition", "replica": 0},
        {"step": "handle_alter_partition_response", "replica": 0},
    ]
    for st in shrink + answer + _fetch_round(1) + _fetch_round(2):
        assert run.step(st) is None, run.verdict().diff
    assert run.step({"step": "expand_isr", "replica": 0, "follower": 0}) is None  # refused by both sides
    assert run.refused[-1][2] == "follower 0 is in the ISR or has not caught up to the high watermark"
    assert run.step({"step": "expand_isr", "replica": 0, "follower": 2}) is None, run.verdict().diff
    assert run.state.replicas[0].pending_isr == (0, 2)
    for st in answer:
        assert run.step(st) is None, run.verdict().diff
    assert run.state.controller.isr == (0, 2) and run.verdict().kind == "pass"


@pytest.mark.parametrize("protocol", ["kip-320", "kip-903", "kip-966"])
def test_both_sides_forget_a_proposal_on_a_partition_change_in_its_epoch_from_kip_903_on(protocol):
    """KRaft's partition state (docs/steps.md): a fence's partition change, applied by the leader in
    its own epoch, forgets the expansion in flight (kip-903 on); its AlterPartition still awaits an
    answer, so a new proposal is refused on both sides until that answer is handled (and ignored)."""
    run = Lockstep(protocol, ScheduleConfig())
    expand = {"step": "expand_isr", "replica": 0, "follower": 2}
    steps = (
        [{"step": "tick"}] * 3
        + _fetch_round(1)
        + [{"step": "shrink_isr", "replica": 0}]
        + [{"step": "handle_alter_partition", "replica": 0}, {"step": "handle_alter_partition_response", "replica": 0}]
        + _fetch_round(2)
        + [expand, {"step": "crash", "replica": 1, "kind": "process"}, {"step": "fence", "replica": 1}]
        + [{"step": "deliver_leader_and_isr", "replica": 0, "index": 0}, expand]
        + [{"step": "handle_alter_partition", "replica": 0}, {"step": "handle_alter_partition_response", "replica": 0}]
    )
    for st in steps:
        assert run.step(st) is None, run.verdict().diff
    forgot = protocol != "kip-320"
    assert [st.name for _i, st, _reason in run.refused] == ["expand_isr"]
    assert run.state.replicas[0].pending_isr is None and run.state.replicas[0].isr == (0,)
    assert ("awaits its answer" in run.refused[0][2]) == forgot
    assert run.step(expand) is None and run.state.replicas[0].pending_isr == (0, 2)
    assert run.verdict().kind == "pass"


@pytest.mark.parametrize("detection", ["page-cache", "clean-shutdown-file"])
def test_a_clean_shutdown_before_registering_after_a_power_loss_stays_unclean_on_both_sides(detection):
    # docs/steps.md, crash: the shutdown writes broker epoch -1, so the next registration is unclean still
    steps = [
        {"step": "crash", "replica": 0, "kind": "power"},
        {"step": "restart", "replica": 0},
        {"step": "crash", "replica": 0, "kind": "clean"},
    ]
    schedule = Schedule("kip-966", ScheduleConfig(unclean_shutdown_detection=detection), tuple(steps), name="x")
    verdict = run_schedule(schedule)
    assert verdict.kind == "pass", verdict.diff
    run = Lockstep("kip-966", ScheduleConfig(unclean_shutdown_detection=detection))
    for st in steps:
        assert run.step(st) is None
    assert run.state.replicas[0].unclean_shutdown
