"""Event logs with ``metadata_cache`` in their header (docs/steps.md): a broker logs
``update_metadata_cache`` with the ``cached_broker_epochs`` it set, which the validator takes as the step of
that name and compares by the brokers the cache holds fenced; the step-mode simulation's log of the 125.8 s
scenario (tests/metadata_cache.py) is explained with the switch and refused without it, and a self-driven
run with the switch, its brokers told of fences by the controller, is explained, an edited one refused."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from metadata_cache import BOTH, REACHED, TAKEN_OUT, TOLD
from split_switches import self_driven_log

from isrcheck.conformance.engines.validate.validation import validate_path
from isrcheck.impl.controller import CONTROLLER_ID
from isrcheck.impl.eventlog import EventLog, run_header
from isrcheck.impl.sim import Cluster
from isrcheck.impl.sim.workload import sim_config
from isrcheck.impl.sut.driver import SimDriver, cluster_config
from isrcheck.impl.sut.steps import parse_step

SWITCH = "metadata_cache"


def _logged(path: Path, steps) -> None:
    """The step-mode simulation's event log of ``steps`` with the HW's wait and the cache on."""
    config = cluster_config("kip-966", BOTH)
    log = EventLog(str(path), run_header(config), CONTROLLER_ID)
    driver = SimDriver(config, lambda c: Cluster(c, events=log))
    for doc in steps:
        assert driver.step(*parse_step(doc, 3))[0] is None, doc
    log.close()


def _edited(path: Path, edit) -> None:
    """Every line of every file through ``edit`` (the header included)."""
    for f in path.glob("*.jsonl"):
        lines = [json.loads(line) for line in f.read_text().splitlines()]
        f.write_text("\n".join(json.dumps(edit(line)) for line in lines) + "\n")


def _switch_off(line: dict) -> dict:
    if "format" in line:
        line["config"][SWITCH] = False
    return line


def test_the_hw_past_a_fenced_follower_is_explained_with_the_switch(tmp_path):
    _logged(tmp_path, TAKEN_OUT + TOLD + REACHED)
    lines = (tmp_path / "broker-0.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["config"][SWITCH] is True
    told = [json.loads(x) for x in lines[1:] if '"update_metadata_cache"' in x]
    assert len(told) == 1 and told[0]["state"]["cached_broker_epochs"][2] == -1
    verdict, _, _ = validate_path(str(tmp_path))
    assert verdict.explained, verdict.to_json()
    _edited(tmp_path, _switch_off)  # the model refuses the step without the switch
    verdict, _, _ = validate_path(str(tmp_path))
    assert not verdict.explained and verdict.event.step == "update_metadata_cache", verdict.to_json()


def test_a_cache_logged_without_the_fence_is_refused_where_the_hw_went_past(tmp_path):
    """The edited cache holds broker 2 unfenced, as the model's did already: no step, and the HW the
    leader then raised past broker 2's LEO is one the model's leader, waiting for it, did not."""
    _logged(tmp_path, TAKEN_OUT + TOLD + REACHED)

    def unfenced(line: dict) -> dict:
        if line.get("step") == "update_metadata_cache":
            line["state"]["cached_broker_epochs"][2] = 7  # broker 2 unfenced in the cache
        return line

    _edited(tmp_path, unfenced)
    verdict, _, _ = validate_path(str(tmp_path))
    assert not verdict.explained and verdict.event.step == "handle_fetch", verdict.to_json()
    assert "hw is 0 in the model, 1 in the log" in json.dumps(verdict.to_json())


def test_a_self_driven_run_with_the_switch_is_explained_and_an_edited_one_refused(tmp_path):
    config = dataclasses.replace(sim_config("kip-966", 3), hw_waits_for_caught_up=True, **{SWITCH: True})
    self_driven_log(tmp_path, config, SWITCH)
    told = sum(text.count('"update_metadata_cache"') for text in (f.read_text() for f in tmp_path.glob("*.jsonl")))
    assert told >= 3, told  # the brokers were told of registration changes
    verdict, _, _ = validate_path(str(tmp_path))
    assert verdict.explained, verdict.to_json()

    # the last cache update edited to hold fenced a broker that it and the node's update before it hold unfenced
    updates = sorted(
        (json.loads(x) for f in tmp_path.glob("*.jsonl") for x in f.read_text().splitlines()),
        key=lambda e: e.get("t", -1),
    )
    updates = [e for e in updates if e.get("step") == "update_metadata_cache"]
    last = updates[-1]
    before = next((e for e in reversed(updates[:-1]) if e["node"] == last["node"]), None)
    kept = [b for b, e in enumerate(last["state"]["cached_broker_epochs"]) if e >= 0]
    if before is not None:
        kept = [b for b in kept if before["state"]["cached_broker_epochs"][b] >= 0]
    never = kept[0]

    def fenced_too(line: dict) -> dict:  # the last cache update holds it fenced
        if line.get("step") == "update_metadata_cache" and line["t"] == last["t"] and line["node"] == last["node"]:
            line["state"]["cached_broker_epochs"][never] = -1
        return line

    _edited(tmp_path, fenced_too)
    verdict, _, _ = validate_path(str(tmp_path))
    assert not verdict.explained and verdict.event.step == "update_metadata_cache", verdict.to_json()
