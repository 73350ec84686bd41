"""The step-mode cluster with the controller and every broker in its own OS process.

``StepProcessCluster`` keeps the simulation's step semantics (``Cluster``: its guards, its
network of FIFOs, which is the interposer owning every message between the nodes, and its clock)
and moves the nodes of its world (``ProcessWorld``) out: the controller and each broker are
processes (``node_process``), a broker's log in a real directory written and fsynced through the
OS, reached by RPC (``remote``) over TCP on localhost. A step that delivers a message hands it to
the receiving process; what that process sends comes back into the interposer's FIFOs, and
nothing moves until a step releases or drops it.

Faults are done to the processes: a process crash is SIGKILL (the page cache survives it), a
power loss SIGKILL and then every file cut back to what was made durable plus what the page cache
had written back (``real.durable``), a clean shutdown the broker's own shutdown and then SIGTERM,
a lost disk the directory emptied. A restart starts a new process, which recovers the log from
the directory.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile

from ..real.durable import power_loss
from ..real.node import journal_path
from ..replication import ClusterConfig
from ..replication.broker import data_maybe_lost
from ..sim import Cluster, SimWorld
from ..sim.disk import CUT
from ..storage import OsFileSystem
from .remote import Channel


class _Down:
    """A broker whose process is gone: what the cluster still reads of it."""

    alive = False

    def __init__(self, broker_id: int, incarnation: int, data_dir: str) -> None:
        self.broker_id, self.incarnation, self.data_dir = broker_id, incarnation, data_dir

    @property
    def data_maybe_lost(self) -> bool:
        return data_maybe_lost(OsFileSystem(), self.data_dir)


class _Disk:
    """A broker's real directory, as the world's crash steps use a file system."""

    def __init__(self, world: "ProcessWorld", broker: int) -> None:
        self.world, self.broker = world, broker

    def process_crash(self) -> None:
        self.world.stop_process(self.broker, signal.SIGKILL)

    def power_loss(self, rng=None, written_back: dict[str, int] | None = None) -> None:
        self.world.stop_process(self.broker, signal.SIGKILL)
        directory = self.world.data_dir(self.broker)
        power_loss(directory, journal_path(directory), written_back)

    def lose_directory(self, directory: str) -> None:
        directory = self.world.data_dir(self.broker)
        shutil.rmtree(directory, ignore_errors=True)
        os.makedirs(directory)
        journal = journal_path(directory)
        if os.path.exists(journal):
            os.remove(journal)


class ProcessWorld(SimWorld):
    """The step-mode ``SimWorld`` with the controller and each broker in a process of its own, a
    broker's disk its real directory under ``directory``; ``close()`` ends them all."""

    def __init__(self, config: ClusterConfig, directory: str | None = None) -> None:
        self.directory = tempfile.mkdtemp(prefix="isrcheck-brokers-", dir=directory)
        self._processes: dict[object, tuple[subprocess.Popen, Channel]] = {}
        super().__init__(config, auto=False, seed=0)

    def data_dir(self, broker: int) -> str:
        return os.path.join(self.directory, f"broker-{broker}")

    def _spawn(self, node) -> Channel:
        """Start a node process; it connects back over TCP on localhost, where the interposer is."""
        with socket.create_server(("127.0.0.1", 0)) as server:
            server.settimeout(60)
            proc = subprocess.Popen(
                [sys.executable, "-m", "isrcheck.impl.sut.node_process", str(server.getsockname()[1])],
                stdin=subprocess.DEVNULL,
            )
            try:
                conn, _ = server.accept()
            except OSError:
                proc.kill()
                proc.wait()
                raise
        conn.settimeout(None)
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        channel = Channel(conn)
        self._processes[node] = (proc, channel)
        return channel

    def start_controller(self):
        return self._spawn("controller").root("make_controller")(
            self.config, self.clock, self.network, self.trace_event
        )

    def make_filesystem(self, broker_id: int) -> _Disk:
        return _Disk(self, broker_id)

    def start_broker(self, broker_id: int, incarnation: int):
        os.makedirs(self.data_dir(broker_id), exist_ok=True)
        return self._spawn(broker_id).root("make_broker")(
            broker_id, self.config, self.data_dir(broker_id), self.clock, self.network, incarnation, self.trace_event
        )

    def broker_snapshot(self, b):
        return self._processes[b.broker_id][1].root("snapshot")()

    def stop_process(self, node, sig: int) -> None:
        entry = self._processes.pop(node, None)
        if entry is None:
            return
        proc, channel = entry
        if node != "controller":
            b = self.brokers[node]
            self.brokers[node] = _Down(node, b.incarnation, self.data_dir(node))
        if proc.poll() is None:
            proc.send_signal(sig)
        proc.wait()
        channel.sock.close()

    def close(self) -> None:
        for node in list(self._processes):
            self.stop_process(node, signal.SIGKILL)
        shutil.rmtree(self.directory, ignore_errors=True)


class StepProcessCluster(Cluster):
    """``Cluster(config, mode="steps")`` on a ``ProcessWorld``; ``close()`` ends its processes."""

    def __init__(self, config: ClusterConfig, directory: str | None = None) -> None:
        super().__init__(config, mode="steps", seed=0, world=ProcessWorld(config, directory))

    def crash(self, broker: int, kind: str, survive: int = 0, torn: bool = False, tail: str = CUT) -> None:
        super().crash(broker, kind, survive, torn, tail)
        if kind == "clean":  # the broker shut down cleanly; its process ends
            self.world.stop_process(broker, signal.SIGTERM)

    def close(self) -> None:
        self.world.close()
