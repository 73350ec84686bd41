"""``isrcheck serve``: a local Kafka cluster of real processes (``isrcheck.impl.real.serve``); with
``--events DIR`` its processes' event log, validated against the model (``engines/validate``) once
the cluster has stopped (Ctrl-C, SIGTERM), as ``isrcheck soak`` validates its own.

Exit codes: 0 stopped cleanly (and the event log explained); 1 a node did not stop cleanly, or an
event of the log no behaviour of the model explains; 2 bad arguments or a cluster that cannot start.
"""

from __future__ import annotations

import argparse
import signal

from isrcheck.conformance.engines.validate.validation import validate_run
from isrcheck.impl.real import serve as impl_serve


def add_arguments(parser: argparse.ArgumentParser) -> None:
    impl_serve.add_arguments(parser)
    parser.add_argument(
        "--no-validate", action="store_true", help="with --events: keep the event log without validating it at the end"
    )


def run(args: argparse.Namespace) -> int:
    code = impl_serve.run(args)
    if args.events is None or args.no_validate or code == 2:  # nothing logged, or nothing ran
        return code
    signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C ends the validation too
    validation = validate_run(args.events, lambda line: print(f"isrcheck serve: {line}", flush=True))
    print(f"isrcheck serve: event log ({args.events}): " + "\n  ".join(validation.lines), flush=True)
    if not validation.explained:
        return 1
    return code


__all__ = ["add_arguments", "run"]
