"""The soak run's HTML page: the headline, the three plots (latency, throughput, unseen) with the
fault intervals shaded, each anomaly with the events that prove it, escaping, determinism; in a
real headless Chromium (no console errors, plots of non-zero size, the headline's anomaly link
jumps to its section); and a 200,000-event history rendered in seconds into a page of a few MB.

Results come from the real checker: ``check(history)``, the page reading its history through the
index the soak builds once (``HistoryIndex``).
"""

from __future__ import annotations

import copy
import html
import json
import random
import re
import shlex
import time
import xml.etree.ElementTree as ET

import pytest

from isrcheck.conformance.engines.soak.checker import check
from isrcheck.conformance.engines.soak.history_index import HistoryIndex
from isrcheck.conformance.reports.soak_page import INSTANCES_SHOWN, OK_POINTS, render_soak_page

MS = 1_000_000
HOSTILE = "<script>alert('x')</script>"


class History:
    """Builds a history event by event, times in ms; returns each event's index."""

    def __init__(self) -> None:
        self.ops: list[dict] = []

    def event(self, ms: int, process, type_: str, f: str, **fields) -> int:
        self.ops.append({"index": len(self.ops), "time": ms * MS, "process": process, "type": type_, "f": f, **fields})
        return len(self.ops) - 1

    def events(self) -> list[dict]:
        return json.loads(json.dumps(self.ops))  # as read from a history file


def small_history() -> list[dict]:
    """Sends to partition 0 (ok, info, fail), a consumer named like a script tag that polls a
    value nobody sent (a string like a script tag) and has a poll time out, then a final read that
    lacks value 2 though it passed its offset: a lost-write (with an int-poll-skip and an unexpected
    record beside it)."""
    h = History()
    h.event(1, 0, "invoke", "send", partition=0, value=1)
    h.event(3, 0, "ok", "send", partition=0, value=1, offset=0)
    h.event(2, 1, "invoke", "send", partition=0, value=2)
    h.event(4, 1, "ok", "send", partition=0, value=2, offset=1)  # index 3: the lost value's ack
    h.event(5, 0, "invoke", "send", partition=0, value=3)
    h.event(40, 0, "info", "send", partition=0, value=3, error=HOSTILE)
    h.event(6, 1, "invoke", "send", partition=0, value=4)
    h.event(9, 1, "fail", "send", partition=0, value=4)
    h.event(10, 1, "invoke", "send", partition=0, value=5)
    h.event(12, 1, "ok", "send", partition=0, value=5, offset=2)
    h.event(13, HOSTILE, "invoke", "assign", partitions=[0])
    h.event(14, HOSTILE, "ok", "assign", partitions=[0])
    h.event(15, HOSTILE, "invoke", "poll", partitions=[0])
    h.event(17, HOSTILE, "ok", "poll", records={"0": [[0, 1], [1, 2], [3, HOSTILE]]})  # index 13
    h.event(18, HOSTILE, "invoke", "poll", partitions=[0])
    h.event(30, HOSTILE, "info", "poll")
    h.event(50, 9, "invoke", "assign", partitions=[0])
    h.event(51, 9, "ok", "assign", partitions=[0])
    h.event(52, 9, "invoke", "poll", partitions=[0], final=True)
    h.event(55, 9, "ok", "poll", records={"0": [[0, 1], [2, 5], [3, HOSTILE]]})  # index 19: final read
    return h.events()


FAULTS = [
    {"start": 5 * MS, "end": 20 * MS, "kind": "partition", "nodes": [0, 1], "groups": [[0, 1], [2]]},
    {"start": 45 * MS, "end": None, "kind": "kill", "nodes": [2]},
]
META = {
    "protocol": "kip-966",
    "seconds": 0.06,
    "bootstrap": "127.0.0.1:9092",
    "seed": 7,
    "fault_kinds": ["partition", "kill"],
    "command": ["isrcheck", "soak", "--bootstrap", "127.0.0.1:9092", "--note", HOSTILE],
}


