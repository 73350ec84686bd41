"""The model's prediction for one experiment under one protocol variant: the verdict of its schedule
(model and implementation in lockstep, as ``isrcheck check`` gives it) and the client-visible
outcomes that verdict names.

A property that fails, inside its fault budget or outside it, is an outcome clients can see:
NoLostAckedWrite or LeaderCompleteness a lost write, NoDivergentRead a divergent read. A verdict that names neither
predicts nothing visible, unless the experiment file says what the model's step outputs show
(a produce refused with NOT_ENOUGH_REPLICAS is an output, not a property): ``Experiment.expected``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from isrcheck.conformance.core.lockstep import run_schedule
from isrcheck.conformance.core.schedule import ScheduleError, load_schedule
from isrcheck.conformance.vocabulary import UsageError

# the properties whose failure clients see, and as what
# (LeaderCompleteness: the elected leader lacks an acknowledged record, which a read to its end misses)
VISIBLE = {"NoLostAckedWrite": "lost-write", "LeaderCompleteness": "lost-write", "NoDivergentRead": "divergent-read"}


@dataclass(frozen=True)
class Prediction:
    variant: str
    verdict: str  # the verdict in words: "pass", "pass; NoLostAckedWrite outside its budget", ...
    outcomes: tuple[str, ...]  # what clients should see
    source: str  # "model" (from the verdict) or "file" (the experiment's own expectation)
    within_budget: bool  # no property failed outside its budget

    def to_json(self) -> dict:
        return {
            "variant": self.variant,
            "verdict": self.verdict,
            "outcomes": list(self.outcomes),
            "source": self.source,
            "within_budget": self.within_budget,
        }


def predict(experiment, variant: str, unclean_shutdown_detection: str = "page-cache") -> Prediction:
    """The verdict of the experiment's schedule on ``variant``, its cluster config taking the way the
    cluster detects an unclean shutdown (Apache Kafka's differs from isrcheck's: docs/steps.md)."""
    try:
        schedule = load_schedule(experiment.schedule).with_protocol(variant)
        schedule = replace(
            schedule, config=replace(schedule.config, unclean_shutdown_detection=unclean_shutdown_detection)
        )
    except ScheduleError as exc:
        raise UsageError(f"experiment {experiment.path}: schedule: {exc}") from None
    verdict = run_schedule(schedule)
    failed = [p for p, _step, _why in verdict.beyond_budget]
    if verdict.property:
        failed.insert(0, verdict.property)
    words = verdict.kind + (f" {verdict.property}" if verdict.property else "")
    if verdict.beyond_budget:
        words += "; outside its fault budget: " + ", ".join(p for p, _s, _w in verdict.beyond_budget)
    derived = tuple(dict.fromkeys(VISIBLE[p] for p in failed if p in VISIBLE))
    own = experiment.expected_for(variant)
    return Prediction(
        variant,
        words,
        own if own is not None else derived,
        "file" if own is not None else "model",
        not verdict.beyond_budget,
    )


__all__ = ["Prediction", "VISIBLE", "predict"]
