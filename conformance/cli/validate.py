"""``isrcheck validate PATH``: is there a behaviour of the model that explains a run's event log?
PATH is the log, or a run's directory that holds it (engines/validate/locate.py).

Exit codes: 0 explained, 1 an event no behaviour of the model explains (printed with every
candidate state and why the model refuses the event there), 2 bad input (a malformed line is
named by file and line).
"""

from __future__ import annotations

import argparse
import json
import sys

from isrcheck.conformance.engines.validate.locate import event_log_in
from isrcheck.conformance.engines.validate.validation import summary_lines, validate_path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path",
        help="a directory of per-node event logs (*.jsonl), one .jsonl file, or the "
        "directory of a run that holds one (a soak's --dir, a campaign's --out)",
    )
    parser.add_argument(
        "--protocol", default=None, help="validate against this variant instead of the one the log's header names"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object (with the model steps)")


def run(args: argparse.Namespace) -> int:
    path = event_log_in(args.path)
    if path != args.path:  # said on stderr: --json's stdout is one object
        print(f"isrcheck validate: the event log in {args.path} is {path}", file=sys.stderr)
    verdict, events, seconds = validate_path(path, args.protocol)
    if args.json:
        print(json.dumps({**verdict.to_json(), "seconds": round(seconds, 3)}, sort_keys=True))
    else:
        print("\n".join(summary_lines(verdict, events, seconds)))
    return 0 if verdict.explained else 1
