"""The implementation's registrations awaiting unfence (docs/steps.md, ``unfence_at_heartbeat``): the
controller's awaiting_unfence (KRaft's RegisterBrokerRecord fenced until the heartbeat that shows the broker
caught up), active brokers for elections and AlterPartition; the scenarios of tests/unfence.py taken as
schedule steps by the step-mode simulation alone, and a self-driven run whose heartbeats unfence."""

from __future__ import annotations

import dataclasses

import pytest
from split_switches import driver_after, refused, step
from unfence import FENCE_0, FOLLOWER_BACK, KILL_SOAK, LAST_MEMBER, PROTOCOLS, UNFENCE, UNFENCE_1

from isrcheck.impl.replication import ClusterConfig
from isrcheck.impl.replication.config import InvalidConfigError
from isrcheck.impl.sim.cluster import Cluster
from isrcheck.impl.sim.workload import sim_config


def controller_after(steps, protocol="kip-966", **switches):
    return driver_after(steps, protocol, **switches).cluster.world.controller


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_kill_soak_holds_both_brokers_fenced_until_the_unfencing(protocol):
    c = controller_after(KILL_SOAK + FENCE_0, protocol, **UNFENCE)
    assert c.state().awaiting_unfence == (1,) and c.alive_broker_epochs() == (-1, -1, c.broker_epochs[2])
    c = controller_after(KILL_SOAK + FENCE_0, protocol)
    assert c.state().awaiting_unfence == () and c.alive_broker_epochs()[1] == c.broker_epochs[1]
    c = controller_after(KILL_SOAK + FENCE_0 + UNFENCE_1, protocol, **UNFENCE)
    assert c.state().awaiting_unfence == () and c.alive_broker_epochs()[1] == c.broker_epochs[1]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_metadata_cache_holds_a_broker_awaiting_unfence_fenced(protocol):
    steps = KILL_SOAK + FENCE_0 + [step("update_metadata_cache", 2)]
    cache = driver_after(steps, protocol, metadata_cache=True, **UNFENCE).cluster.snapshot().brokers[2]
    assert cache.cached_broker_epochs[:2] == (-1, -1)
    steps = KILL_SOAK + FENCE_0 + UNFENCE_1 + [step("update_metadata_cache", 2)]
    cache = driver_after(steps, protocol, metadata_cache=True, **UNFENCE).cluster.snapshot().brokers[2]
    assert cache.cached_broker_epochs[0] == -1 and cache.cached_broker_epochs[1] > 0


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_elect_picks_no_broker_awaiting_unfence(protocol):
    driver = driver_after(LAST_MEMBER, protocol, **UNFENCE)
    assert "no eligible replica" in refused(driver, step("elect"))
    assert "awaits unfence" in refused(driver, step("elect", 0))
    assert refused(driver_after(LAST_MEMBER, protocol), step("elect")) is None  # without: it leads at once
    c = controller_after(LAST_MEMBER + [step("unfence", 0), step("elect")], protocol, **UNFENCE)
    assert c.leader == 0


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_alter_partition_refuses_a_member_awaiting_unfence(protocol):
    c = controller_after(FOLLOWER_BACK, protocol, **UNFENCE)
    assert c.isr == (0, 1) and c.state().awaiting_unfence == (2,)
    assert controller_after(FOLLOWER_BACK, protocol).isr == (0, 1, 2)
    more = [step("unfence", 2), step("handle_alter_partition_response", 0)]
    more += [step("expand_isr", 0), step("handle_alter_partition", 0)]
    assert controller_after(FOLLOWER_BACK + more, protocol, **UNFENCE).isr == (0, 1, 2)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_fence_is_refused_for_a_broker_awaiting_unfence(protocol):
    driver = driver_after(KILL_SOAK, protocol, **UNFENCE)
    assert "awaits unfence" in refused(driver, step("fence", 1))
    assert refused(driver, step("crash", 1, kind="process")) is None
    assert "awaits unfence" in refused(driver, step("fence", 1))
    assert driver.cluster.world.controller.state().awaiting_unfence == (1,)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_unfence_guard(protocol):
    assert "unfence_at_heartbeat is off" in refused(driver_after(KILL_SOAK, protocol), step("unfence", 1))
    assert "neither fenced nor awaiting" in refused(driver_after([], protocol, **UNFENCE), step("unfence", 1))
    down = [step("crash", 1, kind="process"), step("fence", 1)]
    assert "down" in refused(driver_after(down, protocol, **UNFENCE), step("unfence", 1))
    started = down + [step("restart", 1)]
    assert "not registered" in refused(driver_after(started, protocol, **UNFENCE), step("unfence", 1))
    registered = started + [step("register", 1)]
    assert "not caught up" in refused(driver_after(registered, protocol, **UNFENCE), step("unfence", 1))


def test_a_zombie_is_unfenced_with_its_broker_epoch_and_sent_the_current_state():
    driver = driver_after([step("fence", 2)], "kip-903", **UNFENCE)
    epoch = driver.cluster.world.controller.broker_epochs[2]
    assert refused(driver, step("unfence", 2)) is None
    c = driver.cluster.world.controller
    assert c.broker_epochs[2] == epoch and not c.fenced
    assert [m for kind, r, _i, m in driver.cluster.in_flight() if kind == "leader_and_isr" and r == 2]


@pytest.mark.parametrize("protocol", ["hw-truncation", "kip-101", "kip-279", "kip-320"])
def test_the_switch_is_refused_without_register(protocol):
    with pytest.raises(InvalidConfigError, match="unfence_at_heartbeat: valid only with kip-903 and kip-966"):
        ClusterConfig(protocol=protocol, unfence_at_heartbeat=True)


def test_a_self_driven_run_unfences_at_the_heartbeat_that_shows_the_broker_caught_up():
    """Broker 1 restarts: registered, it stays out of the ISR until a heartbeat after its catch-up unfences it."""
    config = dataclasses.replace(sim_config("kip-966", 3), unfence_at_heartbeat=True)
    c = Cluster(config, mode="auto", seed=1)
    c.run_for(200)
    c.crash(1, "process")
    c.run_for(config.broker_session_timeout_ms + 50)
    assert 1 in c.controller.fenced
    c.restart(1)
    seen = set()
    for _ in range(400):
        c.run_for(1)
        state = c.controller.state()
        if 1 in state.awaiting_unfence:
            seen.add("awaiting")
            assert 1 not in state.isr and state.leader != 1  # inactive: no ISR, no leadership
        elif "awaiting" in seen:
            seen.add("unfenced")
            break
    assert seen == {"awaiting", "unfenced"}, seen
