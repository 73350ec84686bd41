"""Validating a log whose header sets catch_up_at_previous_fetch (docs/steps.md, ``handle_fetch``;
Kafka's Replica.updateFetchStateOrThrow): the implementation's log of tests/prev_fetch.py's scenario, where
a follower outside the ISR caught up as of its previous Fetch holds the leader's HW
(hw_waits_for_caught_up), is explained with the switch and refused without it."""

from __future__ import annotations

import json
from pathlib import Path

from prev_fetch import BEHIND, BOTH

from isrcheck.conformance.engines.validate.events import model_config
from isrcheck.conformance.engines.validate.validation import validate_path
from isrcheck.impl.controller import CONTROLLER_ID
from isrcheck.impl.eventlog import EventLog, run_header
from isrcheck.impl.sim import Cluster
from isrcheck.impl.sut.driver import SimDriver, cluster_config
from isrcheck.impl.sut.steps import parse_step

SWITCH = "catch_up_at_previous_fetch"


def _logged(path: Path) -> None:
    """The step-mode simulation's event log of the scenario, both switches on."""
    config = cluster_config("kip-966", {"replica_lag_time_max_ticks": 2, **BOTH})
    log = EventLog(str(path), run_header(config), CONTROLLER_ID)
    driver = SimDriver(config, lambda c: Cluster(c, events=log))
    for doc in BEHIND:
        assert driver.step(*parse_step(doc, 3))[0] is None, doc
    log.close()


def test_the_header_sets_the_models_switch(tmp_path):
    _logged(tmp_path)
    header = json.loads((tmp_path / "controller.jsonl").read_text().splitlines()[0])
    assert header["config"][SWITCH] is True and model_config(header, "log").catch_up_at_previous_fetch
    assert not model_config({**header, "config": {**header["config"], SWITCH: False}}, "log").catch_up_at_previous_fetch


def test_a_log_of_the_hw_held_by_a_follower_caught_up_as_of_its_previous_fetch(tmp_path):
    _logged(tmp_path)
    verdict, _, _ = validate_path(str(tmp_path))
    assert verdict.explained, verdict.to_json()
    for f in tmp_path.glob("*.jsonl"):  # the switch off: the model raises the HW past follower 2's LEO
        lines = f.read_text().splitlines()
        header = json.loads(lines[0])
        header["config"][SWITCH] = False
        f.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    verdict, _, _ = validate_path(str(tmp_path))
    assert not verdict.explained and verdict.event.step == "handle_fetch", verdict.to_json()
