"""``isrcheck dump-log PATH [--json]``: print and check a segment or checkpoint file, like Kafka's
kafka-dump-log (DumpLogSegments), streaming: memory does not grow with the file.

Exit codes: 0 the file is sound; 1 a finding: the file is corrupt (each problem is printed beside
the batch or entry it was found at, with its byte position, and a summary naming the file and the
first problem goes to stderr); 2 bad input: the path is missing, unreadable or not a segment or
checkpoint file. A corrupt file is a finding, not bad input: finding corruption is what the command
is for, and CI can tell "the log is damaged" (1) from "wrong path" (2).
"""

from __future__ import annotations

import argparse
import sys

from isrcheck.impl.storage.dump import MAX_MESSAGE_SIZE, open_dump, write_json, write_text

EXIT_CODES = (
    "exit codes: 0 the file is sound; 1 it is corrupt (each problem printed with its byte "
    "position, a summary on stderr); 2 the path is missing, unreadable or not a segment or "
    "checkpoint file"
)


def _positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of bytes, got {value}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = EXIT_CODES
    parser.add_argument(
        "path",
        help="a segment file (<base offset>.log, .index, .timeindex) or a "
        "checkpoint file (leader-epoch-checkpoint, ...)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    parser.add_argument(
        "--max-message-size",
        type=_positive,
        default=MAX_MESSAGE_SIZE,
        metavar="BYTES",
        help="larger batches are CRC-checked in chunks but their records not decoded "
        f"(bounds memory; default {MAX_MESSAGE_SIZE})",
    )


def _fail(message: str) -> int:
    print(f"isrcheck dump-log: error: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    path = args.path
    try:
        dump = open_dump(path, args.max_message_size)
    except ValueError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"cannot read {path}: {exc.strerror or exc}")
    with dump:
        try:
            (write_json if args.json else write_text)(dump, sys.stdout)
            sys.stdout.flush()
        except BrokenPipeError:  # the reader went away (| head): the CLI ends quietly
            raise
        except OSError as exc:  # the file became unreadable half-way (EIO, ...)
            return _fail(f"cannot read {path}: {exc.strerror or exc}")
    if dump.valid:
        return 0
    print(f"isrcheck dump-log: {dump.summary()}", file=sys.stderr)
    return 1
