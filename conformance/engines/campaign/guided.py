"""Coverage-guided fuzzing (``isrcheck fuzz --guided``): the campaign runs in rounds, and the
schedules of a round that reached coverage no earlier schedule had (an abstract-state shape, a
step pair, an outcome: the ``coverage`` column) become the parents of the next round's
schedules, each a mutation of one or two parents.

Round 0 is the unguided campaign's random walks on its first seeds (swarm walks unless
``--no-swarm``). The parents are a corpus kept for good, as AFL's queue: every schedule that
reached something new stays a parent in the rounds after it. Parents are drawn with weights
(``Corpus.weights``): half of the energy by rarity, as FairFuzz gives it to rare paths, half to the
parents that reached the deepest divergence rung so far (``core.lockstep.divergence_rungs``), as
a directed fuzzer gives it to the parents closest to its target. A later round's
seed is, one time in ``1 / FRESH`` (drawn from the seed), a random walk as in round 0, so the
campaign keeps exploring where no parent leads; otherwise it picks, with its own
``random.Random(seed)``, one or two mutations among: splice two parents (a prefix of one and a
suffix of the other), insert a fault step (crash, fence, rejoin, restart, lost disk, dropped
message, clock tick, election) at a random place, remove a fault step, change a step's replica,
delay a delivery (move a LeaderAndIsr, Fetch or AlterPartition delivery later: the message
delays of a congested network, which keep a broker on a stale leader epoch). A mutant that
leaves the fault profile's budget (``walk.within_budget``) is drawn again (a few times, then the
parent is run as it is), so every finding is one the profile allows. Steps a mutation makes
impossible are refused by both sides: refusal conformance for free.

Each round is a campaign directory of its own (``round-<r>/`` under ``--out``, the store and
ledger of unguided campaigns, rows with the schedule they ran), so a killed run resumes within
its round; the parents of a round follow from the rows of the rounds before it, so a rerun picks
the same ones. ``summary.json`` has the coverage after each round.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from isrcheck.conformance.core.lockstep import run_schedule
from isrcheck.conformance.core.schedule import Schedule
from isrcheck.conformance.engines.campaign import plan as ranges
from isrcheck.conformance.engines.campaign.aggregate import RUNG_PREFIX, budget_counts, swarm_summary
from isrcheck.conformance.engines.campaign.executor import ROW_SCHEMA, TaskSpec, run_seed, write_part
from isrcheck.conformance.engines.campaign.failures import write_failures
from isrcheck.conformance.engines.campaign.harness import Harness, canonical, load_harness
from isrcheck.conformance.engines.campaign.session import JobSession
from isrcheck.conformance.engines.campaign.store import CampaignStore, atomic_write_json
from isrcheck.model.alphabet import (
    CRASH,
    DELIVER_LEADER_AND_ISR,
    DROP,
    ELECT,
    FENCE,
    HANDLE_ALTER_PARTITION,
    HANDLE_ALTER_PARTITION_RESPONSE,
    HANDLE_FETCH,
    HANDLE_FETCH_RESPONSE,
    LOSE_DISK,
    REJOIN,
    RESTART,
    TICK,
    step_kinds,
)

GUIDED_SCHEMA = pa.schema(
    list(ROW_SCHEMA) + [("round", pa.int32()), ("parents", pa.list_(pa.int64())), ("schedule", pa.string())]
)
FRESH = 0.25  # share of a guided round's seeds that run a fresh random walk instead of a mutant
FAULTS = (CRASH, FENCE, REJOIN, RESTART, LOSE_DISK, DROP, TICK, ELECT)
MUTATIONS = ("splice", "insert_fault", "remove_fault", "change_replica", "delay")
DELIVERIES = (
    DELIVER_LEADER_AND_ISR,
    HANDLE_FETCH,
    HANDLE_FETCH_RESPONSE,
    HANDLE_ALTER_PARTITION,
    HANDLE_ALTER_PARTITION_RESPONSE,
)


def mutate(
    rng: random.Random,
    parents: list[tuple[int, dict]],
    replicas: int,
    max_steps: int,
    weights: list[float] | None = None,
) -> tuple[list[dict], list[int]]:
    """A child of ``parents`` ((seed, schedule JSON) pairs, drawn by ``weights``, uniformly when
    None): its steps and its parents' seeds."""

    def pick():
        return parents[rng.choices(range(len(parents)), weights)[0] if weights else rng.randrange(len(parents))]

    a_seed, a = pick()
    steps, used = list(a["steps"]), [a_seed]
    for _ in range(rng.randint(1, 2)):
        how = MUTATIONS[rng.randrange(len(MUTATIONS))]
        faults = [i for i, st in enumerate(steps) if st["step"] in FAULTS]
        with_replica = [i for i, st in enumerate(steps) if "replica" in st and replicas > 1]
        deliveries = [i for i, st in enumerate(steps) if st["step"] in DELIVERIES]
        if how == "delay" and deliveries:
            i = deliveries[rng.randrange(len(deliveries))]
            steps.insert(rng.randint(i + 1, len(steps)), steps.pop(i))
        elif how == "splice" and len(parents) > 1:
            b_seed, b = pick()
            steps = steps[: rng.randint(0, len(steps))] + list(b["steps"])[rng.randint(0, len(b["steps"])) :]
            used.append(b_seed)
        elif how in ("insert_fault", "delay") or (how == "remove_fault" and not faults) or not with_replica:
            options = [
                st.to_json()
                for kind, kind_steps in step_kinds(replicas)
                if kind.name in FAULTS
                for st in (kind_steps or ())
            ]
            options += [
                {"step": DROP, "message": m, "replica": r, "index": 0}
                for m in ("fetch_request", "fetch_response", "alter_partition")
                for r in range(replicas)
            ]
            steps.insert(rng.randint(0, len(steps)), options[rng.randrange(len(options))])
        elif how == "remove_fault":
            del steps[faults[rng.randrange(len(faults))]]
        else:
            i = with_replica[rng.randrange(len(with_replica))]
            others = [r for r in range(replicas) if r != steps[i]["replica"]]
            steps[i] = {**steps[i], "replica": others[rng.randrange(len(others))]}
    return steps[:max_steps], sorted(set(used))


