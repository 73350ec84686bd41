"""Disks that fail as disks do (docs/steps.md, "Disk faults"): for each fault a schedule where
Kafka's mechanism is what saves the data, passing in lockstep, and the same schedule against an
implementation with that mechanism broken, planted here, which lockstep and the fuzzer's random
walks then catch."""

import pytest
from machines import run_machine

from isrcheck.conformance import Schedule, random_walk, run_schedule
from isrcheck.impl.clients import Consumer
from isrcheck.impl.replication.log_dir_failure import LogDirFailureChannel
from isrcheck.impl.storage import Log
from isrcheck.impl.storage.records import RecordBatch


def schedule(steps, protocol="kip-320"):
    return Schedule.from_json(
        {"version": 1, "protocol": protocol, "config": {"replicas": 3, "min_insync_replicas": 2}, "steps": steps}
    )


def produce(replica=0):
    return {"step": "produce", "replica": replica, "acks": -1}


def fetch(replica):
    return [{"step": name, "replica": replica} for name in ("send_fetch", "handle_fetch", "handle_fetch_response")]


def consume(replica):
    return {"step": "consume", "replica": replica}


# records 1 and 2 acknowledged by all three brokers; broker 1 fsynced record 1 only
REPLICATED = [
    produce(),
    *fetch(1),
    *fetch(2),
    *fetch(1),
    *fetch(2),
    {"step": "flush", "replica": 1},
    produce(),
    *fetch(1),
    *fetch(2),
    *fetch(1),
    *fetch(2),
]


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


def reads_never_check_crcs(monkeypatch):
    """A broken reader: a follower appends fetched batches and a consumer returns them without
    checking their CRC (no ensureValid there; log recovery still checks)."""

    def unchecked(read):
        def run(*args, **kwargs):
            with pytest.MonkeyPatch.context() as inside:
                inside.setattr(RecordBatch, "ensure_valid", lambda self: None)
                return read(*args, **kwargs)

        return run

    monkeypatch.setattr(Log, "append_as_follower", unchecked(Log.append_as_follower))
    monkeypatch.setattr(Consumer, "_records", unchecked(Consumer._records))


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
    {"step": "restart", "replica": 1},
    *fetch(1),
    *fetch(1),
    consume(0),
]
TORN_RANDOM = [tail | {"tail": "random"} if tail.get("tail") else tail for tail in TORN_STALE]
CORRUPT = REPLICATED + [
    {"step": "crash", "replica": 1, "kind": "power"},
    {"step": "corrupt", "replica": 1},
    {"step": "restart", "replica": 1},
    *fetch(1),
    *fetch(1),
    consume(0),
]
# the leader's fsync fails: its unflushed records go with its log directory; the controller elects
# broker 1, which holds both acknowledged records
FAILED_FSYNC = REPLICATED + [
    {"step": "fail_disk", "replica": 0, "io": "fsync:EIO"},
    {"step": "elect"},
    {"step": "deliver_leader_and_isr", "replica": 1, "index": 0},
    consume(1),
    {"step": "restart", "replica": 0},
    *fetch(0),
    *fetch(0),
    consume(1),
]
# the leader's flushed batch of record 1 is damaged under it before any follower fetched it: the
# followers' CRC checks refuse it (no progress, so the ISR shrinks to the leader), the consumer's
# fetch fails, and the leader's restart after a process crash cuts it: record 1 was never acknowledged
LIVE_FETCH = [
    produce(),
    {"step": "flush", "replica": 0},
    {"step": "corrupt_live", "replica": 0},
    *fetch(1),
    *fetch(2),
    consume(0),
    *[{"step": "tick"}] * 3,
    {"step": "shrink_isr", "replica": 0},
    {"step": "handle_alter_partition", "replica": 0},
    {"step": "handle_alter_partition_response", "replica": 0},
    consume(0),
    {"step": "crash", "replica": 0, "kind": "process"},
    {"step": "restart", "replica": 0},
]
# records 1 and 2 on every broker; the leader's batch of record 2 is damaged: its consumer's fetch
# fails, the controller elects broker 1 (which serves both), and the leader's restart cuts the
# batch, which it fetches again
LIVE_CONSUME = REPLICATED + [
    {"step": "flush", "replica": 0},
    {"step": "corrupt_live", "replica": 0},
    consume(0),
    {"step": "crash", "replica": 0, "kind": "process"},
    {"step": "fence", "replica": 0},
    {"step": "elect"},
    {"step": "deliver_leader_and_isr", "replica": 1, "index": 0},
    {"step": "deliver_leader_and_isr", "replica": 2, "index": 0},
    consume(1),
    {"step": "restart", "replica": 0},
    *fetch(0),
    *fetch(0),
    consume(1),
]
FAILED_WRITE = [s | {"io": "write:ENOSPC"} if s["step"] == "fail_disk" else s for s in FAILED_FSYNC]
FAILED_READ = [s | {"io": "read:EIO"} if s["step"] == "fail_disk" else s for s in FAILED_FSYNC]


@pytest.mark.parametrize(
    "steps",
    [TORN_STALE, TORN_RANDOM, CORRUPT, FAILED_FSYNC, FAILED_WRITE, FAILED_READ, LIVE_FETCH, LIVE_CONSUME],
    ids=["torn-stale", "torn-random", "corrupt", "fsync", "write", "read", "live-fetch", "live-consume"],
)
def test_kafkas_mechanism_keeps_every_acknowledged_write(steps):
    assert run_schedule(schedule(steps)).kind == "pass"


