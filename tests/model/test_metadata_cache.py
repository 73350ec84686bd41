"""A broker's metadata cache of the brokers' registrations (docs/steps.md, ``metadata_cache``): Kafka's
KRaftMetadataCache, which Partition.isReplicaIsrEligible reads (isBrokerFenced, getAliveBrokerEpoch) in
maybeExpandIsr and maybeIncrementLeaderHW's shouldWaitForReplicaToJoinIsr; update_metadata_cache brings it
up to the controller's (KRaftMetadataCache.setImage)."""

from __future__ import annotations

import pytest
import split_switches
from metadata_cache import BOTH, CACHE, REACHED, REJOINED, TAKEN_OUT, TOLD, ZOMBIE
from split_switches import step

from isrcheck.model import PROTOCOLS, ModelConfig, Scope, explore
from isrcheck.model.actions import ACTIONS
from isrcheck.model.alphabet import Step
from isrcheck.model.state import alive_broker_epochs, initial_state


def cfg(protocol: str = "kip-966", **switches) -> ModelConfig:
    return ModelConfig(protocol=protocol, **switches)


def last(steps, config):
    return split_switches.last(steps, config)


def refusal(config, s, name, replica, **fields):
    return ACTIONS[name].guard(config, s, Step(name, replica, **fields))


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_the_hw_waits_for_a_fenced_follower_until_the_cache_learns_of_the_fence(protocol):
    config = cfg(protocol, **BOTH)
    before = last(TAKEN_OUT, config)
    lead = before.replicas[0]
    assert (lead.isr, lead.remote_leo, len(lead.log), lead.hw) == ((0, 1), (-1, 0, 0), 1, 0)
    assert before.controller.fenced == (2,) and lead.cached_broker_epochs[2] == 0  # not told yet
    assert last(TAKEN_OUT + REACHED, config).replicas[0].hw == 0  # follower 2's LEO holds it back
    assert last(TAKEN_OUT + REACHED, cfg(protocol, **CACHE)).replicas[0].hw == 1  # no waiting: the ISR decides
    s = last(TAKEN_OUT + TOLD + REACHED, config)
    assert s.replicas[0].cached_broker_epochs[2] == -1 and s.replicas[0].hw == 1  # fenced: not waited for
    # told after the fetch: the HW goes past at the leader's next raise (follower 1's next Fetch)
    s = last(TAKEN_OUT + REACHED + TOLD, config)
    assert s.replicas[0].hw == 0
    s = last(TAKEN_OUT + REACHED + TOLD + [step("handle_fetch_response", 1), *REACHED], config)
    assert s.replicas[0].hw == 1


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_expand_isr_proposes_no_follower_the_cache_holds_fenced(protocol):
    config = cfg(protocol, **CACHE)
    s = last(ZOMBIE, config)
    assert s.replicas[0].isr == (0, 1) and s.replicas[0].remote_leo[2] == 0
    assert refusal(config, s, "expand_isr", 0) is None  # the cache holds it registered: proposed
    assert refusal(cfg(protocol), last(ZOMBIE, cfg(protocol)), "expand_isr", 0) is None  # as without a cache
    s = last(ZOMBIE + TOLD, config)
    assert s.replicas[0].cached_broker_epochs == (0, 0, -1)
    assert "no follower" in refusal(config, s, "expand_isr", 0)
    assert "follower 2" in refusal(config, s, "expand_isr", 0, arg=2)
    assert refusal(cfg(protocol), last(ZOMBIE, cfg(protocol)), "update_metadata_cache", 0) is not None


@pytest.mark.parametrize("protocol", ["kip-903", "kip-966"])
def test_expand_isr_proposes_no_follower_whose_fetch_carried_another_broker_epoch_than_cached(protocol):
    config = cfg(protocol, **CACHE)
    s = last(REJOINED, config)
    lead = s.replicas[0]
    assert s.controller.broker_epochs[2] == 1 and lead.remote_broker_epoch[2] == 1
    assert lead.cached_broker_epochs[2] == 0  # the cache has not seen the fence nor the new registration
    assert "no follower" in refusal(config, s, "expand_isr", 0)  # stored 1, cached 0
    s = last(REJOINED + TOLD, config)
    assert s.replicas[0].cached_broker_epochs[2] == 1
    assert refusal(config, s, "expand_isr", 0) is None
    s = last(REJOINED + TOLD + [step("expand_isr", 0)], config)
    assert s.replicas[0].pending_isr == (0, 1, 2)


