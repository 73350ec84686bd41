"""Is there a behaviour of the model that explains a run's event log? The verdict on a log
(``validate_path``), on the log a run wrote (``validate_run``, ``LogValidation``) and the lines
that say it (``summary_lines``); ``isrcheck validate`` (conformance/cli/validate.py) prints them.
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass, replace

from isrcheck.conformance.engines.apache.recording import is_recording
from isrcheck.conformance.engines.apache.translate import write
from isrcheck.conformance.vocabulary import UsageError
from isrcheck.model import PROTOCOLS
from isrcheck.model.collector import no_cycle_collection

from . import timeliness
from .events import partition_traces, read_trace
from .search import Verdict, validate_partitions


def validate_path(path: str, protocol: str | None = None, judge: bool = False) -> tuple[Verdict, int, float]:
    """(verdict, events read, seconds) of the log at ``path``; UsageError on bad input. ``judge``:
    the explaining behaviour's fault budgets too (``budgets.py``; a log of one partition)."""
    if protocol is not None and protocol not in PROTOCOLS:
        raise UsageError(f"--protocol: unknown variant {protocol!r} (known: {', '.join(PROTOCOLS)})")

    if is_recording(path):  # Apache Kafka's own events (engines/apache/recording), translated first
        with tempfile.TemporaryDirectory(prefix="isrcheck-translated.") as out:
            return validate_path(str(write(path, out)), protocol)
    start = time.perf_counter()
    with no_cycle_collection():
        trace = read_trace(path)
        if protocol is not None and protocol != trace.protocol:
            trace.config = replace(trace.config, protocol=protocol)
            trace.protocol = protocol
        verdict = validate_partitions(partition_traces(trace), len(trace.events), judge)
    return verdict, len(trace.events), time.perf_counter() - start


@dataclass(frozen=True)
class LogValidation:
    """The validator's verdict on a run's event log, with the events read, the seconds it took and
    the deadlines the run missed (``timeliness.py``; checked for isrcheck's own processes only)."""

    verdict: Verdict
    events: int
    seconds: float
    late: tuple = ()

    @property
    def explained(self) -> bool:
        return self.verdict.explained

    @property
    def lines(self) -> list[str]:
        """What the text output says (``summary_lines``, then each deadline missed)."""
        return summary_lines(self.verdict, self.events, self.seconds) + timeliness.lines(list(self.late))

    def to_json(self) -> dict:
        """As a run's ``results.json`` keeps it: the verdict without its model steps, ``events`` the
        events read (``events_explained`` how many the model explained), ``seconds``, ``late``,
        ``lines``."""
        out = self.verdict.to_json()
        out.pop("steps", None)
        return {
            **out,
            "events_explained": self.verdict.events,
            "events": self.events,
            "seconds": round(self.seconds, 3),
            "late": [x.to_json() for x in self.late],
            "lines": self.lines,
        }


def validate_run(path, say, timely: bool = False) -> LogValidation:
    """The verdict on the event log a run wrote to ``path`` (a soak's, a served cluster's);
    ``say(line)`` hears that it starts. With ``timely`` (isrcheck's own processes) also the
    deadlines it missed, as its nodes' ``timers`` lines show them (timeliness.py)."""
    say(f"validating the event log {path}")
    verdict, n, seconds = validate_path(str(path))
    late = timeliness.check_path(str(path), real=True) if timely and verdict.explained else []
    return LogValidation(verdict, n, seconds, tuple(late))


def summary_lines(verdict: Verdict, events: int, seconds: float) -> list[str]:
    """What the text output says: the verdict, then for a refusal the event and each candidate."""
    rate = f"{events / seconds:,.0f} events/s" if seconds > 0 else ""
    if verdict.explained:
        each = f", {len(verdict.partitions)} partitions each on its own" if verdict.partitions else ""
        return [
            f"explained: {events} events by {len(verdict.steps)} model steps{each} "
            f"(at most {verdict.max_candidates} candidate states; {seconds:.2f} s, {rate})"
        ]
    where = f"event {verdict.events + 1} of {events}"
    if verdict.partition is not None:
        names = ", ".join(f"{b} as {m}" for b, m in sorted(verdict.renamed.items()))
        where = f"event {verdict.events + 1} of partition {verdict.partition}'s trace (brokers renamed: {names})"
    lines = [
        f"not explained: {where}, {verdict.event.describe()}",
        f"  logged state: {json.dumps(verdict.event.state, separators=(',', ':'))}",
        f"  no behaviour of the model explains it; {len(verdict.refusals)} candidate state(s):",
    ]
    for r in verdict.refusals:
        lines.append(f"  candidate {r.candidate + 1}: {json.dumps(r.state, separators=(',', ':'))}")
        for why in r.reasons or ["(no way to take the event)"]:
            lines.append(f"    - {why}")
    return lines
