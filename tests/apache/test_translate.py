"""Apache Kafka's own events explained by the model: recordings translated (engines/apache/translate.py)
and validated. The recordings under tests/apache/recordings/ are real: made by isrcheck's Java agent in
Apache Kafka's JVMs (4.4.0, ELR on: kip-966; 4.0.2, ELR off: kip-903) with
tests/apache/recordings/make.py (``clean``: 3 brokers, topic t of one partition, five acks=all
produces, a clean stop; ``follower``: a follower killed, three produces, the follower restarted, two
produces; ``leader``: the same with the leader). Edited copies of them must be refused at the edited
event."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from isrcheck.conformance.engines.apache.translate import translate
from isrcheck.conformance.engines.validate.validation import validate_path
from isrcheck.model.alphabet import UPDATE_METADATA_CACHE as STEP

DATA = Path(__file__).parent / "recordings"


@pytest.mark.parametrize("run", ["clean-4.4.0", "follower-4.4.0", "leader-4.4.0", "follower-4.0.2", "leader-4.0.2"])
def test_a_recorded_kafka_run_is_explained(run):
    verdict, events, _ = validate_path(str(DATA / run))
    assert verdict.explained, verdict.event and verdict.event.describe()
    assert verdict.partitions == {
        "t-0": {"events": verdict.partitions["t-0"]["events"], "model_steps": len(verdict.steps)}
    }


def _edited(tmp_path: Path, name: str, line: int, edit, run: str = "clean-4.4.0") -> Path:
    copy = tmp_path / "rec"
    shutil.copytree(DATA / run, copy)
    path = copy / name
    lines = path.read_text().splitlines(keepends=True)
    event = json.loads(lines[line - 1])
    edit(event)
    lines[line - 1] = json.dumps(event) + "\n"
    path.write_text("".join(lines))
    return copy


def test_an_hw_past_what_the_isr_holds_is_refused(tmp_path):
    """The leader's first HW move (to 1, once every follower fetched offset 1) edited to 2: no member
    but the leader holds offset 1 yet."""

    def edit(e):
        e["p"]["hw"] = 2

    verdict, _, _ = validate_path(str(_edited(tmp_path, "broker-2.jsonl", 24, edit)))
    assert not verdict.explained and verdict.event.step == "handle_fetch"
    assert any("hw is 1 in the model, 2 in the log" in why for r in verdict.refusals for why in r.reasons)


def test_an_election_outside_isr_and_elr_is_refused(tmp_path):
    """The controlled shutdown of leader 2: its record names leader 0 and the new ISR [0, 1]; edited to
    leader 2, the broker leaving, which is in neither the new ISR nor the ELR."""

    def edit(e):
        e["args"][0]["leader"] = 2

    verdict, _, _ = validate_path(str(_edited(tmp_path, "controller.jsonl", 21, edit)))
    assert not verdict.explained and verdict.event.step == "controlled_shutdown"
    assert any("leader is" in why for r in verdict.refusals for why in r.reasons)


def test_a_recording_of_the_metadata_caches_validates_with_them():
    """Agent version 2 records the brokers' metadata caches (KRaftMetadataCache.setImage): the translation
    takes them as update_metadata_cache, in the model's broker epochs, and sets metadata_cache and
    hw_waits_for_caught_up; the killed follower, fenced within its lag time, is explained with both."""
    head, nodes = translate(DATA / "follower-4.4.0")
    assert head["config"]["metadata_cache"] and head["config"]["hw_waits_for_caught_up"]
    caches = [e["state"]["cached_broker_epochs"] for lines in nodes.values() for e in lines if e["step"] == STEP]
    assert [-1, 0, 0] in caches and [1, 0, 0] in caches  # broker 0 killed and fenced, then registered again
    assert not translate(DATA / "clean-4.4.0")[0]["config"].get("metadata_cache")  # version 1: no caches


def test_a_cache_that_holds_a_registered_broker_fenced_is_refused(tmp_path):
    """The killed follower's broker 0, caught up after its restart: its own image at 161.6 s holds every
    broker unfenced; edited to hold broker 1 fenced, which the controller never fenced."""

    def edit(e):
        assert e["ev"] == "KRaftMetadataCache.setImage" and not any(b["fenced"] for b in e["brokers"])
        e["brokers"][1]["fenced"] = True

    verdict, _, _ = validate_path(str(_edited(tmp_path, "broker-0.jsonl", 65, edit, "follower-4.4.0")))
    assert not verdict.explained and verdict.event.step == STEP, verdict.event and verdict.event.describe()
    assert any("metadata cache holds" in why for r in verdict.refusals for why in r.reasons)


def test_two_request_handlers_at_once_are_taken_in_the_order_they_began(tmp_path):
    """The clean run's HW move to 2, made concurrent as a flood makes it: follower 0's fetch (handler 5)
    begins, follower 1's (handler 0) begins, handler 5's maybeIncrementLeaderHW then counts both and
    returns before handler 0 does. Taken by when each returned, follower 0's handling would already show
    an HW that follower 1's offset made; taken by when each began (the agent's ``in``), it is explained."""
    copy = tmp_path / "rec"
    shutil.copytree(DATA / "clean-4.4.0", copy)
    path = copy / "broker-2.jsonl"
    lines = [json.loads(text) for text in path.read_text().splitlines()]
    by_seq = {e.get("seq"): e for e in lines}
    a, b, raised, completed = by_seq[28], by_seq[32], by_seq[30], by_seq[31]
    assert (a["args"][0], b["args"][0], raised["p"]["hw"]) == (0, 1, 2)  # follower 0, follower 1, the HW move
    a["in"], b["in"] = 71_591_690, 71_591_800  # both begun before the raise
    raised["thread"] = completed["thread"] = a["thread"]
    a["us"], completed["us"] = raised["us"] + 6, raised["us"] + 16
    order = [e for e in lines if e.get("seq") not in (28, 30, 31, 32)]
    at = order.index(by_seq[29]) + 1
    order[at:at] = [raised, a, completed, b]
    path.write_text("".join(json.dumps(e) + "\n" for e in order))
    verdict, _, _ = validate_path(str(copy))
    assert verdict.explained, verdict.event and verdict.event.describe()
    for e in (a, b):  # without the entry times the handler that returned first is taken first: refused
        del e["in"]
    path.write_text("".join(json.dumps(e) + "\n" for e in order))
    verdict, _, _ = validate_path(str(copy))
    assert not verdict.explained and verdict.event.step == "handle_fetch"
    assert any("hw is 1 in the model, 2 in the log" in why for r in verdict.refusals for why in r.reasons)


def _handling(began: int, entered: int, read: int, returned: int, read_at: int | None = None) -> tuple:
    """A leader's handling of a follower's fetch as the translation notes it: its fetch entered at
    ``entered``, its update began at ``began`` having read the LEO ``read``, returned at ``returned``; its
    read_fetch line (at ``read_at``, else when it began) and its handle_fetch line last."""
    at = began if read_at is None else read_at
    return (
        began,
        entered,
        read,
        returned,
        {"us": at, "t": 0, "state": {}, "from": "b:1"},
        {"us": began, "t": 0, "state": {}},
    )


@pytest.mark.parametrize(
    "read, appends, at",
    [
        (2, [(90, 1), (120, 2)], 121),  # it read offset 1's append, which returned after it began: after it
        (1, [(80, 2)], 79),  # it did not read the append that returned before it began: before it
        (1, [(40, 2)], 100),  # that append returned before the fetch was even entered: its own time
        (1, [(100, 2)], 99),  # the pause soak of 4.4.0 at 497.0 s: one it did not read returned as it began
        # the stop soak of 4.4.0 at 638.6 s: it read offset 1's append, whose handler returned after this
        # handling had: after it all the same (the log took it before the read)
        (2, [(200, 2)], 201),
    ],
)
def test_a_fetch_handling_is_ordered_against_produces_by_what_it_read(read, appends, at):
    """A handling that began at 100 (its fetch entered at 50, returned at 150) having read the leader's LEO
    ``read``, among produce appends that returned at the given times."""
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000})
    handling = _handling(100, 50, read, 150)
    t.handlings[(2, "t-0")] = [handling]
    t.appends[(2, "t-0")] = [(done, end) for done, end in appends]
    t.finish()
    read_line, update = handling[-2:]  # the read moves; the update stays when it began, never before the read
    assert (read_line["us"], update["us"]) == (at, max(at, 100))


def _append(us: int, began: int, offset: int, thread: str, assigned: int | None = None):
    """A leader's ``appendRecordsToLeader`` exit line: one record at ``offset`` of partition t-0, the batch
    assigned offset ``assigned`` (``offset``; a duplicate's: the log's end offset) in place."""
    from isrcheck.conformance.engines.apache.recording import Recorded

    line = {"ev": "Partition.appendRecordsToLeader", "at": "exit", "us": us, "in": began, "thread": thread}
    base = offset if assigned is None else assigned
    line["args"] = [[[base, base, 0, 1]], "CLIENT", -1]
    line["ret"] = {"firstOffset": offset, "lastOffset": offset}
    return Recorded(f"broker-2.jsonl:{us}", 2, us, line["ev"], "exit", {"tp": "t-0"}, line)


def test_concurrent_produce_appends_are_taken_in_the_order_the_log_took_them():
    """A 10-minute partition soak of 4.4.0: handler 3 entered appendRecordsToLeader first and its append took
    offset 121, handler 4's took 122, but handler 4 returned first. Taken by when each returned, the model
    appends 121 as 122 ("leo is 122 in the model, 123 in the log"); by the offsets, just before it."""
    from isrcheck.conformance.engines.apache.recording import Recorded
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000})
    t.moved(2, "t-0", 90, 120, 120)  # the leader's HW 120
    t.broker(_append(100, 50, 120, "h1"))  # returned before the two were entered: keeps its place
    t.broker(_append(1016, 610, 122, "h4"))
    # follower 0's DelayedFetch (handled at 600, LEO 121) that offset 121's append completed, answered with
    # it alone before that append returned: its read goes between the two appends
    t.handled[(0, 2, 7)], t.last_send[(0, "t-0")] = _handling(600, 600, 121, 600), (2, 7)
    answer = {"ev": "ReplicaFetcherThread.processPartitionData", "at": "exit", "us": 1200}
    answer["args"] = ["t-0", 121, 0, {"highWatermark": 120}]
    state = {"tp": "t-0", "leo": 122, "hw": 120, "last_epoch": 0}
    t.broker(Recorded("broker-0.jsonl:1", 0, 1200, answer["ev"], "exit", state, answer))
    t.broker(_append(1563, 382, 121, "h3"))
    t.broker(_append(1700, 1600, 123, "h4"))  # entered after both returned: keeps its place
    t.finish()
    steps = sorted(t.out[2], key=lambda line: line["us"])
    assert [(e["us"], e["step"], e["state"].get("leo")) for e in steps] == [
        (100, "produce", 121),
        (1014, "produce", 122),
        (1015, "handle_fetch", None),
        (1016, "produce", 123),
        (1700, "produce", 124),
    ]


def test_an_hw_an_earlier_append_raised_past_its_own_records_is_checked_at_the_next_append():
    """The append of offset 5 returned last, its maybeIncrementLeaderHW (the ISR the leader alone) having
    counted offset 6, which another handler appended after it and returned first: the HW 7 is checked at
    that append, which the model takes second."""
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000})
    t.broker(_append(200, 150, 6, "h1"))
    t.raised_hw[(2, "h2", "t-0")] = (250, 7, 1)
    t.broker(_append(300, 100, 5, "h2"))
    first, second = sorted(t.out[2], key=lambda line: line["us"])
    assert (first["us"], first["state"], second["state"]) == (198, {"leo": 6}, {"leo": 7, "hw": 7})


def test_a_retried_batch_the_log_already_holds_is_no_produce():
    """The partition soak of 4.4.0: two acks=all produces timed out, the idempotent producer sent both
    batches again, and Kafka returned their first offsets, 184 and 185, while its LEO stayed 186 (the
    batches assigned offset 186, then found in the producer state). Neither is a produce; a batch a
    compressed validation copied (the producer's base offset 0) is taken as written."""
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000})
    t.broker(_append(100, 50, 185, "h1"))
    t.broker(_append(200, 150, 184, "h2", assigned=186))
    t.broker(_append(300, 250, 185, "h3", assigned=186))
    t.broker(_append(400, 350, 186, "h4", assigned=0))
    assert [e["state"]["leo"] for e in t.out[2]] == [186, 187]


