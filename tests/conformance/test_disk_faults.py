"""Disks that fail as disks do (docs/steps.md, "Disk faults"): for each fault a schedule where
Kafka's mechanism is what saves the data, passing in lockstep, and the same schedule against an
implementation with that mechanism broken, planted here, which lockstep and the fuzzer's random
walks then catch."""
import pytest

from isrcheck.conformance import Schedule, random_walk, run_schedule
from isrcheck.impl.replication.log_dir_failure import LogDirFailureChannel
from isrcheck.impl.storage import Log
from isrcheck.impl.storage.records import RecordBatch

from machines import run_machine


def schedule(steps, protocol="kip-320"):
    return Schedule.from_json({"version": 1, "protocol": protocol,
                               "config": {"replicas": 3, "min_insync_replicas": 2}, "steps": steps})


def produce(replica=0):
    return {"step": "produce", "replica": replica, "acks": -1}


def fetch(replica):
    return [{"step": name, "replica": replica} for name in ("send_fetch", "handle_fetch", "handle_fetch_response")]


def consume(replica):
    return {"step": "consume", "replica": replica}


# records 1 and 2 acknowledged by all three brokers; broker 1 fsynced record 1 only
REPLICATED = [produce(), *fetch(1), *fetch(2), *fetch(1), *fetch(2), {"step": "flush", "replica": 1},
              produce(), *fetch(1), *fetch(2), *fetch(1), *fetch(2)]


def crc_only_by_length(monkeypatch):
    """A broken recovery: batches are checked by their length only, never their CRC."""
    monkeypatch.setattr(RecordBatch, "is_valid", lambda self: True)


def ignores_io_errors(monkeypatch):
    """A broken broker: an I/O error of its log directory is logged and forgotten, never taking the
    directory offline; it keeps serving as if the operation had worked."""
    def run(self, directory, operation):
        try:
            operation()
        except OSError:
            pass
        return True
    monkeypatch.setattr(LogDirFailureChannel, "run", run)


def recovery_point_before_fsync(monkeypatch):
    """A broken flush: the recovery point moves to the LEO before the fsync, so a failed fsync
    counts as durable."""
    flush = Log.flush

    def early(self):
        self._recovery_point = self.log_end_offset
        flush(self)
    monkeypatch.setattr(Log, "flush", early)


TORN_STALE = REPLICATED + [
    {"step": "crash", "replica": 1, "kind": "power", "torn": True, "tail": "stale"},
    {"step": "restart", "replica": 1}, *fetch(1), *fetch(1), consume(0)]
TORN_RANDOM = [tail | {"tail": "random"} if tail.get("tail") else tail for tail in TORN_STALE]
CORRUPT = REPLICATED + [
    {"step": "crash", "replica": 1, "kind": "power"}, {"step": "corrupt", "replica": 1},
    {"step": "restart", "replica": 1}, *fetch(1), *fetch(1), consume(0)]
# the leader's fsync fails: its unflushed records go with its log directory; the controller elects
# broker 1, which holds both acknowledged records
FAILED_FSYNC = REPLICATED + [
    {"step": "fail_disk", "replica": 0, "io": "fsync:EIO"}, {"step": "elect"},
    {"step": "deliver_leader_and_isr", "replica": 1, "index": 0}, consume(1),
    {"step": "restart", "replica": 0}, *fetch(0), *fetch(0), consume(1)]
FAILED_WRITE = [s | {"io": "write:ENOSPC"} if s["step"] == "fail_disk" else s for s in FAILED_FSYNC]
FAILED_READ = [s | {"io": "read:EIO"} if s["step"] == "fail_disk" else s for s in FAILED_FSYNC]


@pytest.mark.parametrize("steps", [TORN_STALE, TORN_RANDOM, CORRUPT, FAILED_FSYNC, FAILED_WRITE, FAILED_READ],
                         ids=["torn-stale", "torn-random", "corrupt", "fsync", "write", "read"])
def test_kafkas_mechanism_keeps_every_acknowledged_write(steps):
    assert run_schedule(schedule(steps)).kind == "pass"


@pytest.mark.parametrize("steps, plant, at", [
    (TORN_STALE, crc_only_by_length, "restart"), (TORN_RANDOM, crc_only_by_length, "restart"),
    (CORRUPT, crc_only_by_length, "restart"), (FAILED_FSYNC, recovery_point_before_fsync, "fail_disk"),
    (FAILED_WRITE, ignores_io_errors, "fail_disk"), (FAILED_READ, ignores_io_errors, "fail_disk"),
], ids=["torn-stale", "torn-random", "corrupt", "fsync", "write", "read"])
def test_the_same_schedule_catches_the_broken_mechanism(monkeypatch, steps, plant, at):
    plant(monkeypatch)
    sched = schedule(steps)
    verdict = run_schedule(sched)
    assert verdict.kind == "divergence"
    assert sched.steps[verdict.step]["step"] == at


def test_recovery_stops_at_the_crc_of_a_garbage_tail_and_of_a_batch_corrupted_at_rest():
    from isrcheck.impl.sim import Cluster, ClusterConfig
    for last in ({"step": "crash", "replica": 1, "kind": "power", "torn": True, "tail": "stale"},
                 {"step": "corrupt", "replica": 1}):
        c = Cluster(ClusterConfig(protocol="kip-320", replicas=2, min_insync_replicas=1))
        c.produce(0, [b"1"], 1)
        c.send_fetch(1), c.handle_fetch(1), c.handle_fetch_response(1)
        c.flush(1)
        c.produce(0, [b"2", b"3"], 1)
        c.send_fetch(1), c.handle_fetch(1), c.handle_fetch_response(1)
        if last["step"] == "corrupt":
            c.crash(1, "power")
            c.corrupt(1)
            kept = 0                            # the flushed batch was the damaged one
        else:
            c.crash(1, "power", 0, True, "stale")
            kept = 1
        c.restart(1)
        report = c.brokers[1].log.recovery_report
        assert "CRC mismatch" in report.events[0] and report.log_end_offset == kept, report.events


@pytest.mark.parametrize("plant", [crc_only_by_length, ignores_io_errors, recovery_point_before_fsync])
def test_random_walks_of_the_disk_profile_catch_each_broken_mechanism(monkeypatch, plant):
    assert all(random_walk(seed, "kip-320", 60, "disk")[1].kind == "pass" for seed in range(3))
    plant(monkeypatch)
    kinds = [random_walk(seed, "kip-320", 60, "disk")[1].kind for seed in range(30)]
    assert "divergence" in kinds


def test_walks_without_disk_faults_take_none():
    for faults in ("default", "heavy"):
        schedule_, _ = random_walk(1, "kip-101", 80, faults)
        assert not any(s["step"] in ("corrupt", "fail_disk") or "tail" in s for s in schedule_.steps)


def test_the_hypothesis_machine_of_the_disk_profile_catches_a_broker_that_ignores_io_errors(monkeypatch):
    failure = run_machine("kip-320", "disk", 30, 30, plant="test_disk_faults:ignores_io_errors")
    assert failure is not None and "taken by the model" in failure
