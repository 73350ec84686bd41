"""Validating a log whose header sets hw_waits_for_caught_up (docs/steps.md, ``maybe_increment_leader_hw``;
Kafka 3.6+'s Partition.maybeIncrementLeaderHW, KAFKA-15021): the implementation's log of Kafka 4.4.0's
scenario (tests/hw_waits.py), where a follower outside the ISR holds the leader's HW, is explained with
the switch and refused without it, as a recording of Kafka's would be."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from hw_waits import CAUGHT_UP
from split_switches import self_driven_log

from isrcheck.conformance.engines.validate.validation import validate_path
from isrcheck.impl.controller import CONTROLLER_ID
from isrcheck.impl.eventlog import EventLog, run_header
from isrcheck.impl.sim import Cluster
from isrcheck.impl.sim.workload import sim_config
from isrcheck.impl.sut.driver import SimDriver, cluster_config
from isrcheck.impl.sut.steps import parse_step

SWITCH = "hw_waits_for_caught_up"


def _logged(path: Path, on: bool) -> None:
    """The step-mode simulation's event log of the scenario, the switch ``on`` or off."""
    config = cluster_config("kip-966", {SWITCH: on} if on else {})
    log = EventLog(str(path), run_header(config), CONTROLLER_ID)
    driver = SimDriver(config, lambda c: Cluster(c, events=log))
    for doc in CAUGHT_UP:
        assert driver.step(*parse_step(doc, 3))[0] is None, doc
    log.close()


def _set_switch(path: Path, on: bool) -> None:
    """Every file's header with the switch set to ``on``."""
    for f in path.glob("*.jsonl"):
        lines = f.read_text().splitlines()
        header = json.loads(lines[0])
        header["config"][SWITCH] = on
        f.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")


def test_a_log_of_the_hw_held_by_a_caught_up_follower_is_explained_with_the_switch(tmp_path):
    _logged(tmp_path, True)
    header = json.loads((tmp_path / "controller.jsonl").read_text().splitlines()[0])
    assert header["config"][SWITCH] is True
    verdict, _, _ = validate_path(str(tmp_path))
    assert verdict.explained, verdict.to_json()
    _set_switch(tmp_path, False)  # the model then raises the HW past follower 2's LEO
    verdict, _, _ = validate_path(str(tmp_path))
    assert not verdict.explained and verdict.event.step == "handle_fetch", verdict.to_json()


def test_a_log_without_the_switch_is_refused_with_it(tmp_path):
    _logged(tmp_path, False)
    verdict, _, _ = validate_path(str(tmp_path))
    assert verdict.explained, verdict.to_json()
    _set_switch(tmp_path, True)
    verdict, _, _ = validate_path(str(tmp_path))
    assert not verdict.explained and verdict.event.step == "handle_fetch", verdict.to_json()


def test_a_self_driven_run_with_the_switch_is_explained(tmp_path):
    config = dataclasses.replace(sim_config("kip-966", 3), **{SWITCH: True})
    self_driven_log(tmp_path, config, SWITCH)
    verdict, _, _ = validate_path(str(tmp_path))
    assert verdict.explained, verdict.to_json()
