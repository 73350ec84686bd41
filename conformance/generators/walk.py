"""Seeded random walks over the model's enabled steps, run in lockstep as they go.

A ``FaultProfile`` weighs the step kinds and bounds the faults. Profiles marked ``within_budget``
keep to ``isrcheck.specs.FAULT_BUDGET``: unclean election off, at most min.insync.replicas - 1
distinct replicas ever lose unflushed data, and a replica that lost (or may lose) unflushed data
is never the sole member of the controller's ISR (Last Replica Standing, fixed only by KIP-966),
nor comes back by a fast restart the controller never noticed (it would stay in the ISR without
the data: KIP-966's unclean shutdown detection). A lost disk counts as losing data. Consumers read
from a leader only in the controller's current leader epoch: a deposed leader that has not heard
of its successor (a zombie, or a leader moved away) serves its stale HW, and the consumer here
carries no leader epoch to be fenced by (KIP-320's consumer-side validation does that in Kafka).
With ``spare_known_gaps`` they also avoid two places where docs/steps.md departs from Kafka and
the protocol loses data for that reason alone (the README lists them): a power loss or a lost disk
of a replica that is in some ISR view or proposal, and an ISR expansion on a remote LEO from
before it lost data (AlterPartition carries no broker epoch, KIP-903, KAFKA-14139).
The walk keeps every step it took, so the returned Schedule replays without the seed.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

from isrcheck.model import PROTOCOLS, Step, StepRefused, apply
from isrcheck.model.alphabet import CRASH_KINDS, STEPS

from isrcheck.conformance.core.lockstep import Lockstep
from isrcheck.conformance.generators.refusals import DEFAULT_REFUSALS, RefusalQuota, by_kind, refused_steps
from isrcheck.conformance.core.schedule import Schedule, ScheduleConfig, ScheduleError, load_config
from isrcheck.conformance.core.verdict import Verdict

_BASE_WEIGHTS = {
    "produce": 3.0, "consume": 1.0, "send_fetch": 4.0, "handle_fetch": 4.0,
    "handle_fetch_response": 4.0, "deliver_leader_and_isr": 3.0, "shrink_isr": 1.0,
    "expand_isr": 2.0, "handle_alter_partition": 2.0, "handle_alter_partition_response": 2.0,
    "elect": 3.0, "fence": 1.5, "rejoin": 1.5, "restart": 1.5, "flush": 0.5, "checkpoint_hw": 0.5,
    "tick": 1.0, "crash": 0.0, "drop": 0.0, "lose_disk": 0.0,
}


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

    def with_weights(self, **weights: float) -> "FaultProfile":
        """A copy with some step weights changed (e.g. ``drop=2.0``)."""
        unknown = sorted(set(weights) - set(STEPS))
        if unknown:
            raise ValueError(f"unknown step name(s) {', '.join(unknown)}")
        return FaultProfile(self.name, _frozen({**self.weights, **weights}), self.crash_kinds,
                            self.within_budget, self.config, self.spare_known_gaps)


FAULT_PROFILES: dict[str, FaultProfile] = {
    # no faults at all: the protocol under perfect brokers and network (leader moves are operations)
    "none": FaultProfile("none", _frozen({**_BASE_WEIGHTS, "fence": 0.0, "rejoin": 0.0})),
    # crashes of each kind (partial and torn power losses too), fast bounces, zombies, lost disks,
    # message loss and leader changes, within the fault budget
    "default": FaultProfile(
        "default", _frozen({**_BASE_WEIGHTS, "crash": 0.4, "drop": 0.6, "lose_disk": 0.6}),
        config=_frozen({"request_timeout_ticks": 6})),
    # beyond the budget: frequent power loss, unclean election enabled
    "heavy": FaultProfile(
        "heavy", _frozen({**_BASE_WEIGHTS, "crash": 1.0, "drop": 1.5, "flush": 0.2, "lose_disk": 0.6}),
        _frozen({"clean": 0.5, "process": 1.0, "power": 2.0}), within_budget=False,
        config=_frozen({"request_timeout_ticks": 6, "unclean_leader_election_enable": True})),
}


class _Budget:
    """Guards of the fault budget over the model state (see the module docstring)."""

    def __init__(self, config: ScheduleConfig, spare_known_gaps: bool, protocol: str) -> None:
        self.max_losers = config.min_insync_replicas - 1
        self.losers: set[int] = set()
        self.spare_known_gaps = spare_known_gaps
        # the losses Kafka itself suffers, which the budget leaves out, are the protocol's own:
        # KIP-903 closes the stale ISR expansion, KIP-966 Last Replica Standing and fast bounces
        known = PROTOCOLS[protocol].known_losses
        self.lrs = "last-replica-standing" in known
        self.fast_bounce = "fast-bounce-after-loss" in known
        self.stale_expansion = spare_known_gaps and "stale-isr-expansion" in known
        self.stale: set[tuple[int, int]] = set()  # (leader, r): the leader's remote LEO of r predates r's power loss

    def allows(self, state, st) -> bool:
        name = st.name
        if (name == "crash" and st.arg == "power") or name == "lose_disk":
            if st.replica not in self.losers and len(self.losers) >= self.max_losers:
                return False
            if self.spare_known_gaps and _in_some_isr(state, st.replica):
                return False
            return not self.lrs or tuple(state.controller.isr) != (st.replica,)
        if name == "restart" and self.fast_bounce and st.replica not in state.controller.fenced:
            return not state.replicas[st.replica].power_lost
        if name == "consume":  # a deposed leader serves its stale HW; see the module docstring
            rep = state.replicas[st.replica]
            return rep.leader != st.replica or rep.leader_epoch == state.controller.leader_epoch
        if name == "expand_isr" and self.stale:
            rep = state.replicas[st.replica]
            return not any((st.replica, f) in self.stale for f in range(len(state.replicas))
                           if f not in rep.isr and rep.remote_leo[f] >= rep.hw)
        if name == "fence" and self.lrs:
            # Fencing another broker must not leave a down, data-losing replica as the sole ISR member.
            rest = tuple(i for i in state.controller.isr if i != st.replica)
            if len(rest) == 1:
                p = state.replicas[rest[0]]
                return p.alive or not p.power_lost
        return True

    def took(self, before, st) -> None:
        """Account for ``st``, taken in state ``before``."""
        if (st.name == "crash" and st.arg == "power") or st.name == "lose_disk":
            self.losers.add(st.replica)
            if self.stale_expansion:
                self.stale |= {(i, st.replica) for i in range(len(before.replicas))}
        elif st.name == "handle_fetch" and self.stale:
            self.stale.discard((before.fetch_requests[st.replica][0].leader, st.replica))


def _in_some_isr(state, r: int) -> bool:
    """r is in the controller's ISR or ELR, a live leader's ISR or proposed ISR, or the ISR of an
    AlterPartition or LeaderAndIsr in flight. (KIP-966 elects an unfenced ELR member: one that
    lost power is elected before it registers again, and StrongIsr, stated over the controller's
    ISR, holds an empty member until that registration removes it.)"""
    if r in state.controller.isr or r in state.controller.elr:
        return True
    for i, rep in enumerate(state.replicas):
        if rep.alive and rep.leader == i and (r in rep.isr or (rep.pending_isr and r in rep.pending_isr)):
            return True
    # a LeaderAndIsr in flight may yet make its receiver a leader with that ISR view
    return any(r in m.isr for q in state.alter_partition + state.leader_and_isr for m in q)


def _profile(faults) -> FaultProfile:
    if isinstance(faults, FaultProfile):
        return faults
    if faults not in FAULT_PROFILES:
        raise ScheduleError(f"faults: unknown fault profile {faults!r} (known: {', '.join(FAULT_PROFILES)})")
    return FAULT_PROFILES[faults]


def random_walk(seed: int, protocol: str, steps: int, faults: str | FaultProfile = "default",
                config: dict | None = None, impl: bool = True,
                refusals: float = DEFAULT_REFUSALS) -> tuple[Schedule, Verdict]:
    """Walk ``steps`` steps from the initial state, each chosen (seeded) among the model's enabled
    steps and run in lockstep at once; stops at the first failure. A share ``refusals`` of the
    steps (at least ``floor(refusals * steps)``) are steps the model refuses instead, drawn from
    the whole alphabet (``isrcheck.conformance.generators.refusals``): the implementation must refuse them
    too. Returns the schedule taken and its verdict; ``run_schedule`` on that schedule gives the
    same verdict."""
    quota = RefusalQuota(refusals)
    profile = _profile(faults)
    if not isinstance(steps, int) or steps < 0:
        raise ScheduleError(f"steps: expected an integer >= 0, got {steps!r}")
    cfg = load_config({**profile.config, **(config or {})})
    if profile.within_budget and cfg.unclean_leader_election_enable:
        raise ScheduleError(f"config.unclean_leader_election_enable: fault profile {profile.name!r} keeps to "
                            "the fault budget, which has unclean election off (use 'heavy' or a "
                            "FaultProfile with within_budget=False)")
    schedule = Schedule(protocol, cfg, (),
                        name=f"walk-{protocol}-{profile.name}-{seed}",
                        description=f"random walk, seed {seed}, fault profile {profile.name!r}")
    schedule = schedule.with_protocol(protocol)  # validates the protocol name
    rng = random.Random(seed)
    run = Lockstep(protocol, cfg, impl=impl)
    budget = _Budget(cfg, profile.spare_known_gaps, protocol) if profile.within_budget else None
    weights, kinds = profile.weights, profile.crash_kinds
    taken: list[dict] = []
    for _ in range(steps):
        enabled = run.enabled_steps()
        if quota.rate and (quota.behind() or rng.random() < quota.rate):
            refused = by_kind(refused_steps(cfg.replicas, run.state, enabled))
            if refused:
                options = refused[rng.choice(list(refused))]
                st = options[rng.randrange(len(options))]
                quota.count(True)
                taken.append(st.to_json())
                if run.step(st) is not None:
                    break
                continue
        quota.count(False)
        by_name: dict[str, list] = {}
        for st in enabled:
            if budget is not None and not budget.allows(run.state, st):
                continue
            if weights.get(st.name, 0.0) > 0 and (st.name != "crash" or kinds.get(st.arg, 0.0) > 0):
                by_name.setdefault(st.name, []).append(st)
        names = list(by_name)  # the model's enabled order: deterministic
        if not names:  # a profile that weighs every enabled step 0: the walk ends here
            break
        name = rng.choices(names, [weights[n] for n in names])[0]
        options = by_name[name]
        if name == "crash":
            st = rng.choices(options, [kinds[o.arg] for o in options])[0]
        else:
            st = options[rng.randrange(len(options))]
        taken.append(st.to_json())
        before = run.state
        if run.step(st) is not None:
            break
        if budget is not None:
            budget.took(before, st)
    return schedule.with_steps(taken), run.verdict()


def within_budget(schedule: Schedule, faults: str | FaultProfile = "default") -> bool:
    """Whether every step of ``schedule`` keeps to the profile's fault budget (checked on the
    model alone); lets the shrinker keep a counterexample inside the budget it was found in."""
    profile = _profile(faults)
    if not profile.within_budget:
        return True
    run = Lockstep(schedule.protocol, schedule.config, impl=False)
    budget = _Budget(schedule.config, profile.spare_known_gaps, schedule.protocol)
    state = run.state
    for raw in schedule.steps:
        st = Step.from_json(raw)
        if not budget.allows(state, st):
            return False
        try:
            after, _ = apply(run.cfg, state, st)
        except StepRefused:
            continue
        budget.took(state, st)
        state = after
    return True
