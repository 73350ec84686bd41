"""Refused steps for every generator: besides the steps the model enables, random walks, fuzz
campaigns and the Hypothesis machine propose steps it refuses, drawn from the whole alphabet
with valid replicas and message indices (``isrcheck.model.alphabet.every_step``).

The implementation decides on its own whether it can take such a step (the adapter never asks
the model); the lockstep runner reports a step taken by one side and refused by the other as a
divergence at that step, which the shrinker then minimises like any other.

``RefusalQuota`` decides when to propose one: with probability ``rate`` at each step, and
whenever the refused proposals so far fall below ``floor(rate * steps)``, so at least that share
of a generator's steps are refused ones whatever the random draws.
"""

from __future__ import annotations

import dataclasses
import math

from isrcheck.conformance.core.lockstep import taken_in_restart
from isrcheck.conformance.vocabulary import Number
from isrcheck.model import enabled
from isrcheck.model.alphabet import Step, configured, every_step, is_disk_fault
from isrcheck.model.protocols import PROTOCOLS

DEFAULT_REFUSALS = 0.1  # share of proposed steps that the model refuses
REFUSALS = Number(float, 0.0, 1.0, "shares")


def refused_steps(cfg, state, enabled: list[Step], disk_faults: bool = False) -> list[Step]:
    """The steps of the alphabet (valid fields, ``every_step``) that are not in ``enabled``, the
    model's enabled steps of ``state``; in the alphabet's order. Disk faults only with
    ``disk_faults`` (``alphabet.is_disk_fault``: a generator that takes none proposes none). A
    registration the harness takes as made by its restart (``taken_in_restart``) is neither, nor is a
    step of a kind the config switches off (``alphabet.configured``: none is proposed there)."""
    taken = set(enabled)
    return [
        st
        for st in every_step(cfg.replicas, state)
        if st not in taken
        and (disk_faults or not is_disk_fault(st))
        and configured(cfg, st.kind)
        and not taken_in_restart(cfg, state, st)
    ]


def lineage_refused(cfg, state, enabled_now: list[Step]) -> list[Step]:
    """The steps the protocol variant before ``cfg``'s in the lineage (``PROTOCOLS``' order: KIP-320's
    is KIP-279) enables in ``state`` and ``cfg``'s refuses: those refused only by the rules the
    variant added, where a missing guard shows at once. None for the first variant."""
    names = list(PROTOCOLS)
    at = names.index(cfg.protocol)
    if at == 0:
        return []
    taken = set(enabled_now)
    return [st for st in enabled(dataclasses.replace(cfg, protocol=names[at - 1]), state) if st not in taken]


def by_kind(steps: list[Step]) -> dict[str, list[Step]]:
    """``steps`` grouped by step name in their order: generators pick a kind first, so kinds with
    many variants (produce, crash) do not crowd out the others."""
    out: dict[str, list[Step]] = {}
    for st in steps:
        out.setdefault(st.name, []).append(st)
    return out


class RefusalQuota:
    """When a generator proposes a refused step: see the module docstring."""

    def __init__(self, rate: float = DEFAULT_REFUSALS) -> None:
        REFUSALS.check(rate, "refusals")
        self.rate = rate
        self.proposed = 0
        self.refused = 0

    def behind(self) -> bool:
        """Whether the next step must be a refused one to keep the share at ``rate``."""
        return self.refused < math.floor(self.rate * (self.proposed + 1) + 1e-9)

    def count(self, refused: bool) -> None:
        self.proposed += 1
        self.refused += refused
