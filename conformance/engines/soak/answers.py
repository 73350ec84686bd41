"""What a cluster answered to ListOffsets and OffsetForLeaderEpoch, judged against the history.

The soak's offsets reader (``offsets``) records three more kinds of facts than Jepsen's clients:

``end`` (ListOffsets "latest", a consumer's end offset)
    invoke: ``"partition": P``, ``"current_leader_epoch": E`` (the epoch the request was fenced
    by), ``"connection": C`` (an int naming one TCP connection, so one broker process). ``ok``
    also ``"offset": O``, the end offset answered.
``epoch`` (OffsetForLeaderEpoch: KIP-320's validation of a consumer's position)
    invoke: ``partition``, ``"leader_epoch": L`` (the epoch of the last record the client read),
    ``current_leader_epoch``, ``connection`` and ``"position"``. ``ok`` also ``"answer_epoch"``
    and ``"end_offset"``.
``poll`` (the reader's Fetch) may carry ``current_leader_epoch``, ``connection``,
    ``"high_watermark": {P: H}`` (the HW the broker answered) and ``"batches": {P: [[first, last,
    epoch], ...]}`` (the leader epoch of each batch of the records returned).

Judgments (each names its operations; what a client reads below the HW is committed):

``end-above-hw``: ListOffsets answered end offset O, and a later Fetch of the same client on the
    same connection, fenced by the same leader epoch, answered a HW below O. One broker process in
    one leader epoch never moves its HW back, and a consumer's end offset is that HW (Kafka's
    ``Partition.fetchOffsetForTimestamp``: the last fetchable offset): O was beyond what could be read.
``later-epoch-answered``: OffsetForLeaderEpoch for epoch L answered an epoch above L. The answer is
    the largest epoch at most L the leader knows (``LeaderEpochFileCache.endOffsetFor``; L itself
    when it is below all, -1 when none), never a later one: a client told a later epoch's end takes
    a truncated log for an intact one.
``epoch-end-contradicted``: the answer (A, X) for L, by a leader of epoch E, says that in the
    leader's log every offset below X holds an epoch at most A and every offset from X on an epoch
    above L. A committed record (a batch some fetch returned) contradicts it if its epoch is at most
    A and its offset at or above X, its epoch in (A, L] (an epoch the leader lacks), or its epoch in
    (L, E] and its offset below X. Only records read from a leader of epoch at most E are judged
    (the reader's Fetch says its ``current_leader_epoch``): such a record was committed no later
    than E's leadership, so E's log holds it. A record's epoch says who wrote it, not who committed
    it: a later leader that was in the ISR but never fetched from E (stopped, cut off) may hold an
    earlier epoch's uncommitted records at or above X, and commit them.
"""

from __future__ import annotations

ANSWER_ANOMALIES = ("end-above-hw", "later-epoch-answered", "epoch-end-contradicted")
# what depends on committed records surviving: judged by the durability budget
DURABILITY = frozenset({"epoch-end-contradicted"})

_INTS = {
    "end": ("current_leader_epoch", "connection"),
    "epoch": ("leader_epoch", "current_leader_epoch", "connection", "position"),
}
_OK_INTS = {"end": ("offset",), "epoch": ("answer_epoch", "end_offset")}


def problem(op: dict, type_: str, f: str) -> str | None:
    """What is wrong with an ``end`` or ``epoch`` event, or the extra fields of a poll (None: nothing)."""
    if f == "poll":
        return _poll_problem(op)
    if type(op.get("partition")) not in (int, str):
        return 'missing field "partition" (an int or a string)'
    wanted = _INTS[f] + (_OK_INTS[f] if type_ == "ok" else ())
    for name in wanted if type_ in ("invoke", "ok") else ():
        if type(op.get(name)) is not int:
            return f'"{name}" must be an int, got {op.get(name)!r}'
    return None


def _poll_problem(op: dict) -> str | None:
    for name in ("high_watermark", "batches"):
        value = op.get(name, {})
        if type(value) is not dict:
            return f'"{name}" must be an object by partition'
    if any(type(h) is not int for h in op.get("high_watermark", {}).values()):
        return '"high_watermark" must map partitions to ints'
    for spans in op.get("batches", {}).values():
        if type(spans) is not list or not all(
            type(s) is list and len(s) == 3 and all(type(x) is int for x in s) for s in spans
        ):
            return '"batches" must map partitions to [[first, last, epoch], ...]'
    return None