@dataclass
class Corpus:
    """The parents of the next round: each schedule that reached coverage (an item of its row's
    ``coverage``) no schedule before it had, kept for good; and how many schedules reached each
    item, which weighs the parents."""

    seen: set = field(default_factory=set)
    parents: list = field(default_factory=list)  # [(seed, schedule JSON)], in the order found
    hits: Counter = field(default_factory=Counter)  # coverage item -> schedules that reached it
    covered: list = field(default_factory=list)  # each parent's coverage, in the order of ``parents``

    def add(self, seed: int, coverage, schedule: dict | None) -> bool:
        """Keep ``schedule`` as a parent if ``coverage`` holds something new; say whether it did."""
        self.hits.update(coverage)
        fresh = [c for c in coverage if c not in self.seen]
        self.seen.update(fresh)
        if fresh and schedule is not None:
            self.parents.append((seed, schedule))
            self.covered.append(tuple(coverage))
            return True
        return False

    def weights(self) -> tuple[float, ...]:
        """Each parent's weight: half of the energy goes by rarity (1 / the schedules that reached
        the parent's rarest item, as FairFuzz), half to the parents that reached the deepest
        divergence rung so far (``core.lockstep.divergence_rungs``), alike: a directed fuzzer's
        energy for the parents closest to its target (AFLGo)."""
        rarity = [1.0 / min((self.hits[c] for c in cov), default=1) for cov in self.covered]
        rungs = [sum(c.startswith(RUNG_PREFIX) for c in cov) for cov in self.covered]
        deepest = max(rungs, default=0)
        if deepest == 0:
            return tuple(rarity)
        closest = rungs.count(deepest)
        total = sum(rarity)
        return tuple(r / total + (rung == deepest) / closest for r, rung in zip(rarity, rungs))

    def mutants(self) -> "Mutants | None":
        return Mutants(tuple(self.parents), self.weights()) if self.parents else None


