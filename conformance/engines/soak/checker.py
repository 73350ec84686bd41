"""The soak history checker: Jepsen's Kafka workload checks, without transactions.

Reads the history of a soak run (real Kafka clients against a Kafka-compatible cluster) and finds
the anomalies of Jepsen's Kafka workload (``jepsen/src/jepsen/tests/kafka.clj``, repository
jepsen-io/jepsen) that apply to a non-transactional run. Transactions are out of scope: no G0, G1c
or other dependency cycles, no precommitted reads. Standard library only; the history is read in one
pass (plus a sort of each partition's known offsets when a poll jumps), so the cost is linear in its
length.

History format
==============

A history is a JSON-lines file: one JSON object per line, one operation *event* per object, in the
order the events happened. Blank lines are skipped. Every event has:

``index``    an int, unique in the history: anomalies name events by it.
``time``     an int >= 0: nanoseconds since the run started.
``process``  an int or a string: the client. A client does one operation at a time: its
             ``invoke`` is followed by that operation's completion before its next ``invoke``.
``type``     ``"invoke"`` (the client starts the operation), or its completion: ``"ok"`` (it
             happened), ``"fail"`` (it definitely did not happen) or ``"info"`` (indeterminate:
             a timeout, a disconnect; it may or may not have happened). An invoke with no
             completion by the end of the history is indeterminate too.
``f``        ``"send"``, ``"poll"`` or ``"assign"``; ``"end"`` and ``"epoch"`` (ListOffsets and
             OffsetForLeaderEpoch, with a poll's extra fields: ``answers``).

A partition ``P`` is an int or a ``"topic-partition"`` string, an opaque key. Because JSON object
keys are strings, partitions are compared by their string form: ``0`` and ``"0"`` are one partition.

``send`` (a producer sends one record)
    invoke: ``"partition": P`` and ``"value": V``, an int unique to this send in the whole run
    (a value sent twice is refused as malformed).
    completion: repeats ``partition`` and ``value``; when ``ok`` also ``"offset": O`` (an int
    >= 0), the offset the broker acknowledged. ``fail`` and ``info`` completions carry no offset
    (one there is ignored).
``poll`` (a consumer polls once)
    invoke: ``"partitions": [P, ...]``, the consumer's assignment (recorded, not checked).
    ``ok`` completion: ``"records": {"P": [[offset, value], ...], ...}``, for each partition the
    records in the order the consumer received them (a value is an int, or a string for a record
    the client could not decode). ``"final": true`` (a JSON boolean) on the invoke or the
    completion marks a poll of the *final read*: after the faults stop, a fresh consumer assigned
    every partition reads each from the beginning up to the highest offset anyone saw. ``fail``
    and ``info`` completions carry no records.
``assign`` (a consumer's new assignment)
    invoke (and optionally the completion): ``"partitions": [P, ...]``. After an ``ok`` (or
    ``info``) assign the consumer may legitimately seek anywhere: its position tracking restarts.

Other fields (an ``"error"`` on an info completion, say) are allowed and ignored. A malformed
event (a missing or mistyped field, a completion with no invoke of its client, a second invoke
before the first completed) is a HistoryError naming the line (``load_history``) or the event's
position (``check``).

Anomalies
=========

``check`` reports the instances of each name in ANOMALIES: lost-write, inconsistent-offsets,
duplicate, G1a (an aborted read), unexpected, poll-skip, nonmonotonic-poll, int-poll-skip,
int-nonmonotonic-poll, nonmonotonic-send, the informational unseen, and what ``answers`` judges
of the ListOffsets and OffsetForLeaderEpoch answers; each function of that name
below says what it is in Kafka terms and which Jepsen definition it follows. An instance names the
events that prove it by their ``index`` (the completions that carry the evidence: a send's
``ok``/``fail``, a poll's ``ok``) in ``ops``, and says what happened in ``explanation``.

Judgments
=========

- Only records are evidence that an offset exists: an offset is *known* when a send was
  acknowledged at it or any poll returned a record at it. Kafka logs have legitimate offset gaps
  (control batches, compaction), so a jump over an unknown offset is never an anomaly.
- An ``info`` send may appear or not: it counts as written once a poll returns its value.
- After a poll completes ``info`` the consumer may have advanced without telling us (records
  fetched but not returned), so its position tracking restarts as after an assign; a ``fail``
  poll leaves it unchanged.
- A consumer's first poll of a partition after an assign is not compared with anything: the
  assignment may have sought. Jepsen keeps the positions of partitions still assigned; here the
  history says nothing about seeks, so every assign restarts tracking.
- ``lost-write`` is judged against the final read (Jepsen judges against every read): a value
  some consumer saw that the final read, having passed its offset, no longer holds was lost too.
- Records are per partition: a value polled from a partition its send did not name is
  ``unexpected`` there (Jepsen's writer lookup is per key as well).
- ``unseen`` is reported, as Jepsen reports it, but it is not an error by itself: ``ok`` ignores
  it (an acknowledged value the final read should have contained is a ``lost-write`` instead).
"""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass, field
from pathlib import Path

