"""isrcheck check and shrink as users run them: exit codes 0/1/2, --json, --trace, --expected,
--keep-budget, and no traceback on bad input."""

import json
from pathlib import Path

from isrcheck.conformance import load_schedule
from isrcheck.conformance.cli.main import main


def with_step(scenario, i, step):
    """A shipped scenario with its i-th step replaced."""
    doc = json.loads(Path(scenario("healthy-acks-all")).read_text())
    doc["steps"][i] = step
    return doc


def write(tmp_path, doc, name="s.json"):
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return str(path)


def test_check_exit_codes_and_json(tmp_path, capsys, scenario):
    assert main(["check", scenario("healthy-acks-all")]) == 0
    bad = write(tmp_path, with_step(scenario, 0, {"step": "produce", "replica": 0, "acks": 5}), "bad.json")
    assert main(["check", bad]) == 2
    assert "steps[0].acks" in capsys.readouterr().err
    assert main(["check", write(tmp_path, "{not json", "broken.json")]) == 2
    assert "not valid JSON: line 1" in capsys.readouterr().err
    assert main(["check", str(tmp_path / "missing.json")]) == 2
    assert main(["check", scenario("kip101-scenario1"), "--protocol", "hw-truncation", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert (out["verdict"], out["property"], out["as_expected"]) == ("violation", "NoLostAckedWrite", True)
    assert {"verdict", "property", "step", "diff", "beyond_budget"} <= set(out)
    # a loss Kafka itself has outside the budget (unclean election) is no violation: exit 0, named
    assert main(["check", scenario("unclean-election-loss"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["verdict"], out["as_expected"]) == ("pass", True)
    assert out["beyond_budget"][0] == {
        "property": "NoLostAckedWrite",
        "step": 13,
        "reason": "unclean leader election is enabled",
    }


def test_shrink_cli_writes_a_smaller_schedule_with_the_same_failure(tmp_path, capsys, scenario):
    out = tmp_path / "small.json"
    code = main(
        [
            "shrink",
            scenario("kip101-scenario2"),
            "--protocol",
            "hw-truncation",
            "-o",
            str(out),
            "--time-budget",
            "5",
            "--json",
        ]
    )
    assert code == 1
    report = json.loads(capsys.readouterr().out)
    small = load_schedule(out)
    assert report["steps_after"] == len(small.steps) < report["steps_before"]
    assert main(["check", str(out), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["property"] == "StrongIsr"


def test_cli_runs_as_a_program_without_traceback(tmp_path, scenario, isrcheck_cli):
    bad = write(tmp_path, with_step(scenario, 1, {"step": "send_fetch", "replica": 9}))
    proc = isrcheck_cli("check", bad)
    assert proc.returncode == 2 and "steps[1].replica" in proc.stderr and "Traceback" not in proc.stderr


def test_check_trace_prints_every_step_and_the_verdict(capsys, scenario):
    assert main(["check", scenario("healthy-acks-all"), "--trace"]) == 0
    out = capsys.readouterr().out
    assert out.count("\nstep ") == len(load_schedule(scenario("healthy-acks-all")).steps)
    assert "'error': 'NONE'" in out and "pass" in out.splitlines()[-2] + out.splitlines()[-1]


def test_shrink_keep_budget_refuses_a_schedule_beyond_it(tmp_path, capsys, scenario):
    out = str(tmp_path / "small.json")
    assert main(["shrink", scenario("last-replica-standing"), "-o", out, "--keep-budget", "classic"]) == 2
    assert "leaves the budget of 'classic'" in capsys.readouterr().err
    assert (
        main(
            [
                "shrink",
                scenario("kip101-scenario1"),
                "--protocol",
                "hw-truncation",
                "-o",
                out,
                "--keep-budget",
                "classic",
                "--time-budget",
                "3",
            ]
        )
        == 1
    )
    from isrcheck.conformance import within_budget

    assert within_budget(load_schedule(out), "classic")


def test_check_expected_exits_0_for_a_known_violation_and_1_when_it_changes(tmp_path, scenario):
    assert main(["check", scenario("unclean-election-loss"), "--expected"]) == 0
    assert main(["check", scenario("kip101-scenario1"), "--protocol", "hw-truncation", "--expected"]) == 0
    doc = json.loads(Path(scenario("healthy-acks-all")).read_text())
    doc["expected"]["kip-320"] = {"verdict": "violation", "property": "StrongIsr"}
    assert main(["check", write(tmp_path, doc), "--expected"]) == 1
    del doc["expected"]
    assert main(["check", write(tmp_path, doc, "bare.json"), "--expected"]) == 2


def test_check_says_what_went_wrong_in_its_summary_line(capsys, scenario):
    sentence = (
        "Broker 1, elected leader in epoch 2 at step 11, does not hold offset 0 (record 1), which a producer "
        "was told was written with acks=all at step 5; it was lost when broker 1 truncated its log to offset 0 "
        "(its HW) at step 9 deliver_leader_and_isr(replica=1, index=0)."
    )
    assert main(["check", scenario("kip101-scenario1"), "--protocol", "hw-truncation"]) == 1
    out = capsys.readouterr().out
    assert (
        out.splitlines()[0] == f"kip101-scenario1 [hw-truncation]: violation of NoLostAckedWrite at step 13: {sentence}"
    )
    assert out.rstrip().endswith("expected: violation of NoLostAckedWrite -> as expected")
    assert main(["check", scenario("kip101-scenario1"), "--protocol", "hw-truncation", "--trace"]) == 1
    assert f"violation of NoLostAckedWrite at step 13: {sentence}" in capsys.readouterr().out
    assert main(["check", scenario("kip101-scenario1"), "--protocol", "hw-truncation", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["explanation"] == sentence
    assert main(["check", scenario("healthy-acks-all"), "--json"]) == 0
    assert "explanation" not in json.loads(capsys.readouterr().out)
    assert main(["check", scenario("healthy-acks-all")]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "healthy-acks-all [kip-320]: pass (35 steps)"


def test_check_runs_a_failing_schedule_once_and_explains_it_from_that_run(capsys, scenario, monkeypatch):
    """The sentence comes from the run's own frames: no second run (which a system under test
    that does not repeat itself could not explain)."""
    from isrcheck.conformance.core.lockstep import Lockstep

    runs = []
    real = Lockstep.__init__

    def counted(self, *args, **kwargs):
        runs.append(args[0])
        real(self, *args, **kwargs)

    monkeypatch.setattr(Lockstep, "__init__", counted)
    assert main(["check", scenario("kip101-scenario1"), "--protocol", "hw-truncation", "--json"]) == 1
    assert "truncated its log" in json.loads(capsys.readouterr().out)["explanation"]
    assert runs == ["hw-truncation"]


def test_check_trace_strict_names_a_refused_step_without_traceback(tmp_path, capsys, scenario):
    doc = json.loads(Path(scenario("healthy-acks-all")).read_text())
    doc["steps"] = [{"step": "produce", "replica": 0, "acks": -1}, {"step": "restart", "replica": 0}]
    doc.pop("expected", None)
    path = write(tmp_path, doc)
    for extra in ([], ["--trace"], ["--trace", "--json"]):
        assert main(["check", path, "--strict", *extra]) == 2, extra
        assert "steps[1] {'step': 'restart', 'replica': 0}: refused: " in capsys.readouterr().out
