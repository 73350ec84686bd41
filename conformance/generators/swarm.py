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
  a broker behind a congested controller channel does;
- for a random walk's swarm (``seeded_swarm``; not Hypothesis's), the steered features
  (``STEERED``), each aimed at a corner uniform walks reach about once in a
  thousand schedules, drawn last so that the features above are drawn as before:
  ``leader_faults`` (one time in four each): ``spare``, the faults that take a broker away (crash,
  lost disk, failing disk, fence) spare the broker the controller names leader, so followers lose
  their unflushed tails and fetch again from the leader that saw them further on (the leader's
  record of a follower's LEO must move back); ``target``, they take the leader ``FOCUS`` times as
  often as another broker, so leaders change with tails not yet committed (a new leader's HW below
  its epoch's start) and come back as followers; ``refusal_focus``: ``lineage`` (three times in
  four), whenever the variant before this one in the lineage enables a step this one refuses
  (``refusals.lineage_refused``: an ISR expansion before the HW reached the leader's epoch, under
  KIP-320), the walk proposes it at once; or (one time in thirty-two each) one guarded kind of
  ``GUARDED`` whose refused steps the walk proposes ``FOCUS`` times as often as another kind's, a
  leader's own ``FOCUS`` times as often as another broker's (past the leader guard, a protocol
  rule refuses them).

The replication steps of ``CORE`` always stay: without them no record moves. Where the swarm
leaves no step the profile would take (every broker down and restarts left out, say), the
generator takes that step under the profile itself (``loop.StepGenerator``): a swarm narrows what
a run does, never where it ends.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from isrcheck.conformance.generators.choices import SeededChoices
from isrcheck.conformance.generators.profiles import FaultProfile
from isrcheck.model.alphabet import (
    CONTROLLED_SHUTDOWN,
    CRASH,
    CRASH_KINDS,
    DELIVER_LEADER_AND_ISR,
    ELECT,
    EXPAND_ISR,
    FAIL_DISK,
    FENCE,
    HANDLE_ALTER_PARTITION,
    HANDLE_ALTER_PARTITION_RESPONSE,
    HANDLE_FETCH,
    HANDLE_FETCH_RESPONSE,
    LOSE_DISK,
    PRODUCE,
    READ_FETCH,
    READ_FETCH_HW,
    REMOVE_FETCHER,
    SEND_FETCH,
    SHRINK_ISR,
    STEPS,
    UNFENCE,
    UPDATE_METADATA_CACHE,
    Step,
)

CORE = (
    PRODUCE,
    SEND_FETCH,
    READ_FETCH,  # only where the config switches it on: kept as is, with no draw (``draw_swarm``)
    READ_FETCH_HW,  # as READ_FETCH
    HANDLE_FETCH,
    HANDLE_FETCH_RESPONSE,
    DELIVER_LEADER_AND_ISR,
    REMOVE_FETCHER,  # as READ_FETCH
    UPDATE_METADATA_CACHE,  # as READ_FETCH
    UNFENCE,  # as READ_FETCH: without it a registration stays inactive
    CONTROLLED_SHUTDOWN,  # as READ_FETCH: a config switch's, kept as is where it is on
    HANDLE_ALTER_PARTITION,
    HANDLE_ALTER_PARTITION_RESPONSE,
)
FACTORS = (1.0, 0.25, 0.5, 2.0, 4.0)  # a kind's weight times one of these (the first: as is)
SLOW = 1 / 16  # a slow broker's LeaderAndIsr deliveries against another's
STEERED = ("leader_faults", "refusal_focus")  # the features drawn after the others (module docstring)
GUARDED = (EXPAND_ISR, SHRINK_ISR, ELECT, HANDLE_ALTER_PARTITION)
LINEAGE = "lineage"  # a refusal focus on the steps only the variant's own rules refuse
FOCUS = 16.0  # the focused kind's refused steps against another kind's
TAKE_AWAY = (CRASH, LOSE_DISK, FAIL_DISK, FENCE)  # the faults leader_faults steers


@dataclass(frozen=True)
class Swarm:
    """One schedule's share of its fault profile: step kind weights (0 = left out), crash kind
    weights, whether fetches may be partial, and the brokers slow to apply LeaderAndIsr."""

    weights: Mapping[str, float]
    crash_kinds: Mapping[str, float]
    partial_fetches: bool
    slow: tuple[int, ...]
    leader_faults: str | None = None  # "spare" or "target" (module docstring)
    refusal_focus: str | None = None

    def weight(self, step: Step, state=None) -> float:
        """The weight of ``step`` among the steps of its kind (0: left out) in the model's ``state``."""
        name = step.name
        factor = 1.0
        if self.leader_faults and name in TAKE_AWAY and state is not None and step.replica == state.controller.leader:
            if self.leader_faults == "spare":
                return 0.0
            factor = FOCUS
        return factor * self._weight(step)

    def _weight(self, step: Step) -> float:
        name = step.name
        if name == CRASH:
            return self.crash_kinds.get(step.arg, 0.0)
        if name == SEND_FETCH and step.max_batches and not self.partial_fetches:
            return 0.0
        if name == DELIVER_LEADER_AND_ISR and step.replica in self.slow:
            return SLOW
        return 1.0

    def features(self) -> list[str]:
        """What is in, as names: each step kind, ``crash:<kind>``, ``partial_fetches`` and
        ``slow:<broker>`` (a campaign's summary counts schedules by these)."""
        out = [k for k, w in self.weights.items() if w > 0]
        out += [f"crash:{k}" for k, w in self.crash_kinds.items() if w > 0 and self.weights.get(CRASH, 0) > 0]
        out += ["partial_fetches"] * self.partial_fetches + [f"slow:{b}" for b in self.slow]
        out += [f"leader_faults:{self.leader_faults}"] * bool(self.leader_faults)
        out += [f"refusal_focus:{self.refusal_focus}"] * bool(self.refusal_focus)
        return out

    def refused(self, choices, refused: dict[str, list[Step]], state) -> Step:
        """The next refused step, among ``refused`` (by kind). Under a focus, its kind ``FOCUS`` times
        as likely as another, and among its steps those of a broker that leads in its own view (past
        the leader guard: refused by a protocol rule) ``FOCUS`` times as likely as the others."""
        kinds = list(refused)
        if self.refusal_focus not in kinds:
            return choices.one_of(refused[choices.one_of(kinds, "refused kind")], "refused step")
        name = choices.weighted(kinds, [FOCUS if k == self.refusal_focus else 1.0 for k in kinds], "refused kind")
        steps = refused[name]
        if name != self.refusal_focus:
            return choices.one_of(steps, "refused step")
        leads = [
            FOCUS if 0 <= st.replica < len(state.replicas) and state.replicas[st.replica].leader == st.replica else 1.0
            for st in steps
        ]
        return choices.weighted(steps, leads, "refused step")

    def to_json(self) -> dict:
        return {
            "weights": {k: w for k, w in self.weights.items() if w > 0},
            "crash_kinds": [k for k, w in self.crash_kinds.items() if w > 0],
            "partial_fetches": self.partial_fetches,
            "slow": list(self.slow),
            **({"leader_faults": self.leader_faults} if self.leader_faults else {}),
            **({"refusal_focus": self.refusal_focus} if self.refusal_focus else {}),
        }


def draw_swarm(choices, profile: FaultProfile, replicas: int, steered: bool = False) -> Swarm:
    """A swarm of ``profile`` for a cluster of ``replicas``, drawn with ``choices`` (a
    ``choices.Choices``: seeded for random walks, Hypothesis's draws for its strategies); the steered
    features only with ``steered`` (random walks: Hypothesis draws and shrinks its own way)."""
    weights = {}
    for name in STEPS:  # the alphabet's order: the draws do not depend on the profile's
        base = profile.weights.get(name, 0.0)
        if base <= 0:
            continue
        if STEPS[name].config is not None:  # enabled by a config switch: kept, drawing nothing, so the
            weights[name] = base  # draws of swarms are those of the alphabet before it
            continue
        kept = name in CORE or choices.one_of((True, False), f"swarm: {name}?")
        weights[name] = base * choices.one_of(FACTORS, f"swarm: {name} weight") if kept else 0.0
    crash = {
        k: (1.0 if choices.one_of((True, False), f"swarm: crash {k}?") else 0.0) * profile.crash_kinds.get(k, 0.0)
        for k in CRASH_KINDS
    }
    if not any(crash.values()):
        crash = dict(profile.crash_kinds)
    partial = choices.one_of((True, False), "swarm: partial fetches?")
    slow = tuple(b for b in range(replicas) if choices.weighted((False, True), (3.0, 1.0), f"swarm: broker {b} slow?"))
    features = {}
    if steered and "leader_faults" in STEERED and any(profile.weights.get(k, 0.0) > 0 for k in TAKE_AWAY):
        features["leader_faults"] = choices.weighted((None, "spare", "target"), (2.0, 1.0, 1.0), "swarm: leader faults")
    if steered and "refusal_focus" in STEERED:
        features["refusal_focus"] = choices.weighted(
            (None, LINEAGE) + GUARDED, (1.0, 6.0) + (0.25,) * len(GUARDED), "swarm: refusal focus"
        )
    return Swarm(MappingProxyType(weights), MappingProxyType(crash), partial, slow, **features)


def seeded_swarm(seed: int, profile: FaultProfile, replicas: int) -> Swarm:
    """The swarm of a random walk's ``seed``: drawn from a generator of its own, so the walk's
    own choices (``random.Random(seed)``) are those of a walk without a swarm."""
    return draw_swarm(SeededChoices(f"swarm-{seed}"), profile, replicas, steered=True)
