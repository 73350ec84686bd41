"""A broker's metadata cache (docs/steps.md, ``metadata_cache``) in lockstep: the implementation keeps its
own cache of the controller's registrations and reads it where Kafka's Partition.isReplicaIsrEligible does,
so the scenarios of tests/metadata_cache.py and random walks with the switch on pass, and an implementation
whose leaders read no cache, or forget the broker epoch comparison, is a divergence."""

from __future__ import annotations

import pytest
from metadata_cache import BOTH, CACHE, REACHED, REJOINED, TAKEN_OUT, TOLD, ZOMBIE
from split_switches import driver_carries, step, walk_counts

from isrcheck.conformance import Schedule, run_schedule
from isrcheck.conformance.core.schedule import ScheduleConfig
from isrcheck.impl.replication.partition import Partition

PROTOCOLS = ("hw-truncation", "kip-101", "kip-279", "kip-320", "kip-903", "kip-966")
EXPAND = [step("expand_isr", 0), step("handle_alter_partition", 0), step("handle_alter_partition_response", 0)]


def _schedule(protocol: str, steps, switches=BOTH) -> Schedule:
    return Schedule(protocol, ScheduleConfig(**switches), tuple(steps), name="metadata-cache")


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_scenarios_agree(protocol):
    for steps in (
        TAKEN_OUT + REACHED,
        TAKEN_OUT + TOLD + REACHED,
        TAKEN_OUT + REACHED + TOLD + [step("handle_fetch_response", 1), *REACHED],
        ZOMBIE + EXPAND,
        ZOMBIE + TOLD + EXPAND,  # refused on both sides
        REJOINED + EXPAND,
        REJOINED + TOLD + EXPAND,
        [step("crash", 2, kind="process"), step("fence", 1), step("restart", 2), step("register", 2)],
    ):
        verdict = run_schedule(_schedule(protocol, steps))
        assert verdict.kind == "pass", (steps, verdict.diff)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_random_walks_with_the_switch_on_pass_in_lockstep(protocol):
    def differing(schedule) -> int:  # how many caches an update brought up to the controller's
        return sum(st["step"] == "update_metadata_cache" for st in schedule.steps)

    taken, _ = walk_counts(protocol, CACHE, "update_metadata_cache", differing)
    assert taken >= 3, taken  # the walks take the step where it is enabled


def test_an_implementation_whose_leaders_read_no_cache_is_caught(monkeypatch):
    """Planted: a leader takes every follower of known LEO as eligible, as without the switch."""
    monkeypatch.setattr(Partition, "is_replica_isr_eligible", lambda self, r: self.followers[r].log_end_offset >= 0)
    verdict = run_schedule(_schedule("kip-966", TAKEN_OUT + TOLD + REACHED))
    assert verdict.kind == "divergence" and verdict.step == len(TAKEN_OUT) + 2, verdict.diff


def test_an_implementation_that_skips_the_broker_epoch_comparison_is_caught(monkeypatch):
    """Planted: the leader takes any broker epoch its cache holds unfenced as the follower's."""
    real = Partition.is_replica_isr_eligible

    def lax(self, r):
        follower = self.followers[r]
        kept, follower.broker_epoch = follower.broker_epoch, -1
        try:
            return real(self, r)
        finally:
            follower.broker_epoch = kept

    monkeypatch.setattr(Partition, "is_replica_isr_eligible", lax)
    verdict = run_schedule(_schedule("kip-966", REJOINED + EXPAND, CACHE))
    assert verdict.kind == "divergence" and verdict.step == len(REJOINED), verdict.diff


def test_the_driver_protocol_carries_the_switch():
    driver_carries(CACHE, ZOMBIE + TOLD)
