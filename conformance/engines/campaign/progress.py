"""The driver's live progress: schedules done, from the ledger markers executors write as
each seed range completes, and running tasks from Spark's StatusTracker."""

from __future__ import annotations

import threading

from rich.console import Console

from isrcheck.conformance.engines.campaign.store import CampaignStore
from isrcheck.conformance.progress import Progress


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


def follow(
    job: threading.Thread,
    sc,
    store: CampaignStore,
    todo: list[tuple[int, int]],
    console: Console,
    enabled: bool,
    interval_s: float = 0.5,
    label: str = "fuzz",
) -> None:
    """Report progress until ``job`` finishes: a bar on a terminal, a line at most every 10 s
    in a log (``isrcheck.conformance.progress``); nothing when not ``enabled``."""
    total = sum(hi - lo for lo, hi in todo)
    if not enabled or total == 0:
        job.join()
        return
    with Progress(label, total, "schedules", console=console) as progress:
        while job.is_alive():
            job.join(interval_s)
            try:
                active = running_tasks(sc)
            except Exception:  # the tracker is best-effort; never let it stop the campaign
                active = 0
            progress.update(done_within(store, todo), note=f"{active} task{'s' if active != 1 else ''} running")
        progress.update(done_within(store, todo), note="")
