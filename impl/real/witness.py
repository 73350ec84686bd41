"""TimerWitness: a real node's evidence that its timers ran, as ``timers`` lines in its event log.

A deadline Kafka keeps (a DelayedFetch answered by its wait, a lagging follower out of the ISR) is
kept by a timer; on a loaded machine a timer runs late, and a late answer is then no bug. What
tells a late timer from a missing one is whether the node ran its timers at all past the
deadline: the event loop runs timers in the order they fall due (``asyncio``'s ``_run_once``
pops every due handle, earliest first, before it runs any of them), so once a timer set for
``D`` ms has run, every timer set for before ``D`` has run too, however late both were. The
witness is such a timer: every ``period_ms`` on a fixed lattice from its start (no drift), it
logs the time it was set for, and sets the next lattice point after now (points a stalled loop
passed are not run twice). As Kafka's purgatory reaper advancing its timing wheel
(``SystemTimer.advanceClock``) expires every operation due by then.
"""

from __future__ import annotations

from ..eventlog import EventLog
from ..runtime import Scheduler

# often enough that a deadline missed is shown within a tenth of a second (DelayedFetch waits
# 200 ms in a soak, the lag time is 3 s); 10 short lines a second per node cost nothing beside
# a busy broker's hundreds of events a second
WITNESS_PERIOD_MS = 100


class TimerWitness:
    """Logs ``timers`` lines for ``node`` every ``period_ms`` once started."""

    def __init__(self, scheduler: Scheduler, events: EventLog, node: int, period_ms: int = WITNESS_PERIOD_MS) -> None:
        if period_ms <= 0:
            raise ValueError(f"period_ms must be > 0, got {period_ms}")
        self.scheduler, self.events, self.node, self.period_ms = scheduler, events, node, period_ms
        self.due = 0
        self._timer = None

    def start(self) -> None:
        self.due = self.scheduler.now_ms() + self.period_ms
        self._arm()

    def stop(self) -> None:
        """The node is shutting down: its timers (the purgatories') are cancelled, so it witnesses
        no more."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _arm(self) -> None:
        # set in whole ms from a floored reading: it fires at ``due`` or within the next ms, never before
        self._timer = self.scheduler.schedule(self.due - self.scheduler.now_ms(), self._run)

    def _run(self) -> None:
        self.events.timers(self.node, self.due)
        now = self.scheduler.now_ms()
        self.due += self.period_ms * ((now - self.due) // self.period_ms + 1)
        self._arm()