def test_a_handling_that_read_the_hw_before_a_concurrent_raise_goes_before_the_raising_handling():
    """The partition soak of 4.4.0 at 77.5 s: follower 1's handling (handler 6) began at 882 and raised the HW
    to 756 by 925; follower 0's (handler 2, fetch entered at 751) began at 894, having read the HW 755 before
    that raise, and answered at once with it. Taken when each began, the model's handling of follower 1
    raises the HW first and follower 0's answer carries 756; follower 0's read goes first."""
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000})
    ones = _handling(882, 741, 758, 966), _handling(894, 751, 758, 925)
    raising, reading = ones[0][-1], ones[1][-2]  # follower 1's update, follower 0's read
    t.handlings[(2, "t-0")] = list(ones)
    t.raises.append((2, "t-0", 925, 756, ones[0]))
    t.handled[(0, 2, 7)], t.handled[(1, 2, 8)] = ones[1], ones[0]
    t.answers += [(0, "t-0", (2, 7), 757, 755, 1000, "f:1"), (1, "t-0", (2, 8), 757, 756, 1000, "f:2")]
    t.finish()
    # follower 0's update keeps its place, before the raise, which counted it: the HW is checked there
    assert (reading["us"], raising["us"], reading["state"]) == (881, 882, {})
    assert (ones[1][-1]["us"], ones[1][-1]["state"], raising["state"]) == (894, {"hw": 756}, {})


@pytest.mark.parametrize("update_at, checked_at", [(300, "handle_fetch"), (280, "produce")])
def test_an_hw_an_append_raised_is_checked_after_the_updates_it_counted(update_at, checked_at):
    """The stop soak of 4.4.0 at 65.3 s: handler 4 appended offset 44 and raised the HW to 44 (at 283) only after
    handler 1 had read that append and begun updating follower 1's state to offset 44 (at 280), so the raise
    counted it; handler 4 returned at 293, before the update, which the model takes after the read (at 300).
    The model's produce raises the HW at once: the HW is checked at the update, the later of the two."""
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000})
    produce = {"us": 293, "t": 0, "step": "produce", "state": {"leo": 45}}
    handling = _handling(280, 250, 45, 298, read_at=update_at)
    handling[-1].update(us=update_at, step="handle_fetch")
    t.handlings[(2, "t-0")] = [handling]
    t.append_raises.append((2, "t-0", 283, 44, (produce,)))
    t.finish()
    checked = [line["step"] for line in (produce, handling[-1]) if line["state"].get("hw") == 44]
    assert checked == [checked_at]


