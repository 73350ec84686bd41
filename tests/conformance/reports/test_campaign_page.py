"""The campaign page's failure table links a timeline per failure, and bad report input exits 2."""

from __future__ import annotations

import json
import shutil

from isrcheck.conformance.cli.main import main

GROWTH = [
    {"schedules": 10 * k, "abstract_states": 20 * k, "action_pairs": 10 * k, "outputs": 3, "distinct": 30 * k + 3}
    for k in range(1, 4)
]


def _campaign(tmp_path, scenario):
    """A campaign folder as ``isrcheck fuzz`` leaves it, with one failure: its shrunk schedule
    is a shipped scenario that fails on hw-truncation."""
    folder = tmp_path / "campaign"
    (folder / "failures").mkdir(parents=True)
    doc = json.loads(open(scenario("kip101-scenario1")).read())
    doc["protocol"] = "hw-truncation"
    (folder / "failures" / "violation-NoLostAckedWrite.json").write_text(json.dumps(doc))
    shutil.copy(scenario("kip101-scenario1"), folder / "failures" / "violation-NoLostAckedWrite.original.json")
    failure = {
        "id": "violation-NoLostAckedWrite",
        "verdict": "violation",
        "property": "NoLostAckedWrite",
        "seed": 7,
        "seeds": 2,
        "first_bad_step": 13,
        "steps": 60,
        "shrunk_steps": 14,
        "file": "failures/violation-NoLostAckedWrite.json",
        "original_file": "failures/violation-NoLostAckedWrite.original.json",
    }
    summary = {
        "protocol": "hw-truncation",
        "seed": 0,
        "schedules": 30,
        "steps": 60,
        "faults": "default",
        "by_verdict": {"pass": 28, "violation": 2},
        "failing_schedules": 2,
        "distinct_failures": 1,
        "failures": [failure],
        "distinct_coverage": 93,
        "coverage_growth": GROWTH,
        "run": {"schedules_per_s": 3.0, "wall_time_s": 20.0, "master": "local[1]"},
    }
    (folder / "summary.json").write_text(json.dumps(summary))
    return folder


def test_failure_table_links_each_timeline(tmp_path, scenario, open_page, artifacts):
    out = tmp_path / "report"
    assert main(["report", str(_campaign(tmp_path, scenario)), "--html", str(out)]) == 0
    page, errors = open_page(out / "index.html")
    page.screenshot(path=str(artifacts / "campaign-with-failure.png"), full_page=True)
    assert errors == []
    assert page.locator("#coverage-chart polyline.series").count() == 4
    links = page.locator("table a")
    assert links.count() == 1 and links.first.inner_text() == "violation-NoLostAckedWrite"
    links.first.click()
    page.wait_for_load_state()
    assert page.locator(".lane.replica").count() == 2
    assert page.locator(".step-head.first-bad").get_attribute("data-step") == "13"


def test_bad_report_input_exits_2(tmp_path, capsys):
    assert main(["report", str(tmp_path), "--html", str(tmp_path / "out")]) == 2
    assert "not a finished campaign folder" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "isrcheck-schedule", "version": 1, "protocol": "kip-320", "steps": [{"step": "fly"}]}')
    assert main(["report", str(bad), "--html", str(tmp_path / "x.html")]) == 2
    assert "steps[0]" in capsys.readouterr().err
    assert main(["report", str(bad), "--html", str(tmp_path / "no" / "x.html")]) == 2


def test_the_chart_legend_and_the_fault_budgets_fit_at_1400_and_800_pixels(tmp_path, scenario, open_page, artifacts):
    """The legend's longest label (large counts included) lies inside the chart, the page has no
    sideways scroll, and it shows per property what the terminal prints of the fault budgets."""
    folder = _campaign(tmp_path, scenario)
    summary = json.loads((folder / "summary.json").read_text())
    summary["coverage_growth"] = [
        {
            "schedules": 1000 * k,
            "abstract_states": 1500 * k,
            "action_pairs": 900 * k,
            "outputs": 30 * k,
            "divergence_rungs": 12 * k,
            "distinct": 2442 * k,
        }
        for k in range(1, 4)
    ]
    summary["schedules"] = 3000
    summary["budgets"] = {
        "NoLostAckedWrite": {"checked_within": 2800, "broken_outside": 7},
        "StrongIsr": {"checked_within": 3000, "broken_outside": 0},
    }
    summary["violated"] = {"NoLostAckedWrite": 2}
    (folder / "summary.json").write_text(json.dumps(summary))
    out = tmp_path / "report"
    assert main(["report", str(folder), "--html", str(out)]) == 0
    page, errors = open_page(out / "index.html")
    for width in (1400, 800):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(artifacts / f"campaign-legend-{width}.png"), full_page=True)
        clipped = page.evaluate("""() => {
            const svg = document.querySelector('#coverage-chart');
            const w = svg.viewBox.baseVal.width;
            return [...svg.querySelectorAll('text')].filter(t => {
                const b = t.getBBox(); return b.x < 0 || b.x + b.width > w; }).map(t => t.textContent); }""")
        assert clipped == [], (width, clipped)
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), width
    assert "abstract states (4500)" in page.locator("#coverage-chart").text_content()
    budgets = page.locator("#budgets").inner_text()
    assert "NoLostAckedWrite" in budgets and "2,800 of 3,000" in budgets and "7" in budgets, budgets
    assert "StrongIsr" in budgets and "3,000 of 3,000" in budgets
    assert errors == []
