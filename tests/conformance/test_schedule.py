"""Schedule files: validation names the step and field; JSON round-trips."""
import json

import pytest

from isrcheck.conformance import Schedule, ScheduleError, load_schedule

GOOD = {"version": 1, "protocol": "kip-320", "config": {"replicas": 2, "min_insync_replicas": 1},
        "steps": [{"step": "produce", "replica": 0, "acks": -1}, {"step": "send_fetch", "replica": 1},
                  {"step": "drop", "message": "fetch_request", "replica": 1}, {"step": "tick"}]}


def with_step(i, step):
    doc = json.loads(json.dumps(GOOD))
    doc["steps"][i] = step
    return doc


@pytest.mark.parametrize("doc, message", [
    (with_step(0, {"step": "produce", "replica": 0, "acks": 2}), "steps[0].acks"),
    (with_step(1, {"step": "send_fetch", "replica": 2}), "steps[1].replica: expected a replica id 0..1"),
    (with_step(2, {"step": "drop", "message": "ping", "replica": 1}), "steps[2].message"),
    (with_step(3, {"step": "tick", "replica": 0}), "steps[3].replica: not a field of step 'tick'"),
    (with_step(1, {"step": "explode"}), "steps[1].step: unknown step 'explode'"),
    (with_step(0, {"step": "crash", "replica": 0}), "steps[0].kind: missing"),
    (with_step(0, {"step": "deliver_leader_and_isr", "replica": 0, "index": -1}), "steps[0].index"),
    (with_step(0, {"step": "produce", "replica": True, "acks": 1}), "steps[0].replica"),
    ({**GOOD, "protocol": "kip-999"}, "protocol: expected one of"),
    ({**GOOD, "version": 7}, "version: this build reads version 1"),
    ({**GOOD, "config": {"replicas": 2, "min_insync_replicas": 3}}, "config.min_insync_replicas"),
    ({**GOOD, "config": {"replica": 2}}, "config.replica: unknown config field"),
    ({**GOOD, "expected": {"kip-320": {"verdict": "fine"}}}, "expected.kip-320.verdict"),
    ({**GOOD, "steps": {"step": "tick"}}, "steps: expected a list"),
])
def test_invalid_schedules_name_the_field(doc, message):
    with pytest.raises(ScheduleError) as err:
        Schedule.from_json(doc)
    assert message in str(err.value)


def test_round_trip_fills_the_default_index_and_keeps_everything():
    s = Schedule.from_json({**GOOD, "expected": {"kip-320": "pass"}, "name": "n"})
    assert s.steps[2] == {"step": "drop", "message": "fetch_request", "replica": 1, "index": 0}
    again = Schedule.from_json(json.loads(s.dumps()))
    assert again == s and again.expected["kip-320"].verdict == "pass"


def test_kip966_is_not_a_protocol_this_build_runs():
    with pytest.raises(ScheduleError, match="protocol: expected one of"):
        Schedule.from_json({**GOOD, "protocol": "kip-966"})