from isrcheck.conformance.engines.soak import answers
from isrcheck.conformance.vocabulary import read_lines

# Every anomaly this checker reports, in the order of its reports.
ANOMALIES = (
    "lost-write",
    "inconsistent-offsets",
    "duplicate",
    "G1a",
    "unexpected",
    "poll-skip",
    "nonmonotonic-poll",
    "int-poll-skip",
    "int-nonmonotonic-poll",
    "nonmonotonic-send",
    "unseen",
) + answers.ANSWER_ANOMALIES
# Reported, but not a failure by itself (Jepsen's "unseen" may just be a consumer that lags).
INFORMATIONAL = frozenset({"unseen"})

_TYPES = frozenset(("invoke", "ok", "fail", "info"))
_FS = frozenset(("send", "poll", "assign", "end", "epoch"))
_REQUIRED = ("index", "time", "process", "type", "f")


class HistoryError(ValueError):
    """A history that cannot be checked; the message names the file and line (or the event) and
    the problem."""


# ---------------------------------------------------------------------------------------------
# Reading and validating


class _Malformed(Exception):
    """One event's problem, before the caller adds where it is."""


_KEY = (int, str)  # the types of a partition, a process, a polled value (bool is not int here)


def _partitions_problem(op) -> str | None:
    ps = op.get("partitions")
    if type(ps) is not list or any(type(p) not in _KEY for p in ps):
        return '"partitions" must be a list of partitions (ints or strings)'
    return None


def _records_problem(records) -> str | None:
    if type(records) is not dict:
        return '"records" must be an object of partition -> [[offset, value], ...]'
    for key, pairs in records.items():
        if type(key) not in _KEY or type(pairs) is not list:
            return f'"records" of partition {key!r} must be a list of [offset, value] pairs'
        for pair in pairs:
            if not (
                type(pair) in (list, tuple)
                and len(pair) == 2
                and type(pair[0]) is int
                and pair[0] >= 0
                and type(pair[1]) in _KEY
            ):
                return (
                    f'"records" of partition {key!r} has {pair!r}: expected [offset, value] with '
                    f"an int offset >= 0 and an int (or string) value"
                )
    return None


