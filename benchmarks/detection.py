"""Time and schedules to the first violation on the pre-KIP-320 variants, per engine, in one
process each (one core; Spark spreads the same work over more):

    python benchmarks/detection.py [--protocols hw-truncation,kip-101,kip-279] [--budget 120]
                                   [--baseline-budget 600] [--engines cover,fuzz,guided,hypothesis]

- ``cover``: ``isrcheck cover``'s default scope with one power loss, one record and no lost
  message (``--max-records 1 --max-power-losses 1 --max-drops 0``: the default scope itself holds
  no violation of kip-101 or kip-279), its state graph and path cover (their time included), its schedules run in
  order with refused steps (``isrcheck cover``'s executor code);
- ``fuzz``: random walks of 100 steps, fault profile ``default``, seeds 0, 1, 2, ...;
- ``guided``: rounds of 50 schedules as ``isrcheck fuzz --guided`` runs them (round 0 random walks,
  then mutants of the corpus of schedules that reached new coverage, and a share of fresh walks);
- ``hypothesis``: the baseline a user would write: a plain ``RuleBasedStateMachine`` with one rule
  per step kind of the alphabet, fields drawn from their ranges, each step run in lockstep.

Each engine stops at its first violation (a property failing on model and implementation alike)
or after ``--budget`` seconds (the Hypothesis baseline: ``--baseline-budget``, so that a ratio of
10 can be shown); the script prints seconds, schedules run and the property.
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from isrcheck.conformance import random_walk, run_schedule
from isrcheck.conformance.engines.campaign.guided import Corpus
from isrcheck.conformance.engines.cover.command import COVER_SCOPE
from isrcheck.conformance.engines.cover.executor import CoverSpec, run_schedule_of_plan
from isrcheck.conformance.engines.cover.graph import build_graph
from isrcheck.conformance.engines.cover.paths import plan_cover
from isrcheck.conformance.core.lockstep import Lockstep
from isrcheck.conformance.core.schedule import load_config
from isrcheck.conformance.generators.walk import FAULT_PROFILES
from isrcheck.model import ModelConfig
from isrcheck.model.alphabet import FIELDS, STEPS, is_step


DETECTION_SCOPE = replace(COVER_SCOPE, max_records=1, max_power_losses=1, max_drops=0)


def cover(protocol: str, budget: float):
    start = time.perf_counter()
    config = ModelConfig(protocol=protocol)  # isrcheck cover's default config
    plan = plan_cover(build_graph(config, DETECTION_SCOPE))
    # a shrink budget of a millisecond: the time to the finding, not to its minimal form
    spec = CoverSpec("", protocol, config.to_schedule(), tuple(s.to_json() for s in plan.vocabulary), 0.001)
    for i, sched in enumerate(plan.schedules):
        row = run_schedule_of_plan(spec, i, sched)
        if row["verdict"] == "violation":
            return time.perf_counter() - start, i + 1, row["property"]
        if time.perf_counter() - start > budget:
            return None, i + 1, None
    return None, len(plan.schedules), None


def fuzz(protocol: str, budget: float):
    start = time.perf_counter()
    seed = 0
    while time.perf_counter() - start < budget:
        _, verdict = random_walk(seed, protocol, 100, "default")
        seed += 1
        if verdict.kind == "violation":
            return time.perf_counter() - start, seed, verdict.property
    return None, seed, None


def guided(protocol: str, budget: float, per_round: int = 50):
    start = time.perf_counter()
    corpus = Corpus()
    seed = 0
    while time.perf_counter() - start < budget:
        mutants, found = corpus.mutants(), []
        for _ in range(per_round):
            if mutants is None or mutants.explores(seed):
                schedule, verdict = random_walk(seed, protocol, 100, "default")
            else:
                schedule, _ = mutants.child(seed, protocol, 100, "default")
                verdict = run_schedule(schedule)
            seed += 1
            if verdict.kind == "violation":
                return time.perf_counter() - start, seed, verdict.property
            found.append((seed - 1, verdict.coverage, schedule.to_json()))
            if time.perf_counter() - start > budget:
                break
        for row in found:  # parents take effect from the next round on, as on Spark
            corpus.add(*row)
    return None, seed, None


def hypothesis(protocol: str, budget: float):
    """The plain machine: one rule per step kind, every field drawn from its range."""
    config = load_config(dict(FAULT_PROFILES["default"].config))
    start, count, found = time.perf_counter(), [0], []

    def field(name):
        spec = FIELDS[name]
        if spec.values is not None:
            return st.sampled_from(spec.values)
        if name == "replica":
            return st.integers(0, config.replicas - 1)
        return st.integers(spec.low, min(spec.high, 3))

    class Plain(RuleBasedStateMachine):
        def __init__(self):
            super().__init__()
            count[0] += 1
            self.run = Lockstep(protocol, config)

        @invariant()
        def no_violation(self):
            if self.run.outcome is not None and self.run.outcome.kind == "violation":
                found.append(self.run.outcome.property)
                raise AssertionError(self.run.outcome.summary())

    for name, kind in STEPS.items():
        fields = {f: field(f) for f in kind.fields}

        def take(self, step, name=name):
            if self.run.outcome is None:
                self.run.step({"step": name, **step})
        setattr(Plain, f"step_{name}", rule(step=st.fixed_dictionaries(fields).filter(
            lambda d, name=name: is_step({"step": name, **d})))(take))
    # batches of fresh random examples until the first violation or the budget's end
    while not found and time.perf_counter() - start < budget:
        try:
            run_state_machine_as_test(Plain, settings=settings(
                max_examples=20, stateful_step_count=100, deadline=None, database=None,
                phases=[Phase.generate], suppress_health_check=list(HealthCheck)))
        except Exception:  # noqa: BLE001 - the invariant's AssertionError, however Hypothesis wraps it
            if not found:
                raise
    if found:
        return time.perf_counter() - start, count[0], found[0]
    return None, count[0], None


ENGINES = {"cover": cover, "fuzz": fuzz, "guided": guided, "hypothesis": hypothesis}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--protocols", default="hw-truncation,kip-101,kip-279")
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--budget", type=float, default=120.0)
    parser.add_argument("--baseline-budget", type=float, default=600.0)
    args = parser.parse_args()
    for protocol in args.protocols.split(","):
        for engine in args.engines.split(","):
            budget = args.baseline_budget if engine == "hypothesis" else args.budget
            seconds, schedules, prop = ENGINES[engine](protocol, budget)
            when = f"{seconds:.1f} s" if seconds is not None else f"none within {budget:.0f} s"
            print(f"{protocol:14} {engine:10} first violation: {prop or '-':18} {when:>22}, "
                  f"{schedules:,} schedules", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
