"""Fault profiles: how a generator weighs the step kinds and crash kinds, the config it starts
from, and whether it keeps to the fault budget (``isrcheck.model.budget.FaultBudget``)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Mapping

from isrcheck.conformance.core.schedule import ScheduleError
from isrcheck.model.alphabet import (
    CORRUPT,
    CORRUPT_LIVE,
    CRASH,
    CRASH_KINDS,
    DROP,
    FAIL_DISK,
    FENCE,
    FLUSH,
    LOSE_DISK,
    REJOIN,
    STEPS,
)

# every kind at the alphabet's weight (StepKind.weight: the fault kinds at 0, profiles add them)
_BASE_WEIGHTS = {name: kind.weight for name, kind in STEPS.items()}


def _frozen(mapping: Mapping) -> Mapping:
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True)
class FaultProfile:
    """Step weights (name -> relative weight, 0 = never), crash kind weights, config defaults,
    and whether the walk stays within the properties' fault budget."""

    name: str
    weights: Mapping[str, float] = field(default_factory=lambda: _frozen(_BASE_WEIGHTS))
    crash_kinds: Mapping[str, float] = field(default_factory=lambda: _frozen({k: 1.0 for k in CRASH_KINDS}))
    within_budget: bool = True
    config: Mapping[str, object] = field(default_factory=lambda: _frozen({}))
    spare_known_gaps: bool = True
    disk_faults: bool = False  # torn tails with garbage, corruptions, disk failures (docs/steps.md, "Disk faults")

    def with_weights(self, **weights: float) -> "FaultProfile":
        """A copy with some step weights changed (e.g. ``drop=2.0``)."""
        unknown = sorted(set(weights) - set(STEPS))
        if unknown:
            raise ValueError(f"unknown step name(s) {', '.join(unknown)}")
        return FaultProfile(
            self.name,
            _frozen({**self.weights, **weights}),
            self.crash_kinds,
            self.within_budget,
            self.config,
            self.spare_known_gaps,
            self.disk_faults,
        )


FAULT_PROFILES: dict[str, FaultProfile] = {
    # no faults at all: the protocol under perfect brokers and network (leader moves are operations)
    "none": FaultProfile("none", _frozen({**_BASE_WEIGHTS, FENCE: 0.0, REJOIN: 0.0})),
    # every fault class of the alphabet with no guard: power losses and lost disks of ISR members,
    # fast bounces after them, zombies, leader moves, partial fetches, lost messages, HW
    # checkpoints, torn tails with garbage, corruptions at rest (also under live brokers) and failing disks; only
    # each property's own fault budget applies (``Property.budget``): a property
    # that breaks outside it is reported as such, not as a violation. Unclean election stays off
    # (a config, not a fault). Power and disk losses are rarer than in ``classic`` so that most
    # schedules stay within the budget of acknowledged writes (at most min ISR - 1 brokers lose data)
    "all": FaultProfile(
        "all",
        _frozen(
            {
                **_BASE_WEIGHTS,
                CRASH: 0.4,
                DROP: 0.6,
                LOSE_DISK: 0.2,
                CORRUPT: 0.3,
                FAIL_DISK: 0.15,
                CORRUPT_LIVE: 0.15,
            }
        ),
        _frozen({"clean": 1.0, "process": 1.0, "power": 0.5}),
        within_budget=False,
        config=_frozen({"request_timeout_ticks": 6}),
        spare_known_gaps=False,
        disk_faults=True,
    ),
    # the default before every fault class was: crashes of each kind (partial and torn power losses
    # too), fast bounces, zombies, lost disks, message loss and leader changes, kept within the fault
    # budget (no corruption nor failing disk, no power loss of ISR members): it misses bugs ``all`` finds
    "classic": FaultProfile(
        "classic",
        _frozen({**_BASE_WEIGHTS, CRASH: 0.4, DROP: 0.6, LOSE_DISK: 0.6}),
        config=_frozen({"request_timeout_ticks": 6}),
    ),
    # disks that fail as disks do, within the fault budget: the classic profile's faults plus
    # power losses with torn tails of garbage, batches corrupted at rest (on a down broker, or
    # under a live one, found by a read), failing writes, fsyncs and reads (the log directory goes
    # offline); flushes often, so there is something durable to corrupt and something unflushed to lose
    "disk": FaultProfile(
        "disk",
        _frozen(
            {
                **_BASE_WEIGHTS,
                CRASH: 0.4,
                DROP: 0.6,
                LOSE_DISK: 0.2,
                FLUSH: 1.0,
                CORRUPT: 2.0,
                FAIL_DISK: 1.0,
                CORRUPT_LIVE: 1.0,
            }
        ),
        _frozen({"clean": 0.5, "process": 0.5, "power": 1.0}),
        within_budget=False,
        config=_frozen({"request_timeout_ticks": 6}),
        spare_known_gaps=False,
        disk_faults=True,
    ),
    # beyond the budget: frequent power loss, unclean election enabled
    "heavy": FaultProfile(
        "heavy",
        _frozen({**_BASE_WEIGHTS, CRASH: 1.0, DROP: 1.5, FLUSH: 0.2, LOSE_DISK: 0.6}),
        _frozen({"clean": 0.5, "process": 1.0, "power": 2.0}),
        within_budget=False,
        config=_frozen({"request_timeout_ticks": 6, "unclean_leader_election_enable": True}),
    ),
}

# what runs when no profile is named: every fault class, as ``all`` (the fault budgets judge what
# breaks outside them, so it gives no false alarm); ``classic`` keeps the narrower former default
FAULT_PROFILES = {"default": replace(FAULT_PROFILES["all"], name="default"), **FAULT_PROFILES}


def profile_of(faults) -> FaultProfile:
    """The profile named ``faults`` (or ``faults`` itself); ScheduleError naming the known ones."""
    if isinstance(faults, FaultProfile):
        return faults
    if faults not in FAULT_PROFILES:
        raise ScheduleError(f"faults: unknown fault profile {faults!r} (known: {', '.join(FAULT_PROFILES)})")
    return FAULT_PROFILES[faults]