class _Validator:
    """Checks events one by one (fields, types, each client's invoke/completion pairing) and hands
    back, for a completion, its invoke."""

    def __init__(self) -> None:
        self.open: dict = {}  # process -> its invoke still waiting for a completion
        self.indexes: set = set()
        self.sent: dict = {}  # value -> the index of the send invoke that sent it

    def feed(self, op):
        """The invoke that ``op`` completes (None for an invoke); raises _Malformed."""
        try:
            index, time_, process, type_, f = op["index"], op["time"], op["process"], op["type"], op["f"]
        except (KeyError, TypeError):
            if type(op) is not dict:
                raise _Malformed(f"expected a JSON object, got {type(op).__name__}") from None
            missing = next(k for k in _REQUIRED if k not in op)
            raise _Malformed(f'missing field "{missing}"') from None
        if type(index) is not int:
            raise _Malformed(f'"index" must be an int, got {index!r}')
        if index in self.indexes:
            raise _Malformed(f'"index" {index} repeats an earlier event\'s')
        self.indexes.add(index)
        if type(time_) is not int or time_ < 0:
            raise _Malformed(f'"time" must be an int >= 0 (ns since the run started), got {time_!r}')
        if type(process) not in _KEY:
            raise _Malformed(f'"process" must be an int or a string, got {process!r}')
        if type_ not in _TYPES:
            raise _Malformed(f'"type" must be one of invoke, ok, fail, info, got {type_!r}')
        if f not in _FS:
            raise _Malformed(f'"f" must be one of send, poll, assign, end, epoch, got {f!r}')
        problem = self._problem(op, type_, f)
        if problem:
            raise _Malformed(f"{f} {type_} (index {index}): {problem}")
        return self._pair(op, index, process, type_, f)

    @staticmethod
    def _problem(op, type_, f) -> str | None:
        if f == "send":
            if "partition" not in op or "value" not in op:
                return 'missing field "partition" or "value"'
            if type(op["partition"]) not in _KEY:
                return f'"partition" must be an int or a string, got {op["partition"]!r}'
            if type(op["value"]) is not int:
                return f'"value" must be an int, got {op["value"]!r}'
            if type_ == "ok":
                if "offset" not in op:
                    return 'missing field "offset" (an ok send has its acknowledged offset)'
                if type(op["offset"]) is not int or op["offset"] < 0:
                    return f'"offset" must be an int >= 0, got {op["offset"]!r}'
        elif f in ("end", "epoch"):
            return answers.problem(op, type_, f)
        elif f == "poll":
            extra = answers.problem(op, type_, f)
            if extra:
                return extra
            if type(op.get("final", False)) is not bool:
                return f'"final" must be true or false, got {op["final"]!r}'
            if type_ == "invoke":
                if "partitions" not in op:
                    return 'missing field "partitions"'
                return _partitions_problem(op)
            if type_ == "ok":
                if "records" not in op:
                    return 'missing field "records"'
                return _records_problem(op["records"])
        elif type_ == "invoke" or "partitions" in op:  # assign
            if "partitions" not in op:
                return 'missing field "partitions"'
            return _partitions_problem(op)
        return None

    def _pair(self, op, index, process, type_, f):
        if type_ == "invoke":
            if f == "send":
                earlier = self.sent.setdefault(op["value"], index)
                if earlier != index:
                    raise _Malformed(
                        f"send invoke (index {index}): value {op['value']!r} was already sent "
                        f"(index {earlier}); each send has a value of its own"
                    )
            if process in self.open:
                waiting = self.open[process]
                raise _Malformed(
                    f"process {process!r} invokes {f} (index {index}) while its {waiting['f']} "
                    f"(index {waiting['index']}) has not completed"
                )
            self.open[process] = op
            return None
        invoke = self.open.pop(process, None)
        if invoke is None or invoke["f"] != f:
            raise _Malformed(
                f"{f} {type_} (index {index}) of process {process!r} completes no {f} invoke of that process"
            )
        if f == "send" and (invoke["value"] != op["value"] or str(invoke["partition"]) != str(op["partition"])):
            raise _Malformed(
                f"send {type_} (index {index}) does not repeat its invoke's partition and value "
                f"(index {invoke['index']}: {invoke['partition']!r}, {invoke['value']!r})"
            )
        return invoke


def load_history(path) -> list[dict]:
    """The events of the history file at ``path``, validated; HistoryError names the file and the
    1-based line of the first malformed event."""
    path = Path(path)
    validator = _Validator()
    ops = []
    for number, line, _ in read_lines(path, "a history", error=HistoryError):
        if not line.strip():
            continue
        try:
            op = json.loads(line)
            validator.feed(op)
        except json.JSONDecodeError as exc:
            raise HistoryError(f"{path} line {number}: not JSON: {exc.msg} (column {exc.colno})") from None
        except RecursionError:
            raise HistoryError(f"{path} line {number}: not an operation (nested too deep)") from None
        except _Malformed as exc:
            raise HistoryError(f"{path} line {number}: {exc}") from None
        ops.append(op)
    return ops


# ---------------------------------------------------------------------------------------------
# One pass over the history: the facts the anomalies are read from


