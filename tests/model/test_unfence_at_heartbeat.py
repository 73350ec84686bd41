"""KRaft's registration held fenced until the heartbeat that shows the broker caught up (docs/steps.md,
``unfence_at_heartbeat``): ClusterControlManager.registerBroker writes RegisterBrokerRecord fenced,
BrokerHeartbeatManager.calculateNextBrokerState unfences it once the heartbeat's metadata offset reached
it (the step ``unfence``); till then no election picks it and no ISR takes it in (ClusterControlManager.isActive)."""

from __future__ import annotations

import pytest
import split_switches
from split_switches import last, step
from unfence import FENCE_0, FOLLOWER_BACK, KILL_SOAK, LAST_MEMBER, PROTOCOLS, UNFENCE, UNFENCE_1

from isrcheck.model import PROTOCOLS as ALL_PROTOCOLS
from isrcheck.model import ConfigError, ModelConfig, Scope, explore, replay
from isrcheck.model.actions import ACTIONS
from isrcheck.model.alphabet import Step
from isrcheck.model.state import alive_broker_epochs, initial_state


def cfg(protocol: str = "kip-966", **switches) -> ModelConfig:
    return ModelConfig(protocol=protocol, **switches)


def refusal(config, s, name, replica=None, **fields):
    return ACTIONS[name].guard(config, s, Step(name, -1 if replica is None else replica, **fields))


def alive(s) -> tuple:
    return alive_broker_epochs(s.controller, s.replicas)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_kill_soak_holds_both_brokers_fenced_until_the_heartbeat_unfences_one(protocol):
    config = cfg(protocol, **UNFENCE)
    s = last(KILL_SOAK, config)
    assert not s.replicas[1].unregistered and s.controller.awaiting_unfence == (1,)  # caught up, not unfenced
    s = last(KILL_SOAK + FENCE_0, config)
    assert alive(s) == (-1, -1, 0)
    assert alive(last(KILL_SOAK + FENCE_0, cfg(protocol))) == (-1, 1, 0)  # without the switch: 1 registered
    s = last(KILL_SOAK + FENCE_0 + UNFENCE_1, config)
    assert s.controller.awaiting_unfence == () and alive(s) == (-1, 1, 0)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_metadata_cache_holds_a_broker_awaiting_unfence_fenced(protocol):
    config = cfg(protocol, metadata_cache=True, **UNFENCE)
    s = last(KILL_SOAK + FENCE_0 + [step("update_metadata_cache", 2)], config)
    assert s.replicas[2].cached_broker_epochs == (-1, -1, 0)
    s = last(KILL_SOAK + FENCE_0 + UNFENCE_1 + [step("update_metadata_cache", 2)], config)
    assert s.replicas[2].cached_broker_epochs == (-1, 1, 0)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_elect_picks_no_broker_awaiting_unfence(protocol):
    config = cfg(protocol, **UNFENCE)
    s = last(LAST_MEMBER, config)
    assert s.controller.leader == -1 and s.controller.awaiting_unfence == (0,)
    assert not s.replicas[0].unregistered and 0 in s.controller.isr + s.controller.elr
    assert "no eligible replica" in refusal(config, s, "elect")
    assert refusal(cfg(protocol), last(LAST_MEMBER, cfg(protocol)), "elect") is None  # without: 0 leads at once
    s = last(LAST_MEMBER + [step("unfence", 0), step("elect")], config)
    assert s.controller.leader == 0 and s.controller.awaiting_unfence == ()


