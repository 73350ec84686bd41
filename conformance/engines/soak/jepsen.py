"""A history a Jepsen Kafka test wrote (``history.edn``), read into the soak checker's events.

Jepsen's Kafka workload (``jepsen.tests.kafka``) records one operation per EDN map: ``:type``
(``:invoke``, ``:ok``, ``:fail``, ``:info``), ``:f``, ``:process``, ``:time`` (ns), ``:index``
and ``:value``. What becomes what (``checker``'s module docstring has the target format):

- ``:send`` with micro-operations ``[:send k v]``, completed as ``[:send k [offset v]]``: one
  send per micro-operation, to partition ``k``. The sends of one operation are the process's, one
  after the other: the first is invoked at the operation's invoke, the others at its completion.
- ``:poll`` with ``[:poll]``, completed as ``[:poll {k [[offset v] ...]}]``: one poll, its
  records those of every poll micro-operation, per partition, in order.
- ``:assign`` and ``:subscribe`` (keys): an assign; ``:crash`` (a new client): an assign of no
  partition. Every consumer position restarts there.
- After an ``:ok`` ``:assign`` with ``:seek-to-beginning? true`` (Jepsen's final polls), the
  process's polls are the *final read*, until its next assign or crash.
- The nemesis's operations (``:process :nemesis``) and other ``:f`` (``:debug-topic-partitions``)
  are skipped; a ``:txn`` (a transaction) is refused: the checker does not check transactions.

Each event keeps the Jepsen operation's ``:index`` as ``"jepsen_index"``; events get indices of
their own (one operation may become several events). The file is read within ``read_lines``'s
bounds, one map per line, or, when it starts with ``[``, as one vector within ``read_text``'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from pathlib import Path

import edn_format
from edn_format import Keyword

from isrcheck.conformance.engines.soak.checker import HistoryError
from isrcheck.conformance.vocabulary import read_lines, read_text

_SKIPPED = {"debug-topic-partitions"}


def is_jepsen(path: str | Path) -> bool:
    """Whether ``path`` looks like an EDN history: named ``*.edn``, or its first character is
    ``[`` or its first map's first key a keyword (``{:``)."""
    if str(path).endswith(".edn"):
        return True
    for _, line, _ in read_lines(path, "a history", error=HistoryError):
        text = line.strip()
        if text:
            return text.startswith("[") or text.replace(" ", "").startswith("{:")
    return False


def _plain(value):
    """EDN values as Python's: keywords as their names, vectors and lists as lists, maps as dicts."""
    if isinstance(value, Keyword):
        return value.name
    if isinstance(value, Mapping):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (Sequence, Set)) and not isinstance(value, (str, bytes)):
        return [_plain(v) for v in value]
    return value


def _maps(path: Path):
    """(where, operation) for each map of the file."""
    first = next((line.strip() for _, line, _ in read_lines(path, "a history", error=HistoryError) if line.strip()), "")
    if first.startswith("["):
        try:
            ops = edn_format.loads(read_text(path, "a history", error=HistoryError))
        except (edn_format.EDNDecodeError, ValueError, RecursionError) as exc:
            raise HistoryError(f"{path}: not EDN: {exc}") from None
        for i, op in enumerate(ops):
            yield f"{path} operation {i}", _plain(op)
        return
    for number, line, _ in read_lines(path, "a history", error=HistoryError):
        if not line.strip():
            continue
        try:
            yield f"{path} line {number}", _plain(edn_format.loads(line))
        except (edn_format.EDNDecodeError, ValueError, RecursionError) as exc:
            raise HistoryError(f"{path} line {number}: not an EDN map: {exc}") from None