class _Partition:
    """What the history says about one partition's log."""

    __slots__ = (
        "key",
        "at",
        "witness",
        "conflicts",
        "offset_of",
        "other_offsets",
        "acked",
        "seen",
        "final_values",
        "final_max",
        "final_max_op",
        "unseen",
        "series",
        "_known",
    )

    def __init__(self, key: str) -> None:
        self.key = key
        self.at: dict = {}  # offset -> the first value seen there (by a send ok or a poll)
        self.witness: dict = {}  # offset -> the event that first showed it
        self.conflicts: dict = {}  # offset -> {value: first event showing it}, when 2+ values
        self.offset_of: dict = {}  # value -> (first offset it was seen at, that event)
        self.other_offsets: dict = {}  # value -> {offset: first event}, when at 2+ offsets
        self.acked: dict = {}  # value -> its send's ok completion
        self.seen: dict = {}  # value -> the first ok poll that returned it
        self.final_values: set = set()
        self.final_max = -1  # the highest offset the final read returned
        self.final_max_op = None
        self.unseen = 0  # acknowledged values no poll has returned yet
        self.series: list = []  # (time, unseen) at each change
        self._known = None

    def observe(self, offset: int, value, index: int) -> None:
        """A record: ``value`` at ``offset``, shown by event ``index``."""
        held = self.at.get(offset)
        if held is None:
            self.at[offset] = value
            self.witness[offset] = index
        elif held != value:
            self.conflicts.setdefault(offset, {held: self.witness[offset]}).setdefault(value, index)
        first = self.offset_of.get(value)
        if first is None:
            self.offset_of[value] = (offset, index)
        elif first[0] != offset:
            self.other_offsets.setdefault(value, {first[0]: first[1]}).setdefault(offset, index)

    def lowest_offset(self, value) -> int:
        others = self.other_offsets.get(value)
        return min(others) if others else self.offset_of[value][0]

    def known_between(self, low: int, high: int) -> tuple[int, int | None]:
        """How many known offsets lie strictly between ``low`` and ``high``, and the first."""
        if self._known is None:
            self._known = sorted(self.at)  # built once, only for partitions where a poll jumped
        known = self._known
        first, end = bisect.bisect_right(known, low), bisect.bisect_left(known, high)
        return end - first, (known[first] if end > first else None)


@dataclass(slots=True)
class _Send:
    partition: str
    status: str = "pending"  # then ok, fail or info; pending at the end means indeterminate
    completion: int | None = None


@dataclass(slots=True)
class _Step:
    """Two offsets one consumer returned in a row for a partition: from consecutive polls
    (``earlier_op != op``) or within one poll."""

    process: object
    partition: str
    earlier: int
    earlier_op: int
    offset: int
    op: int


