"""How a generator chooses (``Choices``): whether a refused step is due, one of some options, a
weighted one. Random walks choose with a seeded ``random.Random`` (``SeededChoices``: the same seed,
the same steps, on any machine); the Hypothesis strategies and state machine with Hypothesis's
``draw`` (``DrawnChoices``), so Hypothesis shrinks what they drew. Its own module, so that the loop
and the swarm, which both choose, need not import each other.
"""

from __future__ import annotations

import random
from typing import Callable, Protocol, Sequence

from hypothesis import strategies as st

from isrcheck.conformance.generators.refusals import RefusalQuota


class Choices(Protocol):
    """How a generator chooses: whether a refused step is due, one of some options, a weighted one."""

    def refusal_due(self, quota: RefusalQuota) -> bool: ...

    def one_of(self, options: Sequence, label: str): ...

    def weighted(self, options: Sequence, weights: Sequence[float], label: str): ...


class SeededChoices:
    """Choices of a seeded random walk: the same seed, the same steps, on any machine."""

    def __init__(self, seed: int | str) -> None:
        self.rng = random.Random(seed)

    def refusal_due(self, quota: RefusalQuota) -> bool:
        return quota.behind() or self.rng.random() < quota.rate

    def one_of(self, options: Sequence, label: str):
        return options[self.rng.randrange(len(options))]

    def weighted(self, options: Sequence, weights: Sequence[float], label: str):
        return self.rng.choices(options, weights)[0]


class DrawnChoices:
    """Choices drawn by Hypothesis (``data.draw`` or a composite strategy's ``draw``), each labelled;
    draws shrink towards enabled steps, the first options and the first kinds."""

    def __init__(self, draw: Callable) -> None:
        self.draw = draw

    def refusal_due(self, quota: RefusalQuota) -> bool:
        return quota.behind() or self.draw(st.integers(0, 999), label="refused?") >= 1000 * (1 - quota.rate)

    def one_of(self, options: Sequence, label: str):
        return self.draw(st.sampled_from(options), label=label)

    def weighted(self, options: Sequence, weights: Sequence[float], label: str):
        tickets = [round(10 * w) for w in weights]
        if not any(tickets):
            return options[0]
        ticket = self.draw(st.integers(0, sum(tickets) - 1), label=label)
        for option, w in zip(options, tickets):
            if ticket < w:
                return option
            ticket -= w
        raise AssertionError("unreachable: the ticket is below the sum")


__all__ = ["Choices", "DrawnChoices", "SeededChoices"]
