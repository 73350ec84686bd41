"""Validating a log whose header sets split_fetch_handling: a leader that logs a follower's fetch as
its read (``read_fetch``) and, later, its update and answer (``handle_fetch``), with a produce of the
same leader between them (docs/steps.md, ``read_fetch``; Kafka's Partition.fetchRecords reads, then
updateFollowerFetchState)."""

from __future__ import annotations

import json
from pathlib import Path

from split_switches import log_header

from isrcheck.conformance.engines.validate.validation import validate_path
from isrcheck.conformance.engines.validate.views import broker_view
from isrcheck.model import ModelConfig, Step, apply, initial_state

PRODUCER = 4000
# (model step, the node that logs it, msg: (sender, the follower's send) of a receive)
RUN = [
    (Step("produce", 0, 1), 0, (PRODUCER, 1)),
    (Step("send_fetch", 1), 1, None),
    (Step("send_fetch", 2), 2, None),
    (Step("read_fetch", 1), 0, (1, 1)),  # follower 1's fetch read: record 1
    (Step("produce", 0, 1), 0, (PRODUCER, 2)),  # appended between its read and its update
    (Step("handle_fetch", 2), 0, (2, 1)),  # follower 2's whole: records 1 and 2
    (Step("handle_fetch", 1), 0, (1, 1)),  # follower 1's update and answer: what was read
    (Step("handle_fetch_response", 1), 1, (0, 1)),
    (Step("handle_fetch_response", 2), 2, (0, 1)),
]


# the HW of follower 1's fetch read (read_fetch_hw), follower 2's update raising the HW to 1
# and an append between them and its batches' read: the answer carries HW 0 and record 2
HW_FIRST = [
    (Step("produce", 0, 1), 0, (PRODUCER, 1)),
    *[
        step
        for r, corr in ((1, 1), (2, 1), (1, 2))
        for step in (
            (Step("send_fetch", r), r, None),
            (Step("handle_fetch", r), 0, (r, corr)),
            (Step("handle_fetch_response", r), r, (0, corr)),
        )
    ],
    (Step("send_fetch", 1), 1, None),
    (Step("send_fetch", 2), 2, None),
    (Step("read_fetch_hw", 1), 0, (1, 3)),  # HW 0, LEO 1
    (Step("handle_fetch", 2), 0, (2, 2)),  # follower 2's update: HW 1
    (Step("produce", 0, 1), 0, (PRODUCER, 2)),
    (Step("read_fetch", 1), 0, (1, 3)),  # record 2
    (Step("handle_fetch", 1), 0, (1, 3)),
    (Step("handle_fetch_response", 1), 1, (0, 3)),  # HW 0 as read, LEO 2
]


def _log(path: Path, split: bool = True, run: list = RUN) -> list[dict]:
    """The events of ``run`` as the model takes it (each node's state after its step), in one file."""
    cfg = ModelConfig(protocol="kip-966", split_fetch_handling=True)
    lines: list[dict] = [log_header("split_fetch_handling", split)]
    s, seq = initial_state(cfg), {}
    for lc, (st, node, msg) in enumerate(run, start=1):
        s = apply(cfg, s, st)[0]
        seq[node] = seq.get(node, 0) + 1
        event = {"node": node, "seq": seq[node], "lc": lc, "t": 0, "step": st.name}
        event.update(zip(st.kind.fields, st.field_values()))
        if st.name == "send_fetch":
            event["corr"] = sum(x.name == "send_fetch" and n == node for x, n, _ in run[:lc])  # 1, 2, ...
        if msg is not None:
            event["msg"] = list(msg)
        lines.append({**event, "state": broker_view(s, node)})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return lines


def test_a_produce_between_a_read_and_its_update_is_explained(tmp_path):
    log = tmp_path / "split.jsonl"
    _log(log)
    verdict, events, _ = validate_path(str(log))
    assert verdict.explained, verdict.to_json()
    assert events == len(RUN)
    assert [st["step"] for st in verdict.steps if st["step"] in ("read_fetch", "handle_fetch")] == [
        "read_fetch",
        "handle_fetch",
        "handle_fetch",
    ]


