"""This repository's own release gate, as CI runs it: ``isrcheck gate`` with the budget of
pyproject.toml's [tool.isrcheck.gate] (corpus replay, a small exploration, a small Spark fuzz
campaign on local[1]), no terminal (so progress is plain lines), JUnit XML and HTML; then the
fuzz campaign's page from ``isrcheck report`` in a real Chromium."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import isrcheck.conformance

ROOT = Path(__file__).resolve().parents[4]


def test_the_repository_gate_passes_and_reports(tmp_path, scenario_files, open_page, artifacts):
    out, junit, html = tmp_path / "out", tmp_path / "junit.xml", tmp_path / "html"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "isrcheck.conformance.cli.main",
            "gate",
            "--out",
            str(out),
            "--junit-xml",
            str(junit),
            "--html",
            str(html),
            "--save-to",
            str(tmp_path / "new"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "TERM": "dumb"},
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "gate: PASS" in proc.stdout
    assert f"results: engine results in {out}; JUnit XML {junit}; HTML report {html / 'index.html'}" in proc.stdout
    # without a terminal: plain progress lines, no bar redraws
    assert "gate corpus: " in proc.stderr and "\r" not in proc.stderr and "\x1b[" not in proc.stderr

    root = ET.parse(junit).getroot()
    corpus = root.find("testsuite[@name='isrcheck gate: corpus']")
    expectations = sum(len(isrcheck.conformance.load_schedule(p).expected) for p in scenario_files)
    own = sum(len(isrcheck.conformance.load_schedule(p).expected) for p in (ROOT / "tests" / "corpus").glob("*.json"))
    assert own > 0  # the repository's own corpus exists and is replayed, on every protocol it expects
    assert len(corpus.findall("testcase[@classname='corpus.corpus']")) == own
    assert int(corpus.get("tests")) == expectations + own and corpus.get("failures") == "0"
    engines = root.find("testsuite[@name='isrcheck gate: engines']")
    assert sorted((c.get("classname"), c.get("name")) for c in engines.iter("testcase")) == [
        ("engine.explore", "kip-320"),
        ("engine.fuzz", "kip-320"),
    ]
    assert engines.get("failures") == "0"
    assert not (tmp_path / "new").exists()  # nothing new to save

    # the campaign, and the list of what the gate wrote (the next run removes only that)
    assert sorted(p.name for p in (out / "fuzz" / "kip-320").iterdir()) == [".isrcheck-gate.json", "seeds-0-9"]
    fuzz_case = next(c for c in engines.iter("testcase") if c.get("classname") == "engine.fuzz")
    assert fuzz_case.find("system-out").text.startswith("10 schedules of 30 steps (seeds 0..9")
    campaign = out / "fuzz" / "kip-320" / "seeds-0-9"
    page_dir = tmp_path / "campaign"
    report = subprocess.run(
        [sys.executable, "-m", "isrcheck.conformance.cli.main", "report", str(campaign), "--html", str(page_dir)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert report.returncode == 0, report.stderr
    page, errors = open_page(page_dir / "index.html")
    page.screenshot(path=str(artifacts / "campaign-kip-320.png"), full_page=True)
    assert errors == []
    assert page.locator("#coverage-chart polyline.series").count() == 5  # distinct and each coverage kind
    assert "no failure" in page.inner_text("body")
    gate_page, errors = open_page(html / "index.html")
    assert errors == [] and "isrcheck gate: PASS" in gate_page.inner_text("h1")
