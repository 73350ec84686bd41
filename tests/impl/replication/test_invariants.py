"""The implementation's invariant checks (impl/invariants.py): each trips on a bug planted where it
guards, in the simulation (the step that breaks it raises InvariantBroken), and a real node process
halts on one with its exit code and a log line naming it."""

import subprocess
import sys

import pytest

from isrcheck.impl.controller import controller as controller_module
from isrcheck.impl.invariants import BROKEN_INVARIANT_EXIT, InvariantBroken, check
from isrcheck.impl.replication.partition import Partition
from isrcheck.impl.sim import Cluster, ClusterConfig
from isrcheck.impl.storage import Log


def cluster(replicas=3, min_isr=1):
    return Cluster(
        ClusterConfig(
            protocol="kip-320",
            replicas=replicas,
            min_insync_replicas=min_isr,
            replica_lag_time_max_ms=2,
            request_timeout_ms=1000,
        )
    )


def fetch_round(c, *followers, max_batches=0):
    for f in followers:
        c.send_fetch(f, max_batches)
        c.handle_fetch(f)
        c.handle_fetch_response(f)


def alter_partition(c, leader=0):
    c.handle_alter_partition(leader)
    c.handle_alter_partition_response(leader)


def shrink_to_leader(c):
    """Followers idle past replica.lag.time.max.ms: the ISR shrinks to broker 0."""
    c.advance(5)
    c.shrink_isr(0)
    alter_partition(c)


def test_a_correct_run_breaks_none_and_a_check_formats_only_when_it_trips():
    c = cluster()
    c.produce(0, [b"a", b"b"], -1)
    fetch_round(c, 1, 2)
    fetch_round(c, 1, 2)
    check(True, "never formatted %d", object())
    with pytest.raises(InvariantBroken, match="^x 1$"):
        check(False, "x %d", 1)


def test_a_leader_counting_the_isr_without_its_pending_expansion_trips_the_hw_check(monkeypatch):
    c = cluster(replicas=2)
    c.produce(0, b"a", 1)
    shrink_to_leader(c)
    fetch_round(c, 1)
    fetch_round(c, 1)  # the leader learns follower 1 caught up to the HW
    c.expand_isr(0)  # {0, 1} in flight: the maximal ISR counts 1
    monkeypatch.setattr(Partition, "maximal_isr", property(lambda self: self.isr))  # the bug: 1 not counted
    with pytest.raises(InvariantBroken, match=r"HW 2 above the LEO of a member of the maximal ISR \[0, 1\]"):
        c.produce(0, b"b", 1)


def test_a_follower_taking_the_leaders_hw_past_its_own_log_trips_the_hw_check(monkeypatch):
    c = cluster()
    shrink_to_leader(c)
    c.produce(0, b"a", 1)
    c.produce(0, b"b", 1)  # the HW is 2: the ISR is the leader alone

    def appended_then_leaders_hw(self, batches, leader_hw):
        original(self, batches, leader_hw)
        self._set_hw(leader_hw)

    original = Partition.append_as_follower
    monkeypatch.setattr(Partition, "append_as_follower", appended_then_leaders_hw)
    with pytest.raises(InvariantBroken, match="broker 2 .*HW 2 above its own LEO 1"):
        fetch_round(c, 2, max_batches=1)


def test_a_replica_applying_a_stale_leader_and_isr_trips_the_leader_epoch_check(monkeypatch):
    c = cluster()
    for leader in (0, 1):  # two elections: broker 2 has LeaderAndIsr of epochs 1 and 2 in flight
        c.crash(leader, "process")
        c.fence(leader)
        c.elect()
    queued = [m for m in c.in_flight() if m[0] == "leader_and_isr" and m[1] == 2]
    assert len(queued) >= 2, queued
    monkeypatch.setattr(Partition, "is_stale", lambda self, req: False)  # the bug: every LeaderAndIsr applied
    c.deliver_leader_and_isr(2, len(queued) - 1)
    with pytest.raises(InvariantBroken, match=r"broker 2 .*leader epoch \d+ after \d+"):
        c.deliver_leader_and_isr(2, 0)


def test_a_leader_proposing_an_isr_without_itself_trips_the_check(monkeypatch):
    c = cluster()
    monkeypatch.setattr(
        Partition,
        "maybe_shrink_isr",
        lambda self: self._propose(tuple(r for r in self.isr if r != self.broker_id)) or True,
    )
    with pytest.raises(InvariantBroken, match=r"leader 0 .*proposes the ISR \(1, 2\) without itself"):
        c.shrink_isr(0)


def test_a_truncation_below_the_log_start_trips_the_check(monkeypatch):
    c = cluster()
    follower = c.world.brokers[1].replica_manager.partitions[0]
    monkeypatch.setattr(Log, "log_start_offset", property(lambda self: 3))  # as if retention deleted up to 3
    with pytest.raises(InvariantBroken, match="broker 1 .*truncation to 0 below the log start offset 3"):
        follower.truncate_to(0)


def test_an_election_outside_isr_and_elr_with_unclean_election_off_trips_the_check(monkeypatch):
    c = cluster()
    shrink_to_leader(c)
    c.crash(0, "process")
    c.fence(0)
    monkeypatch.setattr(
        controller_module.Controller,
        "_election",
        lambda self, p: next(((r, (r,), ()) for r in p.replicas if r not in self.fenced), None),
    )
    with pytest.raises(InvariantBroken, match=r"elected 1 for partition 0 outside ISR \(0,\) and ELR \(\)"):
        c.elect()


def test_the_exit_code_of_a_halted_node_is_its_own():
    assert BROKEN_INVARIANT_EXIT not in (0, 1, 2)  # 1 is a broker halted on an offline log directory


@pytest.mark.parametrize("where", ["a timer", "a handler"])
def test_a_node_process_halts_on_a_broken_invariant_with_its_exit_code_and_one_line(where):
    """What a real node does (impl/real/node.py sets the handler on its loop; its connections'
    and Kafka listener's handlers call ``halt``): exit at once, naming the invariant."""
    program = f"""
import asyncio, logging
from isrcheck.impl.invariants import InvariantBroken, check, halt, halt_on_broken_invariant
logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")

def broken():
    check(False, "HW %d above its own LEO %d", 5, 3)

async def main():
    asyncio.get_running_loop().set_exception_handler(halt_on_broken_invariant)
    if {where!r} == "a timer":
        asyncio.get_running_loop().call_soon(broken)
    else:
        try:
            broken()
        except InvariantBroken as exc:
            halt(exc)
    await asyncio.sleep(5)
    print("went on")

asyncio.run(main())
"""
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert done.returncode == BROKEN_INVARIANT_EXIT and "went on" not in done.stdout
    assert done.stderr.strip() == "CRITICAL isrcheck.invariants: invariant broken: HW 5 above its own LEO 3; halting"
