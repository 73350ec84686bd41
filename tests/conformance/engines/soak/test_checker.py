"""The soak history checker on small hand-written histories: for each anomaly one history that has
it (the anomaly and the events that prove it) and one that nearly has it but does not (no false
alarm); a clean history with indeterminate sends that do and do not appear; the loader's errors.

Histories go through JSON before they are checked, as a history file does: poll records are keyed
by strings while sends name partitions by ints.
"""

from __future__ import annotations

import json

import pytest

from isrcheck.conformance.engines.soak.checker import (
    ANOMALIES,
    INFORMATIONAL,
    CheckResult,
    HistoryError,
    check,
    load_history,
)


class History:
    """Builds a history event by event; each method returns the "index" of the event that carries
    the evidence (a completion, or for an unfinished operation its invoke)."""

    def __init__(self) -> None:
        self.ops: list[dict] = []

    def event(self, process, type_: str, f: str, **fields) -> int:
        index = len(self.ops)
        self.ops.append(
            {"index": index, "time": 1000 * (index + 1), "process": process, "type": type_, "f": f, **fields}
        )
        return index

    def send(self, process, partition, value: int, outcome: str = "ok", offset: int | None = None) -> int:
        self.event(process, "invoke", "send", partition=partition, value=value)
        extra = {"offset": offset} if outcome == "ok" else {}
        return self.event(process, outcome, "send", partition=partition, value=value, **extra)

    def invoke_send(self, process, partition, value: int) -> int:
        return self.event(process, "invoke", "send", partition=partition, value=value)

    def complete_send(self, process, partition, value: int, outcome: str = "ok", offset: int | None = None) -> int:
        extra = {"offset": offset} if outcome == "ok" else {}
        return self.event(process, outcome, "send", partition=partition, value=value, **extra)

    def poll(self, process, records: dict, outcome: str = "ok", final: bool = False) -> int:
        self.event(process, "invoke", "poll", partitions=sorted(records), **({"final": True} if final else {}))
        if outcome != "ok":
            return self.event(process, outcome, "poll")
        return self.event(process, "ok", "poll", records={p: [list(r) for r in rs] for p, rs in records.items()})

    def assign(self, process, partitions: list) -> int:
        self.event(process, "invoke", "assign", partitions=partitions)
        return self.event(process, "ok", "assign", partitions=partitions)

    def final_read(self, records: dict, process=99) -> int:
        self.assign(process, sorted(records))
        return self.poll(process, records, final=True)

    def check(self) -> CheckResult:
        return check([json.loads(json.dumps(op)) for op in self.ops])


def found(result: CheckResult) -> set[str]:
    """The anomalies present."""
    return {name for name, cases in result.anomalies.items() if cases}


def errors(result: CheckResult) -> set[str]:
    """The anomalies present that are errors (not the informational unseen)."""
    return found(result) - INFORMATIONAL


def the_one(result: CheckResult, name: str) -> dict:
    cases = result.anomalies[name]
    assert len(cases) == 1, cases
    case = cases[0]
    assert isinstance(case["explanation"], str) and case["explanation"].count(". ") == 0
    return case


def acked(h: History, values: list[int], partition=0, process=0) -> list[int]:
    """Send each value to ``partition`` at the next offsets, acknowledged; their ok events."""
    return [h.send(process, partition, v, offset=i) for i, v in enumerate(values)]


# --- clean histories -------------------------------------------------------------------------


def test_a_clean_history_with_indeterminate_sends_that_do_and_do_not_appear():
    h = History()
    h.send(0, 0, 1, offset=0)
    h.send(0, 0, 2, outcome="info")  # appears at offset 1
    h.send(1, 0, 3, outcome="info")  # never appears
    h.send(1, 0, 4, outcome="fail")  # never appears, as promised
    h.send(0, 0, 5, offset=2)
    h.send(2, 1, 6, offset=0)
    h.invoke_send(2, 1, 7)  # never completes: indeterminate, never appears
    h.assign(10, [0, 1])
    h.poll(10, {"0": [(0, 1), (1, 2)]})
    h.poll(10, {"0": [(2, 5)], "1": [(0, 6)]})
    h.poll(10, {})
    h.final_read({"0": [(0, 1), (1, 2), (2, 5)], "1": [(0, 6)]})
    result = h.check()
    assert result.ok and found(result) == set() and result.notes == []
    assert set(result.anomalies) == set(ANOMALIES) and all(c == 0 for c in result.counts.values())
    assert result.stats["sends"] == 7 and result.stats["sends-info"] == 3 and result.stats["sends-fail"] == 1
    assert json.loads(json.dumps(result.to_json()))["ok"] is True