def page_of(history, faults, meta, checked=None, **options) -> str:
    """The page of ``history`` as the soak renders it: the checker's result, the history's index."""
    checked = checked if checked is not None else check(history)
    return render_soak_page(HistoryIndex.of(history, checked), checked, faults, meta, **options)


def small_page() -> tuple[str, dict]:
    history = small_history()
    checked = check(history)
    page = page_of(history, FAULTS, META, checked, figures={"sends_per_s": 50.0})  # a run figure beside the checker's
    return page, checked.to_json()


def svg(page: str, id_: str) -> ET.Element:
    """The SVG element of that id, parsed as XML (so its markup is well formed)."""
    match = re.search(rf'<svg [^>]*id="{id_}".*?</svg>', page, re.S)
    assert match, f"no <svg id={id_}>"
    return ET.fromstring(match.group(0))


def section(page: str, anchor: str) -> str:
    match = re.search(rf'<section [^>]*id="{anchor}".*?</section>', page, re.S)
    assert match, f"no section #{anchor}"
    return match.group(0)


NS = "{http://www.w3.org/2000/svg}"


# --- (a) the page itself ---------------------------------------------------------------------


def test_the_page_has_the_headline_and_the_three_plots_with_the_faults_shaded():
    page, result = small_page()
    assert result["counts"]["lost-write"] == 1 and not result["ok"]
    headline = re.search(r'<div class="verdict failed" id="headline">.*?</div>', page, re.S).group(0)
    assert '<a href="#anomaly-lost-write">lost-write</a> &times;1' in headline
    assert '<a href="#anomaly-int-poll-skip">int-poll-skip</a> &times;2' in headline
    assert "50.0 ok sends/s, 33.3 ok polls/s" in headline  # 3 ok sends and 2 ok polls in 0.06 s
    assert "isrcheck soak --bootstrap 127.0.0.1:9092" in headline
    assert "<title>isrcheck soak kip-966: 3 anomalies</title>" in page

    latency, rate, unseen = svg(page, "latency-plot"), svg(page, "throughput-plot"), svg(page, "unseen-plot")
    # every completed send and poll is a point: 3 ok, 1 info and 1 fail send; 2 ok and 1 info poll
    drawn = {
        (p.get("data-f"), p.get("data-type")): p for p in latency.iter(f"{NS}path") if "points" in p.get("class", "")
    }
    assert {k: int(p.get("data-total")) for k, p in drawn.items()} == {
        ("send", "ok"): 3,
        ("send", "info"): 1,
        ("send", "fail"): 1,
        ("poll", "ok"): 2,
        ("poll", "info"): 1,
    }
    assert drawn[("send", "ok")].get("stroke-linecap") == "round"  # a send is a dot
    assert drawn[("poll", "ok")].get("stroke-linecap") == "square"  # a poll a square
    assert drawn[("send", "fail")].get("d").count("M") == 1
    assert "Showing 8 of 8 completed operations" in page
    rates = {(p.get("data-f"), p.get("data-type")) for p in rate.iter(f"{NS}polyline")}
    assert rates == {("send", "ok"), ("send", "info"), ("send", "fail"), ("poll", "ok"), ("poll", "info")}
    assert len(list(unseen.iter(f"{NS}polyline"))) == 1

    for plot, panels in ((latency, 1), (rate, 2), (unseen, 1)):
        bands = [r for r in plot.iter(f"{NS}rect") if r.get("class") == "fault"]
        assert [b.get("data-kind") for b in bands] == ["partition", "kill"] * panels
        partition, kill = bands[0], bands[1]
        assert float(partition.get("width")) > 0 and float(kill.get("width")) > 0
        assert float(partition.get("x")) < float(kill.get("x"))
        assert "to the end (not ended)" in kill.find(f"{NS}title").text
        labels = [t.text for t in plot.iter(f"{NS}text") if t.get("class") == "fault-label"]
        assert labels == ["partition 0,1", "kill 2 \u2192"] * panels  # the arrow: active to the end
    faults = re.search(r'<h2 id="faults">faults</h2>.*?</table>', page).group(0)
    assert "<td>partition</td><td>[0, 1]</td><td>0.005</td><td>0.020</td><td>groups [[0, 1], [2]]</td>" in faults


