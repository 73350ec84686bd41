"""What a property reads and what a step changed, as bits: a property whose reads a step left
alone gives, after the step, what it gave before (the explorer and the lockstep runner skip it).

A step shares with its successor every object it leaves alone (``NextState``), so "changed" is
decided by identity: an object rebuilt with equal contents counts as changed (checked again,
never skipped wrongly).
"""

from __future__ import annotations

from ..specs import Property
from .state import State

# what a property reads, as bits (``Property.reads``); an unknown reader reads everything
READS = {"logs": 1, "replicas": 2, "controller": 4, "acked": 8, "consumed": 16, "consumer_hw_regressed": 32}
EVERYTHING = 127  # 64: what no bit names (set in every ``changed_parts``)


def reads_mask(p: Property) -> int:
    return EVERYTHING if p.reads is None else sum(READS[f] for f in p.reads)


def changed_parts(s: State, t: State) -> int:
    """What differs between state ``s`` and its successor ``t``, as ``READS`` bits, by identity."""
    changed = 64
    a, b = s[0], t[0]
    if a is not b and any(x is not y for x, y in zip(a, b)):
        changed |= 2
        if any(x[1] is not y[1] for x, y in zip(a, b)):
            changed |= 1
    if s[1] is not t[1]:
        changed |= 4
    if s.acked is not t.acked:
        changed |= 8
    if s.consumed is not t.consumed:
        changed |= 16
    if s.consumer_hw_regressed != t.consumer_hw_regressed:
        changed |= 32
    return changed