def test_topic_partition_strings_are_partitions_too():
    h = History()
    h.send(0, "t-0", 1, offset=0)
    h.send(0, "t-0", 2, offset=1)
    h.final_read({"t-0": [(0, 1), (1, 2)]})
    result = h.check()
    assert result.ok and found(result) == set()


# --- lost-write ------------------------------------------------------------------------------


def test_lost_write_an_acknowledged_value_the_final_read_passed_without():
    h = History()
    a, b = acked(h, [1, 2])
    c = h.send(1, 0, 3, offset=1)  # offset 1 again: the log lost 2 and reused its offset
    final = h.final_read({"0": [(0, 1), (1, 3)]})
    result = h.check()
    lost = the_one(result, "lost-write")
    assert (lost["partition"], lost["value"], lost["offset"], lost["ops"]) == ("0", 2, 1, [b, final])
    assert found(result) == {"lost-write", "inconsistent-offsets", "unseen"} and not result.ok
    assert the_one(result, "inconsistent-offsets")["ops"] == [b, c]


def test_lost_write_a_value_a_poll_returned_then_the_final_read_lost():
    h = History()
    h.send(0, 0, 1, offset=0)
    h.send(0, 0, 2, outcome="info")  # indeterminate, but a poll proves it was written
    seen = h.poll(10, {"0": [(0, 1), (1, 2)]})
    h.send(1, 0, 3, offset=1)
    final = h.final_read({"0": [(0, 1), (1, 3)]})
    lost = the_one(h.check(), "lost-write")
    assert (lost["value"], lost["ops"]) == (2, [seen, final])


def test_no_lost_write_beyond_the_final_read_or_for_sends_that_may_not_have_happened():
    h = History()
    acked(h, [1, 2])
    h.send(0, 0, 3, outcome="info")  # indeterminate and never read: may not exist
    h.send(0, 0, 4, outcome="fail")
    late = h.send(1, 0, 5, offset=2)  # above the final read's reach: only unseen
    h.final_read({"0": [(0, 1), (1, 2)]})
    result = h.check()
    assert found(result) == {"unseen"} and result.ok
    assert the_one(result, "unseen")["ops"] == [late]


def test_without_a_final_read_lost_write_is_not_judged_and_says_so():
    h = History()
    acked(h, [1, 2])
    h.poll(10, {"0": [(0, 1), (1, 2)]})
    result = h.check()
    assert result.ok and found(result) == set()
    assert result.notes == ['no final read (no ok poll with "final": true): lost-write was not checked']


# --- unseen ----------------------------------------------------------------------------------


def test_unseen_an_acknowledged_value_no_poll_returned_and_its_count_over_time():
    h = History()
    a, b = acked(h, [1, 2])
    poll = h.poll(10, {"0": [(0, 1)]})
    result = h.check()
    case = the_one(result, "unseen")
    assert (case["value"], case["offset"], case["ops"]) == (2, 1, [b])
    assert result.ok  # informational: not an error by itself
    assert "unseen" in INFORMATIONAL
    time = {op["index"]: op["time"] for op in h.ops}
    assert result.series["unseen"] == [(time[a], 1), (time[b], 2), (time[poll], 1)]
    assert result.unseen_by_partition == {"0": result.series["unseen"]}


def test_not_unseen_when_a_poll_returns_it_before_its_send_completes():
    h = History()
    h.invoke_send(0, 0, 1)
    h.poll(10, {"0": [(0, 1)]})  # the broker appended it; the ack is still on its way
    h.complete_send(0, 0, 1, offset=0)
    result = h.check()
    assert found(result) == set() and result.series["unseen"] == []


# --- inconsistent-offsets --------------------------------------------------------------------


def test_inconsistent_offsets_two_values_at_one_offset_from_a_send_and_a_poll():
    h = History()
    sent = h.send(0, 0, 1, offset=0)
    h.send(1, 0, 2, outcome="info")
    poll = h.poll(10, {"0": [(0, 2)]})
    result = h.check()
    case = the_one(result, "inconsistent-offsets")
    assert (case["offset"], case["values"], case["ops"]) == (0, [1, 2], [sent, poll])
    assert found(result) == {"inconsistent-offsets", "unseen"}


