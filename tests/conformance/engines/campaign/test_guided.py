"""``isrcheck fuzz --guided``: rounds whose new-coverage schedules join the corpus of parents;
reproducible, resumable, and within the fault budget (kip-320 passes)."""

import json
import random
from pathlib import Path

import pyarrow.parquet as pq

from isrcheck.conformance import load_schedule, random_walk
from isrcheck.conformance.cli.main import main
from isrcheck.conformance.core.lockstep import DIVERGENCE_RUNGS, Lockstep, divergence_rungs
from isrcheck.conformance.engines.campaign import CampaignParams
from isrcheck.conformance.engines.campaign.guided import FAULTS, Corpus, Mutants, mutate, run_guided

SCENARIOS = Path(__file__).resolve().parents[4] / "specs" / "scenarios"


def _rows(out):
    rows = []
    for r in sorted(out.glob("round-*")):
        rows += pq.read_table(r / "runs").to_pylist()
    return sorted((row["seed"], row["round"], row["parents"], row["verdict"], row["trace_hash"]) for row in rows)


def test_mutations_splice_parents_and_change_faults_and_replicas():
    parents = [(s, random_walk(s, "kip-320", 30, "default", impl=False)[0].to_json()) for s in range(3)]
    rng = random.Random(5)
    seen = set()
    for _ in range(40):
        child, used = mutate(rng, parents, 3, 40)
        assert len(child) <= 40 and set(used) <= {0, 1, 2} and used
        seen.add(len(used))
        assert all(st["step"] for st in child)
    assert seen == {1, 2}  # some children splice two parents
    assert "crash" in FAULTS and "drop" in FAULTS


def test_guided_rounds_grow_coverage_reproducibly_and_resume(spark, tmp_path):
    params = CampaignParams("kip-320", schedules=24, steps=30, shrink_budget_s=1.0)
    a = run_guided(params, tmp_path / "a", 3, spark=spark)
    assert a["by_verdict"] == {"pass": 24} and len(a["coverage_growth"]) == 3
    growth = [g["distinct_coverage"] for g in a["coverage_growth"]]
    assert growth == sorted(growth) and growth[-1] > growth[0]
    rows = _rows(tmp_path / "a")
    assert [r[0] for r in rows] == list(range(24))
    # round 0 is random walks; later rounds are mutants with parents, but for a share of fresh walks
    assert all(r[2] == [] for r in rows if r[1] == 0)
    later = [r for r in rows if r[1] > 0]
    assert all(bool(r[2]) != Mutants.explores(r[0]) for r in later)
    assert any(r[2] for r in later) and any(not r[2] for r in later)
    assert [g["parents"] for g in a["coverage_growth"]] == sorted(g["parents"] for g in a["coverage_growth"])
    b = run_guided(params, tmp_path / "b", 3, spark=spark)
    assert _rows(tmp_path / "b") == rows and b["coverage_growth"] == a["coverage_growth"]
    again = run_guided(params, tmp_path / "a", 3, spark=spark)  # resumes: nothing left to run
    assert again["coverage_growth"] == a["coverage_growth"] and _rows(tmp_path / "a") == rows
    assert json.loads((tmp_path / "a" / "summary.json").read_text())["guided"] is True


def test_guided_bad_rounds_exit_2(tmp_path, capsys):
    assert (
        main(
            [
                "fuzz",
                "--protocol",
                "kip-320",
                "--schedules",
                "5",
                "--guided",
                "--rounds",
                "0",
                "--out",
                str(tmp_path / "g"),
            ]
        )
        == 2
    )
    assert "--rounds" in capsys.readouterr().err


def test_divergence_rungs_climb_along_kip_279s_divergence_and_the_verdict_names_every_property():
    # KIP-320's scenario on kip-279: a follower that missed three LeaderAndIsr keeps fetching from
    # the broker it knows, which leads again with another record at the follower's offset
    schedule = load_schedule(SCENARIOS / "kip320-stale-fetch.json").with_protocol("kip-279")
    run = Lockstep("kip-279", schedule.config, impl=False)
    climbed = []
    for step in schedule.steps:
        verdict = run.step(step)
        rungs = divergence_rungs(run.state)
        if rungs and (not climbed or rungs[-1] != climbed[-1]):
            climbed.append(rungs[-1])
        if verdict is not None:
            break
    assert climbed[-1] == "d:committed" and climbed[0] == "d:stale"
    assert set(climbed) == set(DIVERGENCE_RUNGS)
    # WeakIsr and StrongIsr fail at the same step: the verdict names one and lists the other
    assert (verdict.property, verdict.also) == ("WeakIsr", ("StrongIsr",))
    assert "StrongIsr" in verdict.to_json()["also"]
    # on kip-320 the stale fetch is fenced: no rung past d:returns, no violation
    clean = Lockstep("kip-320", schedule.config, impl=False)
    assert all(clean.step(step) is None for step in schedule.steps)


def test_parents_weigh_by_their_rarest_item_and_their_divergence_rungs():
    corpus = Corpus()
    corpus.add(0, ["s:a", "x"], {"steps": []})
    corpus.add(1, ["s:a", "y"], {"steps": []})
    corpus.add(2, ["s:a", "y", "z", "d:stale", "d:diverged"], {"steps": []})
    corpus.add(3, ["s:a", "x"], {"steps": []})  # nothing new: not a parent
    assert [seed for seed, _ in corpus.parents] == [0, 1, 2]
    # half the energy by rarity (x reached twice, y twice, z once), half to the deepest rung
    assert corpus.weights() == (0.25, 0.25, 1.5)
    corpus.add(4, ["w", "d:stale", "d:diverged"], {"steps": []})  # as deep: the half is shared
    assert corpus.weights()[2:] == (1 / 3 + 1 / 2, 1 / 3 + 1 / 2)
    assert corpus.mutants().weights == corpus.weights()


def test_a_delay_mutation_moves_a_delivery_later():
    steps = [{"step": "deliver_leader_and_isr", "replica": 1, "index": 0}, {"step": "tick"}, {"step": "tick"}]
    parents = [(0, {"steps": steps})]
    moved = set()
    for seed in range(60):
        child, _ = mutate(random.Random(seed), parents, 3, 10)
        if sorted(map(json.dumps, child)) == sorted(map(json.dumps, steps)) and child != steps:
            moved.add(child.index(steps[0]))
    assert moved and min(moved) > 0
