"""The driver's live progress bar: schedules done, from the ledger markers executors write as
each seed range completes, and running tasks from Spark's StatusTracker."""
from __future__ import annotations

import threading
import time

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)

from .store import CampaignStore


def done_within(store: CampaignStore, todo: list[tuple[int, int]]) -> int:
    """Seeds of ``todo`` already recorded complete."""
    total = 0
    for c in store.completed():
        for lo, hi in todo:
            total += max(0, min(c.hi, hi) - max(c.lo, lo))
    return total


def running_tasks(sc) -> int:
    tracker = sc.statusTracker()
    active = 0
    for stage_id in tracker.getActiveStageIds():
        info = tracker.getStageInfo(stage_id)
        if info is not None:
            active += info.numActiveTasks
    return active


def follow(job: threading.Thread, sc, store: CampaignStore, todo: list[tuple[int, int]],
           console: Console, enabled: bool, interval_s: float = 0.5) -> None:
    """Redraw the bar until ``job`` finishes (a bar only on a terminal; nothing otherwise)."""
    total = sum(hi - lo for lo, hi in todo)
    if not enabled or total == 0:
        job.join()
        return
    columns = (TextColumn("[bold]fuzz[/] {task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("schedules"), TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=console, transient=False) as bar:
        task = bar.add_task("", total=total)
        while job.is_alive():
            job.join(interval_s)
            try:
                active = running_tasks(sc)
            except Exception:  # the tracker is best-effort; never let it stop the campaign
                active = 0
            bar.update(task, completed=done_within(store, todo),
                       description=f"{active} task{'s' if active != 1 else ''} running")
        bar.update(task, completed=done_within(store, todo), description="done")
        time.sleep(0)  # let rich draw the final frame before the context closes