def test_no_inconsistent_offsets_when_all_agree_and_offsets_have_gaps():
    h = History()
    h.send(0, 0, 1, offset=0)
    h.send(0, 0, 2, offset=3)  # 1 and 2: a control batch, say; nothing was there
    h.poll(10, {"0": [(0, 1), (3, 2)]})
    h.poll(11, {"0": [(0, 1)]})
    h.final_read({"0": [(0, 1), (3, 2)]})
    assert found(h.check()) == set()


# --- duplicate -------------------------------------------------------------------------------


def test_duplicate_one_value_at_two_offsets():
    h = History()
    sent = h.send(0, 0, 1, offset=0)
    poll = h.poll(10, {"0": [(0, 1), (1, 1)]})  # a retry appended it again
    result = h.check()
    case = the_one(result, "duplicate")
    assert (case["value"], case["offsets"], case["ops"]) == (1, [0, 1], [sent, poll])
    assert found(result) == {"duplicate"}


def test_no_duplicate_when_every_read_puts_a_value_at_its_one_offset():
    h = History()
    acked(h, [1, 2])
    h.poll(10, {"0": [(0, 1), (1, 2)]})
    h.poll(11, {"0": [(1, 2)]})
    h.final_read({"0": [(0, 1), (1, 2)]})
    assert found(h.check()) == set()


# --- G1a (aborted read) ----------------------------------------------------------------------


def test_g1a_a_poll_returned_a_value_whose_send_failed():
    h = History()
    failed = h.send(0, 0, 1, outcome="fail")
    poll = h.poll(10, {"0": [(0, 1)]})
    result = h.check()
    case = the_one(result, "G1a")
    assert (case["value"], case["ops"]) == (1, [failed, poll])
    assert found(result) == {"G1a"}


def test_no_g1a_for_an_indeterminate_send_that_appears():
    h = History()
    h.send(0, 0, 1, outcome="info")
    h.poll(10, {"0": [(0, 1)]})
    h.final_read({"0": [(0, 1)]})
    assert found(h.check()) == set()


# --- unexpected ------------------------------------------------------------------------------


def test_unexpected_a_value_nobody_sent_and_one_sent_elsewhere():
    h = History()
    h.send(0, 1, 5, offset=0)
    poll = h.poll(10, {"0": [(0, 99), (1, 5)]})
    result = h.check()
    cases = result.anomalies["unexpected"]
    assert [(c["value"], c["ops"]) for c in cases] == [(99, [poll]), (5, [poll])]
    assert "no send wrote it" in cases[0]["explanation"] and "sent to partition 1" in cases[1]["explanation"]


def test_not_unexpected_when_the_send_is_still_in_flight():
    h = History()
    h.invoke_send(0, 0, 1)
    h.poll(10, {"0": [(0, 1)]})  # its send never completes: indeterminate
    assert found(h.check()) == set()


# --- poll-skip and int-poll-skip -------------------------------------------------------------


def test_poll_skip_consecutive_polls_jump_over_a_known_record():
    h = History()
    _, proof, _ = acked(h, [1, 2, 3])
    first = h.poll(10, {"0": [(0, 1)]})
    second = h.poll(10, {"0": [(2, 3)]})
    result = h.check()
    case = the_one(result, "poll-skip")
    assert (case["process"], case["offsets"], case["skipped"], case["ops"]) == (10, [0, 2], 1, [proof, first, second])
    assert found(result) == {"poll-skip", "unseen"}  # and nobody else read the skipped record


def test_no_poll_skip_over_unknown_offsets_or_across_an_assign_or_an_indeterminate_poll():
    h = History()
    h.send(0, 0, 1, offset=0)
    h.send(0, 0, 2, outcome="info")  # never seen: its offset (1?) is unknown
    h.send(0, 0, 3, offset=2)
    h.send(0, 0, 4, offset=3)
    h.send(0, 0, 5, offset=4)
    h.poll(10, {"0": [(0, 1)]})
    h.poll(10, {"0": [(2, 3)]})  # over offset 1, which nothing shows holds a record
    h.assign(10, [0])
    h.poll(10, {"0": [(4, 5)]})  # after an assign the consumer may seek: over offset 3
    h.poll(11, {"0": [(0, 1)]})
    h.poll(11, {}, outcome="info")  # it may have consumed 2 and 3 without telling us
    h.poll(11, {"0": [(4, 5)]})
    h.poll(12, {"0": [(0, 1)]})
    h.poll(12, {}, outcome="fail")
    h.poll(12, {"0": [(2, 3)]})
    assert errors(h.check()) == set()


