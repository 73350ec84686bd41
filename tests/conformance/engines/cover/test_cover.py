"""``isrcheck cover`` on tiny scopes: the path cover takes every edge and tries every refusal,
the Spark run covers all of it on kip-320, finds and shrinks hw-truncation's violations, and
resumes without running a completed range again."""

import json

import pyarrow.parquet as pq
import pytest

from isrcheck.conformance import SutSpec
from isrcheck.conformance.cli.main import main
from isrcheck.conformance.engines.cover.driver import run_cover
from isrcheck.conformance.engines.cover.executor import CoverSpec, run_range
from isrcheck.conformance.engines.cover.graph import build_graph
from isrcheck.conformance.engines.cover.paths import plan_cover
from isrcheck.conformance.generators.refusals import refused_steps
from isrcheck.model import ModelConfig, Scope, apply, enabled
from isrcheck.model.explorer import explore

TINY = Scope(max_records=1, max_epoch=1, max_crashes=1)
TINY_ARGS = ["--replicas", "2", "--max-records", "1", "--max-epoch", "1", "--max-crashes", "1"]
LOSSY = Scope(max_records=1, max_epoch=2, max_crashes=1, max_bounces=1)


def _config(protocol):
    return ModelConfig(protocol=protocol, replicas=2)


def test_the_graph_has_the_explorers_states_and_transitions():
    config = _config("kip-320")
    graph = build_graph(config, TINY)
    result = explore(config, TINY)
    assert (len(graph.states), graph.edges) == (result.states, result.transitions)


def test_the_path_cover_takes_every_edge_and_tries_every_refusal_once():
    config = _config("kip-320")
    graph = build_graph(config, TINY)
    plan = plan_cover(graph)
    assert plan.edges_planned == graph.edges and plan.nodes_reached == len(graph.states)
    assert plan.refusals == sum(len(refused_steps(config, s, enabled(config, s))) for s in graph.states)
    for sched in plan.schedules:
        state = graph.states[0]
        for sid in sched.steps:
            state, _ = apply(config, state, plan.vocabulary[sid])  # never refused
        assert list(sched.edge_ends) == sorted(set(sched.edge_ends)) and sched.prefix <= len(sched.steps)
    assert sum(len(s.edge_ends) for s in plan.schedules) == graph.edges


def test_cover_on_kip320_covers_everything_and_resumes_without_running_anything_again(spark, tmp_path):
    out = tmp_path / "c"
    result = run_cover(_config("kip-320"), TINY, out, spark=spark, partitions=3)
    s = result.summary
    assert result.exit_code == 0 and s["by_verdict"] == {"pass": s["schedules"]} and not s["failures"]
    assert s["states_covered"] == s["states"] > 50
    assert s["edges_covered"] == s["edges"] > 100 and s["refusals_covered"] == s["refusals"] > 1000
    assert s["run"]["edges_per_s"] > 0
    rows = pq.read_table(out / "runs").to_pylist()
    assert sorted(r["schedule"] for r in rows) == list(range(s["schedules"]))
    assert json.loads((out / "summary.json").read_text()) == s
    again = run_cover(_config("kip-320"), TINY, out, spark=spark, partitions=3)
    assert again.summary["run"]["executed"] == 0 and again.summary["run"]["skipped_completed"] == s["schedules"]
    assert again.summary["edges_covered"] == s["edges"]
    with pytest.raises(Exception, match="was made with --scope"):
        run_cover(_config("kip-320"), Scope(max_records=1, max_epoch=2, max_crashes=1), out, spark=spark)


def test_cover_runs_on_the_system_under_test_it_is_given(spark, tmp_path, faulty_sut):
    """kip-320 covers without a failure in process (above); on a system that answers one step with
    an internal error, that step is a divergence, and the cover's directory records the system."""
    sut = SutSpec(f"{faulty_sut} internal 3 {tmp_path / 'once'}")
    result = run_cover(
        _config("kip-320"), TINY, tmp_path / "c", spark=spark, partitions=2, shrink_budget_s=1.0, sut=sut
    )
    assert result.exit_code == 1 and result.summary["by_verdict"].get("divergence", 0) >= 1
    rows = [r for r in pq.read_table(tmp_path / "c" / "runs").to_pylist() if r["verdict"] != "pass"]
    assert "the implementation raised boom" in json.loads(rows[0]["failure"])["original_verdict"]["diff"]
    assert json.loads((tmp_path / "c" / "campaign.json").read_text())["sut"] == sut.command


