"""A follower caught up as of its previous Fetch (docs/steps.md, ``handle_fetch`` with
``catch_up_at_previous_fetch``): Kafka's Replica.updateFetchStateOrThrow, its second rule
(lastFetchLeaderLogEndOffset, lastFetchTimeMs), on Kafka's example and tests/prev_fetch.py's scenarios."""

from __future__ import annotations

import pytest
import split_switches
from hw_waits import WAITS
from prev_fetch import BEHIND, BOTH, PREVIOUS, STEADY
from split_switches import step

from isrcheck.model import PROTOCOLS, ModelConfig, Scope, explore
from isrcheck.model.actions import _update_fetch_state
from isrcheck.model.state import initial_state, updated


def cfg(protocol: str = "kip-966", **switches) -> ModelConfig:
    return ModelConfig(protocol=protocol, **switches)


def leader(steps, config):
    return split_switches.last(steps, config).replicas[0]


@pytest.mark.parametrize("on", [False, True])
def test_kafkas_example(on):
    """The leader's LEO is 307 at follower 2's first Fetch (tick 10), 310 at its second (tick 20),
    which fetches from 307: caught up at tick 10 with the switch, not caught up without it."""
    config = cfg(**(PREVIOUS if on else {}))
    lead = updated(initial_state(config).replicas[0], last_caught_up=(0, 0, 0))
    first = _update_fetch_state(config, lead, 2, 300, 307, 10)
    assert first.last_caught_up[2] == 0  # 300 is short of 307, and nothing was read before
    second = _update_fetch_state(config, first, 2, 307, 310, 20)
    assert second.last_caught_up[2] == (10 if on else 0)
    if on:
        assert (second.last_fetch_leo[2], second.last_fetch_time[2]) == (310, 20)
        assert _update_fetch_state(config, second, 2, 309, 312, 30).last_caught_up[2] == 10  # 309 < 310
    else:
        assert second.last_fetch_leo == second.last_fetch_time == ()  # kept only with the switch


def test_the_highest_leo_read_is_kept():
    """lastFetchLeaderLogEndOffset := max(leader LEO, itself): a LEO read lower than an earlier one
    (a truncated leader's, a held read's) does not lower it."""
    config = cfg(**PREVIOUS)
    lead = _update_fetch_state(config, initial_state(config).replicas[0], 1, 0, 5, 1)
    lower = _update_fetch_state(config, lead, 1, 0, 3, 2)
    assert (lower.last_fetch_leo[1], lower.last_fetch_time[1]) == (5, 2)


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_a_follower_short_of_the_leo_is_caught_up_as_of_its_previous_fetch(protocol):
    lead = leader(STEADY, cfg(protocol, **PREVIOUS))
    assert lead.remote_leo[2] == 1 and lead.last_caught_up[2] == 1  # as of its first Fetch, tick 1
    assert (lead.last_fetch_leo[2], lead.last_fetch_time[2]) == (2, 2)
    lead = leader(STEADY, cfg(protocol))
    assert lead.remote_leo[2] == 1 and lead.last_caught_up[2] == 0
    assert lead.last_fetch_leo == () and "last_fetch" not in repr(lead)  # states and their text as before


# follower 2 (LEO 2) elected, then follower 1 fetches from it; broker 0 has yet to hear of it
MOVED = [step("handle_fetch_response", 2), step("elect", 2), *(step("deliver_leader_and_isr", r) for r in (1, 2))]
FETCHED = [step("send_fetch", 1), step("handle_fetch", 1)]
# broker 0 elected again: it applies that newer LeaderAndIsr first (makeLeader, no makeFollower between)
BACK = [step("elect", 0), step("deliver_leader_and_isr", 2), step("deliver_leader_and_isr", 0, index=1)]


def test_make_leader_and_make_follower_forget_it():
    config = cfg(**PREVIOUS)
    s = split_switches.last(STEADY + MOVED + FETCHED, config)
    assert s.replicas[2].leader == 2 and (s.replicas[2].last_fetch_leo[1], s.replicas[2].last_fetch_time[1]) == (2, 2)
    assert s.replicas[0].leader == 0 and s.replicas[0].last_fetch_leo[2] == 2  # its leadership of epoch 0
    back = split_switches.last(STEADY + MOVED + FETCHED + BACK, config)
    assert (back.replicas[0].leader, back.replicas[0].leader_epoch) == (0, 2)
    assert back.replicas[0].last_fetch_leo == back.replicas[0].last_fetch_time == ()  # resetReplicaState
    assert back.replicas[2].last_fetch_leo == back.replicas[2].last_fetch_time == ()  # makeFollower


