"""Bugs planted in the Kafka API layer (impl/kafka) for the tests that must catch them.

    python tests/kafka_api_bugs.py BUG NODE-ARGUMENTS...

runs one node of a cluster (``isrcheck.impl.real.node``) with ``BUG`` planted; ``planted(monkeypatch,
BUG)`` makes every node a ``ProcessCluster`` of the test starts run so (the test's own process only,
no environment). The bugs:

- ``leo-as-latest``: ListOffsets "latest" answers a consumer the LEO instead of the HW;
- ``current-epoch-answer``: OffsetForLeaderEpoch answers for the leader's current epoch instead of
  the epoch asked for (KIP-320's truncation detection then sees nothing).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from isrcheck.impl.kafka import apis
from isrcheck.impl.replication.partition import Partition

NODE_MODULE = "isrcheck.impl.real.node"


def leo_as_latest() -> None:
    original = apis.KafkaApis._list_offset

    def list_offset(self, name, index, timestamp, current_epoch, replica_id=apis.CONSUMER_REPLICA_ID):
        answer = original(self, name, index, timestamp, current_epoch, replica_id)
        if timestamp == apis.LATEST_TIMESTAMP and answer[0] == 0:
            p, _ = self._leader(name, index, current_epoch)
            return answer[0], answer[1], p.log.log_end_offset, answer[3]
        return answer

    apis.KafkaApis._list_offset = list_offset


def current_epoch_answer() -> None:
    original = apis.KafkaApis.handle_offset_for_leader_epoch
    end_offset_for = Partition.end_offset_for

    def handle(self, req, version, respond):
        Partition.end_offset_for = lambda p, epoch: end_offset_for(p, p.leader_epoch)
        try:  # one request at a time on the broker's loop: followers' fetches never see it
            return original(self, req, version, respond)
        finally:
            Partition.end_offset_for = end_offset_for

    apis.KafkaApis.handle_offset_for_leader_epoch = handle


BUGS = {"leo-as-latest": leo_as_latest, "current-epoch-answer": current_epoch_answer}


def planted(monkeypatch, bug: str) -> None:
    """Every node process started from now on in this test runs with ``bug``."""
    assert bug in BUGS, bug
    popen = subprocess.Popen

    def start(argv, *args, **kwargs):
        if argv[1:3] == ["-m", NODE_MODULE]:
            argv = [argv[0], str(Path(__file__)), bug, *argv[3:]]
        return popen(argv, *args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", start)


if __name__ == "__main__":
    from isrcheck.impl.real import node

    BUGS[sys.argv[1]]()
    sys.exit(node.main(sys.argv[2:]))
