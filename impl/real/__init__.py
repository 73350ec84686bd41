"""The real runtime: wall-clock timers on an asyncio event loop and TCP on localhost; with the
storage engine's ``OsFileSystem`` the same brokers, controller and clients run as on the simulation.
``node`` runs one broker or the controller as its own OS process, ``processes`` a cluster of them
(with SIGKILL, SIGTERM, power-loss, SIGSTOP, lost-disk and network-partition faults), ``durable``
what a power loss keeps of a directory."""

from .runtime import AsyncioScheduler, TcpTransport

__all__ = ["AsyncioScheduler", "TcpTransport"]
