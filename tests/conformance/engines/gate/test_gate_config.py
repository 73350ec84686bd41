"""Bad gate configs are bad input: exit 2 and one line naming the file and key, before any work;
an engine that is configured but not installed (cover, where it does not exist) is one of them."""

from __future__ import annotations

import json

import pytest

from isrcheck.conformance.cli.main import main
from isrcheck.conformance.engines.gate.engines import ENGINES, Engine


def _gate(tmp_path, capsys, toml: str, *extra: str):
    config = tmp_path / "pyproject.toml"
    config.write_text(toml)
    code = main(["gate", "--config", str(config), "--out", str(tmp_path / "out"), *extra])
    return code, capsys.readouterr()


@pytest.mark.parametrize(
    "toml, message",
    [
        ("[project]\nname = 'x'\n", "no [tool.isrcheck.gate] table"),
        ("[tool.isrcheck.gate\n", "not valid TOML"),
        (
            "[tool.isrcheck.gate]\nprotocols = ['kip-999']\n",
            "[tool.isrcheck.gate].protocols: unknown protocol 'kip-999'",
        ),
        ("[tool.isrcheck.gate]\nbudget = 3\n", "[tool.isrcheck.gate].budget: unknown key"),
        ("[tool.isrcheck.gate]\ncorpus = ['missing']\n", "[tool.isrcheck.gate].corpus: folder missing does not exist"),
        ("[tool.isrcheck.gate]\nscenarios = false\n", "[tool.isrcheck.gate]: nothing to run: no corpus schedule"),
        ("[tool.isrcheck.gate]\nshrink_seconds = -1\n", "[tool.isrcheck.gate].shrink_seconds: expected a number"),
        ("[tool.isrcheck.gate.fuzz]\nsteps = 10\n", "[tool.isrcheck.gate.fuzz]: a budget is needed"),
        ("[tool.isrcheck.gate.fuzz]\nschedules = 0\n", "[tool.isrcheck.gate.fuzz].schedules: expected an integer 1.."),
        (
            "[tool.isrcheck.gate.fuzz]\nseconds = 10\nfaults = 'lots'\n",
            "[tool.isrcheck.gate.fuzz].faults: unknown fault profile 'lots'",
        ),
        ("[tool.isrcheck.gate.explore]\nmax_records = -1\n", "[tool.isrcheck.gate.explore].max_records:"),
        ("[tool.isrcheck.gate.explore]\nmax_cars = 1\n", "[tool.isrcheck.gate.explore].max_cars: unknown key"),
        ("[tool.isrcheck.gate.explore]\nreplicas = 9\n", "[tool.isrcheck.gate.explore].replicas:"),
        (
            "[tool.isrcheck.gate.explore]\nprotocols = 'kip-320'\n",
            "[tool.isrcheck.gate.explore].protocols: expected a non-empty list",
        ),
    ],
)
def test_bad_config_exits_2_naming_the_key(tmp_path, capsys, toml, message):
    code, out = _gate(tmp_path, capsys, toml)
    assert code == 2
    assert out.err.startswith(f"isrcheck gate: error: {tmp_path / 'pyproject.toml'}: ")
    assert message in out.err
    assert len(out.err.strip().splitlines()) == 1 and "Traceback" not in out.err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_a_corpus_file_that_is_not_a_schedule_is_bad_input(tmp_path, capsys):
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "broken.json").write_text('{"format": "isrcheck-schedule", "version": 1, "steps": [')
    code, out = _gate(tmp_path, capsys, "[tool.isrcheck.gate]\ncorpus = ['corpus']\n")
    assert code == 2
    assert "broken.json: not valid JSON" in out.err


def test_a_gate_that_would_replay_and_run_nothing_fails(tmp_path, capsys, scenario):
    """An empty corpus folder, or files that expect nothing on the gate's protocols, and no engine:
    0/0 schedules is no pass."""
    (tmp_path / "corpus").mkdir()
    code, out = _gate(tmp_path, capsys, "[tool.isrcheck.gate]\ncorpus = ['corpus']\nscenarios = false\n")
    assert code == 2 and "PASS" not in out.out
    assert out.err.strip() == (
        f"isrcheck gate: error: {tmp_path / 'pyproject.toml'}: [tool.isrcheck.gate]: nothing "
        f"to run: no corpus schedule expects a verdict on hw-truncation, kip-101, kip-279, "
        f"kip-320, kip-903, kip-966 (folders: {tmp_path / 'corpus'}) and no engine table "
        f"is configured"
    )
    doc = json.loads(open(scenario("kip101-scenario1")).read())
    del doc["expected"]["kip-966"]
    (tmp_path / "corpus" / "s.json").write_text(json.dumps(doc))
    code, out = _gate(
        tmp_path, capsys, "[tool.isrcheck.gate]\nprotocols = ['kip-966']\ncorpus = ['corpus']\nscenarios = false\n"
    )
    assert code == 2 and "nothing to run: no corpus schedule expects a verdict on kip-966" in out.err
    code, out = _gate(tmp_path, capsys, "[tool.isrcheck.gate]\ncorpus = ['corpus']\nscenarios = false\n")
    assert code == 0 and "corpus 5/5 as expected" in out.out


def test_an_engine_that_is_not_installed_is_a_clear_error(tmp_path, capsys, monkeypatch):
    import isrcheck.conformance.engines.gate.engines as engines
    import isrcheck.conformance.engines.gate.run as run

    missing = tuple(Engine(e.name, "no.such.module:run", e.what) if e.name == "cover" else e for e in ENGINES)
    for module in (engines, run):
        monkeypatch.setattr(module, "ENGINES", missing)
    code, out = _gate(tmp_path, capsys, "[tool.isrcheck.gate.cover]\nmax_records = 1\n")
    assert code == 2
    assert "[tool.isrcheck.gate.cover] is configured, but this isrcheck has no cover engine" in out.err


def test_an_engine_is_one_entry_whose_target_is_a_module_function():
    names = [e.name for e in ENGINES]
    assert names == ["explore", "cover", "fuzz"]
    assert Engine("x", "no.such.module:run", "").available() is False
    assert Engine("x", "isrcheck.conformance.engines.gate.explore_engine:no_such_function", "").available() is False
    for engine in ENGINES:
        if engine.available():
            assert callable(engine.load())