def test_a_killed_run_resumes_with_only_the_ranges_it_had_not_finished(spark, tmp_path):
    """Ranges a killed run completed (their Parquet file and marker) are not run again."""
    from isrcheck.conformance.engines.campaign.store import CampaignStore
    from isrcheck.conformance.engines.cover.driver import identity

    config, out = _config("kip-320"), tmp_path / "c"
    plan = plan_cover(build_graph(config, TINY))
    store = CampaignStore(out, "kip-320")
    store.bind(identity(config, TINY))
    spec = CoverSpec(str(out), "kip-320", config.to_schedule(), tuple(st.to_json() for st in plan.vocabulary), 1.0)
    n = len(plan.schedules)
    run_range(spec, 0, n // 3, plan.schedules[: n // 3])  # what the killed run finished
    (store.partition_dir / f".part-{n // 3}.parquet.{123}.tmp").write_bytes(b"half")  # and left behind
    result = run_cover(config, TINY, out, spark=spark, partitions=3)
    assert result.summary["run"]["executed"] == n - n // 3
    assert result.exit_code == 0 and result.summary["edges_covered"] == result.summary["edges"]
    rows = pq.read_table(out / "runs").to_pylist()
    assert sorted(r["schedule"] for r in rows) == list(range(n))


def test_cover_finds_hw_truncation_violations_and_saves_them_shrunk(spark, tmp_path, capsys):
    out = tmp_path / "c"
    result = run_cover(_config("hw-truncation"), LOSSY, out, spark=spark, shrink_budget_s=2.0)
    s = result.summary
    assert result.exit_code == 1 and s["by_verdict"].get("divergence", 0) == 0
    assert {f["property"] for f in s["failures"]} & {"StrongIsr", "WeakIsr"}
    for f in s["failures"]:
        assert f["shrunk_steps"] <= f["steps"]
        capsys.readouterr()
        assert main(["check", str(out / f["file"]), "--json"]) == 1
        replay = json.loads(capsys.readouterr().out)
        assert replay["verdict"] == "violation" and replay["as_expected"] is True


def test_the_command_prints_coverage_and_rejects_bad_input(tmp_path, capsys):
    assert main(["cover", "--protocol", "kip-320", "--max-records", "-1", "--out", str(tmp_path / "x")]) == 2
    assert "--max-records" in capsys.readouterr().err
    assert main(["cover", "--protocol", "kip-999", "--out", str(tmp_path / "x")]) == 2
    assert "kip-999" in capsys.readouterr().err
    assert main(["cover", "--protocol", "kip-320", "--master", "nonsense://", "--out", str(tmp_path / "x")]) == 2
    assert "is not a Spark master URL" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
    code = main(["cover", "--protocol", "kip-320", *TINY_ARGS, "--master", "local[2]", "--out", str(tmp_path / "c")])
    text = capsys.readouterr().out
    assert code == 0 and "edges:" in text and "(100.0%)" in text and "refusals:" in text


def test_a_wrong_enabling_condition_is_a_shrunk_divergence_of_the_cover(monkeypatch, tmp_path):
    """Refusals are tried in every state: an implementation that fences a fenced broker again is
    caught where the model refuses it, and the row keeps the shrunk divergence."""
    from isrcheck.impl.sim import Cluster

    monkeypatch.setattr(Cluster, "fence", lambda self, broker: self.controller.fence(broker))
    config = _config("kip-320")
    plan = plan_cover(build_graph(config, TINY))
    spec = CoverSpec(str(tmp_path), "kip-320", config.to_schedule(), tuple(st.to_json() for st in plan.vocabulary), 2.0)
    from isrcheck.conformance.engines.cover.executor import run_schedule_of_plan

    rows = (run_schedule_of_plan(spec, i, s) for i, s in enumerate(plan.schedules))
    row = next(r for r in rows if r["verdict"] != "pass")
    failure = json.loads(row["failure"])
    assert row["verdict"] == "divergence" and row["failure_id"] == "divergence-at-fence"
    assert "taken by the implementation" in failure["original_verdict"]["diff"]
    assert row["shrunk_steps"] <= row["steps"] and failure["shrunk"]["steps"][-1]["step"] == "fence"


def test_the_gate_runs_cover_from_its_table(spark, tmp_path, capsys):
    from isrcheck.conformance.cli.main import main

    (tmp_path / "corpus").mkdir()
    (tmp_path / "pyproject.toml").write_text(
        '[tool.isrcheck.gate]\nprotocols = ["kip-320"]\ncorpus = ["corpus"]\nscenarios = false\n'
        'master = "local[1]"\n\n[tool.isrcheck.gate.cover]\nmax_records = 1\nmax_epoch = 1\nmax_crashes = 1\n'
    )
    assert (
        main(
            [
                "gate",
                "--config",
                str(tmp_path / "pyproject.toml"),
                "--out",
                str(tmp_path / "out"),
                "--junit-xml",
                str(tmp_path / "junit.xml"),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "cover" in out and " refusals" in out
    assert "cover" in (tmp_path / "junit.xml").read_text()
    (tmp_path / "pyproject.toml").write_text(
        '[tool.isrcheck.gate]\ncorpus = ["corpus"]\n\n[tool.isrcheck.gate.cover]\nmax_recrods = 1\n'
    )
    assert main(["gate", "--config", str(tmp_path / "pyproject.toml")]) == 2
    assert "[tool.isrcheck.gate.cover].max_recrods: unknown key" in capsys.readouterr().err
