"""The small interfaces the replication code runs on, so it cannot tell a simulation from a real run.

``Scheduler`` is the clock and its timers (Kafka's ``Time`` plus ``Scheduler``); ``Transport``
moves frames between node ids (Kafka's ``Selector`` underneath ``NetworkClient``); a node that is
reachable registers an ``Endpoint``. The deterministic simulation implements them in
``isrcheck.impl.sim``; a real runtime implements the same three.
"""

from __future__ import annotations

from typing import Callable, Protocol


class Timer(Protocol):
    """A scheduled callback that can be cancelled."""

    def cancel(self) -> None: ...


class Scheduler(Protocol):
    """Kafka's Time plus Scheduler: the current time and delayed callbacks."""

    def now_ms(self) -> int: ...

    def schedule(self, delay_ms: int, callback: Callable[[], None]) -> Timer: ...


class Endpoint(Protocol):
    """What a node exposes to the transport."""

    def receive(self, src: int, frame: bytes) -> None:
        """A frame from node ``src`` arrived."""

    def connection_lost(self, peer: int, correlation_id: int) -> None:
        """The request ``correlation_id`` this node sent to ``peer`` will never be answered."""


class Transport(Protocol):
    """Moves frames between registered node ids; unregistered nodes lose their traffic."""

    def register(self, node_id: int, endpoint: Endpoint) -> None: ...

    def unregister(self, node_id: int) -> None: ...

    def send(self, src: int, dst: int, frame: bytes) -> None: ...


class ProcessScheduler:
    """A process's view of a shared Scheduler: when the process dies, its pending timers fire as no-ops."""

    def __init__(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler
        self.alive = True
        self.on_io_error: Callable[[OSError], None] | None = None  # as NodeEndpoint.on_io_error

    def now_ms(self) -> int:
        return self._scheduler.now_ms()

    def schedule(self, delay_ms: int, callback: Callable[[], None]) -> Timer:
        def fire() -> None:
            if not self.alive:
                return
            try:
                callback()
            except OSError as exc:
                if self.on_io_error is None:
                    raise
                self.on_io_error(exc)

        return self._scheduler.schedule(delay_ms, fire)