@pytest.mark.parametrize("answer_hw, delayed", [(62, False), (63, True)])
def test_a_read_past_the_leo_it_noted_is_told_from_a_delayed_fetch_by_the_hw(answer_hw, delayed):
    """The kill soak of 4.4.0 at 47.5 s: follower 0 fetched at 63; the leader's handling noted LEO 63 (nothing to
    read), then read the record 63 another handler had just appended, and its update raised the HW to 63. The
    answer held 63 with HW 62: the handling's own read, after that append (a DelayedFetch, parked once the
    update returned, would have read HW 63). An answer with HW 63 is a DelayedFetch's."""
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000})
    t.moved(1, "t-0", 100, 63, 62)
    t.moved(1, "t-0", 300, 64, None)  # the append of 63 returned at 300
    handling = _handling(350, 200, 63, 500, read_at=250)
    t.handlings[(1, "t-0")] = [handling]
    t.appends[(1, "t-0")] = [(300, 64)]
    t.handled[(0, 1, 89)] = handling
    t.raises.append((1, "t-0", 360, 63, handling))
    t.answers.append((0, "t-0", (1, 89), 64, answer_hw, 900, "f:1"))
    t.finish()
    read, update = handling[-2:]
    completions = [e for e in t.out.get(1, []) if "DelayedFetch" in e["from"]]
    assert bool(completions) == delayed
    if delayed:  # parked once the update returned: its read goes after the update
        assert completions[0]["us"] > update["us"]
    else:  # the read goes after the append it read, with the LEO it read to
        assert (read["us"], read["state"]) == (301, {"leo": 64})


def test_a_fetch_answered_with_a_diverging_epoch_is_handled_then_truncated_on():
    """The kill soak of 4.4.0 at 112.8 s: follower 1, restarted with a log to 970, fetched from its new leader 0,
    which answered with a diverging epoch (epoch 2 ends at 969) and logged nothing of it (no update of the
    follower's state); the follower truncated to 969. Translated: the leader's handle_fetch when its
    fetchMessages was entered, then the follower's handle_fetch_response with the truncated log."""
    from isrcheck.conformance.engines.apache.recording import Recorded
    from isrcheck.conformance.engines.apache.translate import Translation

    def line(node, us, ev, p=None, **fields):
        body = {"ev": ev, "at": "exit", "us": us, **fields}
        return Recorded(f"broker-{node}.jsonl:{us}", node, us, ev, "exit", p, body)

    t = Translation({"controller": 1000})
    fetch = [["t-0", {"fetchOffset": 970, "currentLeaderEpoch": 3, "lastFetchedEpoch": 2}]]
    t.broker(line(1, 100, "AbstractFetcherThread.processFetchRequest", thread="ReplicaFetcherThread-0-0", args=[fetch]))
    params = {"replicaId": 1, "replicaEpoch": 7, "isolation": "LOG_END"}
    t.broker(line(0, 150, "ReplicaManager.fetchMessages", thread="h1", args=[params, [["id:t-0", fetch[0][1]]]]))
    truncated = {"tp": "t-0", "leader": 0, "epoch": 3, "leo": 969, "hw": 964, "last_epoch": 2}
    t.broker(line(1, 250, "Partition.truncateTo", truncated, args=[969, False]))
    answer = [["t-0", {"errorCode": 0, "leaderEpoch": 2, "endOffset": 969}]]
    t.broker(
        line(
            1,
            300,
            "AbstractFetcherThread.truncateOnFetchResponse",
            thread="ReplicaFetcherThread-0-0",
            args=[answer],
            **{"in": 200},
        )
    )
    [handled] = [e for e in t.out[0] if e["step"] == "handle_fetch"]
    [response] = [e for e in t.out[1] if e["step"] == "handle_fetch_response"]
    assert (handled["us"], handled["msg"], handled["replica"]) == (150, [1, 1], 1)
    assert (response["us"], response["msg"], response["state"]) == (
        300,
        [0, 1],
        {"leo": 969, "hw": 964, "last_epoch": 2},
    )


def test_a_handling_a_kill_cut_from_the_leaders_log_is_restored_after_its_last_line():
    """The kill soak of 4.4.0 at 91.4 s: follower 1 handled leader 2's answer to its fetch 5; leader 2, killed
    after it, had logged nothing of that handling (its last line came before the answer). The handling is the
    leader's handle_fetch after its last line and the send; an answer whose leader logged on is left alone."""
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000})
    t.kills[2] = [(100, 500)]
    t.sent_at[(1, 5)], t.sent_at[(1, 6)] = 150, 50
    t.answers.append((1, "t-0", (2, 5), 8, 7, 300, "f:1"))
    t.answers.append((1, "t-0", (2, 6), 8, 7, 90, "f:2"))  # answered before the leader's last line
    t.finish()
    assert [(e["us"], e["step"], e["msg"]) for e in t.out[2]] == [(151, "handle_fetch", [1, 5])]


def test_a_followers_answer_a_kill_cut_is_handled_before_its_next_send():
    """The kill soak of 4.4.0 at 126.7 s: follower 1 was killed after it handled the answer to its fetch 4 and
    sent fetch 5 at offset 11, none of it logged; leader 2 logged handling fetch 5 at 400. Restored: the answer
    to fetch 4 (the log it left ends at 11), then the send."""
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000})
    t.last_line[1], t.last_send[(1, "t-0")] = 300, (2, 4)
    handling = _handling(400, 390, 12, 410)
    handling[-2]["node"] = 2
    t.unsent[1] = [(handling, "t-0", 11)]
    t.cut_sends(1, "f:9")
    lines = [(e["us"], e["step"], e["state"], e.get("msg"), e.get("corr")) for e in t.out[1]]
    assert lines == [
        (398, "handle_fetch_response", {"leo": 11}, [2, 4], None),
        (399, "send_fetch", {"leo": 11}, None, 1),
    ]
    assert handling[-2]["msg"] == handling[-1]["msg"] == [1, 1]


def test_a_delayed_fetch_completion_is_taken_strictly_before_its_answer():
    """No leader event shows the LEO and HW the answer has: the completion goes right before the answer
    is handled, never at the same time (the shared order would then break the tie by node)."""
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000})
    t.handled[(1, 2, 7)] = _handling(100, 100, 5, 100)  # follower 1's fetch 7, read by leader 2 at its LEO 5
    t.leader_at[(2, "t-0")] = [(90, 5, 4)]
    t.delayed(1, "t-0", (2, 7), 6, 5, 500, "f:1")
    [line] = t.out[2]
    assert line["us"] == 499 and line["msg"] == [1, 7]


def test_a_delayed_fetch_an_append_completes_reads_the_hw_of_a_handling_not_yet_returned():
    """A 10-minute partition soak of 4.4.0: a handler raised the HW to 35 and returned only after two
    appends; a DelayedFetch that the first append completed answered records 35 with HW 35. The HW
    is the leader's from the handling's step on, so the completion goes after the first append, not
    after the second (its answer would hold both)."""
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000})
    t.handled[(0, 2, 7)] = _handling(100, 100, 35, 100)  # follower 0's fetch 7 at offset 35, parked: nothing new
    t.moved(2, "t-0", 110, 35, 34)
    t.moved(2, "t-0", 300, 36, None)  # an append: LEO 36
    t.moved(2, "t-0", 400, 37, None)  # another: LEO 37
    t.moved(2, "t-0", 200, -1, 35)  # the handling that raised the HW to 35 began at 200, returned at 450
    assert t.leader_at[(2, "t-0")] == [(110, 35, 34), (200, 35, 35), (300, 36, 35), (400, 37, 35)]
    t.delayed(0, "t-0", (2, 7), 36, 35, 500, "f:1")
    [line] = t.out[2]
    assert line["us"] == 301 and line["msg"] == [0, 7]


