"""One node in its own process, driven over a socket by ``processes.StepProcessCluster``:
``python -m isrcheck.impl.sut.node_process PORT`` (it connects to the driver on localhost), then ``make_broker`` or
``make_controller``. A
broker's log lives in a real directory (journaled for power losses); the clock, the network and
the event log are the driver's, reached through ``remote``."""

from __future__ import annotations

import signal
import socket
import sys

from ..controller import Controller
from ..real.durable import JournaledFileSystem
from ..real.node import journal_path
from ..replication.broker import Broker
from ..sim.snapshot import LogView, broker_snapshot
from .remote import Channel


def main() -> int:
    sock = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    channel = Channel(sock)
    kept: dict = {}

    def make_broker(broker_id, config, data_dir, clock, network, incarnation, on_event):
        fs = JournaledFileSystem(journal_path(data_dir))
        broker = Broker(
            broker_id,
            config,
            fs,
            clock,
            network,
            auto=False,
            incarnation=incarnation,
            on_event=on_event,
            data_dir=data_dir,
        )
        kept.update(broker=broker, replicas=config.replicas, view=LogView())
        return broker

    def make_controller(config, clock, network, on_event):
        return Controller.for_cluster(config, clock, network, False, on_event)

    def snapshot():
        return broker_snapshot(kept["broker"], kept["replicas"], kept["view"])

    channel.roots.update(make_broker=make_broker, make_controller=make_controller, snapshot=snapshot)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    channel.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
