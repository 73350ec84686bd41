"""SimClock: simulated milliseconds and a timer queue, fired only when the clock is advanced."""

from __future__ import annotations

import heapq
from typing import Callable


class SimTimer:
    """A scheduled callback; ``cancel`` makes it a no-op (lazy removal from the heap)."""

    __slots__ = ("due", "seq", "callback", "cancelled")

    def __init__(self, due: int, seq: int, callback: Callable[[], None]) -> None:
        self.due, self.seq, self.callback, self.cancelled = due, seq, callback, False

    def cancel(self) -> None:
        self.cancelled = True


class SimClock:
    """Implements ``Scheduler``; timers due at the same ms fire in the order they were scheduled."""

    def __init__(self, start_ms: int = 0) -> None:
        self._now = start_ms
        self._seq = 0
        self._heap: list[tuple[int, int, SimTimer]] = []  # (due, creation order, timer)

    def now_ms(self) -> int:
        return self._now

    def schedule(self, delay_ms: int, callback: Callable[[], None]) -> SimTimer:
        self._seq += 1
        timer = SimTimer(self._now + max(0, delay_ms), self._seq, callback)
        heapq.heappush(self._heap, (timer.due, timer.seq, timer))
        return timer

    def next_due(self) -> int | None:
        """When the earliest live timer fires, or None if none is pending."""
        heap = self._heap
        while heap and heap[0][2].cancelled:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def run_next(self) -> bool:
        """Jump to the earliest live timer and fire it; False if none is pending."""
        due = self.next_due()
        if due is None:
            return False
        timer = heapq.heappop(self._heap)[2]
        self._now = max(self._now, due)
        timer.callback()
        return True

    def advance(self, ms: int) -> None:
        """Move time forward by ``ms``, firing every timer that falls due on the way, in order."""
        if ms < 0:
            raise ValueError(f"cannot move the clock backwards by {ms} ms")
        target = self._now + ms
        while True:
            due = self.next_due()
            if due is None or due > target:
                break
            self.run_next()
        self._now = target
