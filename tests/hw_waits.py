"""The scenario the tests of ``hw_waits_for_caught_up`` share (docs/steps.md, ``maybe_increment_leader_hw``),
a recording of Kafka 4.4.0's: ISR [leader, f1], f2 out of it yet caught up a moment ago at a lower LEO;
f1's fetch reaches the leader's LEO, and Kafka's HW stays at f2's LEO (shouldWaitForReplicaToJoinIsr)."""

from __future__ import annotations

from split_switches import step

WAITS = {"hw_waits_for_caught_up": True}


def fetch(f: int) -> list[dict]:
    return [step("send_fetch", f), step("handle_fetch", f), step("handle_fetch_response", f)]


# at tick 3 follower 1 catches up (LEO 0) and leader 0 takes follower 2, silent since tick 0, out of
# the ISR; follower 2 then fetches at LEO 0 (caught up at tick 3) and stays out; record 1 is appended
# and follower 1 fetches from offset 0: ISR [0, 1], leader LEO 1, both remote LEOs 0, HW 0
SHRUNK = [step("shrink_isr", 0), step("handle_alter_partition", 0), step("handle_alter_partition_response", 0)]
OUT = [*[step("tick")] * 3, *fetch(1), *SHRUNK, *fetch(2), step("produce", 0, acks=1), *fetch(1)]
REACHED = [step("send_fetch", 1), step("handle_fetch", 1)]  # follower 1 reports LEO 1


def lagged(ticks: int) -> list[dict]:
    """The scenario with ``ticks`` ticks before follower 1 reports LEO 1."""
    return OUT + [step("tick")] * ticks + REACHED


# then follower 2 fetches from offset 0 (reading record 1), and again from offset 1: LEO 1 reached
CATCHING_UP = OUT + REACHED + [step("handle_fetch_response", 1), *fetch(2)]
CAUGHT_UP = CATCHING_UP + fetch(2)
