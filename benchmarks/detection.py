"""Time and schedules to the first violation of each property, per engine, in one process each
(one core; Spark spreads the same work over more):

    python benchmarks/detection.py [--protocols kip-101,kip-279,kip-320] [--budget 300]
                                   [--baseline-budget 600] [--engines ...] [--properties StrongIsr,LogMatching]
                                   [--steps 100]

- ``cover``: ``isrcheck cover``'s default scope, its state graph and path cover (their time
  included), its schedules run in order with refused steps (``isrcheck cover``'s executor code);
  ``cover-found``: the same at the scope with one record, one power loss and no lost message
  (``--max-records 1 --max-power-losses 1 --max-drops 0``), where cover finds its first violation;
- ``fuzz`` / ``fuzz-swarm``: random walks of ``--steps`` (100), fault profile ``default``, seeds 0, 1, 2,
  ..., uniform (``--no-swarm``) or swarm walks (``isrcheck fuzz``'s default);
- ``guided`` / ``guided-swarm``: rounds of 250 schedules as ``isrcheck fuzz --guided`` runs them
  (round 0 random walks, then mutants of the corpus weighed by rarity and divergence rungs, and a
  share of fresh walks), without and with swarm walks;
- ``hypothesis``: the baseline a user would write: a plain ``RuleBasedStateMachine`` with one rule
  per step kind of the alphabet, fields drawn from their ranges, each step run in lockstep.

Each engine runs until it has violated every one of ``--properties`` (a property failing on model
and implementation alike; every other property found on the way is printed too) or for
``--budget`` seconds (the Hypothesis baseline: ``--baseline-budget``); the script prints, per
property, the seconds and schedules to its first violation.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from dataclasses import replace

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test

from isrcheck.conformance import random_walk, run_schedule
from isrcheck.conformance.cli.cover import COVER_SCOPE
from isrcheck.conformance.core.lockstep import Lockstep
from isrcheck.conformance.core.schedule import load_config
from isrcheck.conformance.engines.campaign.guided import Corpus
from isrcheck.conformance.engines.cover.executor import CoverSpec, run_schedule_of_plan
from isrcheck.conformance.engines.cover.graph import build_graph
from isrcheck.conformance.engines.cover.paths import plan_cover
from isrcheck.conformance.generators.walk import FAULT_PROFILES
from isrcheck.model import ModelConfig
from isrcheck.model.alphabet import FIELDS, STEPS, is_step

DETECTION_SCOPE = replace(COVER_SCOPE, max_records=1, max_power_losses=1, max_drops=0)


def violated(verdict) -> tuple[str, tuple]:
    """The verdict's kind and every property it found violated at its step."""
    return verdict.kind, (verdict.property, *verdict.also)


def _cover(scope):
    def engine(protocol: str):
        config = ModelConfig(protocol=protocol)  # isrcheck cover's default config
        plan = plan_cover(build_graph(config, scope))
        # a shrink budget of a millisecond: the time to the finding, not to its minimal form
        spec = CoverSpec("", protocol, config.to_schedule(), tuple(s.to_json() for s in plan.vocabulary), 0.001)
        for i, sched in enumerate(plan.schedules):
            row = run_schedule_of_plan(spec, i, sched)
            yield row["verdict"], (row["property"], *row["also"])

    return engine


WALK_STEPS = [100]  # steps per walk (--steps)


def _fuzz(swarm: bool):
    def engine(protocol: str):
        for seed in itertools.count():
            _, verdict = random_walk(seed, protocol, WALK_STEPS[0], "default", swarm=swarm)
            yield violated(verdict)

    return engine


def _guided(swarm: bool, per_round: int = 250):
    def engine(protocol: str):
        corpus, seed = Corpus(), 0
        while True:
            mutants, found = corpus.mutants(), []
            for _ in range(per_round):
                if mutants is None or mutants.explores(seed):
                    schedule, verdict = random_walk(seed, protocol, WALK_STEPS[0], "default", swarm=swarm)
                else:
                    schedule, _ = mutants.child(seed, protocol, WALK_STEPS[0], "default")
                    verdict = run_schedule(schedule)
                found.append((seed, verdict.coverage, schedule.to_json()))
                seed += 1
                yield violated(verdict)
            for row in found:  # parents take effect from the next round on, as on Spark
                corpus.add(*row)

    return engine


def hypothesis(protocol: str):
    """The plain machine: one rule per step kind, every field drawn from its range."""
    config = load_config(dict(FAULT_PROFILES["default"].config))
    found: list = []

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
            self.run = Lockstep(protocol, config)

        def teardown(self):
            found.append(violated(self.run.outcome or self.run.verdict()))

    for name, kind in STEPS.items():
        fields = {f: field(f) for f in kind.fields}

        def take(self, step, name=name):
            if self.run.outcome is None:
                self.run.step({"step": name, **step})

        setattr(
            Plain,
            f"step_{name}",
            rule(step=st.fixed_dictionaries(fields).filter(lambda d, name=name: is_step({"step": name, **d})))(take),
        )
    while True:  # batches of fresh random examples, each example's verdict at its end
        run_state_machine_as_test(
            Plain,
            settings=settings(
                max_examples=20,
                stateful_step_count=100,
                deadline=None,
                database=None,
                phases=[Phase.generate],
                suppress_health_check=list(HealthCheck),
            ),
        )
        yield from found
        found.clear()


ENGINES = {
    "cover": _cover(COVER_SCOPE),
    "cover-found": _cover(DETECTION_SCOPE),
    "fuzz": _fuzz(False),
    "fuzz-swarm": _fuzz(True),
    "guided": _guided(False),
    "guided-swarm": _guided(True),
    "hypothesis": hypothesis,
}


def detect(engine, protocol: str, targets: set, budget: float) -> tuple[dict, int, float]:
    """Run ``engine`` until it violated every target or ``budget`` seconds passed: per property
    found, (seconds, schedules) to its first violation; the schedules run; the seconds."""
    start, firsts, n = time.perf_counter(), {}, 0
    for kind, props in engine(protocol):
        n += 1
        for prop in props if kind == "violation" else ():
            firsts.setdefault(prop, (time.perf_counter() - start, n))
        if targets <= set(firsts):
            break
        if time.perf_counter() - start > budget:
            break
    return firsts, n, time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--protocols", default="kip-101,kip-279,kip-320")
    parser.add_argument("--engines", default=",".join(ENGINES))
    parser.add_argument("--properties", default="StrongIsr,LogMatching")
    parser.add_argument("--budget", type=float, default=300.0)
    parser.add_argument("--baseline-budget", type=float, default=600.0)
    parser.add_argument("--steps", type=int, default=100, help="steps per fuzz walk and guided schedule")
    args = parser.parse_args()
    WALK_STEPS[0] = args.steps
    targets = set(args.properties.split(","))
    for protocol in args.protocols.split(","):
        for engine in args.engines.split(","):
            budget = args.baseline_budget if engine == "hypothesis" else args.budget
            firsts, n, seconds = detect(ENGINES[engine], protocol, targets, budget)
            found = "; ".join(f"{p} {t:.1f} s/{k:,}" for p, (t, k) in sorted(firsts.items(), key=lambda x: x[1]))
            missed = ", ".join(sorted(targets - set(firsts)))
            print(
                f"{protocol:9} {engine:13} {n:7,} schedules {seconds:6.1f} s | first violations: {found or '-'}"
                + (f" | not found: {missed}" if missed else ""),
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
