"""The SMT encoding held against the executable model: random walks of every variant, and at each
state steps the model takes and steps it refuses; the solver must admit exactly the model's
successor of each step taken, and nothing for a step refused."""
from __future__ import annotations

import random
from collections import Counter

import pytest
import z3

from isrcheck.model.smt.protocols import RULES
from isrcheck.model import MESSAGE_KINDS, PROTOCOLS, STEPS, ModelConfig, Step, apply, enabled, initial_state
from isrcheck.model.alphabet import steps_of
from isrcheck.model.smt.actions import ENCODED, Unsupported, successor, unsupported
from isrcheck.model.smt.differential import check_transition
from isrcheck.model.smt.protocols import UnsupportedVariant, rules_for
from isrcheck.model.smt.state import Bounds, OutOfBounds, constant, decode, embed, values_of

BOUNDS = Bounds(replicas=3, log=3, records=3, batch=2, leader_and_isr=4, fetch_requests=2, fetch_responses=2,
                alter_partition=2, alter_partition_responses=2)


def _config(protocol: str, seed: int) -> ModelConfig:
    return ModelConfig(protocol=protocol, replicas=3, replica_lag_time_max_ticks=1, request_timeout_ticks=2,
                       flush_messages=2 if seed % 2 else None, unclean_leader_election_enable=seed % 3 == 0)


def _candidates(cfg, s) -> list:
    """Every step of the alphabet for this state, and for each FIFO a delivery or drop one past its end."""
    out = []
    for kind in STEPS.values():
        if "index" in kind.fields:
            steps = steps_of(kind, cfg.replicas, s)
            out += steps + [Step(kind.name, r, arg, index=len(getattr(s, MESSAGE_KINDS[kind.queue or arg])[r]))
                            for r in range(cfg.replicas) for arg in ((None,) if kind.queue else tuple(MESSAGE_KINDS))]
        else:
            out += steps_of(kind, cfg.replicas)
    return [st for st in out if unsupported(st) is None]


def _by_kind(rng: random.Random, steps: list, kinds: int) -> list:
    """One random step of each of ``kinds`` random step kinds (produce has 36 variants, tick one)."""
    groups: dict = {}
    for st in steps:
        groups.setdefault(st.name, []).append(st)
    return [rng.choice(groups[name]) for name in rng.sample(sorted(groups), min(kinds, len(groups)))]


# steps a random run seldom has enabled (an ISR change needs a lagging or returning follower)
RARE = ("shrink_isr", "expand_isr", "handle_alter_partition", "handle_alter_partition_response")


def _fits(s) -> bool:
    try:
        embed(BOUNDS, s)
    except OutOfBounds:
        return False
    return True


# An ISR shrink for lag, then a follower catching up: expand_isr enabled (a random run seldom gets there).
TO_EXPAND = ([Step("produce", 0, 1), Step("tick"), Step("tick"), Step("shrink_isr", 0), Step("handle_alter_partition", 0),
              Step("handle_alter_partition_response", 0)]
             + [Step("send_fetch", 1), Step("handle_fetch", 1), Step("handle_fetch_response", 1)] * 2)


def drive(protocol: str, seed: int, states: int, taken: int, refused: int, start: list = ()) -> Counter:
    """Check the steps of ``start``, then walk ``states`` states of a random run; at each, check
    ``taken`` enabled steps and ``refused`` refused ones. Returns (step, outcome) counts; fails at
    the first mismatch."""
    rng = random.Random(seed)
    cfg = _config(protocol, seed)
    s = initial_state(cfg)
    seen: Counter = Counter()
    for st in start:
        outcome = check_transition(cfg, BOUNDS, s, st)
        assert outcome.kind == "agree", f"{protocol}: {st.to_json()} in {s}: {outcome.detail}"
        seen[st.name, outcome.kind] += 1
        s = apply(cfg, s, st)[0]
    for _ in range(states):
        cands = _candidates(cfg, s)
        on = [st for st in enabled(cfg, s) if unsupported(st) is None]
        off = [st for st in cands if st not in on]
        rare = _by_kind(rng, [st for st in on if st.name in RARE], len(RARE))  # seldom enabled: always checked
        for st in rare + _by_kind(rng, [st for st in on if st.name not in RARE], taken) + _by_kind(rng, off, refused):
            outcome = check_transition(cfg, BOUNDS, s, st)
            assert outcome.kind != "mismatch", f"{protocol} seed {seed}: {st.to_json()} in {s}: {outcome.detail}"
            seen[st.name, outcome.kind] += 1
        nexts = [st for st in _by_kind(rng, on, len(STEPS)) if _fits(apply(cfg, s, st)[0])]
        if not nexts:
            s = initial_state(cfg)
            continue
        s = apply(cfg, s, rng.choices(nexts, [4 if st.name in RARE else 1 for st in nexts])[0])[0]
    return seen


@pytest.mark.parametrize("protocol", sorted(RULES))
def test_solver_admits_exactly_the_models_successor(protocol):
    seen = drive(protocol, seed=len(protocol), states=14, taken=4, refused=2, start=TO_EXPAND)
    assert sum(n for (_name, kind), n in seen.items() if kind == "agree") >= 30
    assert sum(n for (_name, kind), n in seen.items() if kind == "refused") >= 15


@pytest.mark.slow
@pytest.mark.parametrize("protocol", sorted(RULES))
def test_thousands_of_transitions_of_every_step_kind(protocol):
    seen: Counter = Counter()
    for seed in range(5):
        seen += drive(protocol, seed, states=100, taken=3, refused=2, start=TO_EXPAND if seed % 2 else ())
    assert sum(seen.values()) >= 2000
    for name in ENCODED:
        assert seen[name, "agree"] > 0, f"{name} never taken"
        assert name == "tick" or seen[name, "refused"] > 0, f"{name} never refused"  # a tick always is taken


def test_encode_decode_round_trip():
    """Every state of a run decodes from its encoding to itself (values read back through z3)."""
    cfg = _config("kip-279", 1)
    rng = random.Random(5)
    solver = z3.Solver()
    solver.check()
    s = initial_state(cfg)
    for _ in range(40):
        assert decode(BOUNDS, values_of(solver.model(), constant(BOUNDS, embed(BOUNDS, s)))) == s
        nexts = [t for st in enabled(cfg, s) if unsupported(st) is None for t in [apply(cfg, s, st)[0]] if _fits(t)]
        s = rng.choice(nexts)


def test_unsupported_steps_are_refused_by_name():
    cfg = _config("kip-320", 0)
    s = constant(BOUNDS, embed(BOUNDS, initial_state(cfg)))
    with pytest.raises(Unsupported, match="partial fetches"):
        successor(cfg, rules_for("kip-320"), BOUNDS, s, Step("send_fetch", 1, max_batches=1))
    with pytest.raises(Unsupported, match="partial write-back"):
        successor(cfg, rules_for("kip-320"), BOUNDS, s, Step("crash", 0, "power", survive=1))


def test_unknown_variant_is_refused_by_name():
    with pytest.raises(UnsupportedVariant, match="kip-966"):
        rules_for("kip-966")


def test_states_past_the_bounds_are_refused():
    cfg = _config("kip-320", 0)
    s = initial_state(cfg)
    for _ in range(4):
        s = apply(cfg, s, {"step": "produce", "replica": 0, "acks": 1})[0]
    with pytest.raises(OutOfBounds, match="log of 4 entries"):
        embed(BOUNDS, s)