class Answers:
    """The facts of ``end``, ``epoch`` and the reader's polls, gathered in the checker's one pass."""

    def __init__(self) -> None:
        self.ends: dict = {}  # (process, connection, epoch, partition) -> (highest end answered, op)
        self.above: list = []  # (partition, end, its op, hw, the poll op)
        self.spans: dict = {}  # partition -> [(first, last, epoch, op, the leader epoch read from)] committed
        self.epochs: list = []  # (partition, asked L, current E, answered A, X, op)

    def event(self, op: dict, invoke: dict | None) -> None:
        if op["type"] != "ok" or invoke is None:
            return
        f, fields = op["f"], {**invoke, **op}
        if f == "end":
            key = (op["process"], fields["connection"], fields["current_leader_epoch"], str(fields["partition"]))
            held = self.ends.get(key)
            if held is None or fields["offset"] > held[0]:
                self.ends[key] = (fields["offset"], op["index"])
        elif f == "epoch":
            self.epochs.append(
                (
                    str(fields["partition"]),
                    fields["leader_epoch"],
                    fields["current_leader_epoch"],
                    fields["answer_epoch"],
                    fields["end_offset"],
                    op["index"],
                )
            )
        elif f == "poll":
            self._poll(op, fields)

    def _poll(self, op: dict, fields: dict) -> None:
        read_from = fields.get("current_leader_epoch")  # None: an unfenced Fetch, whose leader is unknown
        for partition, spans in op.get("batches", {}).items():
            self.spans.setdefault(str(partition), []).extend((a, b, e, op["index"], read_from) for a, b, e in spans)
        if "connection" not in fields or "current_leader_epoch" not in fields:
            return
        for partition, hw in op.get("high_watermark", {}).items():
            held = self.ends.get((op["process"], fields["connection"], fields["current_leader_epoch"], str(partition)))
            if held is not None and hw < held[0]:
                self.above.append((str(partition), held[0], held[1], hw, op["index"]))


def _instance(partition: str, ops, explanation: str, **details) -> dict:
    return {"partition": partition, **details, "ops": sorted(set(ops)), "explanation": explanation}


def end_above_hw(answers: Answers) -> list[dict]:
    """ListOffsets' end offset above the HW a later fetch of the same leader epoch and broker
    process answered (module docstring)."""
    return [
        _instance(
            p,
            (end_op, poll_op),
            f"ListOffsets answered end offset {end} of partition {p} (op {end_op}), but a later fetch on "
            f"the same connection in the same leader epoch answered high watermark {hw} (op {poll_op}): "
            f"the end offset was beyond what a consumer could read",
            end_offset=end,
            high_watermark=hw,
        )
        for p, end, end_op, hw, poll_op in answers.above
    ]


def later_epoch_answered(answers: Answers) -> list[dict]:
    """OffsetForLeaderEpoch answered an epoch above the one asked for (module docstring)."""
    return [
        _instance(
            p,
            (op,),
            f"OffsetForLeaderEpoch for epoch {asked} of partition {p} answered epoch {answer} "
            f"(end offset {end}, op {op}), a later epoch than asked for",
            leader_epoch=asked,
            answer_epoch=answer,
            end_offset=end,
        )
        for p, asked, _current, answer, end, op in answers.epochs
        if answer > asked
    ]


def epoch_end_contradicted(answers: Answers) -> list[dict]:
    """A committed batch that OffsetForLeaderEpoch's answer says cannot be where it is (module
    docstring); the first such batch per answer."""
    found = []
    for p, asked, current, answer, end, op in answers.epochs:
        if answer < 0 or answer > asked:  # no epoch known (nothing to judge), or later-epoch-answered
            continue
        for first, last, epoch, read_op, read_from in answers.spans.get(p, ()):
            if read_from is None or read_from > current:  # committed, maybe, by a later leader (docstring)
                continue
            if epoch <= answer and last >= end:
                why = f"at offset {last}, at or above the end offset {end} of epoch {answer}"
            elif answer < epoch <= asked:
                why = f"of epoch {epoch}, which the answer says the leader's log does not hold"
            elif asked < epoch <= current and first < end:
                why = f"at offset {first}, below the end offset {end} answered for epoch {asked}"
            else:
                continue
            found.append(
                _instance(
                    p,
                    (op, read_op),
                    f"OffsetForLeaderEpoch for epoch {asked} of partition {p} "
                    f"answered epoch {answer}, end offset {end} (op {op}), but a committed batch of "
                    f"epoch {epoch} (offsets {first}-{last}, op {read_op}) is {why}",
                    leader_epoch=asked,
                    answer_epoch=answer,
                    end_offset=end,
                    batch=[first, last, epoch],
                )
            )
            break
    return found


DETECTORS = {
    "end-above-hw": end_above_hw,
    "later-epoch-answered": later_epoch_answered,
    "epoch-end-contradicted": epoch_end_contradicted,
}
assert tuple(DETECTORS) == ANSWER_ANOMALIES
