"""Progress in CI logs: without a terminal, one line at most every 10 s with done/total, rate and
ETA, and a closing line; on a terminal, a rich bar."""

from __future__ import annotations

import io

from rich.console import Console

from isrcheck.conformance.progress import Progress


class Clock:
    """Seconds from a count of milliseconds, so ten steps of 0.1 s make exactly one second."""

    def __init__(self) -> None:
        self.ms = 1_000_000

    def __call__(self) -> float:
        return self.ms / 1000


def test_without_a_terminal_a_line_at_most_every_ten_seconds():
    out, clock = io.StringIO(), Clock()
    console = Console(file=out, force_terminal=False, width=200)
    with Progress("fuzz kip-320", 400, "schedules", console=console, clock=clock) as p:
        for second in range(1, 41):  # 40 s, ten updates a second
            for _ in range(10):
                clock.ms += 100
                p.advance()
    lines = out.getvalue().splitlines()
    # 400 updates over 40 s: a line at 10, 20, 30 and 40 s, then the closing one
    assert len(lines) == 5
    assert lines[0] == "fuzz kip-320: 100/400 schedules (25%), 10.0/s, ETA 30 s"
    assert lines[2] == "fuzz kip-320: 300/400 schedules (75%), 10.0/s, ETA 10 s"
    assert lines[-1] == "fuzz kip-320: 400/400 schedules done in 40 s"


def test_a_note_and_a_long_eta_are_shown():
    out, clock = io.StringIO(), Clock()
    with Progress("gate corpus", 10_000, "schedules", console=Console(file=out, width=200), clock=clock) as p:
        clock.ms += 12_000
        p.update(12, note="2 tasks running")
        assert (
            out.getvalue().splitlines()[0]
            == "gate corpus: 12/10000 schedules (0%), 1.0/s, ETA 2 h 46 min; 2 tasks running"
        )


def test_on_a_terminal_a_bar():
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120)
    with Progress("fuzz kip-320", 20, "schedules", console=console) as p:
        assert p.bar
        p.update(20)
    text = out.getvalue()
    assert "fuzz kip-320" in text and "20/20" in text and "━" in text


def test_an_unknown_total_shows_count_and_rate():
    out, clock = io.StringIO(), Clock()
    with Progress("explore kip-320", None, "states", console=Console(file=out, width=200), clock=clock) as p:
        clock.ms += 10_000
        p.update(52_000, note="depth 12")
    assert out.getvalue().splitlines() == [
        "explore kip-320: 52,000 states, 5200.0/s; depth 12",
        "explore kip-320: 52,000 states done in 10 s",
    ]


def test_the_eta_counts_down_while_it_waits_between_large_jumps():
    """Spark reports schedules a task at a time: between two jumps the count stands still, and the
    ETA goes on down from what the last jump said instead of climbing as the rate seems to fall."""
    out, clock = io.StringIO(), Clock()
    with Progress("fuzz kip-320", 400, "schedules", console=Console(file=out, width=200), clock=clock) as p:
        clock.ms += 20_000
        p.update(100)  # a task of 100 in 20 s: 60 s to go
        for _ in range(3):  # nothing for 30 s more
            clock.ms += 10_000
            p.update(100)
    lines = out.getvalue().splitlines()
    assert lines[:4] == [
        "fuzz kip-320: 100/400 schedules (25%), 5.0/s, ETA 1 min 00 s",
        "fuzz kip-320: 100/400 schedules (25%), 5.0/s, ETA 50 s",
        "fuzz kip-320: 100/400 schedules (25%), 5.0/s, ETA 40 s",
        "fuzz kip-320: 100/400 schedules (25%), 5.0/s, ETA 30 s",
    ], lines
