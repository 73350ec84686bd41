"""A gate run end to end without Spark: the corpus replays with expected verdicts, the explorer
finds a counterexample, the failure is saved shrunk into the corpus with its verdict and
replayed first next time; JUnit XML and HTML say what failed and how to replay it."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET

from rich.console import Console

from isrcheck.conformance import SutSpec
from isrcheck.conformance.cli.main import main
from isrcheck.conformance.core.schedule import load_schedule
from isrcheck.conformance.engines.gate.config import load_gate_config
from isrcheck.conformance.engines.gate.engines import NAMES
from isrcheck.conformance.engines.gate.run import run_gate

CONFIG = """
[tool.isrcheck.gate]
protocols = ["hw-truncation"]
corpus = ["corpus"]
scenarios = false

[tool.isrcheck.gate.explore]
replicas = 2
min_insync_replicas = 1
max_records = 1
max_epoch = 2
max_crashes = 1
max_bounces = 1
"""


def _setup(tmp_path, scenario, expected_on_hw_truncation: dict):
    (tmp_path / "corpus").mkdir()
    doc = json.loads(open(scenario("kip101-scenario1")).read())
    doc["expected"] = {"hw-truncation": expected_on_hw_truncation}
    (tmp_path / "corpus" / "kip101-scenario1.json").write_text(json.dumps(doc))
    (tmp_path / "pyproject.toml").write_text(CONFIG)


def _gate(tmp_path, *extra):
    return main(
        [
            "gate",
            "--config",
            str(tmp_path / "pyproject.toml"),
            "--out",
            str(tmp_path / "out"),
            "--junit-xml",
            str(tmp_path / "junit.xml"),
            *extra,
        ]
    )


def test_an_unexpected_corpus_verdict_fails_with_the_replay_command(tmp_path, scenario, capsys):
    _setup(tmp_path, scenario, {"verdict": "pass"})
    (tmp_path / "pyproject.toml").write_text(CONFIG.split("[tool.isrcheck.gate.explore]")[0])
    assert _gate(tmp_path) == 1
    out = capsys.readouterr().out
    assert "NOT as expected" in out and "expected pass, got violation of NoLostAckedWrite at step 13" in out
    suite = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite[@name='isrcheck gate: corpus']")
    assert suite.get("tests") == "1" and suite.get("failures") == "1"
    failure = suite.find("testcase/failure")
    assert failure.get("message") == "expected pass, got violation of NoLostAckedWrite at step 13"
    assert "first bad step 13: {'step': 'deliver_leader_and_isr'" in failure.text
    assert "isrcheck check" in failure.text and "--protocol hw-truncation --expected" in failure.text


def test_new_failures_are_saved_shrunk_and_replayed_first_next_time(tmp_path, scenario, capsys, open_page, artifacts):
    _setup(tmp_path, scenario, {"verdict": "violation", "property": "NoLostAckedWrite"})
    assert _gate(tmp_path, "--html", str(tmp_path / "html")) == 1
    out = capsys.readouterr().out
    assert "corpus 1/1 as expected" in out
    saved = sorted(p for p in (tmp_path / "corpus").glob("explore-*.json"))
    # StrongIsr's and WeakIsr's shortest traces: WeakIsr fails first on both, at the same step
    props = [p.name.removeprefix("explore-hw-truncation-violation-").split("-")[0] for p in saved]
    assert props and set(props) <= {"StrongIsr", "WeakIsr"}
    for path, prop in zip(saved, props):
        schedule = load_schedule(path)
        assert schedule.expected["hw-truncation"].to_json() == {"verdict": "violation", "property": prop}
        assert main(["check", str(path), "--expected"]) == 0  # replays to the verdict it was saved with
    capsys.readouterr()

    root = ET.parse(tmp_path / "junit.xml").getroot()
    engines = root.find("testsuite[@name='isrcheck gate: engines']")
    case = engines.find("testcase[@classname='engine.explore']")
    assert case.get("name") == "hw-truncation"
    failure = case.find("failure")
    assert "(StrongIsr at depth 10)" in failure.get("message")
    assert "shrunk schedule (" in failure.text and "first bad step" in failure.text
    assert f"saved to the corpus: {saved[0]}" in failure.text
    index = (tmp_path / "html" / "index.html").read_text()
    assert "FAIL" in index and index.count("timelines/explore-hw-truncation-") == 2  # a timeline per finding
    assert len(list((tmp_path / "html" / "timelines").glob("*.html"))) == 2
    page, errors = open_page(tmp_path / "html" / "index.html")
    page.screenshot(path=str(artifacts / "gate-with-failures.png"), full_page=True)
    assert errors == [] and page.inner_text("h1") == "isrcheck gate: FAIL"
    page.locator("a", has_text="StrongIsr at depth 10").click()
    page.wait_for_load_state()
    assert page.locator(".lane.replica").count() == 2 and page.locator(".step-head.first-bad").count() == 1

    # the next run replays them first (as expected now) and saves nothing again
    assert _gate(tmp_path) == 1
    out = capsys.readouterr().out
    assert f"corpus {1 + len(saved)}/{1 + len(saved)} as expected" in out and "saved as" not in out
    assert f"already in the corpus as {saved[0]}" in out
    assert sorted((tmp_path / "corpus").glob("explore-*.json")) == saved


def test_no_save_leaves_the_corpus_alone(tmp_path, scenario, capsys):
    _setup(tmp_path, scenario, {"verdict": "violation", "property": "NoLostAckedWrite"})
    assert _gate(tmp_path, "--no-save") == 1
    assert [p.name for p in (tmp_path / "corpus").iterdir()] == ["kip101-scenario1.json"]


def test_the_corpus_and_the_engines_run_on_the_system_under_test_given(tmp_path, scenario, faulty_sut):
    """In process the corpus schedule gives its expected violation and the explorer's
    counterexamples replay as violations (above); on a system whose every process crashes at its
    third step, both are sut-failures at that step."""
    _setup(tmp_path, scenario, {"verdict": "violation", "property": "NoLostAckedWrite"})
    config = load_gate_config(tmp_path / "pyproject.toml", NAMES)
    crashing = SutSpec(f"{faulty_sut} crash 3")
    try:
        result = run_gate(config, tmp_path / "out", Console(file=io.StringIO()), None, sut=crashing)
    finally:
        crashing.close()  # its process (kept for the next run of the spec) has taken steps
    assert [(r.verdict.kind, r.verdict.step, r.ok) for r in result.cases] == [("sut-failure", 2, False)]
    verdicts = [(f.verdict.kind, f.verdict.step) for _run, f in result.findings]
    assert verdicts and set(verdicts) == {("sut-failure", 2)}


def test_out_removes_only_what_the_gate_wrote(tmp_path, scenario, capsys, monkeypatch):
    """Each run starts the engine's --out folder afresh, deleting the files the last run wrote;
    a file it did not write stops the gate (exit 2, named) and nothing is deleted."""
    import isrcheck.conformance.engines.gate.explore_engine as explore_engine

    real_run, runs = explore_engine.run, []

    def run_writing_results(job):  # as the Spark engines do: campaign folders of their own
        runs.append(job)
        (job.workdir / "seeds-0-9" / "runs").mkdir(parents=True)
        (job.workdir / "seeds-0-9" / "runs" / "part.parquet").write_text(f"run {len(runs)}")
        (job.workdir / "seeds-0-9" / "summary.json").write_text("{}")
        return real_run(job)

    monkeypatch.setattr(explore_engine, "run", run_writing_results)
    _setup(tmp_path, scenario, {"verdict": "violation", "property": "NoLostAckedWrite"})
    folder = tmp_path / "out" / "explore" / "hw-truncation"
    assert _gate(tmp_path, "--no-save") == 1
    assert _gate(tmp_path, "--no-save") == 1  # the last run's files go, the new run's come
    assert (folder / "seeds-0-9" / "runs" / "part.parquet").read_text() == "run 2"
    capsys.readouterr()

    for mine in (folder / "notes.txt", folder / "seeds-0-9" / "runs" / "mine.parquet"):
        mine.write_text("a user's file")
        assert _gate(tmp_path, "--no-save") == 2
        err = capsys.readouterr().err
        assert err.strip() == (
            f"isrcheck gate: error: --out: {mine} was not written by isrcheck gate (not listed "
            f"in {folder / '.isrcheck-gate.json'}); move it or choose another --out"
        )
        assert mine.read_text() == "a user's file" and len(runs) == 2  # nothing deleted, nothing run
        assert (folder / "seeds-0-9" / "runs" / "part.parquet").read_text() == "run 2"
        mine.unlink()
    assert _gate(tmp_path, "--no-save") == 1 and len(runs) == 3
