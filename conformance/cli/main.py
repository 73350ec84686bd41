"""The ``isrcheck`` command line: one sub-command per module of this package (``dump-log`` is
``dump_log.py``), each with ``add_arguments`` and ``run``; the engines and impl/ hand them values.

Only the chosen sub-command's module is imported, so ``isrcheck check`` never pays for Spark.

Exit codes are shared by every sub-command: 0 success, 1 a property violation, divergence or
failure was found, 2 bad input (arguments, schedule, config, corrupt file) with a clear message,
130 interrupted (Ctrl-C), 141 the reader of the output went away (``| head``).

What every sub-command gets from here rather than doing itself: one-line errors instead of
tracebacks, quiet ends on a closed pipe and on Ctrl-C, bounded numeric options (``Number``), and
output paths checked before the work starts (``output_path``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import shlex
import signal
import sys
from importlib.metadata import PackageNotFoundError, version

from isrcheck.conformance.vocabulary import INT64_MAX, SEED, Number, UsageError

# name -> (module defining ``add_arguments(parser)`` and ``run(args) -> int``, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "explore": ("isrcheck.conformance.cli.explore", "exhaustively explore the reference model"),
    "prove": ("isrcheck.conformance.cli.prove", "bounded model checking and k-induction of the model with z3"),
    "check": ("isrcheck.conformance.cli.check", "replay a schedule on the model and the implementation in lockstep"),
    "shrink": ("isrcheck.conformance.cli.shrink", "shrink a failing schedule to a minimal one that fails the same way"),
    "fuzz": ("isrcheck.conformance.cli.fuzz", "fuzz random crash schedules on Spark, resumable"),
    "cover": (
        "isrcheck.conformance.cli.cover",
        "run every edge and refusal of the model's state graph on the implementation, on Spark",
    ),
    "dump-log": (
        "isrcheck.conformance.cli.dump_log",
        "print the batches of a .log, or the entries of an index or checkpoint file",
    ),
    "sim": (
        "isrcheck.conformance.cli.sim",
        "run the implementation alone under a seeded random workload with faults, then validate its event log",
    ),
    "gate": (
        "isrcheck.conformance.cli.gate",
        "replay the regression corpus, then run the engines within a budget (CI)",
    ),
    "report": ("isrcheck.conformance.cli.report", "write self-contained HTML for a schedule or a campaign folder"),
    "serve": (
        "isrcheck.conformance.cli.serve",
        "run a local Kafka cluster of real processes that Kafka clients can use",
    ),
    "kafka": (
        "isrcheck.conformance.cli.kafka",
        "start a real Apache Kafka 4.x cluster (KRaft, JVM processes) on this machine",
    ),
    "experiment": (
        "isrcheck.conformance.cli.experiment",
        "the model's predictions checked on a real cluster: isrcheck's own or Apache Kafka",
    ),
    "soak": (
        "isrcheck.conformance.cli.soak",
        "real Kafka clients against a Kafka cluster under faults, checked as Jepsen does",
    ),
    "validate": (
        "isrcheck.conformance.cli.validate",
        "find a behaviour of the model that explains a run's event log",
    ),
    "check-history": (
        "isrcheck.conformance.cli.check_history",
        "check a client history (isrcheck's history.jsonl, Jepsen's history.edn) for Jepsen's Kafka anomalies",
    ),
}


# Bare ``type=int`` / ``type=float`` options (declared where this module cannot be imported,
# e.g. in isrcheck.impl) get these: non-negative, finite, within int64.
_DEFAULT_TYPES = {int: SEED, float: Number(float, 0.0, float(INT64_MAX), "units")}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line (no usage block); exit code 2 as argparse's
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser(chosen: str | None = None) -> argparse.ArgumentParser:
    """All sub-commands are listed; only ``chosen`` gets its module imported and its arguments."""
    parser = _Parser(prog="isrcheck", description="Verify Kafka-style replication.")
    parser.add_argument("-V", "--version", action="version", version=f"isrcheck {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, (module_name, help_text) in COMMANDS.items():
        command = sub.add_parser(name, help=help_text, description=help_text)
        if name == chosen:
            module = importlib.import_module(module_name)
            module.add_arguments(command)
            for action in command._actions:
                if action.type in _DEFAULT_TYPES:
                    action.type = _DEFAULT_TYPES[action.type]
            command.set_defaults(_run=module.run, _kept=getattr(module, "kept_when_interrupted", None))
    return parser


def _version() -> str:
    try:
        return version("isrcheck")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "(not installed)"


def command_list() -> str:
    """What ``isrcheck`` alone prints: every command with its one line."""
    width = max(map(len, COMMANDS))
    return (
        "usage: isrcheck COMMAND [options]; isrcheck COMMAND --help for a command's options, "
        "isrcheck --version for the version\n\ncommands:\n"
        + "".join(f"  {name:<{width}}  {help_text}\n" for name, (_, help_text) in COMMANDS.items())
    )


def main(argv: list[str] | None = None) -> int:
    """Run one sub-command; what can end it early ends it here, the same way for all of them.

    A sub-command that can be resumed defines ``kept_when_interrupted(args) -> str`` (what stays
    on disk); Ctrl-C then says so and how to resume: the same command again.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:
        print(command_list(), end="", flush=True)
        return 2
    chosen = next((a for a in argv if not a.startswith("-")), None)
    name = f"isrcheck {chosen}" if chosen in COMMANDS else "isrcheck"
    args = None
    try:
        try:
            args = build_parser(chosen if chosen in COMMANDS else None).parse_args(argv)
        except SystemExit as exc:  # --help (0), or bad arguments already reported (2)
            sys.stdout.flush()
            return exc.code if isinstance(exc.code, int) else 0
        code = int(args._run(args))
        sys.stdout.flush()  # a reader that went away shows here rather than at interpreter exit
        return code
    except UsageError as exc:
        _say(f"{name}: error: {exc}")
        return 2
    except BrokenPipeError:  # `isrcheck ... | head`: the reader has what it wanted
        _stdout_to_devnull()
        return 128 + signal.SIGPIPE
    except OSError as exc:  # a file named on the command line (or below it) cannot be used
        where = f"{exc.filename}: " if exc.filename else ""
        _say(f"{name}: error: {where}{exc.strerror or exc}")
        return 2
    except KeyboardInterrupt:
        kept = args._kept(args) if args is not None and args._kept else None
        _say(
            f"{name}: interrupted"
            + (f"; {kept}; to resume, run the same command: {shlex.join(['isrcheck', *argv])}" if kept else "")
        )
        return 130


def _say(line: str) -> None:
    try:
        print(line, file=sys.stderr, flush=True)
    except OSError:  # stderr is gone too; the exit code still tells
        pass


def _stdout_to_devnull() -> None:
    """Point stdout at /dev/null so the interpreter's last flush does not fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is not a real file (captured in tests)
        pass


if __name__ == "__main__":
    # Run the package's copy, not this ``__main__`` one: sub-commands raise the package's UsageError.
    from isrcheck.conformance.cli.main import main as _main

    sys.exit(_main())
