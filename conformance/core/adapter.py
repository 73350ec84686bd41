"""The in-process system under test: the simulation of ``isrcheck.impl``, one call per step.

The simulation's own driver (``isrcheck.impl.sut.SimDriver``) takes the steps: the cluster runs in
step mode (nothing happens by itself, only a ``tick`` advances the clock), "follower 2 sends a
fetch" is ``send_fetch(2)``, and a step the cluster cannot take is refused with its reason. The
same driver answers ``python -m isrcheck.impl.sut`` (docs/sut-protocol.md); here its report is read
in process (``abstraction``) instead of as JSON, so both give the same verdicts.
"""

from __future__ import annotations

import traceback
from pathlib import Path

from isrcheck.conformance.core.abstraction import Abstraction
from isrcheck.conformance.core.sut import ImplFailure, SystemUnderTest
from isrcheck.impl.sut import SimDriver
from isrcheck.impl.sut import cluster_config as _impl_config

__all__ = ["ImplSide", "ImplFailure", "cluster_config"]


def _where(exc: Exception) -> str:
    frames = traceback.extract_tb(exc.__traceback__)[-3:]
    return "\n".join(f"  at {Path(f.filename).name}:{f.lineno} in {f.name}" for f in frames)


def cluster_config(protocol: str, config):
    """The implementation's config for a schedule's protocol and ``config`` (ticks -> ms)."""
    return _impl_config(protocol, config.to_json())


class ImplSide(SystemUnderTest):
    """The implementation under test, driven one schedule step at a time, in this process.
    ``ImplSide(protocol, config)`` is ready to run; ``ImplSide()`` waits for ``reset``."""

    name = "in-process simulation"

    def __init__(self, protocol: str | None = None, config=None) -> None:
        super().__init__()
        self.driver = self.cluster = self.abstraction = None
        if protocol is not None:
            self.reset(protocol, config)

    def _reset(self, protocol: str, config) -> None:
        self.driver = SimDriver(cluster_config(protocol, config))
        self.cluster = self.driver.cluster
        self.abstraction = Abstraction(self.driver.report)

    def _step(self, st) -> tuple[str | None, list[dict]]:
        try:
            return self.driver.step(st.name, st.field_values())
        except Exception as exc:  # the system under test broke: that is a finding, not a harness crash
            raise ImplFailure(f"{type(exc).__name__}: {exc}\n{_where(exc)}") from exc

    def system_state(self) -> tuple:
        try:
            return self.abstraction.system_state()
        except Exception as exc:  # e.g. a log that holds a batch it cannot decode: a finding too
            raise ImplFailure(f"{type(exc).__name__}: {exc}\n{_where(exc)}") from exc