class _Converter:
    def __init__(self) -> None:
        self.events: list[dict] = []
        self.pending: dict = {}  # process -> its invoke (Jepsen's), while it runs
        self.final: set = set()  # processes whose polls are the final read

    def emit(self, op: dict, type_: str, f: str, **fields) -> None:
        self.events.append(
            {
                "index": len(self.events),
                "time": op["time"],
                "process": op["process"],
                "type": type_,
                "f": f,
                "jepsen_index": op.get("index"),
                **fields,
            }
        )

    def feed(self, where: str, op) -> None:
        if not isinstance(op, dict):
            raise HistoryError(f"{where}: not a map")
        process, type_, f = op.get("process"), op.get("type"), op.get("f")
        if process == "nemesis" or f in _SKIPPED:
            return
        for key, kinds in (("process", (int, str)), ("time", (int,)), ("type", (str,)), ("f", (str,))):
            if not isinstance(op.get(key), kinds) or isinstance(op.get(key), bool):
                raise HistoryError(f"{where}: {key!r} missing or not {' or '.join(k.__name__ for k in kinds)}")
        if f == "txn":
            raise HistoryError(f"{where}: a transaction (:f :txn): isrcheck's checker does not check transactions")
        if type_ not in ("invoke", "ok", "fail", "info"):
            raise HistoryError(f"{where}: :type {type_!r} is none of invoke, ok, fail, info")
        handler = {
            "send": self.send,
            "poll": self.poll,
            "assign": self.assign,
            "subscribe": self.assign,
            "crash": self.assign,
        }.get(f)
        if handler is None:
            raise HistoryError(f"{where}: :f {f!r} is none of send, poll, assign, subscribe, crash, txn")
        if type_ == "invoke":
            self.pending[process] = op
        elif self.pending.pop(process, None) is None:
            raise HistoryError(f"{where}: a completion of process {process!r} without its invoke")
        try:
            handler(op, type_)
        except (TypeError, ValueError, IndexError, AttributeError) as exc:
            raise HistoryError(f"{where}: a {f} whose :value is not Jepsen's ({exc})") from None

    def send(self, op: dict, type_: str) -> None:
        mops = [m for m in op.get("value") or [] if m and m[0] == "send"]
        if type_ == "invoke":
            if mops:
                self.emit(op, "invoke", "send", partition=mops[0][1], value=mops[0][2])
            return
        for i, (_, key, written) in enumerate(mops):
            offset, value = written if isinstance(written, list) else (None, written)
            if i:
                self.emit(op, "invoke", "send", partition=key, value=value)
            done = {"offset": offset} if type_ == "ok" and offset is not None else {}
            self.emit(
                op, type_ if offset is not None or type_ != "ok" else "info", "send", partition=key, value=value, **done
            )

    def poll(self, op: dict, type_: str) -> None:
        final = op["process"] in self.final
        if type_ == "invoke":
            self.emit(op, "invoke", "poll", partitions=[], **({"final": True} if final else {}))
            return
        records: dict = {}
        for mop in op.get("value") or []:
            if mop and mop[0] == "poll" and len(mop) > 1 and isinstance(mop[1], dict):
                for key, pairs in mop[1].items():
                    records.setdefault(str(key), []).extend([o, v] for o, v in pairs if o is not None)
        fields = {"records": records} if type_ == "ok" else {}
        self.emit(op, type_, "poll", **fields, **({"final": True} if final else {}))

    def assign(self, op: dict, type_: str) -> None:
        keys = op.get("value") if op["f"] != "crash" and isinstance(op.get("value"), list) else []
        self.emit(op, type_, "assign", partitions=keys)
        if type_ != "invoke":
            self.final.discard(op["process"])
            if type_ == "ok" and op["f"] == "assign" and op.get("seek-to-beginning?") is True:
                self.final.add(op["process"])


def load_jepsen_history(path: str | Path) -> list[dict]:
    """The events of the Jepsen history at ``path``, in the checker's format (the module
    docstring says how); HistoryError names the file and the operation that cannot be read."""
    path = Path(path)
    converter = _Converter()
    for where, op in _maps(path):
        converter.feed(where, op)
    return converter.events
