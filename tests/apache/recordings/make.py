"""Record a short run of Apache Kafka with isrcheck's agent, for the translation's tests.

    python tests/apache/recordings/make.py SCENARIO OUT [--kafka-version V]

SCENARIO: ``clean`` (3 brokers, topic t of one partition, five acks=all produces, a clean stop),
``follower`` (the same, a follower killed, three produces, the follower restarted, two produces),
``leader`` (the same with the leader killed). OUT is a new folder: OUT/events is the recording, OUT/cluster
the cluster's folder (removed at the end unless --keep).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path


def leader_of(bootstrap: str) -> int:
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics("t", timeout=10)
    return md.topics["t"].partitions[0].leader


def produce(producer, n: int, start: int) -> None:
    for i in range(start, start + n):
        producer.produce("t", value=str(i).encode(), partition=0)
        producer.flush(30)


def wait_isr(bootstrap: str, size: int, timeout_s: float = 60.0) -> None:
    from confluent_kafka.admin import AdminClient

    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        try:
            md = AdminClient({"bootstrap.servers": bootstrap}).list_topics("t", timeout=5)
            if len(md.topics["t"].partitions[0].isrs) >= size:
                return
        except Exception:
            pass
        time.sleep(0.5)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", choices=("clean", "follower", "leader"))
    ap.add_argument("out")
    ap.add_argument("--kafka-version", default="4.4.0")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    from confluent_kafka import Producer

    from isrcheck.conformance.engines.apache.cluster import KafkaCluster, KafkaSettings, free_port_base
    from isrcheck.conformance.engines.apache.distribution import distribution

    out = Path(args.out)
    settings = KafkaSettings(brokers=3, port=free_port_base(5), topics=[("t", 1)], heap="384m")
    cluster = KafkaCluster(
        settings, out / "cluster", distribution(args.kafka_version), say=print, events=out / "events"
    )
    try:
        cluster.start()
        producer = Producer(
            {
                "bootstrap.servers": cluster.bootstrap,
                "acks": "all",
                "enable.idempotence": False,
                "max.in.flight.requests.per.connection": 1,
            }
        )
        produce(producer, 5, 0)
        if args.scenario != "clean":
            leader = leader_of(cluster.bootstrap)
            victim = leader if args.scenario == "leader" else next(b for b in range(3) if b != leader)
            print(f"leader {leader}; killing {victim}")
            cluster.kill(victim)
            time.sleep(1)
            produce(producer, 3, 5)
            cluster.restart(victim)
            wait_isr(cluster.bootstrap, 3)
            produce(producer, 2, 8)
        time.sleep(1)
    finally:
        cluster.stop()
        if not args.keep:
            shutil.rmtree(out / "cluster", ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
