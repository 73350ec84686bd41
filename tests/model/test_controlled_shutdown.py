"""A broker's controlled shutdown as the controller's state and a step (docs/steps.md,
``kraft_controlled_shutdown``, ``controlled_shutdown``): KRaft's BrokerRegistration.inControlledShutdown
and ReplicationControlManager.handleBrokerInControlledShutdown; not active for elections and
AlterPartition, ineligible in every metadata cache, ended by its fence or registration."""

from __future__ import annotations

import pytest
from controlled_shutdown import ALL, APPLIED, CAUGHT_UP, LEADER_STOPPED, REACHED, STOPPED, SWITCH
from hw_waits import fetch
from metadata_cache import CACHE
from split_switches import last, step

from isrcheck.conformance.engines.validate import unlogged
from isrcheck.model import PROTOCOLS, ConfigError, ModelConfig, replay
from isrcheck.model.actions import ACTIONS
from isrcheck.model.alphabet import Step
from isrcheck.model.state import active, alive_broker_epochs, initial_state

KRAFT = ["kip-903", "kip-966"]


def cfg(protocol: str = "kip-966", **switches) -> ModelConfig:
    return ModelConfig(protocol=protocol, **switches)


def refusal(config, s, name, replica, **fields):
    return ACTIONS[name].guard(config, s, Step(name, replica, **fields))


@pytest.mark.parametrize("protocol", KRAFT)
def test_a_follower_in_controlled_shutdown_leaves_the_isr_in_one_partition_change(protocol):
    config = cfg(protocol, **SWITCH)
    before = last(CAUGHT_UP, config)
    s = last([*CAUGHT_UP, step("controlled_shutdown", 2)], config)
    c = s.controller
    assert (c.leader, c.leader_epoch, c.isr, c.partition_epoch) == (0, 0, (0, 1), before.controller.partition_epoch + 1)
    assert c.in_controlled_shutdown == (2,) and c.fenced == () and not active(c, 2)
    assert alive_broker_epochs(c, s.replicas) == (0, 0, -1)
    # every unfenced broker is told, the one shutting down too (it still replays the metadata log)
    assert [len(q) for q in s.leader_and_isr] == [1, 1, 1]
    assert s.leader_and_isr[2][0].isr == (0, 1)


@pytest.mark.parametrize("protocol", KRAFT)
def test_the_leaders_hw_does_not_wait_for_a_caught_up_follower_in_controlled_shutdown(protocol):
    """hw_waits_for_caught_up with metadata_cache: Kafka 4.4.0's leader raised its HW past broker 2 at once;
    the elect/fence stand-in the validator uses without the switch keeps broker 2 registered, so the HW waits."""
    config = cfg(protocol, **ALL)
    s = last(STOPPED, config)
    lead = s.replicas[0]
    assert lead.cached_broker_epochs == (0, 0, -1) and lead.remote_leo[2] == 0 and s.now == 0
    assert last(STOPPED + REACHED, config).replicas[0].hw == 1

    off = cfg(protocol, **{k: v for k, v in ALL.items() if k not in SWITCH})
    s = last(CAUGHT_UP, off)
    s = unlogged.controlled_shutdown(off, 2)(s, [])  # Kafka's change without the step: 2 stays active
    # no registration changed, and broker 2 was sent no LeaderAndIsr (fenced for the change's length)
    rest = [st for st in STOPPED[len(CAUGHT_UP) + 1 :] if st not in (APPLIED[2], step("update_metadata_cache", 0))]
    s = replay(off, rest + REACHED, s).states[-1]
    assert s.controller.isr == (0, 1) and s.replicas[0].cached_broker_epochs == (0, 0, 0)
    assert s.replicas[0].hw == 0  # waits for follower 2


@pytest.mark.parametrize("protocol", KRAFT)
def test_the_leaders_controlled_shutdown_elects_the_next_active_isr_member_in_one_leader_epoch(protocol):
    config = cfg(protocol, **SWITCH)
    c = last(LEADER_STOPPED, config).controller
    assert (c.leader, c.leader_epoch, c.isr, c.partition_epoch, c.last_known_leader) == (1, 1, (1, 2), 1, -1)
    assert c.in_controlled_shutdown == (0,)
    # broker 1 in controlled shutdown already: broker 2 leads
    c = last([*CAUGHT_UP, step("controlled_shutdown", 1), step("controlled_shutdown", 0)], config).controller
    assert (c.leader, c.leader_epoch, c.isr, c.partition_epoch) == (2, 1, (2,), 2)
    assert c.in_controlled_shutdown == (0, 1)