def test_each_anomaly_shows_its_explanation_and_the_events_that_prove_it():
    page, result = small_page()
    lost = result["anomalies"]["lost-write"][0]
    assert lost["ops"] == [3, 13, 19]
    part = section(page, "anomaly-lost-write")
    assert "lost-write: 1 instance" in part
    assert "value 2, acknowledged at offset 1 of partition 0, is missing from the final read" in part
    assert "A record the final read should have returned and did not" in part  # the checker's definition
    # each operation's invoke and completion, in that order
    assert re.findall(r'data-index="(\d+)"', part) == ["2", "3", "12", "13", "18", "19"]
    ack = re.search(r'<tr class="op-row completion" data-index="3">(.*?)</tr>', part).group(1)
    cells = re.findall(r"<td>(.*?)</td>", ack)
    assert cells == ["3", "0.004000 s", "1", "ok", "send", "0", "value 2, offset 1"]
    final = re.search(r'<tr class="op-row completion" data-index="19">(.*?)</tr>', part).group(1)
    # the records around the lost value's offset, the highest offset read marked, offset 1 absent
    assert "3 records, offsets 0..3: [0, 1] [2, 5] <mark>[3, " in final
    assert "(no record at offset 1)" in final
    assert re.search(r'data-index="18">.*?final=true', part)
    for name in ("unexpected", "int-poll-skip"):
        assert section(page, f"anomaly-{name}")
    assert 'id="anomaly-unseen"' not in page  # none: every acknowledged value was polled


def test_hostile_strings_are_escaped():
    page, _ = small_page()
    assert "<script" not in page.lower()  # the page has no script of its own either
    escaped = "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;"
    part = section(page, "anomaly-unexpected")
    assert part.count(escaped) >= 3  # the process, the value in the explanation and in the records
    command = re.search(r'<code id="command">(.*?)</code>', page).group(1)
    assert command == html.escape(shlex.join(META["command"])) and "&lt;script&gt;" in command
    # a hostile fault kind and nodes are escaped in the plots too, which stay well-formed XML
    faults = FAULTS + [{"start": 1 * MS, "end": 2 * MS, "kind": HOSTILE, "nodes": [HOSTILE]}]
    history = small_history()
    hostile = page_of(history, faults, {**META, "protocol": HOSTILE})
    assert "<script" not in hostile.lower()
    for id_ in ("latency-plot", "throughput-plot", "unseen-plot"):
        kinds = {r.get("data-kind") for r in svg(hostile, id_).iter(f"{NS}rect")}
        assert HOSTILE in kinds


def test_the_same_inputs_give_the_same_bytes():
    page, _ = small_page()
    again = page_of(small_history(), copy.deepcopy(FAULTS), copy.deepcopy(META), figures={"sends_per_s": 50.0})
    assert page.encode() == again.encode()


def test_run_figures_named_as_the_checkers_fields_leave_its_result_alone():
    """The soak's figures (``results.json``: ``anomalies`` a list of names, ``counts`` per operation)
    and the checker's result are separate values: no merge, no key of one shadowing the other's."""
    history = small_history()
    figures = {
        "anomalies": ["lost-write"],
        "counts": {"send": {"ok": 3}},
        "check": check(history).to_json(),
        "throughput": {"sends_ok_per_s": 50.0},
    }
    page = page_of(history, FAULTS, META, figures=figures)
    assert '<a href="#anomaly-lost-write">lost-write</a> &times;1' in page and section(page, "anomaly-lost-write")
    assert "<td>throughput</td>" not in page  # the headline has it: not repeated raw in the run table


