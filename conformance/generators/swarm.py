"""Swarm testing (Groce, Zhang, Eide, Chen and Regehr, ISSTA 2012): each schedule runs under a
configuration of its own, drawn from its seed, that leaves out part of the fault profile and
reweighs the rest, so that a campaign reaches corners uniform weights never do. A walk that may
tick and shrink the ISR at any time keeps a lagging follower out of the ISR; one that never ticks
keeps it in, which KIP-279's divergence needs.

A swarm draws, in this order (``draw_swarm``):

- for each step kind the profile weighs above 0, outside ``CORE``, whether it is in at all (a
  coin flip), and for every kind that is in, a weight factor among ``FACTORS``;
- for each crash kind, whether it is in (at least one stays when crashes are);
- whether fetches may be partial (``max_batches`` > 0: replica.fetch.max.bytes);
- for each broker, whether it is slow to apply LeaderAndIsr (one time in four): its deliveries are
  ``SLOW`` times as likely as another broker's, so it keeps a stale leader epoch for a while, as
  a broker behind a congested controller channel does.

The replication steps of ``CORE`` always stay: without them no record moves. Where the swarm
leaves no step the profile would take (every broker down and restarts left out, say), the
generator takes that step under the profile itself (``loop.StepGenerator``): a swarm narrows what
a run does, never where it ends.
"""
from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from isrcheck.model.alphabet import CRASH_KINDS, STEPS, Step

from isrcheck.conformance.generators.choices import SeededChoices
from isrcheck.conformance.generators.profiles import FaultProfile

CORE = ("produce", "send_fetch", "handle_fetch", "handle_fetch_response", "deliver_leader_and_isr",
        "handle_alter_partition", "handle_alter_partition_response")
FACTORS = (1.0, 0.25, 0.5, 2.0, 4.0)  # a kind's weight times one of these (the first: as is)
SLOW = 1 / 16                         # a slow broker's LeaderAndIsr deliveries against another's


@dataclass(frozen=True)
class Swarm:
    """One schedule's share of its fault profile: step kind weights (0 = left out), crash kind
    weights, whether fetches may be partial, and the brokers slow to apply LeaderAndIsr."""

    weights: Mapping[str, float]
    crash_kinds: Mapping[str, float]
    partial_fetches: bool
    slow: tuple[int, ...]

    def weight(self, step: Step) -> float:
        """The weight of ``step`` among the steps of its kind (0: left out)."""
        name = step.name
        if name == "crash":
            return self.crash_kinds.get(step.arg, 0.0)
        if name == "send_fetch" and step.max_batches and not self.partial_fetches:
            return 0.0
        if name == "deliver_leader_and_isr" and step.replica in self.slow:
            return SLOW
        return 1.0

    def features(self) -> list[str]:
        """What is in, as names: each step kind, ``crash:<kind>``, ``partial_fetches`` and
        ``slow:<broker>`` (a campaign's summary counts schedules by these)."""
        out = [k for k, w in self.weights.items() if w > 0]
        out += [f"crash:{k}" for k, w in self.crash_kinds.items() if w > 0 and self.weights.get("crash", 0) > 0]
        out += ["partial_fetches"] * self.partial_fetches + [f"slow:{b}" for b in self.slow]
        return out

    def to_json(self) -> dict:
        return {"weights": {k: w for k, w in self.weights.items() if w > 0},
                "crash_kinds": [k for k, w in self.crash_kinds.items() if w > 0],
                "partial_fetches": self.partial_fetches, "slow": list(self.slow)}


def draw_swarm(choices, profile: FaultProfile, replicas: int) -> Swarm:
    """A swarm of ``profile`` for a cluster of ``replicas``, drawn with ``choices`` (a
    ``choices.Choices``: seeded for random walks, Hypothesis's draws for its strategies)."""
    weights = {}
    for name in STEPS:  # the alphabet's order: the draws do not depend on the profile's
        base = profile.weights.get(name, 0.0)
        if base <= 0:
            continue
        kept = name in CORE or choices.one_of((True, False), f"swarm: {name}?")
        weights[name] = base * choices.one_of(FACTORS, f"swarm: {name} weight") if kept else 0.0
    crash = {k: (1.0 if choices.one_of((True, False), f"swarm: crash {k}?") else 0.0) * profile.crash_kinds.get(k, 0.0)
             for k in CRASH_KINDS}
    if not any(crash.values()):
        crash = dict(profile.crash_kinds)
    partial = choices.one_of((True, False), "swarm: partial fetches?")
    slow = tuple(b for b in range(replicas) if choices.weighted((False, True), (3.0, 1.0), f"swarm: broker {b} slow?"))
    return Swarm(MappingProxyType(weights), MappingProxyType(crash), partial, slow)


def seeded_swarm(seed: int, profile: FaultProfile, replicas: int) -> Swarm:
    """The swarm of a random walk's ``seed``: drawn from a generator of its own, so the walk's
    own choices (``random.Random(seed)``) are those of a walk without a swarm."""
    return draw_swarm(SeededChoices(f"swarm-{seed}"), profile, replicas)
