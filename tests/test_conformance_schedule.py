"""Schedule files: validation names the step and field, JSON round-trips, the check/shrink CLI exit codes."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

import isrcheck.specs

from isrcheck.conformance import Schedule, ScheduleError, load_schedule
from isrcheck.conformance.cli import main

GOOD = {"version": 1, "protocol": "kip-320", "config": {"replicas": 2, "min_insync_replicas": 1},
        "steps": [{"step": "produce", "replica": 0, "acks": -1}, {"step": "send_fetch", "replica": 1},
                  {"step": "drop", "message": "fetch_request", "replica": 1}, {"step": "tick"}]}


def with_step(i, step):
    doc = json.loads(json.dumps(GOOD))
    doc["steps"][i] = step
    return doc


@pytest.mark.parametrize("doc, message", [
    (with_step(0, {"step": "produce", "replica": 0, "acks": 2}), "steps[0].acks"),
    (with_step(1, {"step": "send_fetch", "replica": 2}), "steps[1].replica: expected a replica id 0..1"),
    (with_step(2, {"step": "drop", "message": "ping", "replica": 1}), "steps[2].message"),
    (with_step(3, {"step": "tick", "replica": 0}), "steps[3].replica: not a field of step 'tick'"),
    (with_step(1, {"step": "explode"}), "steps[1].step: unknown step 'explode'"),
    (with_step(0, {"step": "crash", "replica": 0}), "steps[0].kind: missing"),
    (with_step(0, {"step": "deliver_leader_and_isr", "replica": 0, "index": -1}), "steps[0].index"),
    (with_step(0, {"step": "produce", "replica": True, "acks": 1}), "steps[0].replica"),
    ({**GOOD, "protocol": "kip-999"}, "protocol: expected one of"),
    ({**GOOD, "version": 7}, "version: this build reads version 1"),
    ({**GOOD, "config": {"replicas": 2, "min_insync_replicas": 3}}, "config.min_insync_replicas"),
    ({**GOOD, "config": {"replica": 2}}, "config.replica: unknown config field"),
    ({**GOOD, "expected": {"kip-320": {"verdict": "fine"}}}, "expected.kip-320.verdict"),
    ({**GOOD, "steps": {"step": "tick"}}, "steps: expected a list"),
])
def test_invalid_schedules_name_the_field(doc, message):
    with pytest.raises(ScheduleError) as err:
        Schedule.from_json(doc)
    assert message in str(err.value)


def test_round_trip_fills_the_default_index_and_keeps_everything():
    s = Schedule.from_json({**GOOD, "expected": {"kip-320": "pass"}, "name": "n"})
    assert s.steps[2] == {"step": "drop", "message": "fetch_request", "replica": 1, "index": 0}
    again = Schedule.from_json(json.loads(s.dumps()))
    assert again == s and again.expected["kip-320"].verdict == "pass"


def write(tmp_path, doc, name="s.json"):
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return str(path)


def test_check_exit_codes_and_json(tmp_path, capsys):
    assert main(["check", write(tmp_path, GOOD)]) == 0
    bad = write(tmp_path, with_step(0, {"step": "produce", "replica": 0, "acks": 5}), "bad.json")
    assert main(["check", bad]) == 2
    assert "steps[0].acks" in capsys.readouterr().err
    assert main(["check", write(tmp_path, "{not json", "broken.json")]) == 2
    assert "not valid JSON: line 1" in capsys.readouterr().err
    assert main(["check", str(tmp_path / "missing.json")]) == 2
    assert main(["check", _scenario("unclean-election-loss"), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert (out["verdict"], out["property"], out["as_expected"]) == ("violation", "NoLostAckedWrite", True)
    assert {"verdict", "property", "step", "diff"} <= set(out)


def _scenario(name):
    return str(Path(isrcheck.specs.__file__).parent / "scenarios" / f"{name}.json")


def test_shrink_cli_writes_a_smaller_schedule_with_the_same_failure(tmp_path, capsys):
    out = tmp_path / "small.json"
    code = main(["shrink", _scenario("kip101-scenario1"), "--protocol", "hw-truncation", "-o", str(out),
                 "--time-budget", "5", "--json"])
    assert code == 1
    report = json.loads(capsys.readouterr().out)
    small = load_schedule(out)
    assert report["steps_after"] == len(small.steps) < report["steps_before"]
    assert main(["check", str(out), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["property"] == "NoLostAckedWrite"


def test_cli_runs_as_a_program_without_traceback(tmp_path):
    bad = write(tmp_path, with_step(1, {"step": "send_fetch", "replica": 9}))
    proc = subprocess.run([sys.executable, "-m", "isrcheck.conformance.cli", "check", bad],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "steps[1].replica" in proc.stderr and "Traceback" not in proc.stderr


def test_check_trace_prints_every_step_and_the_verdict(capsys):
    assert main(["check", _scenario("healthy-acks-all"), "--trace"]) == 0
    out = capsys.readouterr().out
    assert out.count("\nstep ") == len(load_schedule(_scenario("healthy-acks-all")).steps)
    assert "'error': 'NONE'" in out and "pass" in out.splitlines()[-2] + out.splitlines()[-1]


def test_kip966_is_not_a_protocol_this_build_runs():
    with pytest.raises(ScheduleError, match="protocol: expected one of"):
        Schedule.from_json({**GOOD, "protocol": "kip-966"})


def test_the_schedule_alphabet_is_the_models():
    from isrcheck.conformance.schedule import CRASH_KINDS, MESSAGE_KINDS, STEP_FIELDS
    from isrcheck.model import actions
    assert STEP_FIELDS == actions.STEP_FIELDS
    assert set(CRASH_KINDS) == set(actions.CRASH_KINDS) and set(MESSAGE_KINDS) == set(actions.MESSAGES)


def test_shrink_keep_budget_refuses_a_schedule_beyond_it(tmp_path, capsys):
    out = str(tmp_path / "small.json")
    assert main(["shrink", _scenario("last-replica-standing"), "-o", out, "--keep-budget", "default"]) == 2
    assert "leaves the budget of 'default'" in capsys.readouterr().err
    assert main(["shrink", _scenario("kip101-scenario1"), "--protocol", "hw-truncation", "-o", out,
                 "--keep-budget", "default", "--time-budget", "3"]) == 1
    from isrcheck.conformance import within_budget
    assert within_budget(load_schedule(out), "default")


def test_check_expected_exits_0_for_a_known_violation_and_1_when_it_changes(tmp_path):
    assert main(["check", _scenario("unclean-election-loss"), "--expected"]) == 0
    assert main(["check", _scenario("kip101-scenario1"), "--protocol", "hw-truncation", "--expected"]) == 0
    doc = json.loads(Path(_scenario("healthy-acks-all")).read_text())
    doc["expected"]["kip-320"] = {"verdict": "violation", "property": "StrongIsr"}
    assert main(["check", write(tmp_path, doc), "--expected"]) == 1
    del doc["expected"]
    assert main(["check", write(tmp_path, doc, "bare.json"), "--expected"]) == 2