def test_int_poll_skip_one_poll_jumps_over_a_known_record():
    h = History()
    _, proof, _ = acked(h, [1, 2, 3])
    poll = h.poll(10, {"0": [(0, 1), (2, 3)]})
    result = h.check()
    case = the_one(result, "int-poll-skip")
    assert (case["offsets"], case["ops"]) == ([0, 2], [proof, poll])
    assert found(result) == {"int-poll-skip", "unseen"}


def test_no_int_poll_skip_over_an_unknown_offset():
    h = History()
    h.send(0, 0, 1, offset=0)
    h.send(0, 0, 3, offset=2)
    h.poll(10, {"0": [(0, 1), (2, 3)]})
    assert found(h.check()) == set()


# --- nonmonotonic-poll and int-nonmonotonic-poll ---------------------------------------------


def test_nonmonotonic_poll_a_consumer_returns_an_offset_it_already_returned():
    h = History()
    acked(h, [1, 2])
    first = h.poll(10, {"0": [(0, 1), (1, 2)]})
    second = h.poll(10, {"0": [(1, 2)]})
    result = h.check()
    case = the_one(result, "nonmonotonic-poll")
    assert (case["offsets"], case["delta"], case["ops"]) == ([1, 1], 0, [first, second])
    assert found(result) == {"nonmonotonic-poll"}


def test_no_nonmonotonic_poll_after_an_assign_or_for_another_consumer():
    h = History()
    acked(h, [1, 2])
    h.poll(10, {"0": [(0, 1), (1, 2)]})
    h.assign(10, [0])
    h.poll(10, {"0": [(0, 1)]})  # seeks back to the beginning: legitimate
    h.poll(11, {"0": [(0, 1), (1, 2)]})  # another consumer reads the same records
    h.poll(10, {"0": [(1, 2)]})
    assert found(h.check()) == set()


def test_int_nonmonotonic_poll_one_poll_goes_back():
    h = History()
    acked(h, [1, 2])
    poll = h.poll(10, {"0": [(1, 2), (0, 1)]})
    result = h.check()
    case = the_one(result, "int-nonmonotonic-poll")
    assert (case["offsets"], case["ops"]) == ([1, 0], [poll])
    assert found(result) == {"int-nonmonotonic-poll"}


def test_no_int_nonmonotonic_poll_across_partitions():
    h = History()
    h.send(0, 0, 1, offset=5)
    h.send(0, 1, 2, offset=0)
    h.poll(10, {"0": [(5, 1)], "1": [(0, 2)]})
    assert found(h.check()) == set()


# --- nonmonotonic-send -----------------------------------------------------------------------


def test_nonmonotonic_send_a_producers_later_send_lands_lower():
    h = History()
    first = h.send(0, 0, 1, offset=5)
    second = h.send(0, 0, 2, offset=3)
    result = h.check()
    case = the_one(result, "nonmonotonic-send")
    assert (case["process"], case["values"], case["offsets"], case["ops"]) == (0, [1, 2], [5, 3], [first, second])
    assert "unseen" in found(result) and "nonmonotonic-send" in found(result)


def test_no_nonmonotonic_send_between_producers_or_partitions():
    h = History()
    h.invoke_send(0, 0, 1)
    h.invoke_send(1, 0, 2)
    h.complete_send(1, 0, 2, offset=1)  # concurrent sends complete in any order
    h.complete_send(0, 0, 1, offset=0)
    h.send(0, 1, 3, offset=0)  # another partition starts at its own 0
    h.send(0, 0, 4, offset=2)
    h.final_read({"0": [(0, 1), (1, 2), (2, 4)], "1": [(0, 3)]})
    assert found(h.check()) == set()


# --- bad input -------------------------------------------------------------------------------


def _write(tmp_path, lines: list[str]):
    path = tmp_path / "history.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


GOOD = [
    '{"index": 0, "time": 10, "process": 0, "type": "invoke", "f": "send", "partition": 0, "value": 1}',
    '{"index": 1, "time": 20, "process": 0, "type": "ok", "f": "send", "partition": 0, "value": 1, "offset": 0}',
]


