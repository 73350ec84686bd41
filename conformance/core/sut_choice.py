"""Which system under test a run uses unless told otherwise: this process's choice (``use``).
The command line's ``--sut`` sets it once per process, so a Spark executor sets it for its own
worker and keeps one external process for every schedule it runs."""
from __future__ import annotations

from isrcheck.conformance.core.adapter import ImplSide
from isrcheck.conformance.vocabulary import SECONDS, UsageError
from isrcheck.conformance.core.sut import SutFailure, SystemUnderTest
from isrcheck.conformance.core.sut_driver import DriverSut

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
    parser.add_argument("--sut", metavar="COMMAND", default=None,
                        help='run the implementation under test as this command (e.g. "python -m '
                             'isrcheck.impl.sut"), or connect to tcp://HOST:PORT, speaking the driver '
                             "protocol of docs/sut-protocol.md (default: the in-process simulation)")
    parser.add_argument("--sut-timeout", type=SECONDS, default=10.0, metavar="SECONDS",
                        help=f"how long to wait for each answer of --sut (default 10; {SECONDS.describe()})")


def use_arguments(args) -> None:
    """Apply ``--sut``: started (and the protocol version agreed) now; bad input exits 2."""
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
        return ImplSide()
    if _shared is None:
        _shared = DriverSut(*_chosen)
    return _shared