class _Facts:
    """Everything the anomalies need, gathered in one pass over the history."""

    def __init__(self) -> None:
        self.partitions: dict[str, _Partition] = {}
        self.sends: dict = {}  # value -> _Send
        self.positions: dict = {}  # consumer -> {partition: (last offset, event)}
        self.last_send: dict = {}  # (producer, partition) -> (offset, value, event)
        self.jumps: list[_Step] = []  # consecutive polls, offset > last + 1
        self.int_jumps: list[_Step] = []  # within one poll
        self.backwards: list[_Step] = []  # consecutive polls, offset <= last
        self.int_backwards: list[_Step] = []
        self.send_inversions: list = []  # ((offset, value, event) x2, producer, partition)
        self.unseen = 0
        self.series: list = []  # (time, total unseen) at each change
        self.answers = answers.Answers()
        self.stats = {
            "events": 0,
            "sends": 0,
            "sends-ok": 0,
            "sends-fail": 0,
            "sends-info": 0,
            "polls-ok": 0,
            "records-polled": 0,
            "final-polls": 0,
        }

    def partition(self, key: str) -> _Partition:
        part = self.partitions.get(key)
        if part is None:
            part = self.partitions[key] = _Partition(key)
        return part

    def event(self, op: dict, invoke: dict | None) -> None:
        self.stats["events"] += 1
        f, type_ = op["f"], op["type"]
        self.answers.event(op, invoke)
        if f in ("end", "epoch"):
            return
        if f == "send":
            self._send(op, type_)
        elif f == "poll":
            if type_ == "ok":
                self._poll(op, invoke)
            elif type_ == "info":  # it may have moved the consumer without saying where
                self.positions.pop(op["process"], None)
        elif type_ in ("ok", "info"):  # assign: the consumer may seek anywhere now
            self.positions.pop(op["process"], None)

    def _send(self, op, type_) -> None:
        value, index = op["value"], op["index"]
        if type_ == "invoke":
            self.stats["sends"] += 1
            self.sends[value] = _Send(str(op["partition"]))
            return
        send = self.sends[value]
        send.status, send.completion = type_, index
        if type_ != "ok":
            return
        part = self.partition(send.partition)
        offset = op["offset"]
        part.observe(offset, value, index)
        part.acked[value] = index
        self._producer_order(op["process"], part.key, offset, value, index)
        if value not in part.seen:
            part.unseen += 1
            part.series.append((op["time"], part.unseen))
            self.unseen += 1
            self.series.append((op["time"], self.unseen))

    def _producer_order(self, process, partition: str, offset: int, value, index: int) -> None:
        key = (process, partition)
        earlier = self.last_send.get(key)
        if earlier is not None and offset <= earlier[0]:
            self.send_inversions.append((earlier, (offset, value, index), process, partition))
        self.last_send[key] = (offset, value, index)

    def _poll(self, op, invoke) -> None:
        index, process, time_ = op["index"], op["process"], op["time"]
        final = bool(op.get("final") or (invoke is not None and invoke.get("final")))
        self.stats["polls-ok"] += 1
        self.stats["final-polls"] += final
        positions = self.positions.setdefault(process, {})
        before = self.unseen
        for key, pairs in op["records"].items():
            if not pairs:
                continue
            part = self.partition(str(key))
            self.stats["records-polled"] += len(pairs)
            last = positions.get(part.key)
            unseen = part.unseen
            for offset, value in pairs:
                part.observe(offset, value, index)
                if value not in part.seen:
                    part.seen[value] = index
                    if value in part.acked:
                        part.unseen -= 1
                if last is not None and last[0] + 1 != offset:  # not simply the next offset
                    self._step(process, part.key, last, offset, index)
                last = (offset, index)
                if final:
                    part.final_values.add(value)
                    if offset > part.final_max:
                        part.final_max, part.final_max_op = offset, index
            positions[part.key] = last
            if part.unseen != unseen:
                part.series.append((time_, part.unseen))
                self.unseen += part.unseen - unseen
        if self.unseen != before:
            self.series.append((time_, self.unseen))

    def _step(self, process, partition: str, last: tuple, offset: int, index: int) -> None:
        earlier, earlier_op = last
        within = earlier_op == index
        step = _Step(process, partition, earlier, earlier_op, offset, index)
        if offset <= earlier:
            (self.int_backwards if within else self.backwards).append(step)
        else:  # a jump: a skip only if a known offset lies in between, decided at the end
            (self.int_jumps if within else self.jumps).append(step)

    def finish(self) -> None:
        for send in self.sends.values():
            if send.status == "pending":
                self.stats["sends-info"] += 1  # never completed: indeterminate
            else:
                self.stats[f"sends-{send.status}"] += 1


# ---------------------------------------------------------------------------------------------
# The anomalies: each reads the facts and returns its instances, each instance naming the events
# that prove it ("ops", by their "index") and saying what happened ("explanation").


def _instance(partition: str, ops, explanation: str, **details) -> dict:
    return {
        "partition": partition,
        **details,
        "ops": sorted({o for o in ops if o is not None}),
        "explanation": explanation,
    }


def lost_write(facts: _Facts) -> list[dict]:
    """A record the final read should have returned and did not: in Kafka terms, a value that
    was acknowledged (an ok send) or returned by some poll, at an offset at or below the highest
    offset the final read reached in its partition, that the final read does not contain at all.

    Jepsen's ``lost-write`` (``lost-write-cases``: "for each key, we take the highest observed
    offset, and then check that every :ok :send operation with an equal or lower offset was *also*
    read"), with the bound taken from the final read, the one read that covers every partition from
    the beginning. As in Jepsen the bound is inferred from the highest offset read, a value counts
    at the lowest offset it was seen at, and only values whose writer must have committed count: an
    ok send, or an info send that some poll returned (a failed send is G1a; an unsent one is
    unexpected). Without a final read nothing can be judged lost."""
    found = []
    for part in facts.partitions.values():
        if part.final_max_op is None:
            continue
        for value in part.offset_of:
            if value in part.final_values:
                continue
            offset = part.lowest_offset(value)
            if offset > part.final_max:
                continue
            send = facts.sends.get(value)
            if send is None or send.partition != part.key or send.status == "fail":
                continue
            how = "acknowledged" if value in part.acked else "returned by a poll"
            found.append(
                _instance(
                    part.key,
                    (part.acked.get(value), part.seen.get(value), part.final_max_op),
                    f"value {value!r}, {how} at offset {offset} of partition {part.key}, is missing from the "
                    f"final read, which reached offset {part.final_max} (op {part.final_max_op})",
                    value=value,
                    offset=offset,
                    final_max=part.final_max,
                )
            )
    return found


