"""Event logs with ``kraft_controlled_shutdown`` in their header (docs/steps.md): the controller's
``controlled_shutdown`` event is the model's step of that name; without the switch it is read as today's
stand-in (an election with the broker's removal, or a fence that does not fence), which keeps the broker
active: the step-mode simulation's log of the stop soak's scenario (tests/controlled_shutdown.py) is
explained with the switch and refused without it, where the leader's cache holds the broker ineligible."""

from __future__ import annotations

import json
from pathlib import Path

from controlled_shutdown import ALL, APPLIED, LEADER_STOPPED, REACHED, STOPPED

from isrcheck.conformance.engines.validate.validation import validate_path
from isrcheck.impl.controller import CONTROLLER_ID
from isrcheck.impl.eventlog import EventLog, run_header
from isrcheck.impl.sim import Cluster
from isrcheck.impl.sut.driver import SimDriver, cluster_config
from isrcheck.impl.sut.steps import parse_step

SWITCH = "kraft_controlled_shutdown"


def _logged(path: Path, steps) -> None:
    """The step-mode simulation's event log of ``steps`` (kip-966) with the switch, the caches and the HW's wait."""
    config = cluster_config("kip-966", ALL)
    log = EventLog(str(path), run_header(config), CONTROLLER_ID)
    driver = SimDriver(config, lambda c: Cluster(c, events=log))
    for doc in steps:
        assert driver.step(*parse_step(doc, 3))[0] is None, doc
    log.close()


def _switch_off(path: Path) -> None:
    for f in path.glob("*.jsonl"):
        lines = [json.loads(line) for line in f.read_text().splitlines()]
        lines[0]["config"][SWITCH] = False
        f.write_text("\n".join(json.dumps(line) for line in lines) + "\n")


def test_a_followers_controlled_shutdown_is_explained_with_the_switch_and_refused_without(tmp_path):
    _logged(tmp_path, STOPPED + REACHED)
    lines = (tmp_path / "controller.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["config"][SWITCH] is True
    shut = [json.loads(x) for x in lines[1:] if '"controlled_shutdown"' in x]
    assert len(shut) == 1 and shut[0]["state"]["isr"] == [0, 1]
    verdict, _, _ = validate_path(str(tmp_path))
    assert verdict.explained, verdict.to_json()
    _switch_off(tmp_path)
    verdict, _, _ = validate_path(str(tmp_path))
    assert not verdict.explained and verdict.event.step == "deliver_leader_and_isr", verdict.to_json()


def test_without_the_switch_the_leaders_cache_is_refused(tmp_path):
    """Broker 2 not told of the change (the stand-in's fence tells it nothing): the leader's cache, which
    holds broker 2 ineligible, is what the stand-in cannot explain: it keeps broker 2 registered."""
    _logged(tmp_path, [st for st in STOPPED if st != APPLIED[2]] + REACHED)
    assert validate_path(str(tmp_path))[0].explained
    _switch_off(tmp_path)
    verdict, _, _ = validate_path(str(tmp_path))
    assert not verdict.explained and verdict.event.step == "update_metadata_cache", verdict.to_json()


def test_a_leaders_controlled_shutdown_is_explained_with_the_switch(tmp_path):
    _logged(tmp_path, LEADER_STOPPED)
    verdict, _, _ = validate_path(str(tmp_path))
    assert verdict.explained, verdict.to_json()
