"""The shared vocabulary of every room of the harness: the bad-input error (exit code 2), bounded
numeric options and the output-path check. It imports nothing of isrcheck, so any module may use it."""
from __future__ import annotations

import argparse
import math
import os
from pathlib import Path


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
