"""LogDirFailureChannel (KIP-112): where every I/O error of a log directory is reported, once.

Kafka's classes that do disk I/O catch ``IOException`` and call
``LogDirFailureChannel.maybeAddOfflineLogDir``; ``ReplicaManager.handleLogDirFailure`` then stops
serving the directory's partitions and tells the controller, and ``LogManager.handleLogDirFailure``
halts the broker once no log directory is left online. A broker here has one log directory, so
its owner (the runtime) halts it as soon as the channel holds one.
"""

from __future__ import annotations

from typing import Callable


class LogDirFailureChannel:
    """The log directories taken offline, each with the error that did it; offline until restart.
    ``on_offline(directory, error)`` hears each one as it goes offline (the broker logs it, as
    Kafka's channel does, before anything stops serving it)."""

    def __init__(self) -> None:
        self.offline: dict[str, OSError] = {}
        self.on_offline: Callable[[str, OSError], None] | None = None

    def maybe_add_offline_log_dir(self, directory: str, error: OSError) -> None:
        if directory in self.offline:
            return
        self.offline[directory] = error
        if self.on_offline is not None:
            self.on_offline(directory, error)

    def run(self, directory: str, operation: Callable[[], object]) -> bool:
        """Run a disk ``operation`` of ``directory``; an OSError takes the directory offline and
        gives False (nothing the operation meant to write counts as written)."""
        try:
            operation()
        except OSError as exc:
            self.maybe_add_offline_log_dir(directory, exc)
            return False
        return True
