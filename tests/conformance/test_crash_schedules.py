"""Every step of the crash schedules real clusters have (fast bounce, zombie and rejoin, leader
move, lost disk, HW checkpoint, multi-record batch, partial fetch, partial and torn power loss)
is taken by model and implementation alike, with the same outputs and abstract states."""

import pytest

from isrcheck.conformance import Lockstep, Schedule
from isrcheck.conformance.core.schedule import load_config


def fetch(r, max_batches=0):
    send = {"step": "send_fetch", "replica": r}
    if max_batches:
        send["max_batches"] = max_batches
    return [send, {"step": "handle_fetch", "replica": r}, {"step": "handle_fetch_response", "replica": r}]


def produce(r, acks, records=1):
    return {"step": "produce", "replica": r, "acks": acks, **({"records": records} if records != 1 else {})}


REPLICATED = [produce(0, -1, 2)] + fetch(1) + fetch(2) + fetch(1) + fetch(2) + fetch(1) + fetch(2)  # HW known to all

CASES = {
    "leader move to a live follower": REPLICATED
    + [
        {"step": "elect", "replica": 2},
        {"step": "deliver_leader_and_isr", "replica": 0, "index": 0},
        {"step": "deliver_leader_and_isr", "replica": 2, "index": 0},
        produce(2, 1, 3),
    ]
    + fetch(0, 1),
    "fast bounce of the leader": REPLICATED
    + [
        {"step": "crash", "replica": 0, "kind": "process"},
        {"step": "restart", "replica": 0},
        {"step": "deliver_leader_and_isr", "replica": 0, "index": 0},
        produce(0, -1),
    ]
    + fetch(1)
    + fetch(1),
    "zombie follower rejoins": REPLICATED
    + [{"step": "fence", "replica": 2}, {"step": "deliver_leader_and_isr", "replica": 0, "index": 0}, produce(0, -1)]
    + fetch(1)
    + fetch(2)
    + [{"step": "rejoin", "replica": 2}, {"step": "deliver_leader_and_isr", "replica": 2, "index": 0}],
    "lost disk, restart empty, refill": REPLICATED
    + [
        {"step": "crash", "replica": 2, "kind": "clean"},
        {"step": "fence", "replica": 2},
        {"step": "deliver_leader_and_isr", "replica": 0, "index": 0},
        {"step": "lose_disk", "replica": 2},
        {"step": "restart", "replica": 2},
        {"step": "deliver_leader_and_isr", "replica": 2, "index": 0},
    ]
    + fetch(2, 1)
    + fetch(2),
    "HW checkpoint without a flush, then a power loss": REPLICATED
    + [
        {"step": "checkpoint_hw", "replica": 2},
        {"step": "crash", "replica": 2, "kind": "power"},
        {"step": "fence", "replica": 2},
        {"step": "deliver_leader_and_isr", "replica": 0, "index": 0},
        {"step": "restart", "replica": 2},
    ],
    "power loss keeps one unflushed batch": [produce(0, 1, 3), produce(0, 1), produce(0, 1, 2)]
    + fetch(1)
    + [
        {"step": "crash", "replica": 1, "kind": "power", "survive": 2},
        {"step": "fence", "replica": 1},
        {"step": "restart", "replica": 1},
    ],
    "power loss tears a batch": [produce(0, 1, 2)]
    + fetch(1)
    + [{"step": "flush", "replica": 1}, produce(0, 1, 3), produce(0, 1)]
    + fetch(1)
    + [
        {"step": "crash", "replica": 1, "kind": "power", "torn": True},
        {"step": "fence", "replica": 1},
        {"step": "restart", "replica": 1},
    ],
}


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("protocol", ["hw-truncation", "kip-320"])
def test_model_and_implementation_take_every_step_alike(name, protocol):
    schedule = Schedule.from_json(Schedule(protocol, load_config({"replicas": 3}), tuple(CASES[name])).to_json())
    run = Lockstep.run(schedule)
    verdict, refused = run.verdict, list(run.refused)
    assert verdict.kind == "pass", (verdict.summary(), verdict.diff)
    assert refused == [], refused  # every step was taken, so each was compared on both sides