@pytest.mark.parametrize("read", [123, 122])
def test_an_update_raising_the_hw_after_a_delayed_fetch_read_goes_after_it(read):
    """The pause soak of 4.4.0 at 53.0 s: follower 1's fetch at offset 122 was parked; an append took offset 122
    (LEO 123); follower 0's handling read it (at 111.5 s: read before it, LEO 122), its update raised the HW to
    122 at 310; the append's handler returned after that handling began. Follower 1's answer held record 122
    with HW 121: the DelayedFetch the append completed read before follower 0's update, which goes after it."""
    from isrcheck.conformance.engines.apache.translate import Translation, in_node_order

    t = Translation({"controller": 1000})
    t.handled[(1, 2, 326)] = _handling(100, 100, 122, 100)  # parked: nothing new at offset 122
    t.moved(2, "t-0", 110, 122, 121)
    t.moved(2, "t-0", 200, -1, 122)  # follower 0's update began at 200 and raised the HW to 122
    t.moved(2, "t-0", 290, 123, None)  # the append of 122 returned at 290
    own = _handling(291, 150, read, 320)  # follower 0's handling, its read and update placed after that append
    t.emit(2, 291, "read_fetch", "r", {"leo": read}, "t-0", replica=0, msg=[0, 211])
    t.emit(2, 291, "handle_fetch", "r", {"hw": 122}, "t-0", replica=0, msg=[0, 211])
    own = (*own[:4], *t.out[2][-2:])
    t.delayed(1, "t-0", (2, 326), 123, 121, 500, "f:1", [(2, "t-0", 310, 122, own)])
    order = [(e["step"], e["msg"]) for e in sorted(t.out[2], key=in_node_order)]
    assert order == [("read_fetch", [0, 211]), ("handle_fetch", [1, 326]), ("handle_fetch", [0, 211])]


def test_a_broker_stopped_again_before_it_recorded_anything_was_started_in_between():
    """The harness stops only a running JVM: a second crash with no event since the first is a start
    that recorded nothing (a broker stopped again while it replayed the metadata log), then a crash."""
    from isrcheck.conformance.engines.apache.recording import Recorded
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000})
    for us, kind in ((100, "clean"), (200, "clean"), (300, "process")):
        line = {"ev": "harness.crash", "at": "harness", "us": us, "kind": kind}
        t.broker(Recorded(f"broker-2.jsonl:{us}", 2, us, "harness.crash", "harness", None, line))
    # a clean stop of an incarnation that did nothing changes nothing; a kill leaves no clean shutdown file
    assert [(e["step"], e["us"]) for e in t.out[2]] == [("crash", 100), ("restart", 299), ("crash", 300)]


@pytest.mark.parametrize(
    "kind, restored", [("process", [("produce", 298, 969, 1), ("produce", 299, 970, 1)]), ("clean", [])]
)
def test_a_leaders_appends_a_kill_cut_from_its_log_are_restored_before_the_kill(kind, restored):
    """The kill soak of 4.4.0 at 101.5 s: leader 2's last lines showed LEO 968; killed, it restarted with a log
    ending at 970 (its page cache kept two appends whose lines the kill cut off). They are produces just before
    the kill. A clean stop writes every line: nothing is restored then."""
    from isrcheck.conformance.engines.apache.recording import Recorded
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000})
    t.broker(_append(100, 50, 967, "h1"))
    line = {"ev": "Partition.maybeIncrementLeaderHW", "at": "exit", "us": 150, "thread": "h2", "args": []}
    t.broker(
        Recorded(
            "broker-2.jsonl:150", 2, 150, line["ev"], "exit", {"tp": "t-0", "leader": 2, "leo": 968, "hw": 967}, line
        )
    )
    crash = {"ev": "harness.crash", "at": "harness", "us": 300, "kind": kind}
    t.broker(Recorded("broker-2.jsonl:300", 2, 300, "harness.crash", "harness", None, crash))
    follow = {"ev": "AbstractFetcherThread.truncateToHighWatermark", "at": "exit", "us": 900, "args": []}
    t.broker(
        Recorded("broker-2.jsonl:900", 2, 900, follow["ev"], "exit", {"tp": "t-0", "leader": 0, "leo": 970}, follow)
    )
    t.finish()
    lost = [(e["step"], e["us"], e["state"]["leo"], e["records"]) for e in t.out[2] if e["from"] == "lost to the kill"]
    assert lost == restored


def test_a_broker_stopped_after_it_registered_recording_nothing_crashes_to_the_model():
    """A started broker the controller registered is up to the model from its registration (the
    validator's restart), though it recorded nothing before the harness stopped it cleanly: a crash."""
    from isrcheck.conformance.engines.apache.recording import Recorded
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000})
    t.partitions["t-0"] = [0, 1, 2]
    t.registered.add(2)

    def stop(us: int) -> None:
        line = {"ev": "harness.crash", "at": "harness", "us": us, "kind": "clean"}
        t.broker(Recorded(f"broker-2.jsonl:{us}", 2, us, "harness.crash", "harness", None, line))

    stop(100)
    line = {
        "ev": "ClusterControlManager.replay",
        "at": "exit",
        "us": 150,
        "args": [{"brokerId": 2, "incarnationId": "x"}],
    }
    t.controller(Recorded("controller.jsonl:150", 1000, 150, line["ev"], "exit", None, line))
    stop(200)
    stop(300)  # started again and stopped before it registered: no step
    assert [(e["step"], e["us"]) for e in t.out[2]] == [("crash", 100), ("crash", 200)]
    assert [(e["step"], e["us"]) for e in t.out[1000]] == [("register", 150)]


def test_a_broker_fenced_again_by_its_session_after_a_controlled_shutdown_is_no_step():
    """Kafka's controller writes fenced=1 again when the session of a broker its controlled shutdown
    already fenced expires: the model's fence is taken once; a registration makes the next one count."""
    from isrcheck.conformance.engines.apache.recording import Recorded
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000})
    t.partitions["t-0"] = [0, 1, 2]
    t.pstate["t-0"] = {"leader": 0, "epoch": 1, "isr": [0, 1], "pe": 2, "elr": []}
    records = [{"brokerId": 2, "fenced": 1}, {"brokerId": 2, "fenced": 1}, {"brokerId": 2, "incarnationId": "x"}]
    records.append({"brokerId": 2, "fenced": 1})
    for us, rec in enumerate(records):
        line = {"ev": "ClusterControlManager.replay", "at": "exit", "us": us, "args": [rec]}
        t.controller(Recorded(f"controller.jsonl:{us}", 1000, us, line["ev"], "exit", None, line))
    assert [(e["step"], e["us"]) for e in t.out[1000]] == [("fence", 0), ("fence", 3)]


def test_an_election_at_a_brokers_unfencing_is_the_models_own_choice():
    """KIP-966: a leaderless partition elects when an ELR member is unfenced. The broker unfenced is no
    target to move leadership to (it is in no ISR): the model's untargeted election picks from ISR,
    then ELR, and the validator checks its choice against the record."""
    from isrcheck.conformance.engines.apache.recording import Recorded
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000})
    t.topics["T"] = "t"
    t.partitions["t-0"] = [0, 1, 2]
    t.pstate["t-0"] = {"leader": -1, "epoch": 2, "isr": [], "pe": 3, "elr": [1, 2]}
    events = [
        ("ReplicationControlManager.handleBrokerUnfenced", [1, 19, []]),
        ("ReplicationControlManager.replay", [{"partitionId": 0, "topicId": "T", "isr": [1], "leader": 1}]),
    ]
    for us, (ev, args) in enumerate(events):
        line = {"ev": ev, "at": "exit", "us": us, "args": args}
        t.controller(Recorded(f"controller.jsonl:{us}", 1000, us, ev, "exit", None, line))
    t.flush()
    [elect] = t.out[1000]
    assert (elect["step"], elect["replica"], elect["state"]["leader"]) == ("elect", -1, 1)