def unseen(facts: _Facts) -> list[dict]:
    """An acknowledged record that no poll returned by the end of the history: a value whose send
    completed ok (the broker gave it an offset) but which no consumer ever received, final read
    included. One instance per value.

    Jepsen's ``unseen`` ("messages ... which have been successfully acknowledged, but not polled by
    any client"), reported as Jepsen reports it, with its count over time in ``series``. Not an
    error by itself: consumers may simply not have reached the value (the final read may stop
    short of an offset only a send saw); when the final read did pass it, it is a lost-write."""
    found = []
    for part in facts.partitions.values():
        for value, op in part.acked.items():
            if value not in part.seen:
                offset = part.offset_of[value][0]
                found.append(
                    _instance(
                        part.key,
                        (op,),
                        f"value {value!r}, acknowledged at offset {offset} "
                        f"of partition {part.key} (op {op}), was never returned by any poll",
                        value=value,
                        offset=offset,
                    )
                )
    return found


def inconsistent_offsets(facts: _Facts) -> list[dict]:
    """Two different records at one offset of one partition: sends and polls (any consumer, any
    broker it read from) disagree on what the log holds there, as after a truncation that a
    leader change rewrote, or a divergent replica served to consumers.

    Jepsen's ``inconsistent-offsets`` (``version-orders``: "We verify that all sends and polls
    agree on the value for a given key and offset ... If we find divergence, we know that Kafka
    disagreed about the value at some offset"): acknowledged sends count with every poll."""
    found = []
    for part in facts.partitions.values():
        for offset in sorted(part.conflicts):
            values = part.conflicts[offset]
            shown = " and ".join(f"value {v!r} (op {o})" for v, o in values.items())
            found.append(
                _instance(
                    part.key,
                    values.values(),
                    f"offset {offset} of partition {part.key} holds {shown}",
                    offset=offset,
                    values=list(values),
                )
            )
    return found


def duplicate(facts: _Facts) -> list[dict]:
    """One record at two or more offsets of a partition: the value of a single send was appended
    twice, as a producer retry without idempotence (or a broken idempotent producer) does.

    Jepsen's ``duplicate`` (``duplicate-cases``: "cases where a single value appears at more than
    one offset in a key"), from sends and polls together."""
    found = []
    for part in facts.partitions.values():
        for value, offsets in part.other_offsets.items():
            shown = " and ".join(f"{o} (op {w})" for o, w in sorted(offsets.items()))
            found.append(
                _instance(
                    part.key,
                    offsets.values(),
                    f"value {value!r} is at offsets {shown} of partition {part.key}",
                    value=value,
                    offsets=sorted(offsets),
                )
            )
    return found


def g1a(facts: _Facts) -> list[dict]:
    """An aborted read: a poll returned a record whose send definitely failed (completed ``fail``),
    so a consumer saw a write the producer was told did not happen.

    Jepsen's ``G1a`` (``g1a-cases``: "aborted reads, where a known-failed write is nonetheless
    visible to a committed read"). The first poll that returned it is named."""
    found = []
    for part in facts.partitions.values():
        for value, op in part.seen.items():
            send = facts.sends.get(value)
            if send is not None and send.status == "fail" and send.partition == part.key:
                found.append(
                    _instance(
                        part.key,
                        (send.completion, op),
                        f"poll op {op} returned value {value!r} of partition {part.key}, whose "
                        f"send definitely failed (op {send.completion})",
                        value=value,
                    )
                )
    return found