@dataclass(frozen=True)
class Mutants:
    """The schedules of a round after the first: for each seed, a mutant of the round's parents."""

    parents: tuple  # ((seed, schedule JSON), ...)
    weights: tuple | None = None  # per parent (None: uniform)
    tries: int = 8

    @staticmethod
    def explores(seed: int) -> bool:
        """Whether the seed runs a fresh random walk instead of a mutant (a draw of its own)."""
        return random.Random(f"fresh-{seed}").random() < FRESH

    def child(self, seed: int, protocol: str, steps: int, faults: str) -> tuple[Schedule, list[int]]:
        """The seed's schedule and its parents' seeds."""
        # hypothesis: only when a child is checked against a budget
        from isrcheck.conformance.generators.walk import within_budget

        rng = random.Random(seed)
        first = Schedule.from_json(self.parents[0][1])
        for _ in range(self.tries):
            child, used = mutate(
                rng, list(self.parents), first.config.replicas, steps, list(self.weights) if self.weights else None
            )
            schedule = Schedule(
                protocol,
                first.config,
                tuple(child),
                name=f"guided-{protocol}-{seed}",
                description=f"isrcheck fuzz --guided, seed {seed}, parents {used}",
            )
            if within_budget(schedule, faults):
                break
        else:
            seed_of, doc = self.parents[rng.randrange(len(self.parents))]
            schedule, used = Schedule.from_json(doc), [seed_of]
        return schedule, used


def run_guided_range(spec: TaskSpec, round_: int, mutants: Mutants | None, lo: int, hi: int) -> dict:
    """Seeds [lo, hi) of one round, as ``executor.run_range`` with each schedule and its parents
    kept in the row: random walks in round 0 (``mutants`` None), mutants after, all run on the
    spec's system under test."""
    started = time.perf_counter()
    base = load_harness()
    rows = []
    for seed in range(lo, hi):
        kept: dict = {}

        def walk(seed, protocol, steps, faults="default", config=None, refusals=spec.refusals, sut=None, swarm=False):
            if mutants is None or mutants.explores(seed):
                schedule, verdict = base.random_walk(
                    seed, protocol, steps, faults=faults, config=config, refusals=refusals, sut=sut, swarm=swarm
                )
                used = []
            else:
                schedule, used = mutants.child(seed, protocol, steps, faults)
                verdict = run_schedule(schedule, sut=sut)
            kept.update(schedule=schedule.to_json(), parents=used)
            return schedule, verdict

        row = run_seed(spec, Harness(walk, base.shrink, base.fault_profiles), seed)
        if kept.get("parents"):  # a mutant: no swarm of its own
            row.update(swarm=None, swarm_features=[])
        row.update(
            {
                "round": round_,
                "parents": kept.get("parents", []),
                "schedule": canonical(kept["schedule"]) if kept else None,
            }
        )
        rows.append(row)
    write_part(spec.out, spec.protocol, lo, hi, rows, GUIDED_SCHEMA)
    return {"lo": lo, "hi": hi, "rows": len(rows), "seconds": time.perf_counter() - started}


def _run_chunks(spec: TaskSpec, round_: int, mutants: Mutants | None, chunks):
    for chunk in chunks:
        for lo, hi in chunk:
            yield run_guided_range(spec, round_, mutants, lo, hi)


