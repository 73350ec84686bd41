"""The step-mode Cluster facade: its initial state, refusals that change nothing, the fence and elect
steps, and crashes of each kind with restarts that recover from the simulated file system."""

import pytest

from isrcheck.impl.sim import Cluster, ClusterConfig, ClusterError, SimWorld


def cluster(protocol="kip-320", replicas=3, min_isr=2, **kw):
    return Cluster(ClusterConfig(protocol=protocol, replicas=replicas, min_insync_replicas=min_isr, **kw))


def test_initial_state_is_the_one_of_the_step_semantics():
    snap = cluster().snapshot()
    leader, f1, f2 = snap.brokers
    assert (
        snap.controller.leader,
        snap.controller.leader_epoch,
        snap.controller.isr,
        snap.controller.partition_epoch,
        snap.controller.fenced,
    ) == (0, 0, (0, 1, 2), 0, ())
    assert all(b.alive and b.log == () and b.leader == 0 and b.isr == (0, 1, 2) for b in snap.brokers)
    assert leader.epoch_start_offset == 0 and leader.remote_leo == (-1, -1, -1)  # no follower fetched yet
    assert f1.remote_leo == (-1, -1, -1) and f1.truncating_epoch == -1


def test_a_cluster_takes_its_steps_on_the_world_it_is_given_and_refuses_one_built_otherwise():
    config = ClusterConfig(protocol="kip-320")
    world = SimWorld(config, auto=False, seed=0)
    given, built = Cluster(config, world=world), Cluster(config)
    for c in (given, built):
        c.produce(0, b"1", 1)
    assert world.snapshot().brokers[0].log_end_offset == 1 and given.brokers is world.brokers
    assert given.trace_hash() == built.trace_hash()
    for other in (dict(config=ClusterConfig(protocol="kip-101")), dict(config=config, mode="auto")):
        with pytest.raises(ValueError, match="world: built for another config or mode"):
            Cluster(**other, world=world)


def test_a_snapshot_shares_what_no_step_changed_and_shows_what_one_did():
    """Readers (the conformance abstraction) take a broker or controller view that is the same
    object as before as unchanged: it must be exactly that, and a change must give a new view."""
    c = cluster()
    first = c.snapshot()
    again = c.snapshot()
    assert all(a is b for a, b in zip(first.brokers, again.brokers)) and first.controller is again.controller
    c.produce(0, [b"1"], -1)
    after = c.snapshot()
    assert after.brokers[0] is not first.brokers[0] and after.brokers[0].log_end_offset == 1
    assert after.brokers[1] is first.brokers[1] and after.controller is first.controller
    c.fence(2)
    fenced = c.snapshot()
    assert fenced.controller is not after.controller and fenced.controller.isr == (0, 1)
    assert fenced.controller == c.snapshot().controller and fenced.brokers[1] == after.brokers[1]


@pytest.mark.parametrize(
    "step,reason",
    [
        (lambda c: c.send_fetch(0), "is the leader"),
        (lambda c: c.handle_fetch(1), "no fetch_request #0"),
        (lambda c: c.deliver("leader_and_isr", 1, 3), "no leader_and_isr #3"),
        (lambda c: c.deliver("gossip", 1), "unknown message kind"),
        (lambda c: c.send_fetch(1, -1), "max_batches"),
        (lambda c: c.elect(), "has a leader"),
        (lambda c: c.elect(0), "already the leader"),
        (lambda c: c.rejoin(1), "not fenced"),
        (lambda c: c.restart(1), "is alive"),
        (lambda c: c.lose_disk(1), "is alive"),
        (lambda c: c.flush(0), "nothing to flush"),
        (lambda c: c.checkpoint_hw(0), "already holds its HW"),
        (lambda c: c.shrink_isr(1), "not the leader"),
        (lambda c: c.expand_isr(0), "caught up"),
        (lambda c: c.produce(7, b"1", 1), "no broker 7"),
        (lambda c: c.produce(0, b"1", 2), "acks"),
        (lambda c: c.produce(0, [], 1), "at least one record"),
        (lambda c: c.crash(1, "meteor"), "crash kind"),
        (lambda c: c.crash(1, "process", 1), "belong to a power loss"),
        (lambda c: c.crash(1, "power", 1), "only 0 unflushed batches"),
        (lambda c: c.advance(-1), "cannot advance"),
    ],
)
def test_impossible_steps_are_refused_with_a_reason_and_change_nothing(step, reason):
    c = cluster()
    before = (c.snapshot(), c.in_flight())
    with pytest.raises(ClusterError, match=reason):
        step(c)
    assert (c.snapshot(), c.in_flight()) == before