def unexpected(facts: _Facts) -> list[dict]:
    """A poll returned a record that no send (ok, failed or indeterminate) wrote to that partition:
    a value nobody sent, or one sent to another partition (a misrouted or corrupt record).

    Jepsen has no separate name for it: its checker stops with ``:no-writer-of`` when a read
    value has no writer in its key."""
    found = []
    for part in facts.partitions.values():
        for value, op in part.seen.items():
            send = facts.sends.get(value)
            if send is None or send.partition != part.key:
                where = "no send wrote it" if send is None else f"it was sent to partition {send.partition}"
                found.append(
                    _instance(
                        part.key,
                        (op,),
                        f"poll op {op} returned value {value!r} of partition {part.key}, but {where}",
                        value=value,
                    )
                )
    return found


def _where(s: _Step) -> str:
    return f"in poll op {s.op}" if s.earlier_op == s.op else f"in polls op {s.earlier_op} then op {s.op}"


def _skips(facts: _Facts, steps: list[_Step]) -> list[dict]:
    found = []
    for s in steps:
        part = facts.partitions[s.partition]
        skipped, first = part.known_between(s.earlier, s.offset)
        if not skipped:
            continue  # a gap Kafka may have (control batch, compaction): nothing proves a record
        proof = part.witness[first]
        found.append(
            _instance(
                s.partition,
                (s.earlier_op, s.op, proof),
                f"process {s.process!r} read offset {s.earlier} then {s.offset} of partition {s.partition} "
                f"{_where(s)}, skipping {skipped} offset(s) that hold records (offset {first}, seen by op {proof})",
                process=s.process,
                offsets=[s.earlier, s.offset],
                skipped=skipped,
                delta=s.offset - s.earlier,
            )
        )
    return found


def poll_skip(facts: _Facts) -> list[dict]:
    """A consumer skipped records: two consecutive polls of one consumer, with no new assignment
    between them, returned offsets L then O of a partition, and some offset between L and O is
    known to hold a record (an ok send or any poll showed it). Kafka's consumer fetches from its
    position onward, so it should have returned that record first.

    Jepsen's ``poll-skip`` (``poll-skip+nonmonotonic-cases``: "two successive operations by a
    single process skipped over one or more values for some key"). Jepsen counts positions in the
    version order, which ignores offset gaps; here only offsets proven to hold a record count,
    which is the same thing."""
    return _skips(facts, facts.jumps)


def int_poll_skip(facts: _Facts) -> list[dict]:
    """A single poll skipped records: consecutive records of one partition in one poll are at
    offsets L then O, and some offset between them is known to hold a record.

    Jepsen's ``int-poll-skip`` (``int-poll-skip+nonmonotonic-cases``: "a pair of poll values which
    read the same key and skip over some part of the log which we know should exist")."""
    return _skips(facts, facts.int_jumps)


def _inversions(steps: list[_Step]) -> list[dict]:
    found = []
    for s in steps:
        found.append(
            _instance(
                s.partition,
                (s.earlier_op, s.op),
                f"process {s.process!r} read offset {s.earlier} then {s.offset} of partition {s.partition} "
                f"{_where(s)}, going {'back' if s.offset < s.earlier else 'nowhere'} without a new assignment",
                process=s.process,
                offsets=[s.earlier, s.offset],
                delta=s.offset - s.earlier,
            )
        )
    return found


def nonmonotonic_poll(facts: _Facts) -> list[dict]:
    """A consumer went backwards: a poll returned an offset at or below one the same consumer's
    previous poll returned for that partition, with no new assignment (which may seek) between
    them. Kafka's consumer position only moves forward unless the application seeks.

    Jepsen's ``nonmonotonic-poll`` (``poll-skip+nonmonotonic-cases``: "cases where a process
    started polling at or before a previous operation last left off")."""
    return _inversions(facts.backwards)


def int_nonmonotonic_poll(facts: _Facts) -> list[dict]:
    """A single poll went backwards: within one poll, a partition's record is at an offset at or
    below the record before it.

    Jepsen's ``int-nonmonotonic-poll`` (``int-poll-skip+nonmonotonic-cases``: "a pair of poll
    values which *contradict* the log order, or repeat the same value")."""
    return _inversions(facts.int_backwards)


