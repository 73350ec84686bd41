"""The shared vocabulary of every room of the harness: the bad-input error (exit code 2), bounded
numeric options, the output-path check and the bounded reads of every file the tool is given. It imports nothing of
isrcheck, so any module may use it."""

from __future__ import annotations

import argparse
import codecs
import math
import os
import tempfile
from pathlib import Path
from typing import Iterator


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
        fits = (
            (isinstance(value, int) and not isinstance(value, bool))
            if self.kind is int
            else isinstance(value, (int, float)) and math.isfinite(value)
        )
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
    file; a file's parent directory must exist. Permission bits say nothing to root, nor about
    /proc and read-only mounts, so the output is tried: a missing directory is made (and removed
    again with the parents made for it), and a file is created in the directory that receives
    the output, then removed. Nothing is left behind.
    """
    p = Path(path)
    if p.exists():
        if directory != p.is_dir():
            raise UsageError(
                f"{option} {path}: is {'a file' if directory else 'a directory'}, "
                f"not {'a directory' if directory else 'a file'}"
            )
        if directory:
            _try_writing(p, path, option)
        else:
            _try_writing(p.parent, path, option)
        return p
    if directory:
        where = p.parent
        while not where.exists() and where != where.parent:
            where = where.parent
        if not where.is_dir():
            raise UsageError(f"{option} {path}: {where} is a file, not a directory")
        made = [d for d in [p, *p.parents] if not d.exists()]
        try:
            os.makedirs(p)
        except OSError as exc:
            raise UsageError(f"{option} {path}: cannot create it ({exc.strerror or exc})") from None
        try:
            _try_writing(p, path, option)
        finally:
            for d in made:
                try:
                    d.rmdir()
                except OSError:
                    pass
        return p
    where = p.parent
    if not where.is_dir():
        raise UsageError(
            f"{option} {path}: {where} {'is a file, not a directory' if where.exists() else 'does not exist'}"
        )
    _try_writing(where, path, option)
    return p


def _try_writing(folder: Path, path, option: str) -> None:
    """Create and remove a file in ``folder``; UsageError naming ``option`` if it cannot be."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".isrcheck-probe-", dir=folder)
    except OSError as exc:
        raise UsageError(f"{option} {path}: cannot write in {folder} ({exc.strerror or exc})") from None
    os.close(fd)
    os.unlink(probe)


# What any one file the tool is given may hold (a schedule, a config, a hooks file, an invariant,
# a campaign's summary), and any one line of a line-by-line file (an event log, a history).
MAX_FILE_BYTES = 64 << 20
MAX_LINE_BYTES = 16 << 20


def _mib(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 else f"{limit:,} bytes"


def read_bounded(
    path: str | Path, what: str, *, limit: int = MAX_FILE_BYTES, error: type[Exception] = UsageError
) -> bytes:
    """The bytes of the file the tool was given as ``what`` ("a schedule file"), refused past
    ``limit``: before reading a regular file (its size), or as soon as the read passes the bound
    (a pipe, a device, ``/dev/stdin``: they have no size). Every problem is one ``error`` naming
    the file."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size > limit:
                raise error(f"{path}: {size:,} bytes, larger than {what} may be ({_mib(limit)})")
            raw = f.read(limit + 1)
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(raw) > limit:
        raise error(f"{path}: larger than {what} may be ({_mib(limit)})")
    return raw


def utf8(raw: bytes, where: str | Path, error: type[Exception] = UsageError) -> str:
    """``raw`` as text (a UTF-8 byte order mark dropped, as editors on Windows save), or one
    ``error`` naming ``where`` and the first byte that is not UTF-8."""
    bom = len(codecs.BOM_UTF8) if raw.startswith(codecs.BOM_UTF8) else 0
    try:
        return raw[bom:].decode("utf-8")
    except UnicodeDecodeError as exc:
        at = bom + exc.start
        raise error(f"{where}: not a text (UTF-8) file: byte {at} (0x{raw[at]:02x})") from None


def read_text(path: str | Path, what: str, *, limit: int = MAX_FILE_BYTES, error: type[Exception] = UsageError) -> str:
    """``read_bounded``, as UTF-8 text."""
    return utf8(read_bounded(path, what, limit=limit, error=error), path, error)


def read_lines(
    path: str | Path, what: str, *, limit: int = MAX_LINE_BYTES, error: type[Exception] = UsageError
) -> Iterator[tuple[int, str, bool]]:
    """The lines of the file the tool was given as ``what`` ("an event log"), one at a time:
    (1-based number, text, whether it ended with a newline). A line past ``limit`` bytes, or one
    that is not UTF-8, is one ``error`` naming the file and the line; memory stays within a line
    however long the file (``/dev/zero`` included)."""
    try:
        f = open(path, "rb")
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from None
    with f:
        number = 0
        while True:
            try:
                line = f.readline(limit + 1)
            except OSError as exc:
                raise error(f"{path}: cannot read: {exc.strerror or exc}") from None
            if not line:
                return
            number += 1
            if len(line) > limit:
                raise error(f"{path}:{number}: a line longer than {what} may hold ({_mib(limit)})")
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise error(
                    f"{path}:{number}: not a text (UTF-8) line: byte {exc.start} (0x{line[exc.start]:02x})"
                ) from None
            yield number, text, text.endswith("\n")
