"""The implementation's metadata cache (docs/steps.md, ``metadata_cache``): each broker's MetadataCache
(Kafka's KRaftMetadataCache) of the brokers' registrations, read by Partition.is_replica_isr_eligible in
maybe_expand_isr and maybe_increment_leader_hw; the scenarios of tests/metadata_cache.py taken as schedule
steps by the step-mode simulation alone, and a self-driven run telling brokers of a fence."""

from __future__ import annotations

import pytest
from metadata_cache import BOTH, CACHE, REACHED, REJOINED, TAKEN_OUT, TOLD, ZOMBIE
from split_switches import driver_after, refused, step

from isrcheck.impl.replication import ClusterConfig
from isrcheck.impl.replication.metadata_cache import MetadataCache
from isrcheck.impl.sim.cluster import Cluster, ClusterError
from isrcheck.impl.sut.driver import cluster_config

PROTOCOLS = ("hw-truncation", "kip-101", "kip-279", "kip-320", "kip-903", "kip-966")


def leader_after(steps, protocol="kip-966", **switches):
    return driver_after(steps, protocol, **switches).cluster.snapshot().brokers[0]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_hw_waits_for_a_fenced_follower_until_the_cache_learns_of_the_fence(protocol):
    lead = leader_after(TAKEN_OUT, protocol, **BOTH)
    assert (lead.isr, lead.remote_leo[1:], lead.hw) == ((0, 1), (0, 0), 0)
    assert lead.cached_broker_epochs[2] >= 0  # not told of the fence yet
    assert leader_after(TAKEN_OUT + REACHED, protocol, **BOTH).hw == 0
    lead = leader_after(TAKEN_OUT + TOLD + REACHED, protocol, **BOTH)
    assert lead.cached_broker_epochs[2] == -1 and lead.hw == 1
    assert leader_after(TAKEN_OUT + REACHED, protocol, **CACHE).hw == 1  # no waiting without hw_waits


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_expand_isr_proposes_no_follower_the_cache_holds_fenced(protocol):
    assert refused(driver_after(ZOMBIE, protocol, **CACHE), step("expand_isr", 0)) is None
    driver = driver_after(ZOMBIE + TOLD, protocol, **CACHE)
    assert "caught up" in refused(driver, step("expand_isr", 0))


@pytest.mark.parametrize("protocol", ["kip-903", "kip-966"])
def test_expand_isr_proposes_no_follower_registered_with_another_broker_epoch_than_cached(protocol):
    driver = driver_after(REJOINED, protocol, **CACHE)
    assert "caught up" in refused(driver, step("expand_isr", 0))
    driver = driver_after(REJOINED + TOLD, protocol, **CACHE)
    assert refused(driver, step("expand_isr", 0)) is None
    assert driver.cluster.snapshot().brokers[0].pending_isr == (0, 1, 2)


def test_update_metadata_cache_copies_the_controllers_registrations():
    c = Cluster(ClusterConfig(protocol="kip-966", replicas=3, metadata_cache=True))
    alive = c.controller.alive_broker_epochs()
    assert all(b.cached_broker_epochs == alive for b in c.snapshot().brokers)
    with pytest.raises(ClusterError, match="holds the controller's"):
        c.update_metadata_cache(1)
    c.fence(2)
    c.update_metadata_cache(1)
    assert c.snapshot().brokers[1].cached_broker_epochs == alive[:2] + (-1,)
    assert c.snapshot().brokers[0].cached_broker_epochs == alive  # the others lag
    c.crash(1, "process")
    with pytest.raises(ClusterError, match="down"):
        c.update_metadata_cache(1)
    with pytest.raises(ClusterError, match="metadata_cache is off"):
        Cluster(ClusterConfig(protocol="kip-966", replicas=3)).update_metadata_cache(1)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_restart_takes_the_controllers_registrations(protocol):
    c = Cluster(ClusterConfig(protocol=protocol, replicas=3, metadata_cache=True))
    c.crash(2, "process")
    c.fence(1)
    assert c.snapshot().brokers[2].cached_broker_epochs[1] >= 0  # a crash keeps it
    c.restart(2)
    assert c.snapshot().brokers[2].cached_broker_epochs == c.controller.alive_broker_epochs()
    assert c.snapshot().brokers[2].cached_broker_epochs[1] == -1


def test_the_cache_ignores_an_older_image():
    cache = MetadataCache()
    assert not cache.is_broker_fenced(0) and cache.get_alive_broker_epoch(0) is None  # unknown: not eligible
    assert cache.set_image((1, -1, 3), 2)
    assert cache.is_broker_fenced(1) and cache.get_alive_broker_epoch(1) is None
    assert not cache.set_image((1, 2, 3), 1)  # overtaken on the way
    assert cache.set_image((1, 4, 3), 3) and cache.get_alive_broker_epoch(1) == 4


def test_a_self_driven_run_tells_every_broker_of_a_fence():
    """Auto mode: the controller sends every broker the registrations after a change (UpdateMetadata),
    which their caches take."""
    c = Cluster(ClusterConfig(protocol="kip-966", replicas=3, metadata_cache=True), mode="auto", seed=1)
    c.run_for(50)
    c.crash(2, "process")
    c.run_for(300)  # the session expires, the controller fences broker 2 and tells the others
    assert 2 in c.controller.fenced
    for b in (0, 1):
        assert c.snapshot().brokers[b].cached_broker_epochs[2] == -1
    c.restart(2)
    c.run_for(300)  # registered again: every cache holds its new broker epoch
    alive = c.controller.alive_broker_epochs()
    assert alive[2] >= 0 and all(b.cached_broker_epochs == alive for b in c.snapshot().brokers)


def test_the_config_takes_only_a_bool():
    with pytest.raises(ValueError, match="metadata_cache"):
        cluster_config("kip-966", {"metadata_cache": 1})
