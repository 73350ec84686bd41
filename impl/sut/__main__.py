"""``python -m isrcheck.impl.sut``: the implementation as a system under test, speaking the driver
protocol (docs/sut-protocol.md) on stdin/stdout, or with ``--listen HOST:PORT`` on TCP (one
session per connection; the bound address is printed on stdout once listening). With
``--processes`` every broker runs as its own OS process with its log in a real directory."""

from __future__ import annotations

import argparse
import socketserver
import sys
from functools import partial

from .processes import StepProcessCluster
from .server import serve


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        serve(self.rfile, self.wfile, self.server.cluster_factory)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def _address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host or "127.0.0.1", int(port)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m isrcheck.impl.sut", description=__doc__)
    parser.add_argument(
        "--listen",
        type=_address,
        metavar="HOST:PORT",
        help="serve TCP connections instead of stdin/stdout (port 0: any free port)",
    )
    parser.add_argument(
        "--processes", action="store_true", help="run each broker as its own process, its log in a real directory"
    )
    parser.add_argument(
        "--dir",
        default=None,
        help="with --processes: where the log directories go (default: the system's temporary directory)",
    )
    args = parser.parse_args(argv)
    factory = None
    if args.processes:
        factory = partial(StepProcessCluster, directory=args.dir)
    if args.listen is None:
        serve(sys.stdin.buffer, sys.stdout.buffer, factory)
        return 0
    with _Server(args.listen, _Handler) as server:
        server.cluster_factory = factory
        host, port = server.server_address[:2]
        print(f"listening {host}:{port}", flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
