"""Where a run's event log is, given the run's directory: what ``isrcheck validate PATH`` reads.

A user names the run, not always its log: a soak's ``--dir`` (the log is in ``events/``), the data
directory of a cluster of processes (``isrcheck serve --dir``, a soak's ``cluster/``, which name the
directory they logged to), a fuzz campaign (``--mode auto`` keeps each failure's log in
``failures/<id>.events/``) or one of its failures (``failures/<id>.json``). ``event_log(path)`` is
the log such a path means; a path that holds none, or several, is a ``UsageError`` that says
where the logs are (exit 2).
"""
from __future__ import annotations

import json
from pathlib import Path

from isrcheck.conformance.engines.apache.recording import is_recording
from isrcheck.conformance.vocabulary import UsageError, read_text

from .events import FORMAT

# the file in which a cluster of processes names the directory of its event log (the writer's,
# isrcheck.impl.real.processes.EVENT_LOG_FILE; read, not imported: a run's directory is data)
EVENT_LOG_FILE = "event-log"
HEADER_BYTES = 1 << 16  # a header line is far shorter: the first line is read only this far


def event_log(path: str) -> str:
    """The event log (a directory of ``*.jsonl`` files, one such file, or an Apache Kafka
    recording) that ``path`` holds or names; UsageError saying where the logs are otherwise."""
    p = Path(path)
    if not p.exists():
        raise UsageError(f"{path}: no such file or directory")
    if not p.is_dir():  # a file (or a pipe, a device): read as given
        return _from_file(p)
    if holds_log(p):
        return path
    if holds_log(p / "events"):  # a soak's folder (isrcheck's cluster, or Apache Kafka's with --events)
        return str(p / "events")
    pointer = p / EVENT_LOG_FILE
    if pointer.is_file():  # a cluster's data directory
        logged = read_text(pointer, "a cluster's event log pointer", limit=HEADER_BYTES).strip()
        if holds_log(Path(logged)):
            return logged
        raise UsageError(f"{path}: its cluster logged its events to {logged}, which holds no event log now")
    failures = p / "failures" if (p / "failures").is_dir() else p if p.name == "failures" else None
    if failures is not None:
        return _failure_log(path, failures)
    if (p / "meta.properties").is_file():
        raise UsageError(f"{path}: a cluster's data directory whose processes logged no events (isrcheck serve "
                         f"--events DIR logs them to DIR and names it in {p / EVENT_LOG_FILE})")
    if (p / "history.jsonl").is_file():
        raise UsageError(f"{path}: a soak's folder without an event log ({p / 'events'}): the soak ran with "
                         f"--no-validate, or on a cluster that logs none")
    if any(p.glob("*.jsonl")):  # meant as a log: reading it names the file and line that is not one
        return path
    raise UsageError(f"{path}: no event log here (*.jsonl files whose first line is an {FORMAT} header); a run "
                     f"keeps it in its --events DIR, a soak in DIR/events, a campaign in failures/<id>.events")


def holds_log(p: Path) -> bool:
    """Whether directory ``p`` is an event log: a ``*.jsonl`` file with an event log's header, or
    Apache Kafka's recording (``engines/apache/recording``)."""
    if not p.is_dir():
        return False
    return is_recording(p) or any(_is_log_file(f) for f in p.glob("*.jsonl"))


def _is_log_file(f: Path) -> bool:
    try:
        with open(f, "rb") as out:
            first = out.readline(HEADER_BYTES)
        return json.loads(first).get("format") == FORMAT
    except (OSError, ValueError, AttributeError):
        return False


def _from_file(p: Path) -> str:
    """A ``.jsonl`` file is a log; a campaign failure's ``.json`` names its run's log beside it."""
    if p.suffix != ".json":
        return str(p)
    events = p.with_suffix(".events")
    if holds_log(events):  # a self-driven run's failure (fuzz --mode auto): its log beside it
        return str(events)
    raise UsageError(f"{p}: not an event log but a JSON file (a campaign's failure schedule is replayed by "
                     f"isrcheck check {p}; an event log is *.jsonl)")


def _failure_log(path: str, failures: Path) -> str:
    """The one event log among a campaign's failures; else where they are (or that there are none)."""
    logs = sorted(d for d in failures.glob("*.events") if holds_log(d))
    if len(logs) == 1:
        return str(logs[0])
    if logs:
        raise UsageError(f"{path}: a campaign with {len(logs)} event logs, give one: "
                         + ", ".join(str(d) for d in logs))
    raise UsageError(f"{path}: a campaign whose failures keep no event log (its schedules under {failures} are "
                     f"replayed by isrcheck check)")


__all__ = ["EVENT_LOG_FILE", "event_log", "holds_log"]
