"""The shrinker: deliberately broken implementations are caught and shrunk to a handful of steps,
keeping the verdict kind and property; a long failing walk shrinks within seconds."""

import time

import pytest

from isrcheck.conformance import Verdict, load_schedule, random_walk, run_schedule, shrink
from isrcheck.conformance.core.schedule import Schedule
from isrcheck.impl.replication.partition import Partition


def _hw_over_isr_only(monkeypatch):
    """HW advanced over the ISR alone, forgetting a pending expansion (the maximal ISR)."""
    monkeypatch.setattr(Partition, "maximal_isr", property(lambda self: self.isr))


def _follower_hw_uncapped(monkeypatch):
    """Follower HW not capped by its LEO: taken from the fetch response as is, and kept when the
    follower truncates."""
    append, truncate = Partition.append_as_follower, Partition.truncate_to

    def append_as_follower(self, batches, leader_hw):
        append(self, batches, leader_hw)
        self.high_watermark = leader_hw

    def truncate_to(self, offset):
        hw = self.high_watermark
        truncate(self, offset)
        self.high_watermark = hw

    monkeypatch.setattr(Partition, "append_as_follower", append_as_follower)
    monkeypatch.setattr(Partition, "truncate_to", truncate_to)


def _truncation_skipped(monkeypatch):
    """A follower never truncates its log (divergence detection ignored)."""
    monkeypatch.setattr(Partition, "truncate_to", lambda self, offset: None)


def _first_failure(scenario_files):
    """The first known schedule whose kip-320 verdict is not what a correct implementation gives:
    the scenarios (their expected verdicts), then random walks within the fault budget (pass)."""
    for path in scenario_files:
        schedule = load_schedule(path).with_protocol("kip-320")
        expected = schedule.expected["kip-320"]
        verdict = run_schedule(schedule)
        if (verdict.kind, verdict.property) != (expected.verdict, expected.property):
            return schedule, verdict
    for seed in range(100):
        schedule, verdict = random_walk(seed, "kip-320", 60, "default")
        if verdict.kind != "pass":
            return schedule, verdict
    return None, None


# Within the fault budget a follower never truncates below its HW, and a fetch always brings it
# up to the leader's LEO, so an uncapped HW shows only after a double failure with a power loss:
# crash, fence and restart of both replicas alone take 8 steps of the alphabet, 18 in all. A
# pending expansion needs a follower that fetched from the leader in its epoch (until then its
# LEO is unknown), so forgetting it shows only after that fetch: 12 steps.
@pytest.mark.parametrize(
    "breakage, at_most", [(_hw_over_isr_only, 12), (_truncation_skipped, 10), (_follower_hw_uncapped, 18)]
)
def test_a_broken_implementation_is_caught_and_shrunk_to_a_few_steps(monkeypatch, breakage, at_most, scenario_files):
    breakage(monkeypatch)
    schedule, verdict = _first_failure(scenario_files)
    assert schedule is not None, f"{breakage.__doc__} went unnoticed"
    assert verdict.kind == "divergence", verdict.summary()
    small, small_verdict = shrink(schedule, verdict, time_budget_s=15.0)
    assert len(small.steps) <= at_most, small.dumps()
    assert small_verdict.same_failure(verdict)
    assert run_schedule(small) == small_verdict  # the shrunk file replays to the same verdict


def test_shrinking_keeps_kind_and_property_and_is_generic_over_the_runner():
    """With a toy runner the minimal failing schedule is known exactly: ddmin and parameter
    simplification must find it."""
    steps = (
        [{"step": "tick"}] * 30
        + [{"step": "produce", "replica": 2, "acks": 0}]
        + [{"step": "consume", "replica": 1}] * 30
        + [{"step": "crash", "replica": 1, "kind": "power"}]
    )

    def run(s: Schedule) -> Verdict:
        produced = any(st["step"] == "produce" for st in s.steps)
        crashed = any(st["step"] == "crash" for st in s.steps)
        return Verdict("violation", "Toy", len(s.steps) - 1) if produced and crashed else Verdict("pass")

    schedule = Schedule("kip-320", steps=tuple(steps))
    small, verdict = shrink(schedule, run(schedule), time_budget_s=5.0, run=run)
    assert small.steps == (
        {"step": "produce", "replica": 0, "acks": -1},
        {"step": "crash", "replica": 0, "kind": "clean"},
    )
    assert verdict.same_failure(Verdict("violation", "Toy"))


@pytest.mark.slow  # 35 to 75 s; the other shrink tests run by default
def test_long_failing_walks_shrink_within_seconds():
    """Protocol bugs found by 100+ step walks shrink to the size of the explorer's shortest
    counterexamples (15-20 steps: crashes, fencing, elections and deliveries take steps)."""
    shrunk = []

    def on_model(s: Schedule) -> Verdict:  # a protocol bug is the model's: no implementation needed
        return run_schedule(s, impl=False)

    for seed in range(400):
        schedule, verdict = random_walk(seed, "hw-truncation", 200, "none", impl=False)
        if verdict.kind != "violation" or len(schedule.steps) < 100:
            continue
        start = time.monotonic()
        # a budget ample for a loaded 2-core CI machine: shrinking stops as soon as it is done
        small, small_verdict = shrink(schedule, verdict, time_budget_s=30.0, run=on_model)
        assert time.monotonic() - start < 60.0  # the budget, plus one run begun before it ran out
        assert small_verdict.same_failure(verdict)
        shrunk.append((len(schedule.steps), len(small.steps)))
        if len(shrunk) == 2:
            break
    assert len(shrunk) == 2, "fewer than two long hw-truncation counterexamples in 400 walks"
    assert all(after <= max(20, before // 4) for before, after in shrunk), shrunk


def test_a_passing_schedule_is_left_alone():
    schedule, verdict = random_walk(1, "kip-320", 30, "none")
    assert verdict.kind == "pass"
    assert shrink(schedule, verdict) == (schedule, verdict)
