"""``isrcheck dump-log PATH [--json]``: print a segment or checkpoint file like kafka-dump-log.

Exit 0 if every batch (or index entry) is well formed, 1 if a corrupt batch or a torn tail was
found, 2 if the path is missing or not a segment file."""
from __future__ import annotations

import argparse
import json
import os
import sys

from .dump import dump_checkpoint_bytes, dump_index_bytes, dump_log_bytes, file_kind, render_text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="a segment file (<base offset>.log, .index, .timeindex) or a "
                                     "checkpoint file (leader-epoch-checkpoint, ...)")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of text")


def _fail(message: str) -> int:
    print(f"isrcheck dump-log: error: {message}", file=sys.stderr)
    return 2


def run(args: argparse.Namespace) -> int:
    path = args.path
    try:
        kind, base_offset = file_kind(os.path.basename(path))
    except ValueError as exc:
        return _fail(str(exc))
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        return _fail(f"cannot read {path}: {exc.strerror or exc}")
    if kind == "log":
        dump = dump_log_bytes(data)
    elif kind == "checkpoint":
        dump = dump_checkpoint_bytes(data, os.path.basename(path))
    else:
        dump = dump_index_bytes(data, kind, base_offset)
    dump["path"] = path
    if args.json:
        json.dump(dump, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
    else:
        print(render_text(path, dump))
    return 0 if dump["valid"] else 1