def test_an_anomaly_free_run_says_so():
    h = History()
    h.event(1, 0, "invoke", "send", partition=0, value=1)
    h.event(2, 0, "ok", "send", partition=0, value=1, offset=0)
    h.event(3, 5, "invoke", "assign", partitions=[0])
    h.event(4, 5, "ok", "assign", partitions=[0])
    h.event(5, 5, "invoke", "poll", partitions=[0], final=True)
    h.event(7, 5, "ok", "poll", records={"0": [[0, 1]]})
    h.event(8, 0, "invoke", "send", partition=0, value=2)  # never completes
    history = h.events()
    page = page_of(history, [], {"protocol": "kip-966", "command": "isrcheck soak"})
    assert '<div class="verdict" id="headline"><p><b>anomaly-free</b>' in page
    assert "<section" not in page and "no faults" in page
    assert re.search(r"<td>send</td><td>1</td><td>0</td><td>0</td><td>1</td>", page)  # one never completed
    for id_ in ("latency-plot", "throughput-plot", "unseen-plot"):
        assert not [r for r in svg(page, id_).iter(f"{NS}rect") if r.get("class") == "fault"]


# --- (b) in a real headless Chromium ---------------------------------------------------------


@pytest.fixture
def open_soak_page(request):
    """The suite's ``open_page`` (a real headless Chromium: skipped when Debian's chromium is
    not installed), skipped first when Playwright itself is missing."""
    pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    return request.getfixturevalue("open_page")


# For each scatter series: whether the element painted at its first point ("M x y") is that path.
HIT_FIRST_POINTS = """() => {
  const out = {};
  for (const path of document.querySelectorAll("#latency-plot path.points")) {
    const [x, y] = path.getAttribute("d").match(/^M(\\d+) (\\d+)/).slice(1).map(Number);
    const p = new DOMPoint(x, y).matrixTransform(path.getScreenCTM());
    out[path.getAttribute("class")] = document.elementFromPoint(p.x, p.y) === path;
  }
  return out;
}"""


def test_the_page_in_chromium(tmp_path, open_soak_page, artifacts):
    page_html, _ = small_page()
    out = tmp_path / "soak.html"
    out.write_text(page_html, encoding="utf-8")
    page, errors = open_soak_page(out)
    page.screenshot(path=str(artifacts / "soak-page.png"), full_page=True)
    assert errors == []
    for id_ in ("latency-plot", "throughput-plot", "unseen-plot"):
        box = page.locator(f"svg#{id_}").bounding_box()
        assert box is not None and box["width"] > 500 and box["height"] > 100, (id_, box)
        drawn = page.evaluate(
            """(id) => [...document.querySelectorAll(`#${id} .rate, #${id} .unseen`)]
                                 .map(e => { const b = e.getBBox(); return b.width + b.height; })""",
            id_,
        )
        assert all(size > 0 for size in drawn), (id_, drawn)
        assert drawn or id_ == "latency-plot"
        assert page.locator(f"svg#{id_} rect.fault").count() >= 2
    # each scatter series is painted: the browser finds its path at its first point
    page.locator("#latency-plot").scroll_into_view_if_needed()
    hits = page.evaluate(HIT_FIRST_POINTS)
    assert len(hits) == 5 and all(hits.values()), hits
    page.evaluate("scrollTo(0, 0)")
    section_top = "document.getElementById('anomaly-lost-write').getBoundingClientRect().top"
    assert page.evaluate("scrollY") == 0 and page.evaluate(section_top) > page.evaluate("innerHeight")
    page.locator("#headline a[href='#anomaly-lost-write']").click()
    page.wait_for_function("location.hash === '#anomaly-lost-write'")
    assert page.evaluate("scrollY") > 0
    top = page.evaluate(section_top)  # scrolled to the section's top (or as far as the page goes)
    # a fraction of a pixel either way: the browser scrolls to whole device pixels
    assert -1 < top < 5 or (
        -1 < top < page.evaluate("innerHeight") / 2
        and page.evaluate("scrollY + innerHeight >= document.documentElement.scrollHeight - 1")
    )
    assert (
        page.evaluate("getComputedStyle(document.querySelector('#anomaly-lost-write')).backgroundColor")
        == "rgb(255, 251, 230)"
    )  # highlighted as the target
    assert page.locator("#anomaly-lost-write tr.op-row").count() == 6
    assert errors == []


