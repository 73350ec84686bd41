"""The implementation as a system under test: the simulation driven step by step (``SimDriver``),
the state it reports (``Report``), and the driver protocol's server (``python -m isrcheck.impl.sut``,
docs/sut-protocol.md)."""

from .driver import SimDriver, cluster_config
from .report import Report

__all__ = ["SimDriver", "Report", "cluster_config"]