def test_a_proposal_its_alter_partition_manager_refused_at_once_is_no_step():
    """DefaultAlterPartitionManager holds one AlterPartition per partition till it is answered and fails
    another at once (OPERATION_NOT_ATTEMPTED): Partition's callback runs inside submitAlterPartition and
    puts back the committed state, so that proposal is no step; the next one, submitted, is."""
    from isrcheck.conformance.engines.apache.recording import Recorded
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000})
    t.partitions["t-0"] = [0, 1, 2]
    proposal = {"sentLeaderAndIsr": {"isrWithBrokerEpoch": [{"brokerId": 0}, {"brokerId": 1}]}}
    events = [
        ("Partition.handleAlterPartitionError", [proposal, "OPERATION_NOT_ATTEMPTED"]),
        ("Partition.submitAlterPartition", [proposal]),
        ("Partition.submitAlterPartition", [proposal]),
    ]
    for us, (ev, args) in enumerate(events, start=1):
        line = {"ev": ev, "at": "exit", "us": us, "args": args, "thread": "data-plane-kafka-request-handler-1"}
        t.broker(Recorded(f"broker-0.jsonl:{us}", 0, us, ev, "exit", {"tp": "t-0"}, line))
    assert [(e["step"], e["us"], e["state"]) for e in t.out[0]] == [("shrink_isr", 3, {"pending": [0, 1]})]


def test_a_read_whose_answer_was_handled_before_the_append_it_read_returned_goes_after_that_append():
    """The kill soak of 4.4.0 at 391.4 s: a leader's handling of follower 0's fetch began at 100 and read the
    record at offset 1, whose produce had taken the log at once but whose handler returned only at 300;
    follower 0 handled the answer at 200. The read stays when it began; the append goes just before it."""
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000})
    t.broker(_append(300, 60, 1, "h1"))
    handling = _handling(100, 50, 2, 150)
    t.handlings[(2, "t-0")] = [handling]
    t.handled[(0, 2, 7)] = handling
    t.answers.append((0, "t-0", (2, 7), 2, 1, 200, "f:1"))
    t.finish()
    [append] = t.out[2]
    assert (append["us"], handling[-2]["us"]) == (97, 100)


@pytest.mark.parametrize("raised_at, checked", [(250, {"leo": 6, "hw": 6}), (50, {"leo": 6})])
def test_an_hw_raised_before_an_append_began_is_not_that_appends(raised_at, checked):
    """The kill soak of 4.4.0 at 626.5 s: a handler thread's maybeIncrementLeaderHW set HW 4878 at 175 s on a path
    the agent does not hook; the same thread's append at 626 s is not where that raise was made."""
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000})
    t.raised_hw[(2, "h1", "t-0")] = (raised_at, 6, 1)
    t.broker(_append(300, 100, 5, "h1"))
    t.finish()
    assert t.out[2][0]["state"] == checked


@pytest.mark.parametrize("hooked", [True, False])
def test_the_controllers_leader_balancing_is_an_election_of_the_preferred_replica(hooked):
    """The kill soak of 4.4.0 at 625.9 s: ``auto.leader.rebalance.enable`` moved leadership back to replica 0,
    an ISR member, with a PartitionChangeRecord changing the leader alone, 24 s after the controller's last
    decision (an AlterPartition). It is the model's ``elect`` with that target, told by the agent's
    ``maybeBalancePartitionLeaders`` line or, in recordings before that hook, by no decision preceding it."""
    from isrcheck.conformance.engines.apache.recording import Recorded
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000})
    t.topics["T"] = "t"
    t.partitions["t-0"] = [0, 1, 2]
    t.pstate["t-0"] = {"leader": 2, "epoch": 21, "isr": [0, 2], "pe": 57, "elr": []}
    events = [("ReplicationControlManager.alterPartition", 0, [{}, {"brokerId": 2}])]
    if hooked:
        events.append(("ReplicationControlManager.maybeBalancePartitionLeaders", 24_000_000, []))
    events.append(("ReplicationControlManager.replay", 24_000_100, [{"partitionId": 0, "topicId": "T", "leader": 0}]))
    for ev, us, args in events:
        line = {"ev": ev, "at": "exit", "us": us, "args": args}
        t.controller(Recorded(f"controller.jsonl:{us}", 1000, us, ev, "exit", None, line))
    t.flush()
    [elect] = t.out[1000]
    assert (elect["step"], elect["replica"], elect["state"]["leader"], elect["state"]["epoch"]) == ("elect", 0, 0, 22)


@pytest.mark.parametrize("after_restart, restored", [(5392, True), (5391, False)])
def test_a_followers_last_answer_a_kill_cut_is_restored_when_its_log_after_the_restart_holds_it(
    after_restart, restored
):
    """The kill soak of 4.4.0 at 275.8 s: follower 0 sent fetch 7 from offset 5391, its leader 1 read up to 5392 and
    answered; the SIGKILL cut every line after the send. After the restart (page cache kept) its log ends at
    5392: it handled that answer, just after the leader's handling. A log ending at 5391 proves nothing."""
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000})
    handling = _handling(100, 90, 5392, 110)
    t.handled[(0, 1, 7)] = handling
    t.fetch_offset[(0, 7)] = 5391
    t.cut_answers.append((0, "t-0", after_restart, 1, 7, 300))
    t.finish()
    answers = [(e["us"], e["step"], e["state"], e["msg"]) for e in t.out.get(0, [])]
    assert answers == ([(101, "handle_fetch_response", {"leo": 5392}, [1, 7])] if restored else [])


def test_a_raise_written_after_a_later_raise_of_another_handler_is_not_known():
    """The pause soak of 4.4.0 at 175.1 s: handler 4 raised the HW at 88,110 µs and handler 0 at 88,259 µs, both
    lines showing HW 2214; handler 4's line was written after handler 0's (the agent renders a line's partition
    state after its time), so it may show handler 0's raise: what handler 4 raised is not known."""
    from isrcheck.conformance.engines.apache.recording import Recorded
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000})
    for us, line, thread in ((88_110, 39_231, "h4"), (88_259, 39_230, "h0")):
        raw = {"ev": "Partition.maybeIncrementLeaderHW", "at": "exit", "us": us, "thread": thread}
        t.broker(Recorded(f"broker-0.jsonl:{line}", 0, us, raw["ev"], "exit", {"tp": "t-0", "hw": 2214}, raw))
    assert sorted(t.raised_hw) == [(0, "h0", "t-0")]


@pytest.mark.parametrize("epoch, removed", [(3, False), (4, True)])
def test_a_send_under_the_old_leader_epoch_is_the_stale_fetchers(epoch, removed):
    """The stop soak of 4.4.0 at 56.9 s: follower 0 applied leader epoch 4 (makeFollower), and its old fetcher, still
    holding the partition, sent its old leader another fetch under epoch 3: the stale fetcher's send
    (docs/steps.md, split_become_follower). A send under epoch 4 is the new fetcher's, after the removal."""
    from isrcheck.conformance.engines.apache.recording import Recorded
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000})
    t.stale.add((0, "t-0"))
    t.following[(0, "t-0")] = 4
    req = {"fetchOffset": 7, "currentLeaderEpoch": epoch}
    line = {"ev": "AbstractFetcherThread.processFetchRequest", "at": "enter", "us": 100, "args": [[["t-0", req]]]}
    line["thread"] = "ReplicaFetcherThread-0-1"
    t.broker(Recorded("broker-0.jsonl:9", 0, 100, line["ev"], "enter", None, line))
    assert [e["step"] for e in t.out[0]] == (["remove_fetcher", "send_fetch"] if removed else ["send_fetch"])


