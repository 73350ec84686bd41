"""The checker's judgments of what ListOffsets and OffsetForLeaderEpoch answered the soak's offsets
reader (``answers``), on histories written by hand: each anomaly found, and not where the history
gives no evidence against the answer."""

import json

import pytest

from isrcheck.conformance.engines.soak.answers import ANSWER_ANOMALIES
from isrcheck.conformance.engines.soak.checker import HistoryError, check

R = "offsets"


class Reader:
    """A history of the offsets reader's operations on partition "p"."""

    def __init__(self) -> None:
        self.ops: list[dict] = []

    def event(self, type_: str, f: str, **fields) -> int:
        self.ops.append({"index": len(self.ops), "time": len(self.ops), "process": R, "type": type_, "f": f, **fields})
        return len(self.ops) - 1

    def end(self, offset: int, epoch: int = 1, connection: int = 1) -> int:
        asked = dict(partition="p", current_leader_epoch=epoch, connection=connection)
        self.event("invoke", "end", **asked)
        return self.event("ok", "end", **asked, offset=offset)

    def fetch(self, hw: int, batches=(), epoch: int = 1, connection: int = 1) -> int:
        """A fetch returning one record per offset of each [first, last, epoch] batch."""
        asked = dict(partitions=["p"], current_leader_epoch=epoch, connection=connection)
        self.event("invoke", "poll", **asked)
        records = [[o, 1000 + o] for first, last, _ in batches for o in range(first, last + 1)]
        return self.event(
            "ok",
            "poll",
            **asked,
            records={"p": records} if records else {},
            high_watermark={"p": hw},
            batches={"p": [list(b) for b in batches]} if batches else {},
        )

    def epoch(self, asked: int, current: int, answer: int, end: int, position: int = 0) -> int:
        fields = dict(partition="p", leader_epoch=asked, current_leader_epoch=current, position=position, connection=1)
        self.event("invoke", "epoch", **fields)
        return self.event("ok", "epoch", **fields, answer_epoch=answer, end_offset=end)

    def found(self) -> dict:
        result = check([json.loads(json.dumps(op)) for op in self.ops])
        return {
            name: [i["ops"] for i in found]
            for name, found in result.anomalies.items()
            if found and name in ANSWER_ANOMALIES
        }  # the records have no sends: unexpected


def test_an_end_offset_above_a_later_fetchs_high_watermark_on_that_connection_and_epoch():
    h = Reader()
    end = h.end(10)
    fetched = h.fetch(hw=8)
    assert h.found() == {"end-above-hw": [[end, fetched]]}


def test_no_end_above_hw_at_or_below_it_or_across_connections_epochs_or_earlier_fetches():
    h = Reader()
    h.fetch(hw=5)  # before the answer: the HW may have moved on since
    h.end(10)
    h.fetch(hw=10)
    h.fetch(hw=12)
    h.end(14, connection=2)
    h.fetch(hw=11)  # another connection: another broker process, maybe restarted behind
    h.end(16, epoch=2)
    h.fetch(hw=12, epoch=3)  # another leader epoch: a new leader's HW may lag its predecessor's
    assert h.found() == {}


def test_an_epoch_answered_later_than_asked():
    h = Reader()
    h.fetch(hw=5, batches=[(0, 4, 0)])
    answer = h.epoch(asked=0, current=2, answer=2, end=9, position=5)
    assert h.found() == {"later-epoch-answered": [[answer]]}


@pytest.mark.parametrize(
    "batches, asked, answer, end",
    [
        ([(0, 6, 0)], 0, 0, 5),  # epoch 0's records reach offset 6, beyond the end 5 answered for it
        ([(0, 4, 0), (5, 6, 1)], 1, 0, 5),  # epoch 1 is in the log, yet the answer for epoch 1 is epoch 0
        ([(0, 4, 0), (5, 6, 2)], 1, 0, 6),  # epoch 2 starts at 5, below the end 6 answered for epoch 1
    ],
)
def test_an_epoch_end_a_committed_batch_contradicts(batches, asked, answer, end):
    h = Reader()
    read = h.fetch(hw=10, batches=batches)
    answered = h.epoch(asked=asked, current=2, answer=answer, end=end)
    assert h.found() == {"epoch-end-contradicted": [sorted((read, answered))]}


def test_no_contradiction_from_a_right_answer_or_a_later_leaders_records():
    h = Reader()
    h.fetch(hw=9, batches=[(0, 4, 0), (5, 8, 2)])
    h.epoch(asked=0, current=2, answer=0, end=5, position=5)
    h.epoch(asked=1, current=2, answer=0, end=5, position=5)  # no epoch 1: its floor
    h.epoch(asked=2, current=2, answer=2, end=9, position=9)
    h.epoch(asked=0, current=1, answer=0, end=7, position=5)  # epoch 1's leader: epoch 2 (above it) not judged
    h.epoch(asked=0, current=2, answer=-1, end=-1)  # no epoch known: nothing to judge
    assert h.found() == {}


@pytest.mark.parametrize("read_from, found", [(1, True), (3, False), (None, False)])
def test_an_earlier_epochs_record_committed_by_a_later_leader_is_no_contradiction(read_from, found):
    """Epoch 1's leader says epoch 0 ends at 5 in its log. A batch of epoch 0 at offsets 5-6 read from
    epoch 1's leader contradicts it; read from epoch 3's leader, it was committed by a leader that held
    epoch 0's uncommitted tail without ever fetching from epoch 1's (a stale ISR member), as a stopped
    Apache Kafka broker does (soak --cluster kafka --faults stop): no contradiction; an unfenced read
    says no leader: not judged."""
    h = Reader()
    answered = h.epoch(asked=0, current=1, answer=0, end=5)
    read = h.fetch(hw=10, batches=[(0, 6, 0)], epoch=read_from)
    if read_from is None:
        h.ops[-1].pop("current_leader_epoch")
        h.ops[-2].pop("current_leader_epoch")
    assert h.found() == ({"epoch-end-contradicted": [sorted((read, answered))]} if found else {})


@pytest.mark.parametrize(
    "op, message",
    [
        (
            {"f": "end", "type": "ok", "partition": "p", "current_leader_epoch": 1, "connection": 1},
            '"offset" must be an int',
        ),
        (
            {
                "f": "epoch",
                "type": "invoke",
                "partition": "p",
                "leader_epoch": "0",
                "current_leader_epoch": 1,
                "connection": 1,
                "position": 0,
            },
            '"leader_epoch" must be an int',
        ),
        ({"f": "poll", "type": "invoke", "partitions": ["p"], "batches": {"p": [[0, 1]]}}, '"batches" must map'),
    ],
)
def test_malformed_answers_are_named(op, message):
    invoke = {**op, "type": "invoke"}
    ops = [{"index": 0, "time": 0, "process": R, **invoke}]
    if op["type"] == "ok":
        ops.append({"index": 1, "time": 1, "process": R, **op})
    with pytest.raises(HistoryError, match=message):
        check(ops)