@pytest.mark.parametrize(
    "steps, plant, at",
    [
        (TORN_STALE, crc_only_by_length, "restart"),
        (TORN_RANDOM, crc_only_by_length, "restart"),
        (CORRUPT, crc_only_by_length, "restart"),
        (FAILED_FSYNC, recovery_point_before_fsync, "fail_disk"),
        (FAILED_WRITE, ignores_io_errors, "fail_disk"),
        (FAILED_READ, ignores_io_errors, "fail_disk"),
        (LIVE_FETCH, reads_never_check_crcs, "handle_fetch_response"),
        (LIVE_CONSUME, reads_never_check_crcs, "consume"),
    ],
    ids=["torn-stale", "torn-random", "corrupt", "fsync", "write", "read", "live-fetch", "live-consume"],
)
def test_the_same_schedule_catches_the_broken_mechanism(monkeypatch, steps, plant, at):
    plant(monkeypatch)
    sched = schedule(steps)
    verdict = run_schedule(sched)
    assert verdict.kind == "divergence"
    assert sched.steps[verdict.step]["step"] == at


def test_recovery_stops_at_the_crc_of_a_garbage_tail_and_of_a_batch_corrupted_at_rest():
    from isrcheck.impl.sim import Cluster, ClusterConfig

    for last in (
        {"step": "crash", "replica": 1, "kind": "power", "torn": True, "tail": "stale"},
        {"step": "corrupt", "replica": 1},
    ):
        c = Cluster(ClusterConfig(protocol="kip-320", replicas=2, min_insync_replicas=1))
        c.produce(0, [b"1"], 1)
        c.send_fetch(1), c.handle_fetch(1), c.handle_fetch_response(1)
        c.flush(1)
        c.produce(0, [b"2", b"3"], 1)
        c.send_fetch(1), c.handle_fetch(1), c.handle_fetch_response(1)
        if last["step"] == "corrupt":
            c.crash(1, "power")
            c.corrupt(1)
            kept = 0  # the flushed batch was the damaged one
        else:
            c.crash(1, "power", 0, True, "stale")
            kept = 1
        c.restart(1)
        report = c.brokers[1].log.recovery_report
        assert "CRC mismatch" in report.events[0] and report.log_end_offset == kept, report.events


@pytest.mark.parametrize(
    "plant", [crc_only_by_length, ignores_io_errors, recovery_point_before_fsync, reads_never_check_crcs]
)
def test_random_walks_of_the_disk_profile_catch_each_broken_mechanism(monkeypatch, plant):
    assert all(random_walk(seed, "kip-320", 60, "disk")[1].kind == "pass" for seed in range(3))
    plant(monkeypatch)
    kinds = [random_walk(seed, "kip-320", 60, "disk")[1].kind for seed in range(30)]
    assert "divergence" in kinds


def test_walks_without_disk_faults_take_none():
    for faults in ("classic", "heavy"):
        schedule_, _ = random_walk(1, "kip-101", 80, faults)
        assert not any(s["step"] in ("corrupt", "fail_disk", "corrupt_live") or "tail" in s for s in schedule_.steps)


def test_the_hypothesis_machine_of_the_disk_profile_catches_a_broker_that_ignores_io_errors(monkeypatch):
    failure = run_machine("kip-320", "disk", 30, 30, plant="test_disk_faults:ignores_io_errors")
    assert failure is not None and "taken by the model" in failure


@pytest.mark.parametrize("steps", [LIVE_FETCH, LIVE_CONSUME], ids=["live-fetch", "live-consume"])
def test_a_live_corruption_is_found_by_a_read_and_cut_by_recovery(steps):
    """The reads meet the damaged batch (lockstep's disk:crc-read) and the restart after a process
    crash cuts it (disk:crc); the log directory stays online (a CRC mismatch is no I/O error)."""
    verdict = run_schedule(schedule(steps))
    assert verdict.kind == "pass"
    assert {"disk:corrupt-live", "disk:crc-read", "disk:crc"} <= set(verdict.coverage)
    assert "disk:offline" not in verdict.coverage


def test_cover_of_a_scope_with_live_corruptions_catches_unchecked_reads(monkeypatch, tmp_path):
    """cover's path cover at a two-broker scope with one live corruption reaches a read of the
    damaged batch: every schedule passes, and with the CRC checks of reads planted away one is a
    divergence."""
    from isrcheck.conformance.engines.cover.executor import CoverSpec, run_schedule_of_plan
    from isrcheck.conformance.engines.cover.graph import build_graph
    from isrcheck.conformance.engines.cover.paths import plan_cover
    from isrcheck.model import ModelConfig, Scope

    config = ModelConfig(protocol="kip-320", replicas=2, min_insync_replicas=1)
    scope = Scope(max_records=1, max_epoch=1, max_crashes=0, flushes=True, consumes=True, max_live_corruptions=1)
    plan = plan_cover(build_graph(config, scope))
    spec = CoverSpec(str(tmp_path), "kip-320", config.to_schedule(), tuple(st.to_json() for st in plan.vocabulary), 2.0)
    rows = [run_schedule_of_plan(spec, i, s) for i, s in enumerate(plan.schedules)]
    assert {r["verdict"] for r in rows} == {"pass"}
    assert any("disk:crc-read" in r["disk_paths"] for r in rows)
    reads_never_check_crcs(monkeypatch)
    rows = (run_schedule_of_plan(spec, i, s) for i, s in enumerate(plan.schedules))
    assert any(r["verdict"] == "divergence" for r in rows)


@pytest.mark.slow
def test_the_hypothesis_machine_of_the_disk_profile_catches_unchecked_reads():
    """(The random walks test above is the fast check of the same.)"""
    failure = run_machine("kip-320", "disk", 200, 60, plant="test_disk_faults:reads_never_check_crcs")
    assert failure is not None and failure.startswith("divergence")
    assert "corrupt_live" in failure
