"""The pytest plugin as users run it: schedule files become items with their expected verdicts,
under -n 2 too; a failure names the step, the property in words and the replay command; every
JSON file of a corpus is collected (one that is not a schedule fails, named), none skipped."""

from __future__ import annotations

import json
import subprocess
import sys


def _pytest(cwd, *args):
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _corpus(tmp_path, scenario):
    folder = tmp_path / "corpus"
    folder.mkdir()
    doc = json.loads(open(scenario("kip101-scenario1")).read())
    doc["expected"]["hw-truncation"] = {"verdict": "pass"}  # wrong: it loses an acknowledged write
    (folder / "wrong.json").write_text(json.dumps(doc))
    (folder / "right.json").write_text(open(scenario("kip101-scenario2")).read())
    del doc["format"]  # optional in a schedule file: the same wrong expectation
    (folder / "no-format.json").write_text(json.dumps(doc))
    (folder / "package.json").write_text('{"name": "not a schedule"}')
    (folder / "broken.json").write_text(
        '{"format": "isrcheck-schedule", "version": 1, "protocol": "kip-320", "steps": [{"step": "fly"}]}'
    )
    return folder


def test_schedule_files_are_items_with_their_expected_verdicts(tmp_path, scenario):
    _corpus(tmp_path, scenario)
    proc = _pytest(tmp_path, "--isrcheck", "corpus", "-n", "2", "-rf")
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    # right.json: 6 protocols pass; wrong.json and no-format.json: 5 pass, hw-truncation fails;
    # broken.json and package.json (not schedules) fail
    assert "4 failed, 16 passed" in out
    assert "FAILED corpus/wrong.json::hw-truncation" in out and "FAILED corpus/no-format.json::hw-truncation" in out
    assert "package.json: version: missing" in out
    assert "wrong.json [hw-truncation]: expected pass, got violation of NoLostAckedWrite at step 13" in out
    assert "step 13: {'step': 'deliver_leader_and_isr'" in out
    assert "NoLostAckedWrite: Every acks=all write answered NONE" in out
    assert "replay: isrcheck check " in out and "wrong.json --protocol hw-truncation --expected" in out
    assert "broken.json: steps[0].step: " in out


def test_only_configured_folders_without_the_option(tmp_path, scenario):
    _corpus(tmp_path, scenario)
    (tmp_path / "pytest.ini").write_text("[pytest]\nisrcheck_corpus = corpus/nothing-here\n")
    assert "no tests ran" in _pytest(tmp_path, "corpus").stdout
    (tmp_path / "pytest.ini").write_text("[pytest]\nisrcheck_corpus = corpus\n")
    proc = _pytest(tmp_path, "corpus/right.json")
    assert proc.returncode == 0, proc.stdout
    assert "6 passed" in proc.stdout
    listed = _pytest(tmp_path, "corpus", "--collect-only").stdout.splitlines()
    assert "corpus/right.json::kip-320" in listed and "corpus/wrong.json::hw-truncation" in listed
    assert "corpus/no-format.json::hw-truncation" in listed  # every file of the corpus, named
    assert "corpus/package.json::invalid" in listed