def test_a_fetch_without_a_broker_epoch_bypasses_the_comparison():
    """isBrokerEpochIsrEligible: a stored broker epoch of -1 (an unregistered follower's, and every Fetch
    before kip-903) is not compared with the cached one; a fence still counts."""
    config = cfg("kip-320", **CACHE)
    s = last(REJOINED, config)
    assert s.replicas[0].remote_broker_epoch[2] == -1 and s.replicas[0].cached_broker_epochs[2] == 0
    assert refusal(config, s, "expand_isr", 0) is None


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_restart_sets_the_cache_to_the_controllers_registrations_and_a_crash_keeps_it(protocol):
    config = cfg(protocol, **CACHE)
    s = last([step("crash", 2, kind="process"), step("fence", 1)], config)
    assert s.replicas[2].cached_broker_epochs == (0, 0, 0)  # a crash keeps it
    s = last([step("crash", 2, kind="process"), step("fence", 1), step("restart", 2)], config)
    assert s.replicas[2].cached_broker_epochs == alive_broker_epochs(s.controller)
    assert s.replicas[2].cached_broker_epochs[1] == -1
    s = last([step("crash", 2, kind="process"), step("restart", 2)], cfg(protocol))
    assert s.replicas[2].cached_broker_epochs == ()  # nothing without the switch


def test_update_metadata_cache_is_enabled_for_a_live_broker_whose_cache_differs():
    config = cfg(**CACHE)
    s = initial_state(config)
    assert all(r.cached_broker_epochs == (0, 0, 0) for r in s.replicas)
    assert "holds the controller's" in refusal(config, s, "update_metadata_cache", 1)
    assert "metadata_cache is off" in refusal(cfg(), initial_state(cfg()), "update_metadata_cache", 1)
    s = last([step("fence", 2)], config)
    assert refusal(config, s, "update_metadata_cache", 1) is None
    assert refusal(config, s, "update_metadata_cache", 2) is None  # a fenced broker replays the log too
    s = last([step("crash", 1, kind="process"), step("fence", 2)], config)
    assert "down" in refusal(config, s, "update_metadata_cache", 1)
    s = last([step("fence", 2), step("update_metadata_cache", 1)], config)
    assert s.replicas[1].cached_broker_epochs == (0, 0, -1) and s.replicas[0].cached_broker_epochs == (0, 0, 0)


def test_states_and_their_text_are_as_before_without_the_switch():
    s = initial_state(cfg())
    assert all(r.cached_broker_epochs == () for r in s.replicas)
    assert "cached_broker_epochs" not in repr(s)
    assert "cached_broker_epochs" in repr(initial_state(cfg(**CACHE)))


def test_the_switch_is_left_out_of_a_schedule_when_off():
    assert "metadata_cache" not in cfg().to_schedule()
    assert cfg(**CACHE).to_schedule()["metadata_cache"] is True
    assert ModelConfig.of("kip-966", cfg(**CACHE)) == cfg(**CACHE)


def test_the_explorer_with_and_without_the_cache():
    """A zombie's fence and rejoin on a small kip-903 scope of two brokers (204 states without the cache,
    1,425 with it): the cache adds states (brokers that have not seen a registration change yet) and no
    violation."""
    scope = Scope(max_records=1, max_epoch=1, max_crashes=0, max_zombies=1)
    two = dict(replicas=2, min_insync_replicas=1, hw_waits_for_caught_up=True)
    off = explore(cfg("kip-903", **two), scope)
    on = explore(cfg("kip-903", **two, **CACHE), scope)
    assert off.complete and on.complete
    assert (off.states, on.states) == (204, 1425)
    assert not on.violations and not off.violations


@pytest.mark.parametrize("protocol", ["kip-903", "kip-966"])
def test_a_registered_broker_is_fenced_in_the_caches_until_it_caught_up_with_its_registration(protocol):
    """KRaft registers a broker fenced and unfences it once its heartbeat shows it replayed the metadata
    log past its registration: the model's stand-in is the broker's catch-up, the LeaderAndIsr of its
    registration applied (docs/steps.md, the controller's alive broker epochs)."""
    config = cfg(protocol, **CACHE)
    s = last([step("crash", 2, kind="process"), step("restart", 2), step("register", 2)], config)
    assert s.replicas[2].unregistered and s.controller.broker_epochs[2] == 1 and 2 not in s.controller.fenced
    assert alive_broker_epochs(s.controller, s.replicas) == (0, 0, -1)
    s = last(
        [step("crash", 2, kind="process"), step("restart", 2), step("register", 2), step("update_metadata_cache", 0)],
        config,
    )
    assert s.replicas[0].cached_broker_epochs == (0, 0, -1)  # told of the registration: still fenced
    marked = [i for i, m in enumerate(s.leader_and_isr[2]) if m.registration]
    s = last(
        [
            step("crash", 2, kind="process"),
            step("restart", 2),
            step("register", 2),
            step("update_metadata_cache", 0),
            step("deliver_leader_and_isr", 2, index=marked[-1]),
        ],
        config,
    )
    assert not s.replicas[2].unregistered
    assert alive_broker_epochs(s.controller, s.replicas) == (0, 0, 1)
    assert refusal(config, s, "update_metadata_cache", 0) is None  # the cache may take the unfencing now
