"""Bugs planted in node processes (isrcheck.impl.real.node) for the tests that must catch them.

    python tests/node_bugs.py BUG NODE-ARGUMENTS...

runs one node of a cluster (``isrcheck.impl.real.node``) with ``BUG`` planted; ``planted(monkeypatch,
BUG)`` makes every node a ``ProcessCluster`` of the test starts run so (the test's own process only,
no environment). The bugs, of the Kafka API layer (impl/kafka):

- ``leo-as-latest``: ListOffsets "latest" answers a consumer the LEO instead of the HW;
- ``current-epoch-answer``: OffsetForLeaderEpoch answers for the leader's current epoch instead of
  the epoch asked for (KIP-320's truncation detection then sees nothing);

and of a timer, which trace validation explains and timeliness catches:

- ``follower-fetch-never-expires``: a parked follower fetch waits for records, never for its wait
  (consumers' fetches are untouched: the soak's final read ends as it should);
- ``delayed-produce-never-expires``: a parked acks=all produce waits for the HW, never for its timeout;
- ``serves-offline-log-dir``: a broker whose only log directory went offline neither halts nor
  stops serving it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from isrcheck.impl.kafka import apis
from isrcheck.impl.real import node
from isrcheck.impl.replication.broker import Broker
from isrcheck.impl.replication.delayed_fetch import DelayedFetchPurgatory
from isrcheck.impl.replication.delayed_produce import DelayedProducePurgatory
from isrcheck.impl.replication.partition import Partition
from isrcheck.impl.replication.replica_manager import ReplicaManager

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


def follower_fetch_never_expires() -> None:
    handle_fetch, park = ReplicaManager.handle_fetch, DelayedFetchPurgatory.park

    def handle(self, src, header, req):
        DelayedFetchPurgatory.park = lambda purgatory, _wait, try_complete: park(purgatory, 10**9, try_complete)
        try:  # one request at a time on the broker's loop: consumers' fetches never see it
            return handle_fetch(self, src, header, req)
        finally:
            DelayedFetchPurgatory.park = park

    ReplicaManager.handle_fetch = handle


def delayed_produce_never_expires() -> None:
    DelayedProducePurgatory._expire = lambda self, op: None


def serves_offline_log_dir() -> None:
    node._halt_offline = lambda *args: None
    Broker.handle_log_dir_failure = lambda self, error: self.log_dir_failure_channel.maybe_add_offline_log_dir(
        self.data_dir, error
    )


BUGS = {
    "leo-as-latest": leo_as_latest,
    "current-epoch-answer": current_epoch_answer,
    "follower-fetch-never-expires": follower_fetch_never_expires,
    "delayed-produce-never-expires": delayed_produce_never_expires,
    "serves-offline-log-dir": serves_offline_log_dir,
}


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
    BUGS[sys.argv[1]]()
    sys.exit(node.main(sys.argv[2:]))
