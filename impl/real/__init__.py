"""The real runtime: wall-clock timers on an asyncio event loop and TCP on localhost; with the
storage engine's ``OsFileSystem`` the same brokers, controller and clients run as on the simulation."""
from .runtime import AsyncioScheduler, TcpTransport

__all__ = ["AsyncioScheduler", "TcpTransport"]
