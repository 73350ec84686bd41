"""DelayedFetch purgatory: fetches that found nothing new wait for data, as Kafka's fetch long poll.

A follower's fetch (``replica.fetch.wait.max.ms``) or a consumer's (its own ``max_wait_ms``) that
would return no records is parked; it completes as soon as a check finds data for it (a leader
append, a HW move) or when its wait expires, with whatever there is then. Without it a follower
would poll an idle leader every backoff, and a consumer spin on an empty partition.
"""

from __future__ import annotations

from typing import Callable

from ..runtime import Scheduler, Timer

# called with ``expired``; True once it has answered (always when expired)
TryComplete = Callable[[bool], bool]


class DelayedFetch:
    __slots__ = ("try_complete", "timer")

    def __init__(self, try_complete: TryComplete) -> None:
        self.try_complete = try_complete
        self.timer: Timer | None = None


class DelayedFetchPurgatory:
    """Kafka's DelayedOperationPurgatory[DelayedFetch] for one broker, in arrival order."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler
        self.pending: list[DelayedFetch] = []

    def park(self, max_wait_ms: int, try_complete: TryComplete) -> None:
        op = DelayedFetch(try_complete)
        op.timer = self.scheduler.schedule(max_wait_ms, lambda: self._expire(op))
        self.pending.append(op)

    def check(self) -> None:
        """DelayedFetch.tryComplete for every parked fetch: those that find data answer now."""
        if not self.pending:
            return
        waiting = []
        for op in self.pending:
            if op.try_complete(False):
                op.timer.cancel()
            else:
                waiting.append(op)
        self.pending = waiting

    def cancel_all(self) -> None:
        for op in self.pending:
            op.timer.cancel()
        self.pending = []

    def _expire(self, op: DelayedFetch) -> None:
        if op in self.pending:
            self.pending.remove(op)
            op.try_complete(True)