def _held(steps, hw_first: bool = False) -> list:
    """``steps`` with each handle_fetch taken as a held read, its read first (with ``hw_first``
    the HW's read, then the rest)."""
    reads = ["read_fetch_hw", "read_fetch"] if hw_first else ["read_fetch"]
    out = []
    for st in steps:
        if st["step"] == "handle_fetch":
            out += [step(name, st["replica"]) for name in reads]
        out.append(st)
    return out


@pytest.mark.parametrize("hw_first", [False, True])
def test_a_held_read_updates_as_the_whole_handling_does(hw_first):
    whole = leader(STEADY, cfg(**PREVIOUS))
    held = leader(_held(STEADY, hw_first), cfg(split_fetch_handling=True, **PREVIOUS))
    fields = ("remote_leo", "last_caught_up", "last_fetch_leo", "last_fetch_time", "hw")
    assert [getattr(held, f) for f in fields] == [getattr(whole, f) for f in fields]


def test_a_held_read_takes_the_time_of_its_hw_read_and_the_leo_of_its_batches_read():
    """Kafka's fetchTimeMs is taken before the HW's read; the LEO compared is read with the batches."""
    split = cfg(split_fetch_handling=True, **PREVIOUS)
    steps = STEADY[:-1] + [step("read_fetch_hw", 2), step("tick"), step("produce", 0, acks=1), step("read_fetch", 2)]
    s = split_switches.last(steps, split)
    (h,) = s.replicas[0].held_reads
    assert (h.fetch_time, h.leo_read, h.fetch_offset) == (2, 3, 1)
    lead = split_switches.last(steps + [step("handle_fetch", 2)], split).replicas[0]
    assert lead.last_caught_up[2] == 1 and (lead.last_fetch_leo[2], lead.last_fetch_time[2]) == (3, 2)


def test_with_hw_waits_a_follower_caught_up_only_by_the_rule_holds_the_hw_back():
    """ISR [0, 1]; follower 2, outside it at LEO 1, last caught up at tick 3 by the first rule, and at
    tick 5 by this one: at tick 7 follower 1 reaches LEO 2, and the HW waits for follower 2 only when
    both switches are on (caught up within the lag time of 2 ticks as of tick 5, not as of tick 3)."""
    both = leader(BEHIND, cfg(**BOTH))
    assert (both.isr, both.remote_leo, len(both.log)) == ((0, 1), (-1, 2, 1), 2)
    assert both.last_caught_up[2] == 5 and both.hw == 1
    for switches in ({}, WAITS, PREVIOUS):
        lead = leader(BEHIND, cfg(**switches))
        assert lead.last_caught_up[2] == (5 if switches == PREVIOUS else 3) and lead.hw == 2


def test_the_switch_is_left_out_of_a_schedule_when_off():
    assert "catch_up_at_previous_fetch" not in cfg().to_schedule()
    assert cfg(**PREVIOUS).to_schedule()["catch_up_at_previous_fetch"] is True
    assert ModelConfig.of("kip-966", cfg(**PREVIOUS)) == cfg(**PREVIOUS)


SCOPE = Scope(max_records=2, max_epoch=2, max_crashes=0, max_clock=2)


def test_the_explorer_reaches_states_the_switch_decides_and_keeps_every_property():
    off, on = explore(cfg(), SCOPE), explore(cfg(**PREVIOUS), SCOPE)
    assert off.complete and on.complete and not off.violations and not on.violations
    assert on.states > off.states  # the last Fetch's LEO and time are state


def test_renaming_brokers_commutes_with_the_rule():
    """``state.permuted`` renames the per-follower last Fetch state."""
    assert (
        split_switches.renamings_commute(cfg(**PREVIOUS), SCOPE, lambda s: any(r.last_fetch_leo for r in s.replicas))
        > 50
    )