def test_down_brokers_refuse_requests_and_are_fenced_once():
    c = cluster()
    c.crash(1, "process")
    for step in (
        lambda: c.produce(1, b"1", 1),
        lambda: c.consume(1),
        lambda: c.send_fetch(1),
        lambda: c.crash(1, "clean"),
        lambda: c.rejoin(1),
        lambda: c.checkpoint_hw(1),
    ):
        with pytest.raises(ClusterError):
            step()
    c.fence(1)
    with pytest.raises(ClusterError, match="already fenced"):
        c.fence(1)
    c.restart(1)
    assert c.snapshot().brokers[1].broker_epoch == 4  # a new broker epoch for the new incarnation


def test_fencing_removes_from_the_isr_but_never_the_last_member_and_leaves_no_leader():
    c = cluster(replicas=2, min_isr=1)
    c.crash(1, "clean")
    c.fence(1)
    assert c.snapshot().controller.isr == (0,) and c.snapshot().controller.partition_epoch == 1
    c.crash(0, "clean")
    c.fence(0)
    ctrl = c.snapshot().controller
    assert (ctrl.leader, ctrl.leader_epoch, ctrl.isr, ctrl.fenced) == (-1, 1, (0,), (0, 1))
    with pytest.raises(ClusterError, match="eligible"):
        c.elect()


def test_power_loss_cuts_the_log_to_its_flushed_prefix_and_the_hw_to_its_checkpoint():
    c = cluster(replicas=1, min_isr=1)
    for v in (b"1", b"2"):
        c.produce(0, v, -1)
    c.flush(0)
    c.produce(0, b"3", -1)
    snap = c.snapshot().brokers[0]
    assert (snap.durable, snap.hw, snap.hw_checkpoint, len(snap.log)) == (2, 3, 2, 3)
    c.crash(0, "power")
    assert c.snapshot().brokers[0].power_lost and len(c.snapshot().brokers[0].log) == 3
    c.fence(0)
    c.restart(0)
    snap = c.snapshot().brokers[0]
    assert [e.value for e in snap.log] == [b"1", b"2"] and snap.hw == 2 and snap.leader == -1


@pytest.mark.parametrize("protocol, forgets", [("kip-320", False), ("kip-966", True)])
def test_the_leader_applies_the_partition_epoch_it_adopted_and_forgets_its_proposal_from_kip_903_on(protocol, forgets):
    """KRaft's metadata log brings the leader the record of its own commit after the answer it adopted:
    Partition.makeLeader skips only an older partition epoch, and its CommittedPartitionState forgets
    the proposal made in between (docs/steps.md, deliver_leader_and_isr)."""
    from isrcheck.impl.protocol.messages import LeaderAndIsrRequest
    from isrcheck.impl.sut.driver import SimDriver, cluster_config

    driver = SimDriver(cluster_config(protocol, {}))

    def fetch_round(f):
        return [("send_fetch", (f, 0)), ("handle_fetch", (f,)), ("handle_fetch_response", (f,))]

    commit = [("handle_alter_partition", (0,)), ("handle_alter_partition_response", (0,))]
    steps = [("tick", ())] * 3 + fetch_round(1) + [("shrink_isr", (0,))] + commit + fetch_round(2)
    steps += [("expand_isr", (0, 2))]
    for name, values in steps:
        assert driver.step(name, values)[0] is None, name
    p = driver.cluster.brokers[0].replica_manager.partition
    assert (p.isr, p.partition_epoch, p.pending_isr) == ((0, 1), 1, (0, 1, 2))
    again = LeaderAndIsrRequest(
        leader=0, leader_epoch=p.leader_epoch, partition_epoch=1, isr=(0, 1), replicas=(0, 1, 2)
    )
    driver.cluster.brokers[0].replica_manager.apply_leader_and_isr(again)
    assert p.pending_isr == (None if forgets else (0, 1, 2))
    refused, _ = driver.step("expand_isr", (0, 2))
    assert refused == (
        "an AlterPartition of broker 0 awaits its answer" if forgets else "broker 0 has an ISR change in flight"
    )