def test_the_last_members_controlled_shutdown_leaves_the_partition_leaderless():
    """kip-903 keeps the last ISR member, kip-966 empties the ISR (the ELR keeps it): neither elects it,
    and kip-966 remembers it as the last known leader, which no election picks while it shuts down."""
    steps = [step("fence", 1), step("fence", 2), step("controlled_shutdown", 0)]
    c = last(steps, cfg("kip-903", **SWITCH)).controller
    assert (c.leader, c.leader_epoch, c.isr, c.partition_epoch) == (-1, 1, (0,), 3)
    config = cfg("kip-966", **SWITCH, unclean_leader_election_enable=True)
    s = last(steps, config)
    c = s.controller
    assert (c.leader, c.leader_epoch, c.isr, c.elr, c.last_known_leader) == (-1, 1, (), (0, 2), 0)
    assert "no eligible replica" in refusal(config, s, "elect", -1)  # unclean election neither


@pytest.mark.parametrize("protocol", KRAFT)
def test_elect_and_an_isr_expansion_refuse_a_broker_in_controlled_shutdown(protocol):
    config = cfg(protocol, **SWITCH)
    # kip-903: the last ISR member stays in it, yet leads no more
    s = last([step("fence", 1), step("fence", 0), step("controlled_shutdown", 2)], cfg("kip-903", **SWITCH))
    assert s.controller.isr == (2,) and s.controller.leader == -1
    assert "in controlled shutdown" in refusal(cfg("kip-903", **SWITCH), s, "elect", 2)
    assert "no eligible replica" in refusal(cfg("kip-903", **SWITCH), s, "elect", -1)
    # leader 0 proposes follower 2 back: the controller refuses it (ineligibleReplicasForIsr)
    back = [*CAUGHT_UP, step("controlled_shutdown", 2), *APPLIED, *fetch(2), step("expand_isr", 0)]
    s = last([*back, step("handle_alter_partition", 0)], config)
    assert s.alter_partition_responses[0][0].error == "INELIGIBLE_REPLICA" and s.controller.isr == (0, 1)
    # with a metadata cache that learnt of it, the leader proposes nothing (isReplicaIsrEligible)
    config = cfg(protocol, **SWITCH, **CACHE)
    told = [*CAUGHT_UP, step("controlled_shutdown", 2), *APPLIED, step("update_metadata_cache", 0)]
    s = last([*told, *fetch(2)], config)
    assert "follower 2" in refusal(config, s, "expand_isr", 0, arg=2)


@pytest.mark.parametrize("protocol", KRAFT)
def test_fence_and_registration_end_a_controlled_shutdown(protocol):
    config = cfg(protocol, **SWITCH)
    shut = [*CAUGHT_UP, step("controlled_shutdown", 2)]
    c = last([*shut, step("fence", 2)], config).controller
    assert c.in_controlled_shutdown == () and c.fenced == (2,)
    s = last([*shut, step("crash", 2, kind="clean"), step("restart", 2), step("register", 2)], config)
    assert s.controller.in_controlled_shutdown == () and active(s.controller, 2)
    assert s.controller.broker_epochs[2] == 1


@pytest.mark.parametrize("protocol", KRAFT)
def test_the_guard(protocol):
    config = cfg(protocol, **SWITCH)
    s = initial_state(config)
    assert refusal(config, s, "controlled_shutdown", 2) is None
    off = cfg(protocol)
    assert "kraft_controlled_shutdown is off" in refusal(off, initial_state(off), "controlled_shutdown", 2)
    assert "down" in refusal(config, last([step("crash", 2, kind="clean")], config), "controlled_shutdown", 2)
    restarted = [step("crash", 2, kind="clean"), step("restart", 2)]
    assert "not registered" in refusal(config, last(restarted, config), "controlled_shutdown", 2)
    s = last([*restarted, step("register", 2)], config)  # registered, the LeaderAndIsr of it not applied yet
    assert "not registered" in refusal(config, s, "controlled_shutdown", 2)
    assert "fenced" in refusal(config, last([step("fence", 2)], config), "controlled_shutdown", 2)
    s = last([step("controlled_shutdown", 2)], config)
    assert "already" in refusal(config, s, "controlled_shutdown", 2)


@pytest.mark.parametrize("protocol", [p for p in PROTOCOLS if p not in KRAFT])
def test_the_switch_is_refused_with_the_variants_before_kip_903(protocol):
    with pytest.raises(ConfigError, match="kraft_controlled_shutdown: valid only with kip-903"):
        cfg(protocol, **SWITCH)


def test_states_and_their_text_are_as_before_without_the_switch():
    assert "in_controlled_shutdown" not in repr(last(CAUGHT_UP, cfg()))
    assert "in_controlled_shutdown" not in repr(last(CAUGHT_UP, cfg(**SWITCH)))
    assert "in_controlled_shutdown=(2,)" in repr(last([step("controlled_shutdown", 2)], cfg(**SWITCH)))
    assert "kraft_controlled_shutdown" not in cfg().to_schedule()
    assert cfg(**SWITCH).to_schedule()["kraft_controlled_shutdown"] is True
