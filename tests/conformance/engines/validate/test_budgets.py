"""Self-driven runs are judged by the fault budgets lockstep judges by: a loss Kafka itself has
(Last Replica Standing on kip-320) is broken outside its budget with the reason, a loss within the
budget stays a violation, and the failure's printed replay command replays it."""

from __future__ import annotations

import io
import json
import shlex
import subprocess
import sys

import pytest
from rich.console import Console

from isrcheck.conformance import load_schedule
from isrcheck.conformance.cli.fuzz import print_replay
from isrcheck.conformance.core.lockstep import HISTORY, Lockstep
from isrcheck.conformance.engines.campaign.auto import run_auto_seed
from isrcheck.conformance.engines.campaign.failures import write_failures
from isrcheck.conformance.engines.campaign.store import CampaignStore
from isrcheck.conformance.engines.validate.budgets import Judged, judge
from isrcheck.conformance.engines.validate.events import Event
from isrcheck.model import ModelConfig, Step, StepRefused, apply, initial_state
from isrcheck.specs import BY_ID

SCENARIOS = "specs/scenarios"


def _judged(protocol: str, schedule) -> Judged:
    """``Judged`` along a schedule's model steps, each its own event, as the search carries it."""
    cfg = ModelConfig.of(protocol, schedule.config)
    s, judged = initial_state(cfg), Judged()
    for i, st in enumerate(map(Step.from_json, schedule.steps)):
        try:
            after, _ = apply(cfg, s, st)
        except StepRefused:  # refused by the model: lockstep skips it too
            continue
        event = Event(f"schedule:{i}", 0, i, i, i, st.name, {}, {})
        s, judged = after, judged.after(cfg, s, st, after, event)
    return judged.at_end(cfg, s)


@pytest.mark.parametrize(
    "name,protocol",
    [
        ("kip101-scenario1", "hw-truncation"),
        ("last-replica-standing", "kip-320"),
        ("unclean-election-loss", "kip-320"),
        ("kip101-scenario1", "kip-320"),
    ],
)
def test_the_history_properties_are_judged_as_lockstep_judges_them(name, protocol):
    """The same schedule, judged by lockstep (model only, the history properties) and by the
    ledger a validation carries: the same violation, the same properties broken outside."""
    schedule = load_schedule(f"{SCENARIOS}/{name}.json")
    run = Lockstep(protocol, schedule.config, impl=False, properties=[p.id for p in HISTORY])
    verdict = next((v for v in map(run.step, schedule.steps) if v is not None), None) or run.verdict()
    judged = _judged(protocol, schedule)
    assert (judged.violation or (None,))[0] == verdict.property
    assert set(verdict.outside_budget) == {p for p in judged.outside if BY_ID[p].kind == "history"}
    beyond = [p for p, _, _ in verdict.beyond_budget]
    assert [p for p, _, _ in judge(beyond, judged).beyond_budget] == ([] if verdict.property else beyond)
    assert name == "kip101-scenario1" or "NoLostAckedWrite" in beyond  # the scenarios' losses


def test_a_last_replica_standing_of_a_self_driven_run_is_broken_outside_its_budget():
    """kip-320, seed 112: the controller fences two partitioned brokers, the ISR is the third
    alone, it loses power and comes back as leader without three acknowledged writes: a loss
    KIP-320 suffers by design (KIP-966 closed it), not a violation."""
    row = run_auto_seed("kip-320", 100, 112)
    assert json.loads(_sim("kip-320", 112).stdout)["lost_acked"] == 3  # the run did lose them
    assert (row["verdict"], row["property"], row["beyond_budget"]) == ("pass", None, ["NoLostAckedWrite"])
    assert "NoLostAckedWrite" in row["outside_budget"]
    text = _sim("kip-320", 112, json_out=False)
    assert text.returncode == 0
    assert "NoLostAckedWrite broken outside its fault budget, which the run left at broker 2 " in text.stdout
    assert 'crash(replica=2,kind="power")' in text.stdout.replace(", ", ",")
    assert "last-replica-standing, a loss this variant suffers by design" in text.stdout


def test_a_loss_within_the_budget_is_a_violation_and_its_printed_replay_replays_it(tmp_path):
    """hw-truncation loses acknowledged writes within the budget (KIP-101's problem): a violation,
    whose replay command, as the campaign prints it, runs the same run to the same verdict."""
    row = run_auto_seed("hw-truncation", 100, 185)  # the first such seed (rare since a crash keeps what was sent)
    assert row["property"] == "NoLostAckedWrite" and "NoLostAckedWrite" not in row["beyond_budget"]
    store = CampaignStore(tmp_path / "C", "hw-truncation")
    store.failures.mkdir(parents=True)
    entry = {**row, "seeds": 1, "failure": json.loads(row["failure"])}
    index = write_failures(store, [entry])
    said = io.StringIO()
    print_replay({"failures": index}, str(tmp_path / "C"), Console(file=said, width=400).print)
    lines = said.getvalue().splitlines()
    command = shlex.split(lines[0].removeprefix("  replay one with: "))
    assert command[:2] == ["isrcheck", "sim"] and lines[1].startswith("  its saved event log: isrcheck validate ")
    replay = subprocess.run(
        [sys.executable, "-m", "isrcheck.conformance.cli.main", *command[1:], "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert replay.returncode == 1, replay.stderr
    out = json.loads(replay.stdout)
    assert (out["seed"], out["budget"]["violation"], out["trace_hash"]) == (
        row["seed"],
        "NoLostAckedWrite",
        row["trace_hash"],
    )
    log = subprocess.run(
        [
            sys.executable,
            "-m",
            "isrcheck.conformance.cli.main",
            *shlex.split(lines[1].removeprefix("  its saved event log: isrcheck ")),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert log.returncode == 0 and log.stdout.startswith("explained:"), log.stderr


def _sim(protocol: str, seed: int, json_out: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "isrcheck.conformance.cli.main",
            "sim",
            "--protocol",
            protocol,
            "--seed",
            str(seed),
            "--steps",
            "100",
            *(["--json"] if json_out else []),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