def test_a_read_taken_before_a_raising_update_takes_the_appends_it_read_before_it():
    """The pause soak of 4.4.0 at 172.0 s: follower 0's handling read record 2110 (LEO 2111), whose produce had taken
    the log and returned late; its answer showed HW 2109, below the raise follower 1's update made. The read goes
    before that update, and the append it read before the read."""
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000})
    t.broker(_append(300, 60, 1, "h1"))  # record 1 (LEO 2), returned at 300
    handling = _handling(301, 50, 2, 400)  # follower 0's, its read placed after that return
    t.handled[(0, 2, 7)] = handling
    own = _handling(301, 240, 2, 500)  # follower 1's, its update raising the HW to 2 (made at 280)
    t.read_before_raises(0, "t-0", (2, 7), 1, [(2, "t-0", 280, 2, own)])
    [append] = t.out[2]
    assert (append["us"], handling[-2]["us"], own[-1]["us"]) == (297, 300, 301)


def test_a_raise_made_after_a_fetch_came_by_an_update_begun_before_goes_after_its_read():
    """The partition soak of 4.4.0 at 57.3 s: follower 0's update began at 50 and raised the HW to 2 at 200; follower
    2's fetch came at 100 and its update began at 300, its answer showing HW 1: its read was before that raise. The
    read goes just before the raise, follower 0's update just after the read."""
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000})
    handling = _handling(300, 100, 2, 400)
    t.handled[(2, 1, 82)] = handling
    own = _handling(50, 40, 2, 500)
    t.read_before_raises(2, "t-0", (1, 82), 1, [(1, "t-0", 200, 2, own)])
    assert (handling[-2]["us"], own[-1]["us"]) == (199, 200)


def test_a_raise_is_checked_at_the_last_of_two_updates_at_the_same_microsecond():
    """The partition soak of 4.4.0 at 151.0 s: followers 2 and 1 were updated at the same microsecond, the first
    taken first; the raise to 1071 counted both, so it is checked at the second."""
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000})
    first, second = _handling(100, 90, 5, 120), _handling(100, 95, 5, 130)
    first[-1]["seq"], second[-1]["seq"] = 1, 2
    t.handlings[(2, "t-0")] = [first, second]
    t.raises.append((2, "t-0", 110, 5, first))
    t.finish()
    assert (first[-1]["state"], second[-1]["state"]) == ({}, {"hw": 5})


@pytest.mark.parametrize("raised_before, stays", [(True, True), (False, False)])
def test_an_update_a_raise_before_the_read_counted_stays_before_it(raised_before, stays):
    """The partition soak of 4.4.0 at 151.0 s: follower 1's update began at 200 and returned at 400, raising nothing
    itself; a produce's raise at 250 counted it (HW 2). Follower 2's handling read at 300 and answered HW 2, its own
    update raising the HW to 3. Follower 1's update stays before the read; with no raise before the read to have
    counted it, it goes after it (taken before, the model's update would raise the HW the answer does not show)."""
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000})
    reading, other = _handling(300, 290, 5, 350), _handling(200, 150, 5, 400)
    t.handled[(2, 0, 7)] = reading
    t.handlings[(0, "t-0")] = [reading, other]
    t.leader_at[(0, "t-0")] = [(250, 5, 2), (300, 5, 3)]
    raises = [(0, "t-0", 250, 2, ({"us": 250},))] if raised_before else []
    t.counted_later(2, "t-0", (0, 7), 2, set(), raises)
    assert other[-1]["us"] == (200 if stays else 300)


def test_a_raise_made_after_a_handling_returned_by_an_update_begun_before_its_read_goes_after_it():
    """The partition soak of 4.4.0 at 169.7 s: follower 1's update began at 100 and raised the HW to 2 only at 500;
    follower 0's fetch came at 200, was read and updated at 300 and returned at 350, its answer showing HW 1: its
    read was before that raise, so follower 1's update goes after it."""
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000})
    handling, own = _handling(300, 200, 2, 350), _handling(100, 90, 2, 510)
    t.handled[(0, 2, 7)] = handling
    t.read_before_raises(0, "t-0", (2, 7), 1, [(2, "t-0", 500, 2, own)])
    assert (handling[-2]["us"], own[-1]["us"]) == (300, 301)


def test_appends_moved_before_a_read_keep_the_order_of_their_offsets():
    """The partition soak of 4.4.0 at 173.2 s: records 1 and 2 were moved before one read (to 716 and 717), and a
    read at 718 holding record 2 moves it again: record 1 goes with it, before it."""
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000})
    first, second = {"us": 716, "t": 0}, {"us": 717, "t": 0}
    t.append_lines[(2, "t-0")] = [(2, 100, first), (3, 110, second)]
    t.appended_before(2, "t-0", 3, 718)
    assert first["us"] < second["us"] < 718


def test_a_delayed_fetch_showing_a_raised_hw_goes_after_the_update_the_raise_is_checked_at():
    """The partition soak of 4.4.0 at 173.8 s: follower 2's update began at 145 and its thread raised the HW to 5 at
    179; follower 1's began at 151, raising nothing itself: the raise counted both and is checked at follower 1's.
    Follower 2's fetch, parked, completed at its expiry with HW 5: after follower 1's update."""
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000})
    mine, other = _handling(145, 140, 5, 190), _handling(151, 148, 5, 195)
    for line in (*mine[-2:], *other[-2:]):
        line.update(step="handle_fetch", seq=0)
    t.handlings[(0, "t-0")] = [mine, other]
    t.raises.append((0, "t-0", 179, 5, mine))
    t.handled[(2, 0, 7)] = mine
    t.leader_at[(0, "t-0")] = [(100, 5, 4)]
    t.answers.append((2, "t-0", (0, 7), 5, 5, 843, "f:1"))
    t.finish()
    [completed] = [line for line in t.out[0] if "DelayedFetch" in line["from"]]
    assert (completed["us"], other[-1]["state"]) == (152, {"hw": 5})


def test_a_delayed_fetch_whose_handlings_update_moves_after_it_moves_with_it():
    """The partition soak of 4.4.0 at 188.9 s: follower 1's fetch was parked and completed at 150; another answer
    showing an HW below the one follower 1's update raised (at 200) moves that update after its own read, at 150:
    follower 1's completion goes after its update all the same."""
    from isrcheck.conformance.engines.apache.translate import TIE, Translation, in_node_order

    t = Translation({"controller": 1000})
    handling = _handling(90, 80, 5, 210)
    completion = {"us": 150, "t": 0, "seq": 1}
    t.completed[id(handling)] = completion
    t.raised_after([(0, "t-0", 200, 5, handling)], 4, 5, 95, 150)
    update = handling[-1]
    assert (update["us"], update[TIE]) == (150, 1) and in_node_order(update) < in_node_order(completion)


