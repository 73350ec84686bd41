"""The scenarios the tests of ``unfence_at_heartbeat`` share (docs/steps.md, ``unfence``).

``KILL_SOAK``: Apache Kafka's kill soak: broker 1 is killed, restarts and registers (awaiting unfence),
applies its registration's LeaderAndIsr (caught up); then broker 0's session expires (``FENCE_0``). KRaft
holds both fenced until broker 1's next heartbeat unfences it (``UNFENCE_1``).
``LAST_MEMBER``: kip-903, broker 0 the last ISR member, fenced with 1 and 2 down; it restarts, registers
and catches up, and the partition stays leaderless until it is unfenced.
``FOLLOWER_BACK``: broker 2 restarts, registers, catches up and fetches; its leader proposes it back."""

from __future__ import annotations

from split_switches import step

UNFENCE = {"unfence_at_heartbeat": True}
PROTOCOLS = ("kip-903", "kip-966")  # the variants with register


def back(r: int) -> list:
    """Broker ``r`` restarts and registers (its registration's LeaderAndIsr is the last it was sent)."""
    return [step("restart", r), step("register", r)]


KILL_SOAK = [step("crash", 1, kind="process"), *back(1), step("deliver_leader_and_isr", 1)]
FENCE_0 = [step("fence", 0)]
UNFENCE_1 = [step("unfence", 1)]

LAST_MEMBER = [
    step("crash", 1, kind="process"),
    step("crash", 2, kind="process"),
    step("fence", 1),
    step("fence", 2),
    step("crash", 0, kind="process"),
    step("fence", 0),
    *back(0),
    step("deliver_leader_and_isr", 0),
]

FOLLOWER_BACK = [
    step("crash", 2, kind="process"),
    *back(2),
    step("deliver_leader_and_isr", 0),
    step("deliver_leader_and_isr", 1),
    step("deliver_leader_and_isr", 2),
    step("send_fetch", 2),
    step("handle_fetch", 2),
    step("handle_fetch_response", 2),
    step("expand_isr", 0),
    step("handle_alter_partition", 0),
]
