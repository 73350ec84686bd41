"""The scenarios the tests of ``kraft_controlled_shutdown`` share (docs/steps.md, ``controlled_shutdown``).

``STOPPED``: Apache Kafka 4.4.0's stop soak: ISR [0, 1, 2] led by broker 0, followers 1 and 2 caught up
at LEO 0; broker 2 (leading nothing here) asks to shut down and the controller takes it out of the ISR
in one partition change; every broker applies it and the leader's metadata cache learns of it; record 1
is appended and follower 1 fetches it (``REACHED``: its next Fetch reports LEO 1). Broker 2, caught up
within the lag time, is in controlled shutdown: no leader's HW waits for it (isBrokerShuttingDown)."""

from __future__ import annotations

from hw_waits import WAITS, fetch
from metadata_cache import CACHE
from split_switches import step

SWITCH = {"kraft_controlled_shutdown": True}
ALL = {**SWITCH, **WAITS, **CACHE}

CAUGHT_UP = [*fetch(1), *fetch(2)]
APPLIED = [step("deliver_leader_and_isr", b) for b in range(3)]
STOPPED = [
    *CAUGHT_UP,
    step("controlled_shutdown", 2),
    *APPLIED,
    step("update_metadata_cache", 0),
    step("produce", 0, acks=1),
    *fetch(1),
]
REACHED = [step("send_fetch", 1), step("handle_fetch", 1)]
# the leader's own controlled shutdown: broker 1, the first active member left, leads
LEADER_STOPPED = [*CAUGHT_UP, step("controlled_shutdown", 0)]
