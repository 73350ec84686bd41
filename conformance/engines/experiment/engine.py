"""One experiment on one cluster, repeated: each repetition a fresh cluster, the plan, every broker
brought back, the final read, the history checked by the soak's checker, and the outcomes compared
with the model's prediction for the variant the cluster implements.

Folder of a run: ``DIR/NAME/rep-K/`` holds ``history.jsonl`` (the soak's history format),
``clients.log`` and ``cluster/`` (the cluster's files and logs); ``DIR/results.json`` the whole run.
A repetition's ``cluster`` record keeps, besides what the cluster is, the counts of the requests
its plan held (``holds``) and, on Apache Kafka, the controller's log lines rejecting an
AlterPartition for the experiment's partition (``alter_partition_rejected``: why, in Kafka's words).

A repetition *reached* the experiment's state when every step of its plan did what it says (every
wait's state came within its timeout, every hold held); it *agrees* when its outcomes are the
predicted ones. An experiment agrees when at least one repetition reached its state and every one
that reached it agrees; it disagrees when one that reached it does not; else it was not reached.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from isrcheck.conformance.engines.experiment.drivers import TOPIC, ClusterChoice
from isrcheck.conformance.engines.experiment.outcome import judged, operations, outcomes
from isrcheck.conformance.engines.experiment.plan import PlanRunner
from isrcheck.conformance.engines.experiment.prediction import Prediction, predict
from isrcheck.conformance.engines.experiment.spec import Experiment
from isrcheck.conformance.engines.soak.checker import check
from isrcheck.conformance.engines.soak.driver import client_log
from isrcheck.conformance.engines.soak.workload import History, Workload

AGREE, DISAGREE, NOT_REACHED = "agree", "disagree", "not reached"
FINAL_READ_S = 30.0  # the final read gives up once the cluster served nothing new for this long


@dataclass
class Repetition:
    index: int
    reached: bool = False
    missed: str | None = None
    outcomes: tuple[str, ...] = ()
    anomalies: dict = field(default_factory=dict)  # name -> first instances (ops, explanation)
    steps: list = field(default_factory=list)
    produced: list = field(default_factory=list)
    final_read: bool = False
    seconds: float = 0.0
    folder: str = ""
    cluster: dict = field(default_factory=dict)

    def agrees(self, prediction: Prediction) -> bool:
        return set(self.outcomes) == set(prediction.outcomes)

    def to_json(self, prediction: Prediction) -> dict:
        return {
            "index": self.index,
            "reached": self.reached,
            "missed": self.missed,
            "outcomes": list(self.outcomes),
            "agrees": self.agrees(prediction),
            "anomalies": self.anomalies,
            "final_read": self.final_read,
            "produced": self.produced,
            "steps": self.steps,
            "seconds": round(self.seconds, 2),
            "folder": self.folder,
            "cluster": self.cluster,
        }


@dataclass
class ExperimentResult:
    experiment: Experiment
    cluster: str
    prediction: Prediction
    repetitions: list[Repetition] = field(default_factory=list)

    @property
    def reached(self) -> int:
        return sum(r.reached for r in self.repetitions)

    @property
    def predicted(self) -> int:
        """Repetitions that reached the state and gave the predicted outcome."""
        return sum(r.reached and r.agrees(self.prediction) for r in self.repetitions)

    @property
    def verdict(self) -> str:
        if any(r.reached and not r.agrees(self.prediction) for r in self.repetitions):
            return DISAGREE
        return AGREE if self.reached else NOT_REACHED

    def to_json(self) -> dict:
        return {
            "experiment": self.experiment.name,
            "file": str(self.experiment.path),
            "schedule": str(self.experiment.schedule),
            "cluster": self.cluster,
            "prediction": self.prediction.to_json(),
            "reached": self.reached,
            "predicted": self.predicted,
            "repetitions": [r.to_json(self.prediction) for r in self.repetitions],
            "verdict": self.verdict,
        }


def kinds_of(experiment: Experiment) -> set[str]:
    return {step.do for step in experiment.plan}


def run_experiment(
    experiment: Experiment, choice: ClusterChoice, repeat: int, directory: Path, say=lambda line: None
) -> ExperimentResult:
    prediction = predict(experiment, choice.variant(experiment.cluster.elr), choice.unclean_shutdown_detection)
    result = ExperimentResult(experiment, choice.label(experiment.cluster.elr), prediction)
    for k in range(repeat):
        folder = Path(directory) / experiment.name / f"rep-{k}"
        say(f"{experiment.name} on {result.cluster}: repetition {k + 1}/{repeat} ({folder})")
        result.repetitions.append(run_repetition(experiment, choice, k, folder, say))
        say(
            f"  -> {'reached' if result.repetitions[-1].reached else 'NOT reached'}; outcomes "
            f"{', '.join(result.repetitions[-1].outcomes) or 'none'} (predicted "
            f"{', '.join(prediction.outcomes) or 'none'})"
        )
    return result


def run_repetition(experiment: Experiment, choice: ClusterChoice, index: int, folder: Path, say) -> Repetition:
    folder.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    rep = Repetition(index, folder=str(folder))
    driver = choice.driver(experiment.cluster, folder, kinds_of(experiment), say)
    try:
        try:
            driver.start()
        except Exception as exc:  # noqa: BLE001 - a cluster that did not come up: this repetition reached nothing
            rep.missed = f"the cluster did not start: {type(exc).__name__}: {exc}"
            say(f"  not reached: {rep.missed}")
            return rep
        rep.cluster = driver.describe()
        with open(folder / "history.jsonl", "w", encoding="utf-8") as out:
            history = History(out)
            workload = Workload(
                driver.bootstrap,
                TOPIC,
                1,
                history,
                index,
                producers=0,
                consumers=0,
                send_timeout_ms=60_000,
                client_log=client_log(folder),
            )
            runner = PlanRunner(driver, workload, say)
            try:
                runner.run(experiment.plan)
            finally:
                rep.cluster.update(driver.hold_report())
                runner.settle()
            rep.final_read, _ = workload.final_read(FINAL_READ_S)
            rep.cluster.update(driver.controller_evidence())
        found = judged(check(history.events).to_json()["anomalies"], rep.final_read)
        rep.reached, rep.missed = runner.reached, runner.missed
        rep.steps, rep.produced = runner.log, runner.produced
        rep.outcomes = outcomes(found, runner.produced) + (() if rep.final_read else ("incomplete-final-read",))
        rep.anomalies = operations(found)
    finally:
        driver.close()
        rep.seconds = time.monotonic() - began
    return rep


def write_results(results: list[ExperimentResult], directory: Path, command: str = "") -> Path:
    path = Path(directory) / "results.json"
    doc = {"command": command, "experiments": [r.to_json() for r in results]}
    path.write_text(json.dumps(doc, indent=2, default=str) + "\n")
    return path


__all__ = ["AGREE", "DISAGREE", "NOT_REACHED", "ExperimentResult", "Repetition", "run_experiment", "write_results"]
