"""The fault budgets along the behaviour of the model that explains a run's event log, judged as
lockstep judges a schedule (``core/lockstep.py``), with the same ledger and helpers
(``isrcheck.model.budget``): a history property that fails within its budget is a violation; one
that fails only once the run has left its budget is *broken outside its budget*, with the reason.

A run that drove itself (``isrcheck sim``, ``isrcheck fuzz --mode auto``) is a schedule nobody
wrote down: the search (``search.py``) finds the model steps that explain it, and each candidate
carries a ``Judged`` along them. A step that changes the ledger first has the history properties
whose budget it ends checked in the state before it (``budget.leaving``), and the end has every
history property checked in the last state (``at_end``). The run's own checks (the simulation's
``SimSummary``: an acknowledged write lost, an offset read two ways, logs that disagree) are judged
by the same budgets (``judge``), since a self-driven run can enter a loss Kafka itself has there
(Last Replica Standing on every variant before KIP-966, say).

The model's consumer steps are taken by their guard alone (``unlogged.consume``), so the ghost of
what consumers read stays empty: the properties over reads are the run's own check's to judge.
"""

from __future__ import annotations

from typing import NamedTuple

from isrcheck.model import ModelConfig, Step
from isrcheck.model.alphabet import STEPS
from isrcheck.model.budget import EMPTY_LEDGER, FaultLedger, exceeded, leaving
from isrcheck.specs import PROPERTIES

from .events import Event

HISTORY = tuple(p for p in PROPERTIES if p.kind == "history")


class Judged(NamedTuple):
    """One candidate's fault ledger and what its history properties did so far."""

    ledger: FaultLedger = EMPTY_LEDGER
    violation: tuple | None = None  # (property id, where): the first to fail within its budget
    left: tuple = ()  # (property id, where, why): each budget the run left, in order
    outside: dict | None = None  # at the end (``at_end``): property id -> why the run is outside its budget

    def after(self, cfg: ModelConfig, before, step, after, event: Event) -> "Judged":
        """Once the model went from ``before`` to ``after`` by ``step`` (a ``Step``, or the record
        of an unlogged one: ``unlogged.py``'s dicts) while explaining ``event``; a place is
        named by the event (``Event.describe``: its node, time, step, file and line)."""
        st = model_step(step)
        if st is None:
            return self
        ledger = self.ledger.after(before, st, after, cfg.rules.known_losses)
        if ledger is self.ledger:
            return self
        ending = leaving(PROPERTIES, cfg, self.ledger, ledger)
        violation = self.violation
        if violation is None:
            violation = next(
                ((p.id, f"before {event.describe()}") for p in ending if p.kind == "history" and not p.check(before)),
                None,
            )
        return Judged(
            ledger, violation, self.left + tuple((p.id, event.describe(), exceeded(p, ledger, cfg)) for p in ending)
        )

    def at_end(self, cfg: ModelConfig, state) -> "Judged":
        """The history properties checked in the last state: a failure within its budget is the
        violation (unless one came before)."""
        outside = {p.id: why for p in PROPERTIES if (why := exceeded(p, self.ledger, cfg)) is not None}
        violation = self.violation or next(
            ((p.id, "at the end") for p in HISTORY if p.id not in outside and not p.check(state)), None
        )
        return self._replace(violation=violation, outside=outside)

    def left_at(self, prop: str) -> str:
        """Where the run left the budget of property ``prop``."""
        return next((where for p, where, _ in self.left if p == prop), "the start")


def model_step(step) -> Step | None:
    """The model step a search took, as a ``Step``: its own, or the one an unlogged step's record
    names (a crash of a broker down to the model, a rejoin that keeps its broker epoch, an election
    folded into a registration), without the record's notes; None for the search's own
    bookkeeping (a duplicate back in flight, a byte limit, a write-back), which no budget reads."""
    if isinstance(step, Step):
        return step
    kind = STEPS.get(step.get("step"))
    if kind is None or "times" in step:  # a run of ticks that changes only the clock
        return None
    return Step.from_json({k: v for k, v in step.items() if k == "step" or k in kind.fields})


class Judgement(NamedTuple):
    """A self-driven run's verdict on its properties: the violated one (None: none within its
    budget), and those broken outside their budget, each (property, where the run left it, why)."""

    violation: str | None
    beyond_budget: tuple = ()
    outside_budget: tuple = ()  # every property whose budget the run left


def failed_checks(summary) -> list[str]:
    """The property ids of a simulation's own checks that failed (``impl.sim.workload.SimSummary``)."""
    checks = (
        ("NoLostAckedWrite", summary.lost_acked),
        ("NoDivergentRead", summary.divergent_reads),
        ("LogMatching", not summary.logs_agree),
    )
    return [prop for prop, failed in checks if failed]


def judge(failed: list[str], judged: Judged) -> Judgement:
    """The run's own failed checks (``failed``: property ids) and the model's ``judged`` history (at
    its end), by the properties' budgets: a check that failed while the run is outside its
    property's budget is broken outside it, unless the model shows it failed before the run left
    that budget (the violation then)."""
    beyond = []
    violation = judged.violation[0] if judged.violation is not None else None
    for prop in failed:
        why = judged.outside.get(prop)
        if why is None or prop == violation:
            violation = violation or prop
        else:
            beyond.append((prop, judged.left_at(prop), why))
    return Judgement(violation, tuple(beyond), tuple(judged.outside))


def judgement_lines(judgement: Judgement) -> list[str]:
    """What a person reads: the violation, and each property broken outside its budget with why."""
    out = [f"violation of {judgement.violation} within its fault budget"] if judgement.violation else []
    out += [
        f"{p} broken outside its fault budget, which the run left at {where}: {why}"
        for p, where, why in judgement.beyond_budget
    ]
    return out


__all__ = ["HISTORY", "Judged", "Judgement", "failed_checks", "judge", "judgement_lines", "model_step"]
