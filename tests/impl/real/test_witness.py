"""TimerWitness (impl/real/witness.py): ``timers`` lines on a fixed lattice, points a stalled loop
passed not witnessed twice, none once the node shuts down (its purgatories' timers are cancelled)."""

from __future__ import annotations

import json

from isrcheck.impl.eventlog import EventLog, run_header
from isrcheck.impl.real.witness import TimerWitness
from isrcheck.impl.replication import ClusterConfig
from isrcheck.impl.sim.clock import SimClock


def _lines(tmp_path) -> list[tuple[int, int]]:
    text = (tmp_path / "broker-0.jsonl").read_text().splitlines()[1:]
    return [(x["t"], x["due"]) for x in map(json.loads, text)]


def test_the_witness_logs_each_lattice_point_it_ran_and_stops_with_its_node(tmp_path):
    clock = SimClock(5)
    events = EventLog(str(tmp_path), run_header(ClusterConfig()), 3000, clock.now_ms)
    witness = TimerWitness(clock, events, 0, period_ms=100)
    witness.start()
    clock.advance(200)
    clock._now += 350  # the loop stalled 350 ms: the timer due at 305 runs late, at 555
    clock.advance(0)
    clock.advance(100)
    witness.stop()
    clock.advance(500)
    events.flush()
    assert _lines(tmp_path) == [(105, 105), (205, 205), (555, 305), (605, 605)]
