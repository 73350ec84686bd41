"""``isrcheck validate PATH``: is there a behaviour of the model that explains a run's event log?

Exit codes: 0 explained, 1 an event no behaviour of the model explains (printed with every
candidate state and why the model refuses the event there), 2 bad input (a malformed line is
named by file and line).
"""
from __future__ import annotations

import argparse
import json
import time

from isrcheck.conformance.vocabulary import UsageError
from isrcheck.model import PROTOCOLS

from .events import read_trace
from .search import Verdict, validate


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="a directory of per-node event logs (*.jsonl), or one .jsonl file")
    parser.add_argument("--protocol", default=None,
                        help="validate against this variant instead of the one the log's header names")
    parser.add_argument("--json", action="store_true", help="print one JSON object (with the model steps)")


def validate_path(path: str, protocol: str | None = None) -> tuple[Verdict, int, float]:
    """(verdict, events read, seconds) of the log at ``path``; UsageError on bad input."""
    if protocol is not None and protocol not in PROTOCOLS:
        raise UsageError(f"--protocol: unknown variant {protocol!r} (known: {', '.join(PROTOCOLS)})")
    start = time.perf_counter()
    trace = read_trace(path)
    if protocol is not None and protocol != trace.protocol:
        from dataclasses import replace
        trace.config = replace(trace.config, protocol=protocol)
        trace.protocol = protocol
    verdict = validate(trace)
    return verdict, len(trace.events), time.perf_counter() - start


def summary_lines(verdict: Verdict, events: int, seconds: float) -> list[str]:
    """What the text output says: the verdict, then for a refusal the event and each candidate."""
    rate = f"{events / seconds:,.0f} events/s" if seconds > 0 else ""
    if verdict.explained:
        return [f"explained: {events} events by {len(verdict.steps)} model steps "
                f"(at most {verdict.max_candidates} candidate states; {seconds:.2f} s, {rate})"]
    lines = [f"not explained: event {verdict.events + 1} of {events}, {verdict.event.describe()}",
             f"  logged state: {json.dumps(verdict.event.state, separators=(',', ':'))}",
             f"  no behaviour of the model explains it; {len(verdict.refusals)} candidate state(s):"]
    for r in verdict.refusals:
        lines.append(f"  candidate {r.candidate + 1}: {json.dumps(r.state, separators=(',', ':'))}")
        for why in r.reasons or ["(no way to take the event)"]:
            lines.append(f"    - {why}")
    return lines


def run(args: argparse.Namespace) -> int:
    verdict, events, seconds = validate_path(args.path, args.protocol)
    if args.json:
        print(json.dumps({**verdict.to_json(), "seconds": round(seconds, 3)}, sort_keys=True))
    else:
        print("\n".join(summary_lines(verdict, events, seconds)))
    return 0 if verdict.explained else 1