def test_a_delayed_fetch_goes_before_an_append_at_its_microsecond_whose_records_it_does_not_hold():
    """The partition soak of 4.4.0 at 243.6 s: follower 2's fetch, parked, was completed by its own update's raise
    (checked at 100) before the append of record 5, placed at 101; its answer holds records up to 4 only."""
    from isrcheck.conformance.engines.apache.translate import Translation, in_node_order

    t = Translation({"controller": 1000})
    mine = _handling(100, 90, 5, 190)
    t.handlings[(0, "t-0")] = [mine]
    t.raises.append((0, "t-0", 120, 5, mine))
    t.handled[(2, 0, 7)] = mine
    t.leader_at[(0, "t-0")] = [(50, 5, 4)]
    append = {"us": 101, "t": 0, "seq": 0}
    t.append_lines[(0, "t-0")] = [(6, 95, append)]
    t.answers.append((2, "t-0", (0, 7), 5, 5, 843, "f:1"))
    t.finish()
    [completed] = [line for line in t.out[0] if "DelayedFetch" in line["from"]]
    assert completed["us"] == 101 and in_node_order(completed) < in_node_order(append)


def _line(node: int, us: int, began: int, ev: str, thread: str, p: dict, args: list, ret=None):
    """A broker's exit line of ``ev`` on ``thread``."""
    from isrcheck.conformance.engines.apache.recording import Recorded

    line = {"ev": ev, "at": "exit", "us": us, "in": began, "thread": thread, "args": args, "ret": ret}
    return Recorded(f"broker-{node}.jsonl:{us}", node, us, ev, "exit", p, line)


def test_a_leader_made_is_taken_at_the_raise_its_write_lock_ended_with():
    """The power soak of 4.4.0 at 163.9 s: makeLeader (an ISR shrink in its leader epoch) raised the HW to 5 at 200
    under its write lock and returned at 500, having completed delayed requests; produces appended between."""
    from isrcheck.conformance.engines.apache.translate import DELIVER_LEADER_AND_ISR, Translation

    t = Translation({"controller": 1000})
    p = {"tp": "t-0", "leader": 2, "epoch": 1, "pe": 5, "isr": [1, 2], "leo": 7, "hw": 5, "last_epoch": 1}
    reg = {"leader": 2, "leaderEpoch": 1, "isr": [2, 1], "partitionEpoch": 5}
    t.broker(_line(2, 200, 190, "Partition.maybeIncrementLeaderHW", "meta", dict(p, leo=5), ["UnifiedLog", 0], True))
    t.broker(_line(2, 500, 100, "Partition.makeLeader", "meta", p, [reg]))
    [made] = [line for line in t.out[2] if line["step"] == DELIVER_LEADER_AND_ISR]
    assert made["us"] == 200


def test_an_update_moved_after_a_read_takes_the_isr_expansion_it_proposed_with_it():
    """The power soak of 4.4.0 at 280.1 s: an update placed after another handling's read carries the expansion its
    maybeExpandIsr proposed after it."""
    from isrcheck.conformance.engines.apache.translate import Translation, in_node_order

    t = Translation({"controller": 1000})
    handling = _handling(100, 90, 5, 300)
    expansion = {"us": 150, "t": 0, "seq": 9}
    t.expansions[id(handling)] = expansion
    t.move_update(handling, 200, 1)
    assert expansion["us"] == 200 and in_node_order(handling[-1]) < in_node_order(expansion)


def test_an_update_that_proposed_an_isr_expansion_is_not_taken_as_counted_by_a_later_raise():
    """The power soak of 4.4.0 at 280.1 s: follower 0, outside the ISR, was updated (and proposed joining it) while
    follower 2's fetch was read and answered below the HW follower 2's own update raised: follower 0 counts only
    from its expansion on, so its update stays where it began."""
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000})
    reading, joining = _handling(300, 290, 5, 350), _handling(200, 150, 5, 400)
    t.handled[(2, 0, 7)] = reading
    t.handlings[(0, "t-0")] = [reading, joining]
    t.leader_at[(0, "t-0")] = [(300, 5, 3)]
    t.expansions[id(joining)] = {"us": 210, "t": 0}
    t.counted_later(2, "t-0", (0, 7), 2, set(), [])
    assert joining[-1]["us"] == 200


def test_a_delayed_fetch_goes_before_the_update_a_later_raise_is_checked_at_its_microsecond():
    """The pause soak of 4.4.0 at 266.8 s: follower 2's parked fetch completed with records up to 5 and HW 4, after
    the appends it holds (placed at 200) and before an append's raise to 5 (made at 250), which counted follower 0's
    update, placed at 201 after the appends its read held: the completion goes before that update."""
    from isrcheck.conformance.engines.apache.translate import Translation, in_node_order

    t = Translation({"controller": 1000})
    mine, other = _handling(100, 90, 3, 190), _handling(201, 180, 5, 300)
    for line in (*mine[-2:], *other[-2:]):
        line["seq"] = 0
    t.handlings[(0, "t-0")] = [mine, other]
    t.handled[(2, 0, 7)] = mine
    t.leader_at[(0, "t-0")] = [(50, 3, 4), (200, 5, 4)]
    t.append_lines[(0, "t-0")] = [(5, 150, {"us": 200, "t": 0, "seq": 0})]
    t.append_raises.append((0, "t-0", 250, 5, ({"us": 200, "t": 0, "seq": 0},)))
    t.answers.append((2, "t-0", (0, 7), 5, 4, 843, "f:1"))
    t.finish()
    [completed] = [line for line in t.out[0] if "DelayedFetch" in line["from"]]
    assert in_node_order(completed) < in_node_order(other[-1]) and other[-1]["state"] == {"hw": 5}


@pytest.mark.parametrize("append_began, split", [(250, True), (120, False)])
def test_a_read_whose_hw_came_before_a_raise_and_batches_after_a_later_append_reads_its_hw_first(append_began, split):
    """The partition soak of 4.4.0 at 162.1 s: follower 0's answer showed HW 1 and records up to 3, while follower 1's
    update raised the HW to 2 at 200, before the append of record 2 began at 250. ``Partition.readRecords`` read the
    HW before that raise and the LEO and the records after that append: its HW is read before the raise, its batches
    where the read is. An append begun before the raise goes before the read."""
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000})
    t.broker(_append(300, append_began, 2, "h1"))  # record 2 (LEO 3), returned at 300
    handling = _handling(301, 100, 2, 400, read_at=301)  # follower 0's: noted LEO 2, read to 3
    t.read_more[id(handling)] = 3
    t.handled[(0, 2, 7)] = handling
    own = _handling(150, 140, 2, 500)  # follower 1's, its update raising the HW to 2 (made at 200)
    t.read_before_raises(0, "t-0", (2, 7), 1, [(2, "t-0", 200, 2, own)])
    hw_reads = [e for e in t.out[2] if e["step"] == "read_fetch_hw"]
    if split:
        assert [(e["us"], e["state"]) for e in hw_reads] == [(149, {"hw": 1})]
        assert handling[-2]["us"] == 301  # its batches after the append of record 2
    else:
        assert not hw_reads and handling[-2]["us"] == 149  # one point holds both


