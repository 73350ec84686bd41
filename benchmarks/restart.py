"""How long a restarted broker keeps Kafka clients waiting: it serves them only once the controller
says it caught up with the partition states of its registration (docs/kafka.md).

    python benchmarks/restart.py [--restarts N] [--partitions P] [--heartbeat-ms MS]

A 3-broker cluster of real processes in Kafka mode (``isrcheck serve``'s), a topic of ``P``
partitions; ``N`` times broker 1 is SIGKILLed and restarted at once, and timed from its process
listening again to its first Metadata answer naming a leader for every partition (a client's
first request to it). Prints each time, the median and the heartbeat interval they compare with.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

from isrcheck.impl.real.processes import ProcessCluster, free_ports
from isrcheck.impl.real.serve import SERVE_DEFAULTS, wait_until_serving
from isrcheck.impl.replication import ClusterConfig

TOPIC = "restart"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--restarts", type=int, default=5)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--heartbeat-ms", type=int, default=250, help="broker.heartbeat.interval.ms (soak's 250)")
    args = parser.parse_args()
    config = ClusterConfig(
        protocol="kip-320",
        replicas=3,
        min_insync_replicas=2,
        **{
            **SERVE_DEFAULTS,
            "broker_heartbeat_interval_ms": args.heartbeat_ms,
            "broker_session_timeout_ms": 6 * args.heartbeat_ms,
        },
    )
    ports = free_ports(3)
    kafka = dict(
        listeners={str(b): p for b, p in enumerate(ports)},
        topics=[[TOPIC, args.partitions]],
        cluster_id="restart-benchmark",
        auto_create_topics=False,
        num_partitions=args.partitions,
    )
    directory = tempfile.mkdtemp(prefix="isrcheck-restart-")
    cluster = ProcessCluster(config, directory, kafka=kafka)
    times = []
    try:
        cluster.start()
        if not wait_until_serving(ports, [(TOPIC, args.partitions)]):
            print(f"the cluster did not serve within 30 s (see {directory})", file=sys.stderr)
            return 1
        for _ in range(args.restarts):
            cluster.crash(1, "process")
            cluster.restart(1)  # returns once the new process listens
            start = time.monotonic()
            if not wait_until_serving([ports[1]], [(TOPIC, args.partitions)], timeout_s=30):
                print(f"broker 1 did not serve within 30 s (see {directory})", file=sys.stderr)
                return 1
            times.append((time.monotonic() - start) * 1000)
            time.sleep(2 * args.heartbeat_ms / 1000)
    finally:
        cluster.stop()
    print(
        f"$ python benchmarks/restart.py --restarts {args.restarts} --partitions {args.partitions} "
        f"--heartbeat-ms {args.heartbeat_ms}   (load {os.getloadavg()[0]:.1f})"
    )
    print(
        "a restarted broker's first complete Metadata answer, ms after its process listened: "
        + ", ".join(f"{t:.0f}" for t in times)
    )
    print(
        f"median {statistics.median(times):.0f} ms, max {max(times):.0f} ms; heartbeat interval {args.heartbeat_ms} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
