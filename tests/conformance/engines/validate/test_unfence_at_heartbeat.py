"""Event logs with ``unfence_at_heartbeat`` in their header (docs/steps.md): the controller logs ``unfence``
at the heartbeat that shows a registered broker caught up, which the validator takes as the model's step
``unfence``. A self-driven simulation with the switch is explained; without the switch in its header the
unfencing of a registration is not (only a fenced broker's heartbeat unfences then), nor is the run with its
unfencing events taken out (a broker awaiting unfence joins the ISR)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from split_switches import self_driven_log

from isrcheck.conformance.engines.validate.validation import validate_path
from isrcheck.impl.sim.workload import sim_config

SWITCH = "unfence_at_heartbeat"


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("unfence")
    self_driven_log(path, dataclasses.replace(sim_config("kip-966", 3), **{SWITCH: True}), SWITCH)
    return path


def _events(path: Path) -> list[dict]:
    return [json.loads(x) for x in (path / "controller.jsonl").read_text().splitlines()[1:]]


def _edited(run: Path, to: Path, edit) -> Path:
    """``run``'s files in ``to``, every line through ``edit`` (None: left out; the headers included)."""
    for f in run.glob("*.jsonl"):
        lines = (edit(json.loads(x)) for x in f.read_text().splitlines())
        (to / f.name).write_text("\n".join(json.dumps(e) for e in lines if e is not None) + "\n")
    return to


def test_a_self_driven_run_with_the_switch_is_explained(run):
    events = _events(run)
    unfenced = [e for e in events if e["step"] == "unfence"]
    refused = [e for e in events if e["step"] == "handle_alter_partition" and e["error"] == "INELIGIBLE_REPLICA"]
    assert len(unfenced) >= 2 and refused, events  # registrations unfenced, a proposal refused before
    verdict, _, _ = validate_path(str(run))
    assert verdict.explained, verdict.to_json()


def test_without_the_switch_a_registrations_unfencing_is_not_explained(run, tmp_path):
    def switch_off(line: dict) -> dict:
        if "format" in line:
            line["config"][SWITCH] = False
        return line

    verdict, _, _ = validate_path(str(_edited(run, tmp_path, switch_off)))
    assert not verdict.explained and verdict.event.step == "unfence", verdict.to_json()


def test_a_run_whose_unfencing_is_left_out_is_refused(run, tmp_path):
    verdict, _, _ = validate_path(str(_edited(run, tmp_path, lambda e: None if e.get("step") == "unfence" else e)))
    assert not verdict.explained and verdict.event.step in ("handle_alter_partition", "elect"), verdict.to_json()
