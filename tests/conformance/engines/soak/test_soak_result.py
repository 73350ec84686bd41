"""A soak's result as values: the checker's ``CheckResult``, the validator's verdict and the
history's index, built once and shared by the run's counts and its page; JSON only where
``results.json`` / ``--json`` is written."""

from __future__ import annotations

from isrcheck.conformance.engines.soak.checker import check
from isrcheck.conformance.engines.soak.driver import SoakOptions, SoakResult
from isrcheck.conformance.engines.soak.history_index import HistoryIndex
from isrcheck.conformance.engines.validate.events import Event
from isrcheck.conformance.engines.validate.search import Verdict
from isrcheck.conformance.engines.validate.validation import LogValidation


def _history() -> list[dict]:
    ops = [
        (0, "invoke", "send", {"partition": 0, "value": 1}),
        (0, "ok", "send", {"partition": 0, "value": 1, "offset": 0}),
        (0, "invoke", "send", {"partition": 0, "value": 2}),
        (0, "info", "send", {"partition": 0, "value": 2}),
        (5, "invoke", "poll", {"partitions": [0], "final": True}),
        (5, "ok", "poll", {"records": {"0": [[0, 1]]}}),
        (0, "invoke", "send", {"partition": 0, "value": 3}),
    ]  # never completes
    return [
        {"index": i, "time": i * 1_000_000, "process": p, "type": t, "f": f, **fields}
        for i, (p, t, f, fields) in enumerate(ops)
    ]


def test_the_counts_come_from_the_shared_index_and_json_only_in_to_json():
    history = _history()
    checked = check(history)
    result = SoakResult(
        SoakOptions(), seconds=1.0, final_read=True, check=checked, index=HistoryIndex.of(history, checked)
    )
    assert result.check is checked and result.anomaly_counts == checked.counts
    assert result.counts == {"send": {"ok": 1, "info": 1}, "poll": {"ok": 1}}
    doc = result.to_json()
    assert doc["counts"] == result.counts and doc["check"] == checked.to_json()
    assert doc["anomalies"] == [] and doc["validation"] is None


def test_a_validation_keeps_the_events_read_and_the_events_explained_apart():
    """The validator's verdict counts the events it explained; the run read more: both are kept
    (one key used to overwrite the other in results.json)."""
    event = Event("broker-0.jsonl:4", 0, 4, 4, 1000, "append", {}, {})
    refused = LogValidation(Verdict(False, 3, [], event=event, refusals=[]), 10, 0.5)
    doc = refused.to_json()
    assert (doc["verdict"], doc["events_explained"], doc["events"]) == ("not explained", 3, 10)
    assert not refused.explained and refused.lines[0].startswith("not explained: event 4 of 10")
    result = SoakResult(SoakOptions(), final_read=True, validation=refused)
    assert result.anomalies == ["event-log-not-explained"] and "not explained: event 4 of 10" in result.exit_reason()