def test_an_election_with_a_target_awaiting_unfence_is_refused():
    config = cfg("kip-903", **UNFENCE)
    s = last(LAST_MEMBER, config)
    assert s.controller.isr == (0,) and "awaits unfence" in refusal(config, s, "elect", 0)
    assert refusal(cfg("kip-903"), last(LAST_MEMBER, cfg("kip-903")), "elect", 0) is None
    assert refusal(config, last(LAST_MEMBER + [step("unfence", 0)], config), "elect", 0) is None


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_handle_alter_partition_refuses_a_member_awaiting_unfence(protocol):
    config = cfg(protocol, **UNFENCE)
    run = replay(config, FOLLOWER_BACK)
    s = run.states[-1]
    assert s.alter_partition_responses[0][-1].error == "INELIGIBLE_REPLICA" and s.controller.isr == (0, 1)
    off = replay(cfg(protocol), FOLLOWER_BACK).states[-1]
    assert off.alter_partition_responses[0][-1].error == "NONE" and off.controller.isr == (0, 1, 2)
    # unfenced, the leader's next proposal takes it in
    steps = FOLLOWER_BACK + [
        step("unfence", 2),
        step("handle_alter_partition_response", 0),
        step("expand_isr", 0),
        step("handle_alter_partition", 0),
    ]
    s = last(steps, config)
    assert s.alter_partition_responses[0][-1].error == "NONE" and s.controller.isr == (0, 1, 2)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_fence_is_refused_for_a_broker_awaiting_unfence_and_a_crash_leaves_it_there(protocol):
    config = cfg(protocol, **UNFENCE)
    s = last(KILL_SOAK, config)
    assert "awaits unfence" in refusal(config, s, "fence", 1)
    s = last(KILL_SOAK + [step("crash", 1, kind="process")], config)
    assert "awaits unfence" in refusal(config, s, "fence", 1) and s.controller.awaiting_unfence == (1,)
    s = last(KILL_SOAK + [step("crash", 1, kind="process"), *[step("restart", 1), step("register", 1)]], config)
    assert s.controller.awaiting_unfence == (1,) and s.controller.broker_epochs[1] == 2  # its next registration


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_unfence_guard(protocol):
    config = cfg(protocol, **UNFENCE)
    assert "unfence_at_heartbeat is off" in refusal(cfg(protocol), last(KILL_SOAK, cfg(protocol)), "unfence", 1)
    assert "neither fenced nor awaiting" in refusal(config, initial_state(config), "unfence", 1)
    s = last([step("crash", 1, kind="process"), step("fence", 1)], config)
    assert "down" in refusal(config, s, "unfence", 1)
    s = last([step("crash", 1, kind="process"), step("fence", 1), step("restart", 1)], config)
    assert "not registered" in refusal(config, s, "unfence", 1)  # started, registration not accepted yet
    s = last([step("crash", 1, kind="process"), *[step("restart", 1), step("register", 1)]], config)
    assert "not caught up" in refusal(config, s, "unfence", 1)  # its registration's LeaderAndIsr not applied
    assert refusal(config, last(KILL_SOAK, config), "unfence", 1) is None


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_zombie_is_unfenced_with_its_broker_epoch_and_told_the_current_state(protocol):
    config = cfg(protocol, **UNFENCE)
    s = last([step("fence", 2)], config)
    assert refusal(config, s, "unfence", 2) is None and not s.leader_and_isr[2]
    s = last([step("fence", 2), step("unfence", 2)], config)
    c = s.controller
    assert c.fenced == () and c.awaiting_unfence == () and c.broker_epochs[2] == 0
    assert [(m.leader, m.leader_epoch, m.isr, m.partition_epoch) for m in s.leader_and_isr[2]] == [
        (c.leader, c.leader_epoch, c.isr, c.partition_epoch)
    ]
    # one awaiting unfence was sent every change: unfencing it sends nothing
    s = last(KILL_SOAK + UNFENCE_1, config)
    assert s.leader_and_isr[1] == ()


def test_a_broker_awaiting_unfence_is_sent_every_leader_and_isr():
    config = cfg("kip-903", **UNFENCE)
    s = last(KILL_SOAK + FENCE_0, config)
    assert len(s.leader_and_isr[1]) == 1 and s.leader_and_isr[1][0].leader == -1


@pytest.mark.parametrize("protocol", [p for p in ALL_PROTOCOLS if p not in PROTOCOLS])
def test_the_switch_is_refused_without_register(protocol):
    with pytest.raises(ConfigError) as err:
        cfg(protocol, **UNFENCE)
    assert err.value.field == "unfence_at_heartbeat" and "kip-903 and kip-966" in err.value.detail


def test_states_and_their_text_are_as_before_without_the_switch():
    s = last(KILL_SOAK, cfg())
    assert s.controller.awaiting_unfence == () and "awaiting_unfence" not in repr(s)
    assert "awaiting_unfence" in repr(last(KILL_SOAK, cfg(**UNFENCE)))
    assert "unfence_at_heartbeat" not in cfg().to_schedule()
    assert cfg(**UNFENCE).to_schedule()["unfence_at_heartbeat"] is True


def test_the_explorer_with_and_without_the_switch():
    """kip-903, two brokers, a crash and a zombie (6,607 states without the switch, 6,774 with it): the
    switch adds states (registrations not yet unfenced, zombies unfenced with their broker epoch), takes
    some away (no election of a registration before its unfencing) and finds no violation."""
    scope = Scope(max_records=1, max_epoch=1, max_crashes=1, max_zombies=1)
    two = dict(replicas=2, min_insync_replicas=1)
    off = explore(cfg("kip-903", **two), scope)
    on = explore(cfg("kip-903", **two, **UNFENCE), scope)
    assert off.complete and on.complete
    assert (off.states, on.states) == (6607, 6774)
    assert not on.violations and not off.violations


def test_renaming_brokers_renames_those_awaiting_unfence():
    scope = Scope(max_records=1, max_epoch=2, max_crashes=1, max_zombies=1)
    awaiting = lambda s: s.controller.awaiting_unfence  # noqa: E731
    checked = split_switches.renamings_commute(cfg("kip-966", **UNFENCE), scope, awaiting)
    assert checked > 20, checked
