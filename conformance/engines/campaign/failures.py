"""failures/: for each distinct failure, its shrunk schedule and the original one, each a plain
schedule file that ``isrcheck check`` replays (a self-driven run's: its event log, and the ``isrcheck
sim`` command that runs it again), plus index.json tying them to seeds and verdicts."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from isrcheck.conformance.engines.campaign.store import CampaignStore, atomic_write_bytes, atomic_write_json


def replay_command(out: str, failure: dict) -> str | None:
    """The command that replays a failure (a record of ``index.json``) of the campaign in ``out``:
    ``isrcheck check`` on its schedule file; for a self-driven run (``--mode auto``), ``isrcheck
    sim`` with the run's protocol, replicas, seed and steps (saved beside its event log), which runs
    it again and validates its log; None for a harness error, which has no schedule to replay."""
    file = failure["file"]
    if file.endswith(".events"):
        return failure.get("replay") or sim_command(
            json.loads((Path(out) / file).with_suffix(".json").read_text(encoding="utf-8"))["auto"]
        )
    if failure.get("original_file") is None:
        return None
    return shlex.join(["isrcheck", "check", f"{out}/{file}"])


def failure_name(entry: dict) -> str:
    """A file-name stem that says what failed, e.g. ``violation-StrongIsr``."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", entry["failure_id"])


def _replayable(schedule: dict, verdict: dict, entry: dict, which: str) -> dict:
    """The schedule with a name and its verdict as ``expected``, so ``isrcheck check`` says
    whether the replay still gives what the campaign saw."""
    doc = dict(schedule)
    doc["name"] = f"fuzz {doc.get('protocol')} seed {entry['seed']} ({which})"
    doc["description"] = (
        f"Found by isrcheck fuzz: {verdict.get('verdict')} of {verdict.get('property')} at step {verdict.get('step')}."
    )
    expected = {"verdict": verdict.get("verdict")}
    if verdict.get("verdict") == "violation" and verdict.get("property"):
        expected["property"] = verdict["property"]
    doc["expected"] = {**doc.get("expected", {}), doc.get("protocol"): expected}
    return doc


def sim_command(auto: dict) -> str:
    """The command that runs a self-driven failure's seed again (``failure["auto"]``): ``isrcheck
    sim`` takes the same run, whose summary names the broken check and whose log it validates."""
    return shlex.join(
        [
            "isrcheck",
            "sim",
            "--protocol",
            auto["protocol"],
            "--replicas",
            str(auto["replicas"]),
            "--seed",
            str(auto["seed"]),
            "--steps",
            str(auto["steps"]),
        ]
    )


def write_failures(store: CampaignStore, distinct: list[dict]) -> list[dict]:
    """Write one file pair per distinct failure and index.json listing them.

    Nothing is deleted: a directory holds one seed range (CampaignStore.bind), so a file that
    index.json does not list was put there by a person, or named by an earlier shrink of a damaged
    part since run again; either is worth keeping.
    """
    written: list[dict] = []
    for entry in sorted(distinct, key=lambda e: e["failure_id"]):
        name = failure_name(entry)
        detail = entry["failure"]
        record = {
            "id": entry["failure_id"],
            "verdict": entry["verdict"],
            "property": entry["property"],
            "seed": entry["seed"],
            "seeds": entry["seeds"],
            "first_bad_step": entry["first_bad_step"],
            "steps": entry["steps"],
            "shrunk_steps": entry["shrunk_steps"],
            "trace_hash": entry["trace_hash"],
        }
        if "shrunk" in detail:
            record["file"] = f"failures/{name}.json"
            record["original_file"] = f"failures/{name}.original.json"
            record["shrunk_verdict"] = detail["shrunk_verdict"]
            record["original_verdict"] = detail["original_verdict"]
            for key, label in (("shrunk", "file"), ("original", "original_file")):
                atomic_write_json(
                    store.root / record[label], _replayable(detail[key], detail[f"{key}_verdict"], entry, key)
                )
        elif "trace" in detail:  # a self-driven run (--mode auto): its event log, which validate replays
            record["file"] = f"failures/{name}.events"
            record["original_file"] = None
            record["validation"] = detail["validation"]
            record["replay"] = sim_command(detail["auto"])
            for node_file, text in sorted((detail["trace"] or {}).items()):
                atomic_write_bytes(store.root / record["file"] / node_file, text.encode())
            atomic_write_json(store.root / f"failures/{name}.json", {k: v for k, v in detail.items() if k != "trace"})
        else:  # the harness raised: no schedule to replay, only the error and its seed
            record["file"] = f"failures/{name}.error.json"
            record["original_file"] = None
            atomic_write_json(store.root / record["file"], detail)
        written.append(record)
    atomic_write_json(store.failures / "index.json", written)
    return written
