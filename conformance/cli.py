"""The ``isrcheck`` command line: one sub-command per module, each with ``add_arguments`` and ``run``.

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
import math
import os
import shlex
import signal
import sys
from pathlib import Path

# name -> (module defining ``add_arguments(parser)`` and ``run(args) -> int``, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "explore": ("isrcheck.conformance.cmd_explore", "exhaustively explore the reference model"),
    "prove": ("isrcheck.conformance.cmd_prove", "bounded model checking and k-induction of the model with z3"),
    "check": ("isrcheck.conformance.cmd_check", "replay a schedule on the model and the implementation in lockstep"),
    "shrink": ("isrcheck.conformance.cmd_shrink", "shrink a failing schedule to a minimal one that fails the same way"),
    "fuzz": ("isrcheck.conformance.campaign.command", "fuzz random crash schedules on Spark, resumable"),
    "cover": ("isrcheck.conformance.cover.command", "run every edge and refusal of the model's state graph on the implementation, on Spark"),
    "dump-log": ("isrcheck.impl.storage.dump_log", "print the batches of a .log, or the entries of an index or checkpoint file"),
    "sim": ("isrcheck.impl.sim.cli", "run the implementation alone under a seeded random workload with faults"),
    "gate": ("isrcheck.conformance.cmd_gate", "replay the regression corpus, then run the engines within a budget (CI)"),
    "report": ("isrcheck.conformance.cmd_report", "write self-contained HTML for a schedule or a campaign folder"),
    "soak": ("isrcheck.conformance.cmd_soak", "run the implementation as real processes under clients and wall-clock faults"),
}


class UsageError(Exception):
    """Bad input named by the message; reported without a traceback, exit code 2."""


class Number:
    """An argparse type (and API check) for a numeric option: an int, or a finite float, in
    ``low..high``. Every numeric option of every sub-command has one, so nan, inf, negatives and
    values too large for what consumes them (a Parquet int64 column, a loop bound) stop at the
    command line with one message instead of failing deep inside a run."""

    def __init__(self, kind: type, low: int | float, high: int | float, unit: str = ""):
        self.kind, self.low, self.high, self.unit = kind, low, high, unit
        self.__name__ = kind.__name__  # argparse names the type in some of its own messages

    def describe(self) -> str:
        what = "an integer" if self.kind is int else f"a number of {self.unit or 'units'}"
        return f"{what} {self.low:,}..{self.high:,}"

    def problem(self, value) -> str | None:
        """Why ``value`` is out of bounds, or None."""
        fits = (isinstance(value, int) and not isinstance(value, bool)) if self.kind is int \
            else isinstance(value, (int, float)) and math.isfinite(value)
        if fits and self.low <= value <= self.high:
            return None
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        return f"expected {self.describe()}, got {shown}"

    def check(self, value, option: str) -> None:
        """For API callers: raise ValueError naming ``option`` if ``value`` is out of bounds."""
        problem = self.problem(value)
        if problem:
            raise ValueError(f"{option}: {problem}")

    def __call__(self, text: str):
        try:
            value = self.kind(text)
        except ValueError:  # also int("9" * 5000): too many digits to convert
            value = text
        problem = self.problem(value)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return value


INT64_MAX = 2**63 - 1
# A seed is 0 .. 2**63-1: what the campaign's Parquet ``seed`` column (int64) holds.
SEED = Number(int, 0, INT64_MAX)
# A time budget: at least a millisecond, at most a day.
SECONDS = Number(float, 0.001, 86_400.0, "seconds")
# Bare ``type=int`` / ``type=float`` options (declared where this module cannot be imported,
# e.g. in isrcheck.impl) get these: non-negative, finite, within int64.
_DEFAULT_TYPES = {int: SEED, float: Number(float, 0.0, float(INT64_MAX), "units")}


def output_path(path: str | Path, option: str, *, directory: bool) -> Path:
    """Refuse, before any long work, an output that could not be written at the end.

    A directory may be missing (it is created with its parents) but not be, or sit below, a
    file; a file's parent directory must exist. Both must be writable.
    """
    p = Path(path)
    if p.exists():
        if directory != p.is_dir():
            raise UsageError(f"{option} {path}: is {'a file' if directory else 'a directory'}, "
                             f"not {'a directory' if directory else 'a file'}")
        where = p
    elif directory:
        where = p.parent
        while not where.exists() and where != where.parent:
            where = where.parent
        if not where.is_dir():
            raise UsageError(f"{option} {path}: {where} is a file, not a directory")
    else:
        where = p.parent
        if not where.is_dir():
            raise UsageError(f"{option} {path}: {where} "
                             f"{'is a file, not a directory' if where.exists() else 'does not exist'}")
    if not os.access(where, os.W_OK | (os.X_OK if where.is_dir() else 0)):
        raise UsageError(f"{option} {path}: {where} is not writable")
    return p


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line (no usage block); exit code 2 as argparse's
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
            for action in command._actions:
                if action.type in _DEFAULT_TYPES:
                    action.type = _DEFAULT_TYPES[action.type]
            command.set_defaults(_run=module.run, _kept=getattr(module, "kept_when_interrupted", None))
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one sub-command; what can end it early ends it here, the same way for all of them.

    A sub-command that can be resumed defines ``kept_when_interrupted(args) -> str`` (what stays
    on disk); Ctrl-C then says so and how to resume: the same command again.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
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
        _say(f"{name}: interrupted" + (f"; {kept}; to resume, run the same command: "
                                       f"{shlex.join(['isrcheck', *argv])}" if kept else ""))
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
    from isrcheck.conformance.cli import main as _main
    sys.exit(_main())
