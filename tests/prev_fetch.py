"""The scenarios the tests of ``catch_up_at_previous_fetch`` share (docs/steps.md, ``handle_fetch``):
Kafka's Replica.updateFetchStateOrThrow, a follower whose Fetch falls short of the leader's LEO but
reaches the LEO its previous Fetch read is caught up as of that previous Fetch."""

from __future__ import annotations

from hw_waits import OUT, WAITS, fetch
from split_switches import step

PREVIOUS = {"catch_up_at_previous_fetch": True}
BOTH = {**WAITS, **PREVIOUS}

# Kafka's example, scaled down: follower 2's first Fetch at tick 1 reads leader LEO 1 from offset 0;
# its second at tick 2, from offset 1, finds LEO 2: short of it, but at the LEO the first read
STEADY = [
    step("tick"),
    step("produce", 0, acks=1),
    *fetch(2),
    step("tick"),
    step("produce", 0, acks=1),
    step("send_fetch", 2),
    step("handle_fetch", 2),
]

# with hw_waits_for_caught_up (tests/hw_waits.py's OUT: ISR [0, 1], follower 2 out of it, caught up
# at tick 3, leader LEO 1): at tick 5 follower 2 reads record 1 (short of LEO 1 from offset 0), record
# 2 is appended, at tick 7 follower 2 fetches from offset 1 (short of LEO 2, at the LEO its previous
# Fetch read: caught up as of tick 5), then follower 1 reads record 2 and reaches LEO 2
BEHIND = [
    *OUT,
    step("tick"),
    step("tick"),
    *fetch(2),
    step("produce", 0, acks=1),
    step("tick"),
    step("tick"),
    step("send_fetch", 2),
    step("handle_fetch", 2),
    *fetch(1),
    step("send_fetch", 1),
    step("handle_fetch", 1),
]
