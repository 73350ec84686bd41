"""``isrcheck fuzz --mode auto``: a seed is a run of the self-driven simulation (timers, seeded
network faults, crashes of every kind: ``isrcheck.impl.sim.workload``), its nodes' event log
validated against the model (``engines/validate``). A row per seed, as a schedule's: ``pass``;
``divergence`` when an event no behaviour of the model explains (``first_bad_step`` its index);
``violation`` when a history property fails within its fault budget: the run's own checks (an
acknowledged acks=all write lost, an offset read two ways, logs that disagree below the HW) or the
model's history properties along the behaviour that explains it, judged by the budgets lockstep
judges by (``validate/budgets.py``); or a deadline Kafka keeps that the run missed
(``validate/timeliness.py``: a follower kept in the ISR past its lag, a parked fetch past its
wait), ``property`` then that timeliness property. A check that fails only once the run left its property's
budget (a Last Replica Standing, which every variant before KIP-966 suffers) is in
``beyond_budget``, as a lockstep row's, and the row passes; ``isrcheck sim`` with the row's seed
replays the run and says why. A failure keeps its whole event log.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from dataclasses import asdict

from isrcheck.conformance.engines.campaign.harness import canonical
from isrcheck.conformance.engines.validate.budgets import failed_checks, judge
from isrcheck.conformance.engines.validate.timeliness import check_path
from isrcheck.conformance.engines.validate.validation import validate_path
from isrcheck.impl.sim.workload import run_simulation, sim_config

REPLICAS = 3


def run_auto_seed(protocol: str, steps: int, seed: int) -> dict:
    """The row of one self-driven run (``executor.ROW_SCHEMA``'s columns)."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="isrcheck-auto-") as events:
        summary = run_simulation(protocol, REPLICAS, seed, steps, events_dir=events)
        verdict, n, _seconds = validate_path(events, judge=True)
        judgement = judge(failed_checks(summary), verdict.judged) if verdict.explained else None
        violated = judgement.violation if judgement is not None else None
        late = check_path(events) if verdict.explained else []  # timers: bounds the model does not state
        violated = violated or (late[0].property if late else None)
        trace = (
            {name: open(os.path.join(events, name), encoding="utf-8").read() for name in sorted(os.listdir(events))}
            if not verdict.explained or violated
            else None
        )
    duration_ms = (time.perf_counter() - started) * 1000.0
    kind = "divergence" if not verdict.explained else "violation" if violated else "pass"
    bad = verdict.events if not verdict.explained else None
    coverage = (
        sorted({f"event:{st['step']}" for st in verdict.steps} | {f"events:{n // 100 * 100}"})
        if verdict.explained
        else [f"event:{verdict.event.step}"]
    )
    row = {
        "seed": seed,
        "config_hash": _config_hash(protocol),
        "steps": n,
        "verdict": kind,
        "property": violated if kind == "violation" else None,
        "first_bad_step": bad,
        "duration_ms": duration_ms,
        "trace_hash": summary.trace_hash,
        "beyond_budget": [p for p, _at, _why in judgement.beyond_budget] if judgement else [],
        "outside_budget": list(judgement.outside_budget) if judgement else [],
        "also": [],
        "coverage": coverage,
        "swarm": None,
        "swarm_features": [],
        "failure_id": None,
        "shrunk_steps": None,
        "shrink_ms": None,
        "failure": None,
    }
    if kind != "pass":
        at = verdict.event.step if not verdict.explained else violated
        row["failure_id"] = f"{kind}-at-{at}" if kind == "divergence" else f"{kind}-{violated}"
        validation = verdict.to_json()
        validation.pop("steps", None)
        row["failure"] = canonical(
            {
                "auto": {"protocol": protocol, "replicas": REPLICAS, "seed": seed, "steps": steps},
                "summary": summary.to_json(),
                "validation": validation,
                "late": [x.to_json() for x in late],
                "trace": trace,
            }
        )
    return row


def _config_hash(protocol: str) -> str:
    """The cluster config of every seed's run (the simulation's Kafka-like timings)."""
    return hashlib.sha256(canonical(asdict(sim_config(protocol, REPLICAS))).encode()).hexdigest()[:16]
