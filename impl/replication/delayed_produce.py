"""DelayedProduce purgatory: acks=all produces parked until the high watermark passes their batch."""

from __future__ import annotations

from typing import Callable

from ..protocol import Errors
from ..runtime import Scheduler, Timer

Respond = Callable[[int, int], None]  # (error, offset)


class DelayedProduce:
    """One parked batch of ``count`` records from base ``offset``: completes when the HW reaches its
    ``required_offset`` (Kafka's: last offset + 1), or expires after request.timeout.ms. ``value``
    is the first record's."""

    __slots__ = ("offset", "count", "value", "deadline_ms", "respond", "timer")

    def __init__(self, offset: int, count: int, value: bytes, deadline_ms: int, respond: Respond) -> None:
        self.offset, self.count, self.value = offset, count, value
        self.deadline_ms, self.respond = deadline_ms, respond
        self.timer: Timer | None = None

    @property
    def required_offset(self) -> int:
        return self.offset + self.count


class DelayedProducePurgatory:
    """Kafka's DelayedOperationPurgatory[DelayedProduce] for one partition, in append order."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler
        self.pending: list[DelayedProduce] = []
        self.on_expire: Callable[[DelayedProduce], None] | None = None  # hears each expiry before its answer

    def park(self, offset: int, count: int, value: bytes, timeout_ms: int, respond: Respond) -> None:
        """Wait for the batch at ``offset`` to be committed; expire when the clock passes now + timeout."""
        op = DelayedProduce(offset, count, value, self.scheduler.now_ms() + timeout_ms, respond)
        # expires once now > deadline (a produce due exactly at its deadline still waits)
        op.timer = self.scheduler.schedule(timeout_ms + 1, lambda: self._expire(op))
        self.pending.append(op)

    def try_complete(self, high_watermark: int, isr_size: int, min_isr: int) -> None:
        """DelayedProduce.tryComplete: batches below the HW are done, with enough replicas or not."""
        if not self.pending or self.pending[0].required_offset > high_watermark:
            return
        error = Errors.NONE if isr_size >= min_isr else Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        done = [op for op in self.pending if op.required_offset <= high_watermark]
        self.pending = [op for op in self.pending if op.required_offset > high_watermark]
        for op in done:
            op.timer.cancel()
            op.respond(error, op.offset if error == Errors.NONE else -1)

    def fail_all(self, error: int) -> None:
        """Complete every parked produce with ``error`` (the leader lost leadership)."""
        done, self.pending = self.pending, []
        for op in done:
            op.timer.cancel()
            op.respond(error, -1)

    def _expire(self, op: DelayedProduce) -> None:
        if op in self.pending:
            self.pending.remove(op)
            if self.on_expire is not None:
                self.on_expire(op)
            op.respond(Errors.REQUEST_TIMED_OUT, -1)
