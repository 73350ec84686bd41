"""The implementation's controlled shutdown (docs/steps.md, ``kraft_controlled_shutdown``): the controller's
in_controlled_shutdown (KRaft's BrokerRegistration.inControlledShutdown), taken by Cluster.controlled_shutdown
(handleBrokerInControlledShutdown), read by every election, AlterPartition and the metadata caches, and ended
by fence and registration; the scenarios of tests/controlled_shutdown.py on the step-mode simulation alone."""

from __future__ import annotations

import pytest
from controlled_shutdown import ALL, APPLIED, CAUGHT_UP, LEADER_STOPPED, REACHED, STOPPED, SWITCH
from hw_waits import fetch
from split_switches import driver_after, refused, step

from isrcheck.impl.protocol import Errors
from isrcheck.impl.replication import ClusterConfig
from isrcheck.impl.replication.config import InvalidConfigError

KRAFT = ("kip-903", "kip-966")


def controller_after(steps, protocol="kip-966", **switches):
    return driver_after(steps, protocol, **switches).cluster.snapshot().controller


@pytest.mark.parametrize("protocol", KRAFT)
def test_a_follower_in_controlled_shutdown_leaves_the_isr_and_every_cache_holds_it_ineligible(protocol):
    c = controller_after([*CAUGHT_UP, step("controlled_shutdown", 2)], protocol, **SWITCH)
    assert (c.leader, c.leader_epoch, c.isr, c.partition_epoch, c.in_controlled_shutdown) == (0, 0, (0, 1), 1, (2,))
    assert c.fenced == ()
    driver = driver_after(STOPPED, protocol, **ALL)
    assert driver.cluster.snapshot().brokers[0].cached_broker_epochs[2] == -1
    for doc in REACHED:
        assert refused(driver, doc) is None
    assert driver.cluster.snapshot().brokers[0].hw == 1  # not waiting for broker 2, caught up as it is


@pytest.mark.parametrize("protocol", KRAFT)
def test_the_leaders_controlled_shutdown_elects_the_next_active_isr_member(protocol):
    c = controller_after(LEADER_STOPPED, protocol, **SWITCH)
    assert (c.leader, c.leader_epoch, c.isr, c.partition_epoch, c.last_known_leader) == (1, 1, (1, 2), 1, -1)
    c = controller_after(
        [*CAUGHT_UP, step("controlled_shutdown", 1), step("controlled_shutdown", 0)], protocol, **SWITCH
    )
    assert (c.leader, c.leader_epoch, c.isr, c.in_controlled_shutdown) == (2, 1, (2,), (0, 1))


def test_the_last_members_controlled_shutdown_leaves_the_partition_leaderless():
    steps = [step("fence", 1), step("fence", 2), step("controlled_shutdown", 0)]
    c = controller_after(steps, "kip-903", **SWITCH)
    assert (c.leader, c.leader_epoch, c.isr) == (-1, 1, (0,))
    c = controller_after(steps, "kip-966", **SWITCH, unclean_leader_election_enable=True)
    assert (c.leader, c.isr, c.elr, c.last_known_leader) == (-1, (), (0, 2), 0)
    assert "no eligible replica" in refused(driver_after(steps, "kip-966", **SWITCH), step("elect"))


@pytest.mark.parametrize("protocol", KRAFT)
def test_elect_and_alter_partition_refuse_a_broker_in_controlled_shutdown(protocol):
    driver = driver_after([step("fence", 1), step("fence", 0), step("controlled_shutdown", 2)], "kip-903", **SWITCH)
    assert "in controlled shutdown" in refused(driver, step("elect", 2))
    back = [*CAUGHT_UP, step("controlled_shutdown", 2), *APPLIED, *fetch(2), step("expand_isr", 0)]
    driver = driver_after([*back, step("handle_alter_partition", 0)], protocol, **SWITCH)
    assert driver.cluster.snapshot().controller.isr == (0, 1)
    (answer,) = [m for kind, _, _, m in driver.cluster.in_flight() if kind == "alter_partition_response"]
    assert answer.error == Errors.INELIGIBLE_REPLICA


@pytest.mark.parametrize("protocol", KRAFT)
def test_fence_and_registration_end_a_controlled_shutdown(protocol):
    shut = [*CAUGHT_UP, step("controlled_shutdown", 2)]
    c = controller_after([*shut, step("fence", 2)], protocol, **SWITCH)
    assert c.in_controlled_shutdown == () and c.fenced == (2,)
    steps = [*shut, step("crash", 2, kind="clean"), step("restart", 2), step("register", 2)]
    assert controller_after(steps, protocol, **SWITCH).in_controlled_shutdown == ()


@pytest.mark.parametrize("protocol", KRAFT)
def test_the_guard(protocol):
    assert "kraft_controlled_shutdown is off" in refused(driver_after([], protocol), step("controlled_shutdown", 2))
    assert "down" in refused(
        driver_after([step("crash", 2, kind="clean")], protocol, **SWITCH), step("controlled_shutdown", 2)
    )
    restarted = [step("crash", 2, kind="clean"), step("restart", 2)]
    assert "not registered" in refused(driver_after(restarted, protocol, **SWITCH), step("controlled_shutdown", 2))
    driver = driver_after([*restarted, step("register", 2)], protocol, **SWITCH)
    assert "not registered" in refused(driver, step("controlled_shutdown", 2))
    assert "fenced" in refused(driver_after([step("fence", 2)], protocol, **SWITCH), step("controlled_shutdown", 2))
    driver = driver_after([step("controlled_shutdown", 2)], protocol, **SWITCH)
    assert "already" in refused(driver, step("controlled_shutdown", 2))


@pytest.mark.parametrize("protocol", ("hw-truncation", "kip-101", "kip-279", "kip-320"))
def test_the_switch_is_an_invalid_config_before_kip_903(protocol):
    with pytest.raises(InvalidConfigError, match="kraft_controlled_shutdown: valid only with kip-903"):
        ClusterConfig(protocol=protocol, kraft_controlled_shutdown=True)