def run_guided(
    params, out: str | Path, rounds: int, *, master: str | None = None, spark=None, say=lambda text: None
) -> dict:
    """Run (or resume) a guided campaign of ``params.schedules`` seeds in ``rounds`` rounds, on
    ``spark`` (a session the caller owns) or one started for ``master``; returns summary.json's
    content (also written to ``out``)."""
    # rich: only when a guided campaign runs
    from isrcheck.conformance.engines.campaign.driver import CampaignError

    params.validate()
    session = JobSession("fuzz", master, spark)
    params.validate_faults(load_harness())
    if not 1 <= rounds <= params.schedules:
        raise CampaignError(f"--rounds: expected 1..{params.schedules} (one seed per round at least), got {rounds}")
    top = CampaignStore(out, params.protocol)
    try:
        top.bind({**params.identity(), "guided": True, "rounds": rounds})
    except ValueError as exc:
        raise CampaignError(str(exc)) from None
    with session:
        sc = session.get().sparkContext
        per = -(-params.schedules // rounds)
        corpus = Corpus()
        growth, all_rows = [], []
        t0 = time.perf_counter()
        for r in range(rounds):
            lo = params.seed + r * per
            hi = min(params.seed + params.schedules, lo + per)
            if lo >= hi:
                break
            store = CampaignStore(Path(out) / f"round-{r}", params.protocol)
            store.bind({**params.identity(), "round": r})
            store.remove_orphans()
            mutants = corpus.mutants()
            spec = TaskSpec(
                out=str(store.root.resolve()),
                protocol=params.protocol,
                steps=params.steps,
                faults=params.faults,
                shrink_budget_s=params.shrink_budget_s,
                sut=params.sut,
                refusals=params.refusals,
                swarm=params.swarm,
            )
            done = [(c.lo, c.hi) for c in store.completed()]
            chunks = ranges.plan_tasks((lo, hi), ranges.default_tasks(hi - lo, sc.defaultParallelism, 50), done)
            if chunks:
                sc.parallelize(chunks, len(chunks)).mapPartitions(partial(_run_chunks, spec, r, mutants)).collect()
            rows = sorted(pq.read_table(store.partition_dir).to_pylist(), key=lambda row: row["seed"])
            new_parents = sum(
                corpus.add(row["seed"], row["coverage"], json.loads(row["schedule"]) if row["schedule"] else None)
                for row in rows
            )
            all_rows += rows
            growth.append(
                {
                    "round": r,
                    "schedules": len(all_rows),
                    "new_parents": new_parents,
                    "parents": len(corpus.parents),
                    "distinct_coverage": len(corpus.seen),
                    "abstract_states": sum(1 for c in corpus.seen if c.startswith("s:")),
                    "failing": sum(row["verdict"] != "pass" for row in rows),
                }
            )
            say(
                f"round {r}: {hi - lo} schedules, {new_parents} reached something new; "
                f"{len(corpus.seen)} distinct coverage items"
            )
        seconds, master_url, parallelism = time.perf_counter() - t0, sc.master, sc.defaultParallelism
    counts = Counter(row["failure_id"] for row in all_rows if row["failure_id"])
    firsts = {}
    for row in all_rows:
        if row["failure_id"] and row["failure_id"] not in firsts:
            firsts[row["failure_id"]] = {
                **{
                    k: row[k]
                    for k in (
                        "failure_id",
                        "verdict",
                        "property",
                        "seed",
                        "first_bad_step",
                        "steps",
                        "shrunk_steps",
                        "trace_hash",
                    )
                },
                "seeds": counts[row["failure_id"]],
                "failure": json.loads(row["failure"]),
            }
    failures = write_failures(top, list(firsts.values()))
    features: dict = {}
    for row in all_rows:
        for f in row["swarm_features"]:
            n, bad = features.get(f, (0, 0))
            features[f] = (n + 1, bad + (row["verdict"] != "pass"))
    summary = {
        **params.identity(),
        "guided": True,
        "rounds": rounds,
        "shrink_budget_s": params.shrink_budget_s,
        "swarm": swarm_summary(params.swarm, dict(sorted(features.items()))),
        "by_verdict": dict(sorted(Counter(row["verdict"] for row in all_rows).items())),
        "violated": dict(
            sorted(
                Counter(
                    p for row in all_rows if row["verdict"] == "violation" for p in [row["property"], *row["also"]]
                ).items()
            )
        ),
        "budgets": budget_counts(
            len(all_rows),
            Counter(p for row in all_rows for p in row["outside_budget"]),
            Counter(p for row in all_rows for p in row["beyond_budget"]),
        ),
        "failing_schedules": sum(row["verdict"] != "pass" for row in all_rows),
        "distinct_failures": len(failures),
        "failures": [
            {
                k: f[k]
                for k in (
                    "id",
                    "verdict",
                    "property",
                    "seed",
                    "seeds",
                    "first_bad_step",
                    "steps",
                    "shrunk_steps",
                    "file",
                    "original_file",
                )
            }
            for f in failures
        ],
        "coverage_growth": growth,
        "distinct_coverage": len(corpus.seen),
        "run": {"seconds": round(seconds, 3), "master": master_url, "parallelism": parallelism},
    }
    atomic_write_json(top.summary_path, summary)
    return summary
