"""The implementation's HW with ``hw_waits_for_caught_up`` (docs/steps.md, ``maybe_increment_leader_hw``;
Kafka 3.6+'s Partition.maybeIncrementLeaderHW, KAFKA-15021) on Kafka 4.4.0's scenario (tests/hw_waits.py),
taken as schedule steps by the step-mode simulation alone."""

from __future__ import annotations

import pytest
from hw_waits import CATCHING_UP, CAUGHT_UP, OUT, REACHED, WAITS, lagged

from isrcheck.impl.sut.driver import SimDriver, cluster_config
from isrcheck.impl.sut.steps import parse_step

LAG = 2  # replica_lag_time_max_ticks' default


def leader_after(steps, protocol="kip-966", **switch):
    """Leader 0's snapshot after ``steps``, every one of them taken."""
    driver = SimDriver(cluster_config(protocol, {"replica_lag_time_max_ticks": LAG, **switch}))
    for doc in steps:
        refused, _outputs = driver.step(*parse_step(doc, 3))
        assert refused is None, (doc, refused)
    return driver.cluster.snapshot().brokers[0]


@pytest.mark.parametrize("protocol", ["hw-truncation", "kip-101", "kip-320", "kip-903", "kip-966"])
def test_the_hw_stops_at_a_caught_up_followers_leo_outside_the_isr(protocol):
    lead = leader_after(OUT, protocol)
    assert (lead.isr, lead.remote_leo[1:], lead.hw) == ((0, 1), (0, 0), 0)
    assert leader_after(OUT + REACHED, protocol).hw == 1  # the switch off: the maximal ISR alone
    lead = leader_after(OUT + REACHED, protocol, **WAITS)
    assert lead.remote_leo[1] == 1 and lead.hw == 0  # follower 2, caught up at LEO 0, holds it


def test_the_hw_moves_once_the_follower_lags_longer_than_the_lag_time():
    assert leader_after(lagged(LAG), **WAITS).hw == 0  # now - last caught up = the lag time
    assert leader_after(lagged(LAG + 1), **WAITS).hw == 1


def test_the_hw_follows_the_follower_as_it_catches_up():
    lead = leader_after(CATCHING_UP, **WAITS)
    assert lead.remote_leo[2] == 0 and lead.hw == 0
    lead = leader_after(CAUGHT_UP, **WAITS)
    assert lead.remote_leo[2] == 1 and lead.hw == 1


def test_the_config_takes_only_a_bool():
    with pytest.raises(ValueError, match="hw_waits_for_caught_up"):
        cluster_config("kip-966", {"hw_waits_for_caught_up": 1})
