"""The ``isrcheck`` command line: one sub-command per module, each with ``add_arguments`` and ``run``.

Only the chosen sub-command's module is imported, so ``isrcheck check`` never pays for Spark.

Exit codes are shared by every sub-command: 0 success, 1 a property violation, divergence or
failure was found, 2 bad input (arguments, schedule, config, corrupt file) with a clear message.
"""
from __future__ import annotations

import argparse
import importlib
import sys

# name -> (module defining ``add_arguments(parser)`` and ``run(args) -> int``, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "explore": ("isrcheck.conformance.cmd_explore", "exhaustively explore the reference model"),
    "check": ("isrcheck.conformance.cmd_check", "replay a schedule on the model and the implementation in lockstep"),
    "shrink": ("isrcheck.conformance.cmd_shrink", "shrink a failing schedule to a minimal one that fails the same way"),
    "fuzz": ("isrcheck.conformance.campaign.command", "fuzz random crash schedules on Spark, resumable"),
    "dump-log": ("isrcheck.impl.storage.dump_log", "print the batches of a .log, or the entries of an index or checkpoint file"),
    "sim": ("isrcheck.impl.sim.cli", "run the implementation alone under a seeded random workload with faults"),
}


class UsageError(Exception):
    """Bad input named by the message; reported without a traceback, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse's default exit code is already 2
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser(chosen: str | None = None) -> argparse.ArgumentParser:
    """All sub-commands are listed; only ``chosen`` gets its module imported and its arguments."""
    parser = _Parser(prog="isrcheck", description="Verify Kafka-style replication.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, (module_name, help_text) in COMMANDS.items():
        command = sub.add_parser(name, help=help_text, description=help_text)
        if name == chosen:
            module = importlib.import_module(module_name)
            module.add_arguments(command)
            command.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    chosen = next((a for a in argv if not a.startswith("-")), None)
    args = build_parser(chosen if chosen in COMMANDS else None).parse_args(argv)
    try:
        return int(args._run(args))
    except UsageError as exc:
        print(f"isrcheck {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"isrcheck {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    # Run the package's copy, not this ``__main__`` one: sub-commands raise the package's UsageError.
    from isrcheck.conformance.cli import main as _main
    sys.exit(_main())
