"""The system under test as the runner sees it: reset with a config, apply one step, report state.

Every engine (the lockstep runner, and through it random walks, the shrinker, Hypothesis machines,
campaigns) drives the implementation through ``SystemUnderTest`` only. Two implementations ship:
``adapter.ImplSide``, the simulation in this process, and ``sut_driver.DriverSut``, any program
that speaks the driver protocol of docs/sut-protocol.md on its stdin/stdout or on TCP.

Which one a run uses unless told otherwise is this process's choice (``use``): the command line's
``--sut`` sets it once per process, so a Spark executor sets it for its own worker and keeps one
external process for every schedule it runs.
"""
from __future__ import annotations

from typing import Any

from .schedule import ScheduleConfig


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


_chosen: tuple[str, float] | None = None  # (--sut spec, timeout) of this process
_shared: SystemUnderTest | None = None    # its one running instance


def use(spec: str | None, timeout_s: float = 10.0) -> None:
    """Make ``spec`` (a command line, or ``tcp://HOST:PORT``) this process's system under test
    (None: the in-process simulation). Raises SutFailure if it cannot be started."""
    global _chosen, _shared
    wanted = None if spec is None else (spec, timeout_s)
    if wanted == _chosen:
        return
    if _shared is not None:
        _shared.close()
    _chosen, _shared = wanted, None
    if wanted is not None:
        default_sut()  # started now: fails with a clear message here rather than in the first schedule


def chosen() -> tuple[str, float] | None:
    return _chosen


def add_arguments(parser) -> None:
    """``--sut`` and ``--sut-timeout``, for every command that runs schedules."""
    from .cli import SECONDS
    parser.add_argument("--sut", metavar="COMMAND", default=None,
                        help='run the implementation under test as this command (e.g. "python -m '
                             'isrcheck.impl.sut"), or connect to tcp://HOST:PORT, speaking the driver '
                             "protocol of docs/sut-protocol.md (default: the in-process simulation)")
    parser.add_argument("--sut-timeout", type=SECONDS, default=10.0, metavar="SECONDS",
                        help=f"how long to wait for each answer of --sut (default 10; {SECONDS.describe()})")


def use_arguments(args) -> None:
    """Apply ``--sut``: started (and the protocol version agreed) now; bad input exits 2."""
    from .cli import UsageError
    if args.sut is None:
        return
    try:
        use(args.sut, args.sut_timeout)
    except SutFailure as exc:
        raise UsageError(f"--sut {args.sut}: {exc}") from None


def default_sut() -> SystemUnderTest:
    """The system a run uses when none is given: this process's ``--sut`` (one instance, reused
    schedule after schedule), else a new in-process simulation."""
    global _shared
    if _chosen is None:
        from .adapter import ImplSide
        return ImplSide()
    if _shared is None:
        from .sut_driver import DriverSut
        _shared = DriverSut(*_chosen)
    return _shared
