"""The conformance harness as the campaign sees it: a seeded random walk and a shrinker."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable


class HarnessUnavailable(RuntimeError):
    """The conformance harness cannot be imported or lacks what the campaign calls."""


@dataclass(frozen=True)
class Harness:
    """``random_walk(seed, protocol, steps, faults=..., config=None, refusals=..., sut=...[, swarm=True]) ->
    (Schedule, Verdict)``
    and ``shrink(schedule, verdict, time_budget_s=..., sut=...) -> (Schedule, Verdict)``; ``sut`` is the
    campaign's system under test (a ``core.sut_spec.SutSpec``, or None for the in-process simulation)."""

    random_walk: Callable[..., tuple[Any, Any]]
    shrink: Callable[..., tuple[Any, Any]]
    fault_profiles: tuple[str, ...] = ()


def load_harness() -> Harness:
    """The shipped harness, isrcheck.conformance (imported lazily: executors import it too)."""
    try:
        # executors import this module too: the harness loads when asked for
        import isrcheck.conformance as conformance
    except ImportError as exc:  # pragma: no cover - the package is ours
        raise HarnessUnavailable(f"cannot import isrcheck.conformance: {exc}") from None
    found = {}
    for name in ("random_walk", "shrink", "FAULT_PROFILES"):
        try:  # names resolve lazily: a module still missing surfaces as ImportError here
            found[name] = getattr(conformance, name)
        except (AttributeError, ImportError) as exc:
            if name != "FAULT_PROFILES":
                raise HarnessUnavailable(f"the conformance harness does not provide {name}: {exc}") from None
    profiles = found.get("FAULT_PROFILES") or {}
    return Harness(found["random_walk"], found["shrink"], tuple(sorted(profiles)))


def canonical(obj: Any) -> str:
    """One spelling per value, so hashes do not depend on dict order."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))
