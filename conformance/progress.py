"""Progress of a long command, readable on a terminal and in a CI log alike.

On a terminal: a rich bar, redrawn several times a second. Without one (CI logs, pipes): one
plain line at most every ``interval_s`` seconds (10 by default) with done/total, the rate and the
ETA, and one closing line, so a log shows the run is alive without thousands of redraws.
"""

from __future__ import annotations

import time
from typing import Callable

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import (
    Progress as _Bar,
)

LINE_INTERVAL_S = 10.0


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class Progress:
    """``with Progress("fuzz kip-320", total, "schedules") as p: p.update(done, note=...)``;
    ``total`` None when unknown (explored states): then no share and no ETA."""

    def __init__(
        self,
        label: str,
        total: int | None,
        unit: str = "items",
        console: Console | None = None,
        interval_s: float = LINE_INTERVAL_S,
        bar: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label, self.total, self.unit = label, total, unit
        self.console = console or Console(stderr=True)
        self.interval_s, self.clock = interval_s, clock
        self.bar = self.console.is_terminal if bar is None else bar
        self.done, self.note = 0, ""
        self._start = self._last_line = self._changed = 0.0
        self._rich = self._task = None

    def __enter__(self) -> "Progress":
        self._start = self._last_line = self._changed = self.clock()
        if self.bar:
            self._rich = _Bar(
                TextColumn(f"[bold]{self.label}[/] {{task.description}}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn(self.unit),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=self.console,
                refresh_per_second=4,
            )
            self._rich.__enter__()
            self._task = self._rich.add_task("", total=self.total)
        return self

    def update(self, done: int, note: str = "") -> None:
        if done != self.done:
            self._changed = self.clock()
        self.done, self.note = done, note
        if self._rich is not None:
            self._rich.update(self._task, completed=done, description=note)
            return
        now = self.clock()
        if now - self._last_line >= self.interval_s:
            self._last_line = now
            self._say(self.line(now))

    def advance(self, n: int = 1, note: str = "") -> None:
        self.update(self.done + n, note or self.note)

    def line(self, now: float) -> str:
        """``fuzz kip-320: 120/400 schedules (30%), 12.0/s, ETA 23 s; 2 tasks running``."""
        note = f"; {self.note}" if self.note else ""
        if self.total is None:
            rate = self.done / max(now - self._start, 1e-9)
            return f"{self.label}: {self.done:,} {self.unit}, {rate:.1f}/s{note}"
        # the rate up to the last change of the count, and the ETA it gave then, counted down since:
        # a count that moves in large jumps (a Spark task at a time) stands still between them
        rate = self.done / max(self._changed - self._start, 1e-9)
        share = f" ({100 * self.done // self.total}%)" if self.total else ""
        eta = (
            _duration(max(0.0, (self.total - self.done) / rate - (now - self._changed)))
            if rate > 0 and self.total >= self.done
            else "-"
        )
        return f"{self.label}: {self.done}/{self.total} {self.unit}{share}, {rate:.1f}/s, ETA {eta}{note}"

    def __exit__(self, *exc) -> None:
        if self._rich is not None:
            self._rich.update(self._task, completed=self.done, description="done")
            self._rich.__exit__(*exc)
        elif exc[0] is None:
            now = self.clock()
            done = f"{self.done:,}" if self.total is None else f"{self.done}/{self.total}"
            self._say(f"{self.label}: {done} {self.unit} done in {_duration(now - self._start)}")

    def _say(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False, soft_wrap=True)