@pytest.mark.parametrize("callback", [True, False])
def test_an_alter_partition_answer_whose_callback_runs_after_the_managers_return_is_handled_once(callback):
    """The power soak of 4.4.0 at 116.3 s: the manager answered the proposal at 30 with no Partition line yet (an
    answer Partition would ignore logs none); the callback ran at 40, on the thread that submitted the proposal
    once it attached it to the completed future. The answer is handled once, at the callback; without one, at 30."""
    from isrcheck.conformance.engines.apache.recording import Recorded
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000})
    t.partitions["t-0"] = [0, 1, 2]
    manager = "broker-0-to-controller-alter-partition-channel-manager"
    events = [
        (10, "DefaultAlterPartitionManager.submit", "enter", ["t:0"], None, None),
        (20, "DefaultAlterPartitionManager.sendRequest", "enter", [["AlterPartitionItem"]], None, None),
        (30, "DefaultAlterPartitionManager.handleAlterPartitionResponse", "exit", [], "NONE", manager),
    ]
    if callback:
        events.append((40, "Partition.handleAlterPartitionUpdate", "exit", [{}], None, {"tp": "t-0"}))
    for us, ev, at, args, ret, p in events:
        line = {"ev": ev, "at": at, "us": us, "args": args, "ret": ret, "thread": p if isinstance(p, str) else "h-1"}
        t.broker(Recorded(f"broker-0.jsonl:{us}", 0, us, ev, at, p if isinstance(p, dict) else None, line))
    answers = [e["us"] for e in t.out[0] if e["step"] == "handle_alter_partition_response"]
    assert answers == ([40] if callback else [30])


def _replay(t, records, start=0):
    """Each record as the controller's replay of it, one microsecond apart."""
    from isrcheck.conformance.engines.apache.recording import Recorded

    for us, (ev, args) in enumerate(records, start):
        line = {"ev": ev, "at": "exit", "us": us, "args": args}
        t.controller(Recorded(f"controller.jsonl:{us}", 1000, us, ev, "exit", None, line))


def test_a_registrations_unfencing_is_the_models_unfence_and_its_sessions_end_no_fence():
    """KRaft registers a broker fenced and unfences it at a heartbeat (unfence_at_heartbeat, with the caches
    recorded): the UnfenceBrokerRecord is the model's unfence in every partition; the session of a
    registration not yet unfenced ending (fenced=1 again) is no step, as the model refuses that fence."""
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000, "brokers": 3})
    t.caches = True
    t.registered.add(2)
    for tp in ("t-0", "t-1"):
        t.partitions[tp] = [0, 1, 2]
        t.pstate[tp] = {"leader": 0, "epoch": 1, "isr": [0, 1], "pe": 2, "elr": []}
    register = (
        "ClusterControlManager.replay",
        [{"brokerId": 2, "incarnationId": "x", "brokerEpoch": 7, "fenced": True}],
    )
    fenced = ("ClusterControlManager.replay", [{"brokerId": 2, "brokerEpoch": 7, "fenced": 1}])
    unfenced = ("ClusterControlManager.replay", [{"brokerId": 2, "brokerEpoch": 7, "fenced": -1}])
    _replay(t, [register, fenced, register, unfenced])
    steps = [(e["step"], e["us"], e["tp"]) for e in t.out[1000]]
    assert steps == [("register", 0, "t-0"), ("register", 0, "t-1"), ("register", 2, "t-0"), ("register", 2, "t-1")] + [
        ("unfence", 3, "t-0"),
        ("unfence", 3, "t-1"),
    ]
    assert t.alive_broker_epochs("t-0")[2] != -1  # unfenced: the caches may show its epoch


def test_a_controlled_shutdown_is_the_models_step_in_every_partition_with_its_change_where_it_made_one():
    """handleBrokerInControlledShutdown writes the broker's inControlledShutdown, then its partition changes:
    each changed partition's controlled_shutdown carries its change, every other one its state, all at the
    record, which a cache may show before the changes are replayed (kraft_controlled_shutdown); the broker is
    ineligible in the alive broker epochs till fenced."""
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000, "brokers": 3})
    t.caches = True
    t.topics["T"] = "t"
    for tp in ("t-0", "t-1"):
        t.partitions[tp] = [0, 1, 2]
        t.pstate[tp] = {"leader": 2 if tp == "t-0" else 0, "epoch": 1, "isr": [0, 1, 2], "pe": 2, "elr": []}
    shutdown = (
        "ClusterControlManager.replay",
        [{"brokerId": 2, "brokerEpoch": 7, "fenced": 0, "inControlledShutdown": 1}],
    )
    change = ("ReplicationControlManager.replay", [{"partitionId": 0, "topicId": "T", "isr": [0, 1], "leader": 0}])
    fenced = ("ClusterControlManager.replay", [{"brokerId": 2, "brokerEpoch": 7, "fenced": 1}])
    _replay(t, [shutdown, change])
    assert t.alive_broker_epochs("t-1")[2] == -1
    _replay(t, [fenced], start=5)
    out = [(e["step"], e["us"], e["tp"], e["state"].get("leader")) for e in t.out[1000]]
    assert out[:2] == [("controlled_shutdown", 0, "t-0", 0), ("controlled_shutdown", 0, "t-1", 0)]
    assert [(step, tp) for step, _, tp, _ in out[2:]] == [("fence", "t-0"), ("fence", "t-1")]
    header = _header(t)
    assert header["config"]["kraft_controlled_shutdown"] and header["config"]["unfence_at_heartbeat"]


def _header(t) -> dict:
    from isrcheck.conformance.engines.apache.translate import header

    return header(
        {
            "brokers": 3,
            "kafka": "4.4.0",
            "min_insync_replicas": 2,
            "unclean_election": False,
            "replica_lag_time_max_ms": 30000,
            "flush_messages": None,
            "elr": True,
        },
        t.partitions,
        t.caches,
    )


def test_a_response_ending_below_the_leo_its_read_took_was_cut_by_bytes():
    """KIP-74: a follower's fetch returns whole batches while they fit its maxBytes, bounded otherwise by the
    leader's LEO, which the read took before the records: records that end below it were cut by bytes."""
    from isrcheck.conformance.engines.apache.translate import Translation

    t = Translation({"controller": 1000, "brokers": 3})
    read = {"step": "read_fetch"}
    t.handled[(1, 0, 7)] = (0, 0, 13822, 5, read, {})
    t.cut_by_bytes(1, (0, 7), 13822)  # the whole read
    assert "upto" not in read
    t.cut_by_bytes(1, (0, 7), 13714)
    assert read["upto"] == 13714


@pytest.mark.parametrize("update_began, placed", [(150, 201), (250, 250)])
def test_an_update_that_waited_for_a_make_leaders_write_lock_goes_after_that_leader_change(update_began, placed):
    """The power soak at 1,591.9 s: a handler's updateFollowerFetchState began (150) while makeLeader held its write
    lock and raised the HW at 200; the update's own raise came after (300), so the update goes after the leader
    change, its read before it. An update begun after the makeLeader's raise stays where it began."""
    from isrcheck.conformance.engines.apache.translate import HANDLE_FETCH, READ_FETCH, Translation

    t = Translation({"controller": 1000})
    p = {"tp": "t-0", "leader": 2, "epoch": 1, "pe": 5, "isr": [1, 2], "leo": 7, "hw": 5, "last_epoch": 1}
    reg = {"leader": 2, "leaderEpoch": 1, "isr": [2, 1], "partitionEpoch": 5}
    t.broker(_line(2, 200, 190, "Partition.maybeIncrementLeaderHW", "meta", dict(p, leo=5), ["UnifiedLog", 0], True))
    t.broker(_line(2, 260, 100, "Partition.makeLeader", "meta", p, [reg]))
    t.broker(_line(2, 300, 290, "Partition.maybeIncrementLeaderHW", "h-1", dict(p, hw=6), ["UnifiedLog", 0], True))
    t.broker(_line(2, 320, update_began, "Partition.updateFollowerFetchState", "h-1", dict(p, hw=6), [1, 7, 0, 0, 7]))
    read = next(line for line in t.out[2] if line["step"] == READ_FETCH)
    update = next(line for line in t.out[2] if line["step"] == HANDLE_FETCH)
    assert (read["us"], update["us"]) == (update_began, placed)