# --- (c) a long run --------------------------------------------------------------------------


def long_history(events: int = 200_000, seconds: int = 300) -> tuple[list[dict], list[dict]]:
    """About ``events`` events over ``seconds``: 8 producers sending round-robin to 4 partitions,
    one consumer polling what was acknowledged (but partition 0 no more in the last 1,500 rounds),
    failures and timeouts during two faults; then a final read that lacks one acknowledged value
    (a lost-write) and stops at partition 0's last offset the consumer saw (thousands unseen)."""
    rng = random.Random(7)
    ops: list[dict] = []
    faults = [
        {"start": 60 * 10**9, "end": 90 * 10**9, "kind": "partition", "nodes": [0]},
        {"start": 200 * 10**9, "end": None, "kind": "kill", "nodes": [1, 2]},
    ]
    logs: dict[int, list] = {p: [] for p in range(4)}
    polled = {p: 0 for p in range(4)}
    rounds = events // 18
    step = seconds * 10**9 // rounds
    value = 0

    def add(t, process, type_, f, **fields):
        ops.append({"index": len(ops), "time": t, "process": process, "type": type_, "f": f, **fields})

    for r in range(rounds):
        t = r * step
        faulty = any(f["start"] <= t < (f["end"] or 1 << 62) for f in faults)
        for producer in range(8):
            value += 1
            p = value % 4
            start = t + producer * 1000
            add(start, producer, "invoke", "send", partition=p, value=value)
            outcome = rng.choices(("ok", "fail", "info"), (80, 10, 10) if faulty else (998, 1, 1))[0]
            latency = int(rng.lognormvariate(14.5 if not faulty else 17, 0.6))
            if outcome == "ok":
                logs[p].append((len(logs[p]), value))
                add(start + latency, producer, "ok", "send", partition=p, value=value, offset=len(logs[p]) - 1)
            else:
                add(start + latency, producer, outcome, "send", partition=p, value=value)
        add(t + 9000, "consumer", "invoke", "poll", partitions=[0, 1, 2, 3])
        records = {}
        for p in range(4) if r < rounds - 1500 else range(1, 4):
            records[str(p)] = [list(rec) for rec in logs[p][polled[p] :]]
            polled[p] = len(logs[p])
        add(t + 9000 + int(rng.lognormvariate(14, 0.5)), "consumer", "ok", "poll", records=records)
    end = rounds * step + 10**9
    add(end, "final", "invoke", "assign", partitions=[0, 1, 2, 3])
    add(end + 1000, "final", "ok", "assign", partitions=[0, 1, 2, 3])
    add(end + 2000, "final", "invoke", "poll", partitions=[0, 1, 2, 3], final=True)
    final = {
        "0": [list(rec) for rec in logs[0][: polled[0]]],
        "1": [list(rec) for i, rec in enumerate(logs[1]) if i != 500],
        "2": [list(rec) for rec in logs[2]],
        "3": [list(rec) for rec in logs[3]],
    }
    add(end + 5 * 10**8, "final", "ok", "poll", records=final)
    return ops, faults