def test_an_edited_read_is_refused_at_the_read(tmp_path):
    log = tmp_path / "split.jsonl"
    lines = _log(log)
    read = next(line for line in lines if line.get("step") == "read_fetch")
    read["state"]["leo"] += 1  # the leader read a record it never had
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    verdict, _, _ = validate_path(str(log))
    assert not verdict.explained
    assert verdict.event.step == "read_fetch" and (verdict.event.node, verdict.event.seq) == (0, read["seq"])
    assert "read_fetch" in verdict.event.describe()
    assert any("leo is 1 in the model, 2 in the log" in why for r in verdict.refusals for why in r.reasons)


def test_an_answer_holding_what_was_appended_after_the_read_is_refused(tmp_path):
    """Follower 1's answer carries the read, not the record appended after it: a log where it
    appended both is refused at that append."""
    log = tmp_path / "split.jsonl"
    lines = _log(log)
    answer = next(line for line in lines if line.get("step") == "handle_fetch_response" and line["node"] == 1)
    answer["state"]["leo"] = 2
    answer["state"]["last_epoch"] = 0
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    verdict, _, _ = validate_path(str(log))
    assert not verdict.explained and verdict.event.step == "handle_fetch_response"
    assert any("leo is 1 in the model, 2 in the log" in why for r in verdict.refusals for why in r.reasons)


def test_a_read_in_a_log_without_the_switch_is_refused_as_the_model_refuses_it(tmp_path):
    log = tmp_path / "whole.jsonl"
    _log(log, split=False)
    verdict, _, _ = validate_path(str(log))
    assert not verdict.explained and verdict.event.step == "read_fetch"
    assert any("split_fetch_handling is off" in why for r in verdict.refusals for why in r.reasons)


def test_a_raise_and_an_append_between_the_hw_and_the_batches_are_explained(tmp_path):
    log = tmp_path / "hw-first.jsonl"
    lines = _log(log, run=HW_FIRST)
    assert lines[-1]["state"]["hw"] == 0 and lines[-1]["state"]["leo"] == 2  # the HW read first
    verdict, events, _ = validate_path(str(log))
    assert verdict.explained, verdict.to_json()
    assert events == len(HW_FIRST)
    reads = [st["step"] for st in verdict.steps if st["step"].startswith("read_fetch")]
    assert reads == ["read_fetch_hw", "read_fetch"]


def test_an_answer_carrying_the_hw_raised_after_the_hw_read_is_refused(tmp_path):
    log = tmp_path / "hw-first.jsonl"
    lines = _log(log, run=HW_FIRST)
    lines[-1]["state"]["hw"] = 1  # the answer's HW the one raised after the HW was read
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    verdict, _, _ = validate_path(str(log))
    assert not verdict.explained
    assert verdict.event.step == "handle_fetch_response" and (verdict.event.node, verdict.event.seq) == (
        1,
        lines[-1]["seq"],
    )
    assert "handle_fetch_response" in verdict.event.describe()
    assert any("hw is 0 in the model, 1 in the log" in why for r in verdict.refusals for why in r.reasons)


def test_an_edited_hw_read_is_refused_at_it(tmp_path):
    log = tmp_path / "hw-first.jsonl"
    lines = _log(log, run=HW_FIRST)
    read = next(line for line in lines if line.get("step") == "read_fetch_hw")
    read["state"]["leo"] += 1  # the LEO it read, one it never had
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    verdict, _, _ = validate_path(str(log))
    assert not verdict.explained and verdict.event.step == "read_fetch_hw"


def test_an_hw_read_in_a_log_without_the_switch_is_refused(tmp_path):
    log = tmp_path / "whole.jsonl"
    _log(log, split=False, run=HW_FIRST)
    verdict, _, _ = validate_path(str(log))
    assert not verdict.explained and verdict.event.step == "read_fetch_hw"
    assert any("split_fetch_handling is off" in why for r in verdict.refusals for why in r.reasons)