def test_load_history_reads_a_file_that_check_accepts(tmp_path):
    path = _write(
        tmp_path,
        GOOD
        + [
            "",
            '{"index": 2, "time": 30, "process": 9, "type": "invoke", "f": "poll", "partitions": [0], "final": true}',
            '{"index": 3, "time": 40, "process": 9, "type": "ok", "f": "poll", "records": {"0": [[0, 1]]}}',
        ],
    )
    ops = load_history(path)
    assert [op["index"] for op in ops] == [0, 1, 2, 3]
    result = check(ops)
    assert result.ok and found(result) == set() and result.stats["final-polls"] == 1


@pytest.mark.parametrize(
    "bad, line, message",
    [
        ('{"index": 2, "time": 30, "process": 0, "type": "invoke"', 3, "not JSON"),
        ("[1, 2]", 3, "expected a JSON object, got list"),
        (
            '{"index": 2, "process": 0, "type": "invoke", "f": "send", "partition": 0, "value": 2}',
            3,
            'missing field "time"',
        ),
        ('{"index": 2, "time": 30, "process": 0, "type": "invoke", "f": "produce"}', 3, '"f" must be one of'),
        (
            '{"index": 2, "time": 30, "process": 0, "type": "invoke", "f": "send", "partition": 0}',
            3,
            'send invoke (index 2): missing field "partition" or "value"',
        ),
        (
            '{"index": 1, "time": 30, "process": 1, "type": "invoke", "f": "poll", "partitions": [0]}',
            3,
            '"index" 1 repeats',
        ),
        (
            '{"index": 2, "time": 30, "process": 1, "type": "ok", "f": "poll", "records": {}}',
            3,
            "completes no poll invoke",
        ),
        (
            '{"index": 2, "time": 30, "process": 1, "type": "invoke", "f": "poll", "partitions": [0]}\n'
            '{"index": 3, "time": 40, "process": 1, "type": "invoke", "f": "assign", "partitions": [0]}',
            4,
            "process 1 invokes assign (index 3) while its poll (index 2) has not completed",
        ),
        (
            '{"index": 2, "time": 30, "process": 1, "type": "invoke", "f": "send", "partition": 0, "value": 1}',
            3,
            "value 1 was already sent (index 0)",
        ),
        (
            '{"index": 2, "time": 30, "process": 1, "type": "invoke", "f": "poll", "partitions": [0], "final": "yes"}',
            3,
            '"final" must be true or false',
        ),
    ],
    ids=[
        "not-json",
        "not-an-object",
        "missing-time",
        "unknown-f",
        "send-without-value",
        "repeated-index",
        "completion-without-invoke",
        "two-invokes-at-once",
        "value-sent-twice",
        "final-not-boolean",
    ],
)
def test_load_history_names_the_file_and_line_of_a_malformed_event(tmp_path, bad, line, message):
    path = _write(tmp_path, GOOD + [bad])
    with pytest.raises(HistoryError) as caught:
        load_history(path)
    assert str(caught.value).startswith(f"{path} line {line}: ") and message in str(caught.value)


def test_load_history_names_a_missing_offset_on_its_line(tmp_path):
    path = _write(tmp_path, [GOOD[0], GOOD[1].replace(', "offset": 0', "")])
    with pytest.raises(HistoryError, match=r'line 2: send ok \(index 1\): missing field "offset"'):
        load_history(path)


def test_load_history_names_a_bad_record_and_bytes_that_are_not_utf8(tmp_path):
    path = _write(
        tmp_path,
        [
            '{"index": 0, "time": 1, "process": 5, "type": "invoke", "f": "poll", "partitions": [0]}',
            '{"index": 1, "time": 2, "process": 5, "type": "ok", "f": "poll", "records": {"0": [[-1, 7]]}}',
        ],
    )
    with pytest.raises(HistoryError, match=r"line 2: poll ok \(index 1\): \"records\" of partition '0' has \[-1, 7\]"):
        load_history(path)
    path.write_bytes(GOOD[0].encode() + b"\n\xff\xfe\n")
    with pytest.raises(HistoryError, match=r":2: not a text \(UTF-8\) line"):
        load_history(path)


def test_load_history_names_a_missing_file(tmp_path):
    with pytest.raises(HistoryError, match="absent.jsonl: cannot read"):
        load_history(tmp_path / "absent.jsonl")


def test_check_names_the_event_of_a_malformed_operation():
    ops = [json.loads(GOOD[0]), {**json.loads(GOOD[1]), "value": 2}]
    with pytest.raises(HistoryError, match=r"event 1 of the history: send ok \(index 1\) does not repeat"):
        check(ops)
    with pytest.raises(HistoryError, match=r'event 0 of the history: missing field "index"'):
        check([{"time": 0}])