@pytest.mark.slow  # 200,000 events
def test_a_long_history_renders_in_seconds_into_a_page_of_a_few_mb():
    history, faults = long_history()
    assert len(history) >= 199_000
    checked = check(history)
    result = checked.to_json()
    assert result["counts"]["lost-write"] == 1 and result["counts"]["unseen"] > 2000
    meta = {
        "protocol": "kip-966",
        "seconds": 300,
        "bootstrap": "127.0.0.1:9092",
        "seed": 7,
        "fault_kinds": ["partition", "kill"],
        "command": "isrcheck soak --duration 300",
    }
    started = time.perf_counter()
    page = page_of(history, faults, meta, checked)
    took = time.perf_counter() - started
    size = len(page.encode())
    print(f"\n200k-event page: {took:.2f} s, {size / 1e6:.2f} MB")
    assert took < 8, f"rendering took {took:.1f} s"
    assert size < 3_000_000, f"the page is {size:,} bytes"
    latency = svg(page, "latency-plot")
    ok_sends = next(p for p in latency.iter(f"{NS}path") if p.get("class") == "points send ok")
    total, shown = int(ok_sends.get("data-total")), int(ok_sends.get("data-shown"))
    assert total > OK_POINTS and OK_POINTS // 2 < shown <= OK_POINTS
    fails = next(p for p in latency.iter(f"{NS}path") if p.get("class") == "points send fail")
    assert fails.get("data-shown") == fails.get("data-total")  # every failure is drawn
    assert re.search(r"Showing [\d,]+ of [\d,]+ completed operations", page)
    assert "send ok: every " in page
    # the final read's tens of thousands of records are shown around the lost value only
    part = section(page, "anomaly-lost-write")
    assert len(part) < 20_000 and "<mark>" in part
    more = result["counts"]["unseen"] - INSTANCES_SHOWN
    assert f"and {more:,} more, in the result JSON" in section(page, "anomaly-unseen")
    assert page == page_of(history, faults, meta, checked)


def test_anomalies_outside_their_budget_are_said_so_with_the_reason_not_counted_as_findings():
    from isrcheck.conformance.engines.soak.checker import CheckResult

    history = [
        {"index": 0, "time": 0, "process": 0, "type": "invoke", "f": "send", "partition": 0, "value": 1},
        {"index": 1, "time": 5, "process": 0, "type": "ok", "f": "send", "partition": 0, "value": 1, "offset": 0},
    ]
    lost = [{"partition": "0", "value": 1, "ops": [1], "explanation": "value 1 acknowledged at offset 0 is lost"}]
    checked = CheckResult({"lost-write": lost}, {"lost-write": 1}, {}, {}, {}, ok=False)
    page = page_of(
        history,
        [],
        {"protocol": "kip-320"},
        checked,
        budget={"lost-write": "brokers 0, 1, 2 had lost unsynced data at once"},
    )
    assert "anomaly-free" in page and "broken outside their budget" in page
    assert "brokers 0, 1, 2 had lost unsynced data at once" in page


def test_the_run_table_says_each_setting_once_in_words_not_json_nor_nanoseconds(tmp_path, open_page, artifacts):
    """A run's figures beside its settings (as ``soak`` passes them): a key the settings have is
    not repeated, what other tables show is not repeated raw, an object is its fields, a time is
    in seconds; the page fits 1400 and 800 pixels without a sideways scroll."""
    history = small_history()
    figures = {
        "protocol": "kip-966",
        "bootstrap": None,
        "seconds": 0.060123456,
        "seed": 7,
        "faults": FAULTS,
        "counts": {"send": {"ok": 3}},
        "throughput": {"sends_ok_per_s": 50.0},
        "final_read": True,
        "idempotence": True,
        "validation": {"verdict": "explained", "events": 1234, "lines": ["explained: " + "x" * 400]},
    }
    page = page_of(history, FAULTS, META, figures={**figures, "check": check(history).to_json()})
    run = re.search(r"<h2>run</h2>(.*?)</table>", page, re.S).group(1)
    keys = re.findall(r"<tr><td>([^<]*)</td>", run)
    assert len(keys) == len(set(keys)), keys
    for shown_elsewhere in ("faults", "counts", "throughput", "check"):
        assert shown_elsewhere not in keys
    assert "…" not in run and "60123456" not in run and "None" not in run
    assert "validation" in keys and "verdict: explained" in run and "events: 1234" in run
    path = tmp_path / "page.html"
    path.write_text(page, encoding="utf-8")
    browser_page, errors = open_page(path)
    for width in (1400, 800):
        browser_page.set_viewport_size({"width": width, "height": 900})
        browser_page.screenshot(path=str(artifacts / f"soak-run-table-{width}.png"), full_page=True)
        assert browser_page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), width
    assert errors == []
