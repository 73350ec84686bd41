"""Conformance harness: the reference model and the implementation in lockstep, under crash schedules.

Public API (stable):

    from isrcheck.conformance import (Schedule, ScheduleConfig, ScheduleError, load_schedule,
        Verdict, run_schedule, random_walk, shrink, FaultProfile, FAULT_PROFILES, within_budget,
        Lockstep, SutSpec)

    run_schedule(schedule, sut=None) -> Verdict
    random_walk(seed, protocol, steps, faults="default", config=None, sut=None) -> (Schedule, Verdict)
    shrink(schedule, verdict, time_budget_s=10.0, sut=None) -> (Schedule, Verdict)
    within_budget(schedule, faults="default") -> bool   # does it keep to the profile's fault budget
    Lockstep(protocol, config, impl=True, sut=None)      # step by step: .enabled_steps(), .step(), .verdict()

The implementation is reached through ``isrcheck.conformance.core.sut.SystemUnderTest``; ``sut``
says which one: None, the simulation in this process; ``SutSpec("COMMAND")`` (or
``SutSpec("tcp://HOST:PORT", timeout_s=10.0)``, as ``--sut`` gives it), any program speaking
docs/sut-protocol.md, started once per Python process and reused run after run; or a
``SystemUnderTest`` instance.

Hypothesis strategies and a RuleBasedStateMachine live in ``isrcheck.conformance.generators.strategies``.

Names are resolved lazily, so ``isrcheck.conformance.cli.main`` (which lives here) stays cheap to import.
"""

from __future__ import annotations

from isrcheck.conformance.lazy import lazy_exports

_EXPORTS = {
    "Schedule": "core.schedule",
    "ScheduleConfig": "core.schedule",
    "ScheduleError": "core.schedule",
    "load_schedule": "core.schedule",
    "Verdict": "core.verdict",
    "run_schedule": "core.lockstep",
    "Lockstep": "core.lockstep",
    "random_walk": "generators.walk",
    "FaultProfile": "generators.walk",
    "FAULT_PROFILES": "generators.walk",
    "within_budget": "generators.walk",
    "shrink": "generators.shrink",
    "SutSpec": "core.sut_spec",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
