"""Where a run's event log is, given the run's directory.

Users give ``isrcheck validate`` the directory a run wrote, not always the log inside it: a soak's
``--dir`` keeps its log in ``events/`` (next to ``history.jsonl``, a client history, not an event
log), a campaign keeps a self-driven failure's log in ``failures/NAME.events``, a served cluster's
``--dir`` may hold the ``--events`` directory. ``event_log_in`` returns the log's directory: the
path itself if it holds one, else the only one below it (two levels down); several, or none in a
run's directory, are a ``UsageError`` naming where to look (exit 2).
"""

from __future__ import annotations

import json
from pathlib import Path

from isrcheck.conformance.engines.apache.recording import is_recording
from isrcheck.conformance.vocabulary import UsageError

from .events import FORMAT

DEPTH = 2  # C/failures/NAME.events is two levels below a campaign's folder
# a file that marks the directory of a run of this kind -> what keeps its event log, if any
RUN_MARKS = {
    "history.jsonl": "a soak's directory (--dir) keeps its event log in events/ when its cluster's "
    "processes logged one: isrcheck's cluster unless --no-validate, Apache Kafka's "
    "with --kafka-events",
    "meta.properties": "a served cluster's data directory (serve --dir): its event log is the "
    "directory given to serve --events",
    "failures": "a campaign's folder keeps an event log only for a failure of --mode auto, in "
    "failures/NAME.events; a lockstep failure is a schedule: isrcheck check FILE replays it",
}


def _is_node_log(path: Path) -> bool:
    """A node's file of an isrcheck event log: named as the writer names them, or starting with its
    header (a malformed one is then read, and named by file and line)."""
    if path.name == "controller.jsonl" or path.name.startswith("broker-"):
        return True
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            first = json.loads(f.readline())
    except (OSError, ValueError, RecursionError):
        return False
    return isinstance(first, dict) and first.get("format") == FORMAT


def holds_log(path: Path) -> bool:
    """Does the directory hold an event log itself: isrcheck's, or Apache Kafka's recording?"""
    return is_recording(path) or any(_is_node_log(p) for p in path.glob("*.jsonl") if p.is_file())


def _logs_below(path: Path, depth: int) -> list[Path]:
    found: list[Path] = []
    try:
        children = sorted(p for p in path.iterdir() if p.is_dir() and not p.is_symlink())
    except OSError:
        return found
    for child in children:
        if holds_log(child):
            found.append(child)
        elif depth > 1:
            found.extend(_logs_below(child, depth - 1))
    return found


def event_log_in(path: str) -> str:
    """The event log of ``path``: itself if it is one (a file, or a directory holding one), else the
    only one below it; UsageError if there are several, or none where a run's directory is given."""
    where = Path(path)
    if not where.is_dir() or holds_log(where):
        return path  # a file, a missing path or a log: read as given, its errors named by read_trace
    found = _logs_below(where, DEPTH)
    if len(found) == 1:
        return str(found[0])
    if found:
        names = ", ".join(str(p) for p in found)
        raise UsageError(f"{path}: holds {len(found)} event logs, give one: {names}")
    kinds = [why for mark, why in RUN_MARKS.items() if (where / mark).exists()]
    if kinds:
        raise UsageError(f"{path}: no event log in it or below it; {kinds[0]}")
    return path  # not a run's directory: read as given, read_trace names what is wrong