def nonmonotonic_send(facts: _Facts) -> list[dict]:
    """A producer's writes went backwards: one client's later send to a partition was acknowledged
    at an offset at or below that of its earlier acknowledged send there. The client waits for each
    acknowledgement before sending again, so the later record was appended after the earlier one
    and must sit at a higher offset (unless the log was truncated under it).

    Jepsen's ``nonmonotonic-send`` (``nonmonotonic-send-cases``: "a single process's sends to a
    given key go backwards relative to the version order"), on the acknowledged offsets."""
    found = []
    for (o1, v1, op1), (o2, v2, op2), process, partition in facts.send_inversions:
        found.append(
            _instance(
                partition,
                (op1, op2),
                f"process {process!r}'s send of value {v2!r} was acknowledged at offset {o2} of partition "
                f"{partition} (op {op2}), not above its earlier send of value {v1!r} at offset {o1} (op {op1})",
                process=process,
                values=[v1, v2],
                offsets=[o1, o2],
                delta=o2 - o1,
            )
        )
    return found


DETECTORS = {
    "lost-write": lost_write,
    "inconsistent-offsets": inconsistent_offsets,
    "duplicate": duplicate,
    "G1a": g1a,
    "unexpected": unexpected,
    "poll-skip": poll_skip,
    "nonmonotonic-poll": nonmonotonic_poll,
    "int-poll-skip": int_poll_skip,
    "int-nonmonotonic-poll": int_nonmonotonic_poll,
    "nonmonotonic-send": nonmonotonic_send,
    "unseen": unseen,
    **{name: (lambda facts, detect=detect: detect(facts.answers)) for name, detect in answers.DETECTORS.items()},
}
assert tuple(DETECTORS) == ANOMALIES


# ---------------------------------------------------------------------------------------------
# The result


@dataclass
class CheckResult:
    """``anomalies``: every name of ANOMALIES -> its instances (an empty list when none), each a
    dict with ``partition``, details, ``ops`` (the events that prove it, by ``index``) and
    ``explanation`` (one sentence). ``counts``: name -> number of instances. ``series``:
    ``"unseen"`` -> [(time ns, acknowledged values no poll has returned yet), ...], a point at each
    change; ``unseen_by_partition`` the same per partition. ``stats``: sizes of the history
    (``sends-info`` counts the sends that never completed too).
    ``notes``: what could not be checked. ``ok``: no anomaly but the informational ``unseen``."""

    anomalies: dict[str, list[dict]]
    counts: dict[str, int]
    series: dict[str, list[tuple[int, int]]]
    unseen_by_partition: dict[str, list[tuple[int, int]]]
    stats: dict[str, int]
    notes: list[str] = field(default_factory=list)
    ok: bool = True

    def to_json(self) -> dict:
        return {
            "ok": self.ok,
            "counts": self.counts,
            "anomalies": self.anomalies,
            "stats": self.stats,
            "notes": self.notes,
            "series": {k: [list(p) for p in v] for k, v in self.series.items()},
            "unseen_by_partition": {k: [list(p) for p in v] for k, v in self.unseen_by_partition.items()},
        }


def check(ops) -> CheckResult:
    """Check a history: an iterable of events as ``load_history`` returns them (or as built in
    code; partitions may be ints there). HistoryError names the first malformed event."""
    validator, facts = _Validator(), _Facts()
    for position, op in enumerate(ops):
        try:
            invoke = validator.feed(op)
        except _Malformed as exc:
            raise HistoryError(f"event {position} of the history: {exc}") from None
        facts.event(op, invoke)
    facts.finish()
    anomalies = {name: detect(facts) for name, detect in DETECTORS.items()}
    notes = []
    if not facts.stats["final-polls"]:
        notes.append('no final read (no ok poll with "final": true): lost-write was not checked')
    return CheckResult(
        anomalies=anomalies,
        counts={name: len(found) for name, found in anomalies.items()},
        series={"unseen": facts.series},
        unseen_by_partition={key: part.series for key, part in facts.partitions.items() if part.series},
        stats=facts.stats,
        notes=notes,
        ok=not any(found for name, found in anomalies.items() if name not in INFORMATIONAL),
    )
