"""``isrcheck prove --invariant`` and ``--check-invariant``: the candidate grammar, Houdini over the
encoding with unbounded epochs and fault counts, saved invariants re-checked, targets implied or
not (with the counterexample), and bad input named (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from isrcheck.conformance.cli.main import main
from isrcheck.model import ModelConfig, Scope
from isrcheck.model.smt.bmc import bounds_for
from isrcheck.model.smt.invariants import FAMILIES, grammar

ROOT = Path(__file__).resolve().parents[3]
ONE = ["--replicas", "1", "--min-isr", "1", "--max-records", "1", "--max-epoch", "2", "--max-crashes", "1"]
TWO = ["--replicas", "2", "--min-isr", "1", "--max-records", "1", "--max-epoch", "3", "--max-crashes", "1"]


def test_the_grammar_names_and_prints_each_candidate():
    config, scope = ModelConfig(protocol="kip-320", replicas=2, min_insync_replicas=1), Scope(max_records=2)
    cands = grammar(config, scope, bounds_for(config, scope))
    names = [c.name for c in cands]
    assert names == sorted(names) and len(set(names)) == len(names)
    by_name = {c.name: c.formula for c in cands}
    assert by_name["hw-bound(0)"] == "HW(0) ≤ LEO(0)"
    assert by_name["leadership(1,epoch)"] == "(alive(1) ∧ leader(1) = 1) ⇒ leaderEpoch(1) = controller.leaderEpoch"
    assert by_name["committed-prefix(0,1,controller-isr)"] == (
        "(alive(0) ∧ 1 ∈ controller.isr ∧ (alive(1) ∨ ¬powerLost(1))) ⇒ log(0)[..HW(0)) = log(1)[..HW(0))"
    )
    assert by_name["target(StrongIsr)"] == "StrongIsr"
    assert all(fn.__doc__ for fn in FAMILIES.values())
    assert {c.family for c in cands} == set(FAMILIES)


def test_houdini_proves_the_targets_at_one_replica_and_the_saved_invariant_rechecks(tmp_path, capsys):
    saved = tmp_path / "kip-320.json"
    assert main(["prove", "--invariant", "--protocol", "kip-320", *ONE, "--save", str(saved)]) == 0
    out = capsys.readouterr().out
    assert "inductive" in out and "StrongIsr: implied by the inductive invariant" in out
    doc = json.loads(saved.read_text())
    assert doc["protocol"] == "kip-320" and doc["targets"]["StrongIsr"] == "implied"
    assert all(set(c) == {"name", "formula"} for c in doc["conjuncts"])
    assert main(["prove", "--check-invariant", str(saved), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["inductive"] and result["targets"] == {
        t: "implied" for t in ("LeaderCompleteness", "LogMatching", "NoLostAckedWrite", "StrongIsr")
    }


def _file(tmp_path, conjuncts, protocol="kip-320", targets=("StrongIsr",), replicas=2, **extra):
    config = {"replicas": replicas, "min_insync_replicas": 1}
    scope = Scope(max_records=1, max_epoch=3, max_crashes=1).to_json()
    doc = {
        "format": "isrcheck-invariant",
        "version": 1,
        "protocol": protocol,
        "config": config,
        "scope": scope,
        "targets": {t: "implied" for t in targets},
        "conjuncts": [{"name": c} for c in conjuncts],
        **extra,
    }
    path = tmp_path / "inv.json"
    path.write_text(json.dumps(doc))
    return path


def test_a_non_inductive_invariant_is_rejected_with_exit_1(tmp_path, capsys):
    path = _file(tmp_path, ["leadership(0,controller)", "hw-bound(0)"], targets=("HighWatermarkBound",))
    assert main(["prove", "--check-invariant", str(path)]) == 1
    out = capsys.readouterr().out
    assert "NOT inductive" in out and "leadership(0,controller) does not hold after step" in out


def test_a_target_not_implied_exits_1(tmp_path, capsys):
    path = _file(tmp_path, ["hw-bound(0)", "hw-bound(1)"], protocol="hw-truncation")
    assert main(["prove", "--check-invariant", str(path)]) == 1
    assert "StrongIsr: not implied" in capsys.readouterr().out


def test_bad_invariant_files_and_flags_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["prove", "--check-invariant", str(bad)]) == 2
    assert "is not JSON" in capsys.readouterr().err
    assert main(["prove", "--check-invariant", str(_file(tmp_path, ["no-such(0)"]))]) == 2
    assert "unknown conjunct 'no-such(0)'" in capsys.readouterr().err
    path = _file(tmp_path, ["hw-bound(0)"])
    doc = json.loads(path.read_text())
    doc["conjuncts"][0]["formula"] = "HW(0) < LEO(0)"
    path.write_text(json.dumps(doc))
    assert main(["prove", "--check-invariant", str(path)]) == 2
    assert "the formula differs from the grammar's" in capsys.readouterr().err
    assert main(["prove", "--check-invariant", str(_file(tmp_path, ["hw-bound(0)"])), "--protocol", "kip-966"]) == 2
    assert "is an invariant of kip-320" in capsys.readouterr().err
    assert main(["prove", "--check-invariant", str(_file(tmp_path, ["hw-bound(0)"], protocol="kip-999"))]) == 2
    assert "unknown protocol 'kip-999'" in capsys.readouterr().err
    assert main(["prove", "--check-invariant", str(tmp_path / "missing.json")]) == 2
    assert main(["prove", "--invariant", "--induction", "--protocol", "kip-320"]) == 2
    assert main(["prove", "--invariant"]) == 2
    assert "--protocol" in capsys.readouterr().err
    assert main(["prove", "--invariant", "--protocol", "kip-320", *ONE, "--property", "Nope"]) == 2
    err = capsys.readouterr().err
    assert "unknown property Nope" in err and "Traceback" not in err


@pytest.mark.slow
def test_hw_truncation_strong_isr_is_not_implied_and_explore_reaches_it(capsys):
    code = main(["prove", "--invariant", "--protocol", "hw-truncation", *TWO, "--property", "StrongIsr"])
    assert code == 1
    out = capsys.readouterr().out
    assert "StrongIsr: not implied; violated: explore reaches it after" in out


@pytest.mark.slow
@pytest.mark.parametrize("name", ["kip-320-two-brokers", "kip-320", "kip-966"])
def test_the_shipped_invariants_recheck(name, capsys):
    path = ROOT / "specs" / "invariants" / f"{name}.json"
    assert main(["prove", "--check-invariant", str(path)]) == 0
    out = capsys.readouterr().out
    assert ", inductive (" in out
    if name == "kip-320-two-brokers":
        for target in ("StrongIsr", "LogMatching", "LeaderCompleteness", "NoLostAckedWrite"):
            assert f"{target}: implied by the inductive invariant" in out
