"""The system under test as the runner sees it: reset with a config, apply one step, report state.

Every engine (the lockstep runner, and through it random walks, the shrinker, Hypothesis machines,
campaigns) drives the implementation through ``SystemUnderTest`` only. Two implementations ship:
``adapter.ImplSide``, the simulation in this process, and ``sut_driver.DriverSut``, any program
that speaks the driver protocol of docs/sut-protocol.md on its stdin/stdout or on TCP;
``sut_spec`` names the one a run is given.
"""

from __future__ import annotations

from typing import Any

from isrcheck.conformance.core.schedule import ScheduleConfig


class ImplFailure(Exception):
    """The implementation failed while taking a step (an exception in process, an ``internal``
    error from a driver): a finding about the implementation, reported as a divergence."""


class SutFailure(Exception):
    """The external system under test did not answer as the protocol says: ``kind`` is ``crash``
    (it exited or closed the connection), ``hang`` (no answer within the timeout), ``malformed``
    (an answer that is not the protocol's) or ``error`` (it refused a request it must take).
    Never a divergence: the run did not get an answer to compare."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind, self.detail = kind, detail


class SystemUnderTest:
    """The interface. ``step`` takes a model ``Step`` and answers ``(None, outputs)`` when the
    system took it (client responses in docs/steps.md's output form) or ``(reason, [])`` when it
    refused it (and changed nothing). ``system_state`` is the abstraction's input after the last
    step, as the system part of a model State: ``(replicas, controller, fetch_requests,
    fetch_responses, leader_and_isr, alter_partition, alter_partition_responses, now)``; the
    runner adds the ghost history from the outputs.

    Snapshots are optional (``snapshot`` -> token, ``restore(token)``); the default replays the
    steps taken since the reset, which is exact for a deterministic system."""

    name = "system under test"

    def __init__(self) -> None:
        self._reset_args: tuple | None = None
        self._taken: list = []

    def reset(self, protocol: str, config: ScheduleConfig) -> None:
        """Start over: a new cluster of ``config`` running ``protocol``, in its initial state."""
        self._reset_args, self._taken = (protocol, config), []
        self._reset(protocol, config)

    def step(self, st) -> tuple[str | None, list[dict]]:
        refused, outputs = self._step(st)
        if refused is None:
            self._taken.append(st)
        return refused, outputs

    def system_state(self) -> tuple:
        raise NotImplementedError

    def snapshot(self) -> Any:
        return tuple(self._taken)

    def restore(self, token: Any) -> None:
        protocol, config = self._reset_args
        self.reset(protocol, config)
        for st in token:
            self.step(st)

    def close(self) -> None:
        """Release what the system holds (processes, connections); ``reset`` may start it again."""

    # -- what an implementation provides ------------------------------------------------------
    def _reset(self, protocol: str, config: ScheduleConfig) -> None:
        raise NotImplementedError

    def _step(self, st) -> tuple[str | None, list[dict]]:
        raise NotImplementedError
