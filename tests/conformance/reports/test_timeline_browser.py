"""HTML timelines and campaign pages in a real headless Chromium: they load without errors or
network requests, show one lane per replica and one column per step run, outline the first bad
step with the property in words, open with the first bad step's column and the sentence saying
what went wrong in view, and leave a screenshot in the test artifacts."""

from __future__ import annotations

import json

from isrcheck.conformance.cli.main import main
from isrcheck.conformance.core.lockstep import Lockstep
from isrcheck.conformance.core.schedule import load_schedule
from isrcheck.conformance.reports.explain import explain
from isrcheck.specs import BY_ID

# Whether the element is wholly inside the window and on top where it is (not under the sentence,
# which sticks to the top, nor under the lane labels, which stick to the left).
SEEN = """(selector) => {
  const el = document.querySelector(selector);
  const r = el.getBoundingClientRect();
  if (r.top < 0 || r.left < 0 || r.bottom > innerHeight || r.right > innerWidth) return false;
  return [[0.5, 0.2], [0.1, 0.5], [0.9, 0.8]].every(([x, y]) =>
    el.contains(document.elementFromPoint(r.left + r.width * x, r.top + r.height * y)));
}"""


def opens_at_the_first_bad_step(page) -> bool:
    return page.evaluate(SEEN, "#first-bad") and page.evaluate(SEEN, "#explanation")


def test_violation_timeline_shows_a_lane_per_replica_and_a_column_per_step(tmp_path, scenario, open_page, artifacts):
    source = scenario("kip101-scenario2")
    out = tmp_path / "kip101-scenario2.html"
    assert main(["report", source, "--protocol", "hw-truncation", "--html", str(out)]) == 0  # its expected verdict
    schedule = load_schedule(source)
    page, errors = open_page(out)
    assert opens_at_the_first_bad_step(page)  # no scrolling by the user: the last column, far right
    page.locator(".step-head.first-bad").scroll_into_view_if_needed()  # the picture shows the failure
    page.screenshot(path=str(artifacts / "timeline-kip101-scenario2-hw-truncation.png"), full_page=True)
    assert errors == []
    assert page.locator(".lane.replica").count() == schedule.config.replicas
    # the initial state and the 35 steps run until StrongIsr fails at step 34 (a register after each restart)
    heads = page.locator(".step-head[data-step]")
    assert heads.count() == 1 + 35
    assert heads.last.get_attribute("data-step") == "34"
    bad = page.locator(".step-head.first-bad")
    assert bad.count() == 1 and bad.get_attribute("data-step") == "34"
    assert BY_ID["StrongIsr"].statement[:60] in page.locator("#verdict").inner_text()
    assert "isrcheck check" in page.locator("#verdict").inner_text()
    # each replica cell shows its log entries with offset, epoch and record
    first_entry = page.locator(".lane.replica[data-replica='0'] .entry").first
    assert first_entry.inner_text() == "0:e0/r1"


def test_refused_steps_are_shaded_and_listed(tmp_path, open_page, artifacts):
    doc = {
        "format": "isrcheck-schedule",
        "version": 1,
        "protocol": "kip-320",
        "config": {"replicas": 3, "min_insync_replicas": 2},
        "steps": [
            {"step": "produce", "replica": 0, "acks": 1},
            {"step": "handle_fetch", "replica": 1},  # nothing in flight: refused by both
            {"step": "send_fetch", "replica": 1},
        ],
    }
    path = tmp_path / "refused.json"
    path.write_text(json.dumps(doc))
    out = tmp_path / "refused.html"
    assert main(["report", str(path), "--html", str(out)]) == 0
    page, errors = open_page(out)
    assert errors == []
    assert page.locator(".lane.replica").count() == 3
    assert page.locator(".step-head[data-step]").count() == 4
    assert page.locator(".step-head.refused").get_attribute("data-step") == "1"
    assert "no fetch request of replica 1 in flight" in page.inner_text("body")
    assert page.locator(".first-bad").count() == 0


def test_a_divergence_outlines_the_first_differing_step_with_the_diff(
    tmp_path, scenario, open_page, artifacts, monkeypatch
):
    """A mutant implementation whose leader never advances its HW (Partition.maybe_increment_leader_hw
    does nothing) never answers the acks=all produce: the model answers it at the fetch that
    advances the HW, and the timeline stops there with the two sides' outputs."""
    from isrcheck.impl.replication.partition import Partition

    monkeypatch.setattr(Partition, "maybe_increment_leader_hw", lambda self: False)
    out = tmp_path / "mutant.html"
    assert main(["report", scenario("healthy-acks-all"), "--html", str(out)]) == 1  # expected pass
    page, errors = open_page(out)
    assert opens_at_the_first_bad_step(page)  # no scrolling by the user
    page.screenshot(path=str(artifacts / "timeline-divergence.png"))
    assert errors == []
    bad = page.locator(".step-head.first-bad")
    assert bad.count() == 1
    step = int(bad.get_attribute("data-step"))
    assert (
        page.locator("#explanation")
        .inner_text()
        .startswith(
            f"At step {step} handle_fetch(replica=2), the implementation answered nothing while the model answered "
            "the acks=all produce of record 1 with NONE at offset 0."
        )
    )
    assert page.locator(".step-head[data-step]").count() == 1 + step + 1  # nothing after it is run
    assert "divergence" in page.locator("#verdict").inner_text()
    diff = page.locator("#diff").inner_text()
    assert diff.startswith(f"step {step} handle_fetch(") and "outputs differ\n(model != impl)" in diff
    assert "'acks': -1, 'error': 'NONE'" in diff and diff.endswith("!= []")
    assert "model / implementation diff" in page.inner_text("body")


def test_the_page_opens_at_the_first_bad_step_with_the_sentence_on_top(
    tmp_path, scenario, open_page, browser, artifacts
):
    """NoLostAckedWrite fails at the last step; the sentence at the top of the page says which broker
    lacks which offset, what the producer was told and when, and what removed it, and the steps it
    names are tagged in their column heads. In a small window too, the page opens scrolled down to
    the first bad step, with the sentence held at the top."""
    source = scenario("last-replica-standing")
    out = tmp_path / "last-replica-standing.html"
    assert main(["report", source, "--html", str(out)]) == 0  # its expected verdict
    why = explain(Lockstep.run(load_schedule(source), record=True))
    page, errors = open_page(out)
    assert errors == []
    assert opens_at_the_first_bad_step(page)
    sentence = page.locator("#explanation").inner_text()
    assert sentence.startswith(why.sentence) and "lost power at step 13 before it fsynced it" in sentence
    assert page.locator("#first-bad").get_attribute("data-step") == "29"
    assert page.locator(".step-head[data-step='5'] .tag.promised").count() == 1  # the acks=all answer
    assert page.locator(".step-head[data-step='13'] .tag.cause").count() == 1  # the power loss
    small = browser.new_page(viewport={"width": 900, "height": 520})
    try:
        small.on("pageerror", lambda e: errors.append(str(e)))
        small.goto(out.resolve().as_uri(), wait_until="load")
        assert small.evaluate("scrollY") > 0 and opens_at_the_first_bad_step(small)
        small.screenshot(path=str(artifacts / "timeline-last-replica-standing-small-window.png"))
        small.evaluate("scrollTo(0, 0)")
        small.reload(wait_until="load")
        assert opens_at_the_first_bad_step(small)  # a reload opens there too
    finally:
        small.close()
    assert errors == []
