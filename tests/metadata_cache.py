"""The scenarios the tests of ``metadata_cache`` share (docs/steps.md, ``update_metadata_cache``).

``TAKEN_OUT``: Apache Kafka's at 125.8 s of the power soak: broker 2 lost power and the controller
fenced it and took it out of the ISR ([0, 1]), caught up at LEO 0 within the lag time; record 1 is
appended and follower 1 fetches it. With ``hw_waits_for_caught_up`` the leader's HW waits for broker 2
(``REACHED``) until its metadata cache learns of the fence (``TOLD``); Kafka's cache, told by the same
metadata batch, let it go.
``ZOMBIE``: broker 2 fenced while alive, taken out of the ISR, fetching on and caught up."""

from __future__ import annotations

from hw_waits import WAITS, fetch
from split_switches import step

CACHE = {"metadata_cache": True}
BOTH = {**WAITS, **CACHE}

TAKEN_OUT = [
    *fetch(1),
    *fetch(2),
    step("crash", 2, kind="power"),
    step("fence", 2),
    step("deliver_leader_and_isr", 0),
    step("deliver_leader_and_isr", 1),
    step("produce", 0, acks=1),
    *fetch(1),
]
REACHED = [step("send_fetch", 1), step("handle_fetch", 1)]  # follower 1 reports LEO 1
TOLD = [step("update_metadata_cache", 0)]  # the leader's cache learns of the fence

ZOMBIE = [
    *fetch(1),
    *fetch(2),
    step("fence", 2),
    step("deliver_leader_and_isr", 0),
    step("deliver_leader_and_isr", 1),
    *fetch(2),
]
# broker 2 registers again (a new broker epoch from kip-903 on) and fetches with it
REJOINED = ZOMBIE + [step("rejoin", 2), step("deliver_leader_and_isr", 2), *fetch(2)]
