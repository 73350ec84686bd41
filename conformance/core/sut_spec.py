"""Which system under test a run drives, as a value passed down to it: ``SutSpec`` names an
external program (a command line, or ``tcp://HOST:PORT``, with the timeout for each answer); None
is the in-process simulation. ``open_sut`` turns either (or a ``SystemUnderTest`` already at hand)
into the system a lockstep run steps.

Starting a program costs far more than a schedule, so a spec's process is started once per
Python process and kept in ``_STARTED``, a cache of started processes (not a choice: a run only
ever gets the process of the spec it was given). A command run keeps one for all its schedules,
and a Spark worker one for every task it runs; each run starts with a ``reset``.
"""

from __future__ import annotations

from dataclasses import dataclass

from isrcheck.conformance.core.adapter import ImplSide
from isrcheck.conformance.core.sut import SutFailure, SystemUnderTest
from isrcheck.conformance.core.sut_driver import DriverSut
from isrcheck.conformance.vocabulary import SECONDS, UsageError


@dataclass(frozen=True)
class SutSpec:
    """An external system under test speaking docs/sut-protocol.md: ``command`` is a command line
    (run with its arguments, no shell) or ``tcp://HOST:PORT``; ``timeout_s`` bounds each answer.
    Small and picklable: it travels to Spark executors in task specs."""

    command: str
    timeout_s: float = 10.0

    def open(self) -> SystemUnderTest:
        """This process's instance of the spec, started (and the version agreed) on first use;
        raises SutFailure if it cannot be started."""
        system = _STARTED.get(self)
        if system is None:
            system = _STARTED[self] = DriverSut(self.command, self.timeout_s)
        return system

    def close(self) -> None:
        """Stop this process's instance, if started; the next ``open`` starts a new one."""
        system = _STARTED.pop(self, None)
        if system is not None:
            system.close()


_STARTED: dict[SutSpec, DriverSut] = {}  # the processes this Python process started, one per spec


def open_sut(sut: SutSpec | SystemUnderTest | None) -> SystemUnderTest:
    """The system a run steps: a new in-process simulation for None, the spec's process for a
    ``SutSpec``, or the given ``SystemUnderTest`` itself."""
    if sut is None:
        return ImplSide()
    if isinstance(sut, SutSpec):
        return sut.open()
    return sut


def add_arguments(parser) -> None:
    """``--sut`` and ``--sut-timeout``, for every command that runs schedules."""
    parser.add_argument(
        "--sut",
        metavar="COMMAND",
        default=None,
        help='run the implementation under test as this command (e.g. "python -m '
        'isrcheck.impl.sut"), or connect to tcp://HOST:PORT, speaking the driver '
        "protocol of docs/sut-protocol.md (default: the in-process simulation)",
    )
    parser.add_argument(
        "--sut-timeout",
        type=SECONDS,
        default=10.0,
        metavar="SECONDS",
        help=f"how long to wait for each answer of --sut (default 10; {SECONDS.describe()})",
    )


def from_arguments(args) -> SutSpec | None:
    """The system ``--sut`` names (None: the in-process simulation), started now so that one that
    cannot start (or agree on the protocol version) is bad input, exit 2, before any work."""
    if args.sut is None:
        return None
    spec = SutSpec(args.sut, args.sut_timeout)
    try:
        spec.open()
    except SutFailure as exc:
        raise UsageError(f"--sut {args.sut}: {exc}") from None
    return spec
