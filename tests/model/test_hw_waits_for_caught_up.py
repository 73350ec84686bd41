"""The leader's HW waits for a caught-up follower outside the ISR (docs/steps.md,
``maybe_increment_leader_hw`` with ``hw_waits_for_caught_up``): Kafka 3.6+'s
Partition.maybeIncrementLeaderHW also takes the LEO of every replica that shouldWaitForReplicaToJoinIsr
(ReplicaState.isCaughtUp and isReplicaIsrEligible), KAFKA-15021: Kafka 4.4.0's scenario (tests/hw_waits.py)."""

from __future__ import annotations

import pytest
import split_switches
from hw_waits import CATCHING_UP, CAUGHT_UP, OUT, REACHED, WAITS, lagged

from isrcheck.model import PROTOCOLS, ModelConfig
from isrcheck.model.next_state import NextState, maybe_increment_leader_hw
from isrcheck.model.state import updated


def cfg(protocol: str = "kip-966", **switch) -> ModelConfig:
    return ModelConfig(protocol=protocol, **switch)


def last(steps, config):
    return split_switches.last(steps, config)


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_the_hw_stops_at_a_caught_up_followers_leo_outside_the_isr(protocol):
    before = last(OUT, cfg(protocol))
    lead = before.replicas[0]
    assert (lead.isr, lead.remote_leo, len(lead.log), lead.hw) == ((0, 1), (-1, 0, 0), 1, 0)
    assert before.now - lead.last_caught_up[2] == 0  # follower 2 caught up at this tick
    assert last(OUT + REACHED, cfg(protocol)).replicas[0].hw == 1  # the switch off: the maximal ISR decides
    s = last(OUT + REACHED, cfg(protocol, **WAITS))
    assert s.replicas[0].remote_leo[1] == 1 and s.replicas[0].hw == 0  # follower 2's LEO holds it


def test_the_hw_moves_once_the_follower_lags_longer_than_the_lag_time():
    waits = cfg(**WAITS)
    lag = waits.replica_lag_time_max_ticks
    within = last(lagged(lag), waits)
    assert within.replicas[0].hw == 0  # now - last caught up = lag: still caught up
    s = last(lagged(lag + 1), waits)
    assert s.replicas[0].remote_leo[2] == 0 and s.replicas[0].hw == 1  # lagging: no longer waited for


def test_the_hw_reaches_the_follower_once_it_fetches_and_then_moves_on():
    s = last(CATCHING_UP, cfg(**WAITS))
    assert s.replicas[0].remote_leo[2] == 0 and s.replicas[0].hw == 0  # its fetch read record 1
    s = last(CAUGHT_UP, cfg(**WAITS))
    assert s.replicas[0].remote_leo[2] == 1 and s.replicas[0].hw == 1


def test_a_follower_of_unknown_leo_is_not_eligible():
    """A replica that has not fetched in this leader epoch (remote LEO and broker epoch unknown, Kafka's
    ReplicaState.Empty) is not ISR-eligible (isBrokerEpochIsrEligible), however recent its caught-up time."""
    waits = cfg(**WAITS)
    s = last(OUT + REACHED, waits)
    lead = s.replicas[0]
    nx = NextState(waits, s)
    unknown = updated(lead, hw=0, remote_leo=(-1, 1, -1))
    assert maybe_increment_leader_hw(nx, 0, unknown).hw == 1
    assert maybe_increment_leader_hw(nx, 0, updated(lead, hw=0)).hw == 0  # known at 0: waited for


def test_the_switch_is_left_out_of_a_schedule_when_off():
    assert "hw_waits_for_caught_up" not in cfg().to_schedule()
    assert cfg(**WAITS).to_schedule()["hw_waits_for_caught_up"] is True
    assert ModelConfig.of("kip-966", cfg(**WAITS)) == cfg(**WAITS)
