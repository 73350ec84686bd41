"""The SMT encoding held against the executable model: random walks of every variant, and at each
state steps the model takes and steps it refuses; the solver must admit exactly the model's
successor of each step taken, and nothing for a step refused."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import replace

import pytest
import z3
from controlled_shutdown import LEADER_STOPPED, STOPPED
from controlled_shutdown import REACHED as STOPPED_REACHED
from hw_waits import CAUGHT_UP, OUT, REACHED, lagged
from metadata_cache import REACHED as TOLD_REACHED
from metadata_cache import REJOINED, TAKEN_OUT, TOLD, ZOMBIE
from prev_fetch import BEHIND, STEADY
from unfence import FENCE_0, FOLLOWER_BACK, KILL_SOAK, LAST_MEMBER, UNFENCE_1
from unfence_with_shutdown import REGISTERED as SHUT_DOWN_REGISTERED
from unfence_with_shutdown import REJOINED as SHUT_DOWN_REJOINED

from isrcheck.model import (
    MESSAGE_KINDS,
    PROTOCOLS,
    STEPS,
    ModelConfig,
    Step,
    apply,
    enabled,
    initial_state,
    replay,
    why_disabled,
)
from isrcheck.model.alphabet import steps_of
from isrcheck.model.smt.actions import ENCODED, Unsupported, successor, unsupported
from isrcheck.model.smt.differential import check_transition
from isrcheck.model.smt.protocols import RULES, UnsupportedVariant, rules_for
from isrcheck.model.smt.state import Bounds, OutOfBounds, constant, decode, embed, values_of

BOUNDS = Bounds(
    replicas=3,
    log=3,
    records=3,
    batch=2,
    leader_and_isr=4,
    fetch_requests=2,
    fetch_responses=2,
    alter_partition=2,
    alter_partition_responses=2,
)


# the same, with a slot per follower for the read its leader holds (split_fetch_handling)
SPLIT_BOUNDS = replace(BOUNDS, held_reads=True)
# and with a stale fetcher per replica (split_become_follower)
STALE_BOUNDS = replace(BOUNDS, stale_fetcher=True)


def _config(
    protocol: str,
    seed: int,
    split: bool = False,
    stale: bool = False,
    waits: bool = False,
    previous: bool = False,
    cache: bool = False,
    unfence: bool = False,
    shutdown: bool = False,
) -> ModelConfig:
    return ModelConfig(
        protocol=protocol,
        metadata_cache=cache,
        unfence_at_heartbeat=unfence,
        kraft_controlled_shutdown=shutdown,
        split_fetch_handling=split,
        split_become_follower=stale,
        hw_waits_for_caught_up=waits,
        catch_up_at_previous_fetch=previous,
        replicas=3,
        replica_lag_time_max_ticks=1,
        request_timeout_ticks=2,
        flush_messages=2 if seed % 2 else None,
        unclean_leader_election_enable=seed % 3 == 0,
    )


def _candidates(cfg, s) -> list:
    """Every step of the alphabet for this state, and for each FIFO a delivery or drop one past its end."""
    out = []
    for kind in STEPS.values():
        if "index" in kind.fields:
            steps = steps_of(kind, cfg.replicas, s)
            out += steps + [
                Step(kind.name, r, arg, index=len(getattr(s, MESSAGE_KINDS[kind.queue or arg])[r]))
                for r in range(cfg.replicas)
                for arg in ((None,) if kind.queue else tuple(MESSAGE_KINDS))
            ]
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


def _fits(s, bounds: Bounds = BOUNDS) -> bool:
    try:
        embed(bounds, s)
    except OutOfBounds:
        return False
    return True


# Two batches, fetched one at a time by follower 1 (a partial fetch: replica.fetch.max.bytes) and
# at once by follower 2, with a limit of more batches than there are.
PARTIAL = [
    Step("produce", 0, 1),
    Step("produce", 0, 1, records=2),
    Step("send_fetch", 1, max_batches=1),
    Step("handle_fetch", 1),
    Step("handle_fetch_response", 1),
    Step("send_fetch", 1, max_batches=1),
    Step("handle_fetch", 1),
    Step("handle_fetch_response", 1),
    Step("send_fetch", 2, max_batches=3),
    Step("handle_fetch", 2),
    Step("handle_fetch_response", 2),
]
# Unflushed batches lost in power losses that keep some of them or tear the next one (refused where
# there are not that many), the follower's after a partial fetch.
TORN = PARTIAL[:5] + [
    Step("crash", 1, "power", survive=1),
    Step("crash", 0, "power", survive=2, torn=True),
    Step("crash", 0, "power", survive=1, torn=True),
    Step("restart", 0),
    Step("restart", 1),
    Step("crash", 2, "power", torn=True),
]
# An ISR shrink for lag, then a follower catching up: expand_isr enabled (a random run seldom gets there).
TO_EXPAND = [
    Step("produce", 0, 1),
    Step("tick"),
    Step("tick"),
    Step("shrink_isr", 0),
    Step("handle_alter_partition", 0),
    Step("handle_alter_partition_response", 0),
] + [Step("send_fetch", 1), Step("handle_fetch", 1), Step("handle_fetch_response", 1)] * 2


def drive(
    protocol: str,
    seed: int,
    states: int,
    taken: int,
    refused: int,
    start: list = (),
    split: bool = False,
    stale: bool = False,
    waits: bool = False,
    previous: bool = False,
    cache: bool = False,
    unfence: bool = False,
    shutdown: bool = False,
) -> Counter:
    """Check the steps of ``start``, then walk ``states`` states of a random run; at each, check
    ``taken`` enabled steps and ``refused`` refused ones. Returns (step, outcome) counts; fails at
    the first mismatch. ``split``: with a leader's fetch handling split (read_fetch, then handle_fetch);
    ``stale``: with becoming a follower split (deliver_leader_and_isr, then remove_fetcher); ``waits``:
    with the HW waiting for caught-up followers outside the ISR (hw_waits_for_caught_up); ``previous``:
    with a follower caught up as of its previous Fetch (catch_up_at_previous_fetch); ``cache``: with
    the brokers' metadata caches (metadata_cache); ``unfence``: with registrations awaiting unfence
    (unfence_at_heartbeat); ``shutdown``: with brokers in controlled shutdown (kraft_controlled_shutdown)."""
    rng = random.Random(seed)
    cfg = _config(protocol, seed, split, stale, waits, previous, cache, unfence, shutdown)
    bounds = replace(
        BOUNDS,
        held_reads=split,
        stale_fetcher=stale,
        prev_fetch=previous,
        metadata_cache=cache,
        unfence=unfence,
        controlled_shutdown=shutdown,
    )
    s = initial_state(cfg)
    seen: Counter = Counter()
    for st in start:
        outcome = check_transition(cfg, bounds, s, st)
        assert outcome.kind == "agree", f"{protocol}: {st.to_json()} in {s}: {outcome.detail}"
        seen[st.name, outcome.kind] += 1
        s = apply(cfg, s, st)[0]
    for _ in range(states):
        cands = _candidates(cfg, s)
        on = [st for st in enabled(cfg, s) if unsupported(st) is None]
        off = [st for st in cands if st not in on]
        rare = _by_kind(rng, [st for st in on if st.name in RARE], len(RARE))  # seldom enabled: always checked
        for st in rare + _by_kind(rng, [st for st in on if st.name not in RARE], taken) + _by_kind(rng, off, refused):
            outcome = check_transition(cfg, bounds, s, st)
            assert outcome.kind != "mismatch", f"{protocol} seed {seed}: {st.to_json()} in {s}: {outcome.detail}"
            seen[st.name, outcome.kind] += 1
        nexts = [st for st in _by_kind(rng, on, len(STEPS)) if _fits(apply(cfg, s, st)[0], bounds)]
        if not nexts:
            s = initial_state(cfg)
            continue
        s = apply(cfg, s, rng.choices(nexts, [4 if st.name in RARE else 1 for st in nexts])[0])[0]
    return seen


def _round(r: int) -> list:
    return [Step("send_fetch", r), Step("handle_fetch", r), Step("handle_fetch_response", r)]


# Follower 2 lags out of the ISR (min ISR 2 keeps it at two members).
LAG_OUT_2 = (
    [Step("tick")] * 3
    + _round(1)
    + [Step("shrink_isr", 0), Step("handle_alter_partition", 0), Step("handle_alter_partition_response", 0)]
)


# KIP-903 / KIP-966 paths a random run seldom reaches (tests/model/test_broker_epochs_and_elr.py):
# an expansion proposed with a previous incarnation's broker epoch (INELIGIBLE_REPLICA), the ISR
# below min ISR filling the ELR, an unclean registration leaving it, an election from the ELR and
# one of the last known leader, and a fast bounce after a power loss.
def _down(kind1: str) -> list:
    """Broker 1 (after a crash of ``kind1``) then leader 0 (power loss) fenced: the ISR empties
    into the ELR; broker 2, out of the ISR, hears of it."""
    return LAG_OUT_2 + [
        Step("crash", 1, kind1),
        Step("fence", 1),
        Step("deliver_leader_and_isr", 2),
        Step("crash", 0, "power"),
        Step("fence", 0),
    ]


PATHS = {
    "stale-expansion": LAG_OUT_2
    + _round(2)
    + [
        Step("expand_isr", 0),
        Step("crash", 2, "process"),
        Step("lose_disk", 2),
        Step("restart", 2),
        Step("fence", 2),  # its old session ends; only then its registration (a new broker epoch)
        Step("register", 2),
        Step("handle_alter_partition", 0),
        Step("handle_alter_partition_response", 0),
    ],
    "elr-election": _down("clean")
    + [Step("restart", 0), Step("register", 0), Step("restart", 1), Step("register", 1)]
    + [Step("elect"), Step("deliver_leader_and_isr", 1)],
    "last-known-leader": _down("power")
    + [Step("restart", 0), Step("register", 0), Step("restart", 1), Step("register", 1)]
    + [Step("elect"), Step("deliver_leader_and_isr", 0)],
    "unclean-fast-bounce": [Step("produce", 0, 1)]
    + _round(1)
    + _round(2)
    + _round(1)
    + _round(2)
    + _round(2)
    + [
        Step("checkpoint_hw", 2),
        Step("crash", 0, "power"),
        Step("restart", 0),  # back before its session ended: in the ISR without its data till then
        Step("fence", 0),
        Step("register", 0),
        Step("deliver_leader_and_isr", 0),  # its registration's state: it serves from now on
        Step("deliver_leader_and_isr", 1),
        Step("elect"),
        Step("produce", 0, -1),
    ],
}


def along(protocol: str, steps: list, seed: int, taken: int, refused: int) -> Counter:
    """Check each of ``steps`` (taken, or refused where the variant refuses it), and at every
    state on the way ``taken`` enabled and ``refused`` refused steps of random kinds too."""
    rng = random.Random(seed)
    cfg = _config(protocol, seed)
    s = initial_state(cfg)
    seen: Counter = Counter()
    for st in steps + [None]:
        on = [t for t in enabled(cfg, s) if unsupported(t) is None]
        off = [t for t in _candidates(cfg, s) if t not in on]
        for t in _by_kind(rng, on, taken) + _by_kind(rng, off, refused) + ([st] if st else []):
            outcome = check_transition(cfg, BOUNDS, s, t)
            assert outcome.kind != "mismatch", f"{protocol}: {t.to_json()} in {s}: {outcome.detail}"
            seen[t.name, outcome.kind] += 1
        if st is not None and why_disabled(cfg, s, st) is None:
            s = apply(cfg, s, st)[0]
    return seen


@pytest.mark.parametrize("protocol", ["kip-903", "kip-966"])
def test_broker_epoch_and_elr_paths(protocol):
    seen = sum((along(protocol, steps, seed, 1, 0) for seed, steps in enumerate(PATHS.values())), Counter())
    assert seen["elect", "agree"] and seen["restart", "agree"] and seen["handle_alter_partition", "agree"]
    assert seen["register", "agree"]


def test_the_paths_reach_what_they_are_for():
    """The paths above take the kip-903 and kip-966 branches they name (else they test less)."""

    def last(protocol: str, name: str, upto: int | None = None):
        cfg = _config(protocol, list(PATHS).index(name))  # as ``along`` runs it
        s = initial_state(cfg)
        for st in PATHS[name][:upto]:
            s = apply(cfg, s, st)[0]
        return s

    assert last("kip-903", "stale-expansion", -1).alter_partition_responses[0][0].error == "INELIGIBLE_REPLICA"
    c = last("kip-966", "elr-election").controller
    assert (c.leader, c.isr, c.elr) == (1, (1,), ())
    c = last("kip-966", "last-known-leader").controller
    assert (c.leader, c.isr) == (0, (0,))
    s = last("kip-966", "unclean-fast-bounce")
    assert s.controller.leader == 1 and s.controller.leader_epoch == 2 and 0 not in s.controller.isr
    assert s.replicas[2].hw_checkpoint == 1


# partial fetches and write-back do not depend on the variant but through what surrounds them:
# one variant per way of truncating (the slow run takes both paths on every variant)
@pytest.mark.parametrize("protocol", ["hw-truncation", "kip-279", "kip-966"])
def test_partial_fetches_and_partial_write_back(protocol):
    seen = along(protocol, PARTIAL, 1, 1, 0) + along(protocol, TORN, 2, 1, 0)
    assert seen["handle_fetch", "agree"] >= 3 and seen["send_fetch", "agree"] >= 3
    assert seen["crash", "agree"] >= 2 and seen["crash", "refused"] >= 2
    cfg = _config(protocol, 1)
    run = replay(cfg, PARTIAL[:5])
    assert [len(s.replicas[1].log) for s in run.states[-3:]] == [0, 0, 1]  # one batch of two
    assert len(replay(cfg, PARTIAL).states[-1].replicas[2].log) == 3
    s = replay(_config(protocol, 2), TORN[:6] + TORN[7:8]).states[-1]
    assert (s.replicas[0].durable, len(s.replicas[0].log)) == (1, 3)  # the first of two batches reached the disk
    assert (s.replicas[1].durable, len(s.replicas[1].log)) == (1, 1)


# The disk faults (docs/steps.md, "Disk faults"): a torn tail of garbage, a corruption at rest of the
# last flushed batch, and each failing I/O of a leader and of a follower (refused where nothing is
# unflushed, nothing to read, or the broker is down).
DISK = [
    Step("produce", 0, 1),
    *_round(1),
    Step("flush", 1),
    Step("produce", 0, 1),
    *_round(1),
    Step("crash", 1, "power", torn=True, tail="stale"),
    Step("corrupt", 1),
    Step("corrupt", 2),
    Step("restart", 1),
    Step("fail_disk", 2, "read:EIO"),
    Step("fail_disk", 0, "fsync:ENOSPC"),
    Step("elect"),
    Step("fail_disk", 1, "write:EIO"),
    Step("fail_disk", 1, "fsync:EIO"),
    Step("restart", 0),
]


@pytest.mark.parametrize("protocol", ["kip-101", "kip-320", "kip-966"])
def test_disk_faults(protocol):
    seen = along(protocol, DISK, 3, 1, 1)
    assert seen["corrupt", "agree"] >= 1 and seen["fail_disk", "agree"] >= 2 and seen["fail_disk", "refused"] >= 1
    s = replay(_config(protocol, 2), DISK[:11]).states[-1]
    assert s.replicas[1].durable == 0 and s.corruptions == 1  # the one flushed batch was the damaged one


# A corruption under a live broker: the leader's flushed batch damaged, the follower's fetch
# refused by CRC, the consumer's fetch failing, a clean shutdown keeping the damage, a process
# crash letting recovery cut it; then a follower's damaged batch truncated away by a new leader.
LIVE = [
    Step("produce", 0, 1),
    *_round(1),
    *_round(2),
    *_round(1),
    *_round(2),
    Step("flush", 0),
    Step("corrupt_live", 0),
    Step("corrupt_live", 0),
    Step("consume", 0),
    Step("crash", 2, "power"),
    Step("lose_disk", 2),
    Step("restart", 2),
    Step("deliver_leader_and_isr", 2, index=0),
    *_round(2),
    Step("crash", 0, "clean"),
    Step("restart", 0),
    Step("deliver_leader_and_isr", 0, index=0),
    Step("consume", 0),
    Step("crash", 0, "process"),
    Step("restart", 0),
]


@pytest.mark.parametrize("protocol", ["kip-101", "kip-320", "kip-966"])
def test_corruption_under_a_live_broker(protocol):
    seen = along(protocol, LIVE, 3, 1, 1)
    assert seen["corrupt_live", "agree"] >= 1 and seen["corrupt_live", "refused"] >= 1
    assert seen["handle_fetch_response", "agree"] >= 1 and seen["consume", "agree"] >= 2
    taken = LIVE[:15] + LIVE[16:]  # the second corrupt_live is refused
    # from kip-903 on a restarted broker registers only once its old session ended, which moves
    # leadership away; it serves once it applied the LeaderAndIsr of its registration
    moved = _config(protocol, 2).rules.start_before_registration
    if moved:
        bounced = []
        for st in taken:
            bounced.append(st)
            if st.name == "restart":
                bounced += [Step("fence", st.replica), Step("register", st.replica)]
        taken = bounced
    run = replay(_config(protocol, 2), [st.to_json() for st in taken])
    consumed = [out[0]["error"] for st, out in zip(taken, run.outputs) if st.name == "consume"]
    assert consumed == ["CORRUPT_MESSAGE", "NOT_LEADER_OR_FOLLOWER" if moved else "CORRUPT_MESSAGE"]
    clean_restart = taken.index(Step("restart", 0))
    assert run.states[clean_restart + 1].replicas[0].bad_batch == 0  # a clean shutdown kept the damage
    assert run.states[-1].replicas[2].log == ()  # the replaced disk's follower refused the damaged batch
    assert run.states[-1].replicas[0].log == () and run.states[-1].replicas[0].bad_batch == -1  # recovery cut it


@pytest.mark.parametrize(
    "protocol",  # the rules that differ most by default; every variant with the slow tests
    [
        p if p in ("hw-truncation", "kip-320", "kip-966") else pytest.param(p, marks=pytest.mark.slow)
        for p in sorted(RULES)
    ],
)
def test_solver_admits_exactly_the_models_successor(protocol):
    seen = drive(protocol, seed=len(protocol), states=14, taken=4, refused=2, start=TO_EXPAND)
    assert sum(n for (_name, kind), n in seen.items() if kind == "agree") >= 30
    assert sum(n for (_name, kind), n in seen.items() if kind == "refused") >= 15


@pytest.mark.slow
@pytest.mark.parametrize("protocol", sorted(RULES))
def test_thousands_of_transitions_of_every_step_kind(protocol):
    seen: Counter = Counter()
    for seed in range(5):
        seen += drive(protocol, seed, states=100, taken=3, refused=2, start=TO_EXPAND if seed % 2 else PARTIAL)
    for seed, steps in enumerate([*PATHS.values(), PARTIAL, TORN]):
        seen += along(protocol, steps, seed, 3, 2)
    seen += drive(protocol, 7, states=60, taken=3, refused=2, start=SPLIT_PATH, split=True)  # read_fetch
    seen += drive(protocol, 10, states=30, taken=3, refused=2, start=HW_FIRST_PATH, split=True)  # read_fetch_hw
    seen += drive(protocol, 8, states=60, taken=3, refused=2, start=STALE_PATH, stale=True)  # remove_fetcher
    seen += drive(protocol, 9, states=60, taken=3, refused=2, start=WAITS_PATH, waits=True)  # hw_waits_for_caught_up
    assert sum(seen.values()) >= 2000
    for name in ENCODED:
        assert seen[name, "agree"] > 0, f"{name} never taken"
        assert name == "tick" or seen[name, "refused"] > 0, f"{name} never refused"  # a tick always is taken


# follower 1's fetch read, a produce and follower 2's whole handling between it and its update,
# then a read orphaned by its follower's crash and one detached by its leader's move
SPLIT_PATH = [
    Step("produce", 0, 1),
    Step("send_fetch", 1),
    Step("read_fetch", 1),
    Step("produce", 0, 1),
    Step("send_fetch", 2),
    Step("handle_fetch", 2),
    Step("handle_fetch", 1),
    Step("handle_fetch_response", 1),
    Step("handle_fetch_response", 2),
    Step("send_fetch", 2),
    Step("read_fetch", 2),
    Step("crash", 2, "process"),
    Step("handle_fetch", 2),
    Step("send_fetch", 1),
    Step("read_fetch", 1),
    Step("elect", 1),
    Step("deliver_leader_and_isr", 0),
    Step("handle_fetch", 1),
]


# follower 1's HW read, a produce and follower 2's whole handling (an HW raise) between it and
# its batches' read; then a limited fetch's HW read orphaned by its follower's crash, and one
# read while its leader's LeaderAndIsr waits, detached once it is applied
HW_FIRST_PATH = [
    Step("produce", 0, 1),
    Step("send_fetch", 1),
    Step("read_fetch_hw", 1),
    Step("produce", 0, 1),
    Step("send_fetch", 2),
    Step("handle_fetch", 2),
    Step("read_fetch", 1),
    Step("handle_fetch", 1),
    Step("handle_fetch_response", 1),
    Step("handle_fetch_response", 2),
    Step("produce", 0, 1),
    Step("send_fetch", 1, max_batches=1),
    Step("read_fetch_hw", 1),
    Step("crash", 1, "process"),
    Step("read_fetch", 1),
    Step("handle_fetch", 1),
    Step("send_fetch", 2),
    Step("read_fetch_hw", 2),
    Step("elect", 2),
    Step("read_fetch", 2),
    Step("deliver_leader_and_isr", 0),
    Step("handle_fetch", 2),
]


def _held_steps_agree(protocol: str, path: list, names: tuple) -> Counter:
    """At every state of ``path`` (split_fetch_handling), each of ``names`` for every broker, taken or
    refused, the encoding agrees with the model: the (step, outcome) counts."""
    cfg = _config(protocol, 3, split=True)
    s, seen = initial_state(cfg), Counter()
    for st in path + [None]:
        for r in range(cfg.replicas):
            for name in names:
                outcome = check_transition(cfg, SPLIT_BOUNDS, s, Step(name, r))
                assert outcome.kind != "mismatch", f"{protocol}: {name} {r} in {s}: {outcome.detail}"
                seen[name, outcome.kind] += 1
        if st is not None:
            s = apply(cfg, s, st)[0]
    return seen


@pytest.mark.parametrize(
    "protocol", [pytest.param(p, marks=pytest.mark.slow) for p in ("hw-truncation", "kip-101")] + ["kip-320", "kip-966"]
)
def test_the_split_fetch_handling_agrees(protocol):
    """With split_fetch_handling: at every state of a path through each way a read ends, read_fetch
    and handle_fetch of every follower, taken or refused; then a random run; and read_fetch refused
    with the switch off."""
    seen = _held_steps_agree(protocol, SPLIT_PATH, ("read_fetch", "handle_fetch"))
    assert min(seen.values()) >= 3 and len(seen) == 4, seen
    seen = drive(protocol, seed=3, states=10, taken=3, refused=2, start=SPLIT_PATH, split=True)
    assert seen["read_fetch", "agree"] >= 3 and seen["handle_fetch", "agree"] >= 4
    whole = _config(protocol, 0)
    off = check_transition(
        whole, SPLIT_BOUNDS, replay(whole, [{"step": "send_fetch", "replica": 1}]).states[-1], Step("read_fetch", 1)
    )
    assert off.kind == "refused"


@pytest.mark.parametrize("protocol", [pytest.param("kip-101", marks=pytest.mark.slow), "kip-320", "kip-966"])
def test_the_hw_read_first_agrees(protocol):
    """With split_fetch_handling: at every state of a path through read_fetch_hw (an append and
    a raise before the batches' read, an orphan, a LeaderAndIsr waiting for the reader), both reads,
    handle_fetch and deliver_leader_and_isr of every broker, taken or refused; then a random run."""
    names = ("read_fetch_hw", "read_fetch", "handle_fetch", "deliver_leader_and_isr")
    seen = _held_steps_agree(protocol, HW_FIRST_PATH, names)
    assert min(seen.values()) >= 3 and len(seen) == 8, seen
    seen = drive(protocol, seed=4, states=10, taken=3, refused=2, start=HW_FIRST_PATH, split=True)
    assert seen["read_fetch_hw", "agree"] >= 3 and seen["read_fetch", "agree"] >= 3


# follower 1 applies leader 2's epoch with leader 0's answer on its way, appends it with its stale
# fetcher, which fetches leader 0's next record under the old tag and appends it, sends again and is
# replaced; the new fetcher fetches from leader 2; leader 0 steps down with a stale fetcher (it
# fetches nothing), answers the old request NOT_LEADER_OR_FOLLOWER and crashes; leader 2 steps down
# too, and its fetcher is replaced
STALE_PATH = [
    Step("produce", 0, 1),
    Step("send_fetch", 1),
    Step("handle_fetch", 1),
    Step("elect", 2),
    Step("deliver_leader_and_isr", 1),
    Step("handle_fetch_response", 1),
    Step("produce", 0, 1),
    Step("send_fetch", 1),
    Step("handle_fetch", 1),
    Step("handle_fetch_response", 1),
    Step("send_fetch", 1),
    Step("remove_fetcher", 1),
    Step("send_fetch", 1),
    Step("deliver_leader_and_isr", 2),
    Step("deliver_leader_and_isr", 0),
    Step("handle_fetch", 1),
    Step("crash", 0, "process"),
    Step("elect", 1),
    Step("deliver_leader_and_isr", 2),
    Step("remove_fetcher", 2),
]


@pytest.mark.parametrize(
    "protocol", [pytest.param(p, marks=pytest.mark.slow) for p in ("kip-101", "kip-903")] + ["hw-truncation", "kip-966"]
)
def test_the_split_become_follower_agrees(protocol):
    """With split_become_follower: at every state of a path through a stale fetcher's appends, its
    fetch under its old tag, its replacement, leaders stepping down and a crash, the fetcher steps
    of every broker, taken or refused; then a random run; and remove_fetcher refused with the
    switch off."""
    cfg = _config(protocol, 3, stale=True)
    s, seen = initial_state(cfg), Counter()
    for st in STALE_PATH + [None]:
        for r in range(cfg.replicas):
            for name in ("send_fetch", "handle_fetch_response", "remove_fetcher", "deliver_leader_and_isr"):
                outcome = check_transition(cfg, STALE_BOUNDS, s, Step(name, r))
                assert outcome.kind != "mismatch", f"{protocol}: {name} {r} in {s}: {outcome.detail}"
                seen[name, outcome.kind] += 1
        if st is not None:
            s = apply(cfg, s, st)[0]
    assert seen["remove_fetcher", "agree"] >= 2 and seen["handle_fetch_response", "agree"] >= 3, seen
    assert seen["send_fetch", "agree"] >= 4 and len(seen) == 8, seen
    seen = drive(protocol, seed=3, states=10, taken=3, refused=2, start=STALE_PATH, stale=True)
    assert seen["remove_fetcher", "agree"] >= 2
    whole = _config(protocol, 0)
    off = check_transition(whole, STALE_BOUNDS, replay(whole, MOVED_ON).states[-1], Step("remove_fetcher", 1))
    assert off.kind == "refused"


MOVED_ON = [{"step": "elect", "replica": 2}, {"step": "deliver_leader_and_isr", "replica": 1, "index": 0}]


# Kafka 4.4.0's scenario (tests/hw_waits.py): follower 2, out of the ISR and caught up at tick 3 at a
# lower LEO, holds leader 0's HW when follower 1 reaches its LEO; two ticks later (lag 1) it does not
WAITS_PATH = [Step.from_json(st) for st in CAUGHT_UP]
LAGGED_PATH = [Step.from_json(st) for st in lagged(2)]
HW_STEPS = ("handle_fetch", "expand_isr", "handle_alter_partition_response", "deliver_leader_and_isr")


@pytest.mark.parametrize(
    "protocol", [pytest.param(p, marks=pytest.mark.slow) for p in ("hw-truncation", "kip-101", "kip-320")] + ["kip-966"]
)
def test_the_hw_waiting_for_caught_up_followers_agrees(protocol):
    """With hw_waits_for_caught_up: at every state of the scenario and of its lagged form, the steps
    that raise a leader's HW, of every broker, taken or refused; then a random run."""
    cfg = _config(protocol, 3, waits=True)
    assert replay(cfg, OUT + REACHED).states[-1].replicas[0].hw == 0  # the path holds the HW back
    assert replay(_config(protocol, 3), OUT + REACHED).states[-1].replicas[0].hw == 1
    assert replay(cfg, [st.to_json() for st in LAGGED_PATH]).states[-1].replicas[0].hw == 1
    seen: Counter = Counter()
    for path in (WAITS_PATH, LAGGED_PATH):
        s = initial_state(cfg)
        for st in path + [None]:
            for t in [Step(name, r) for name in HW_STEPS for r in range(cfg.replicas)] + [Step("produce", 0, 1)]:
                outcome = check_transition(cfg, BOUNDS, s, t)
                assert outcome.kind != "mismatch", f"{protocol}: {t.to_json()} in {s}: {outcome.detail}"
                seen[t.name, outcome.kind] += 1
            if st is not None:
                s = apply(cfg, s, st)[0]
    assert seen["handle_fetch", "agree"] >= 10 and seen["produce", "agree"] >= 10, seen
    seen = drive(protocol, seed=3, states=10, taken=3, refused=2, start=WAITS_PATH, waits=True)
    assert seen["handle_fetch", "agree"] >= 4, seen


# tests/prev_fetch.py: follower 2 caught up as of its previous Fetch, alone and with the HW waiting for
# it outside the ISR; and the same Fetches as held reads, the HW read a tick before the rest
PREVIOUS_BOUNDS = replace(BOUNDS, prev_fetch=True)
STEADY_PATH = [Step.from_json(st) for st in STEADY]
BEHIND_PATH = [Step.from_json(st) for st in BEHIND]


def _held_path(path: list) -> list:
    out = []
    for st in path:
        if st.name == "handle_fetch":
            out += [Step("read_fetch_hw", st.replica), Step("tick"), Step("read_fetch", st.replica)]
        out.append(st)
    return out


@pytest.mark.parametrize(
    "protocol", [pytest.param(p, marks=pytest.mark.slow) for p in ("hw-truncation", "kip-101", "kip-320")] + ["kip-966"]
)
def test_catching_up_at_the_previous_fetch_agrees(protocol):
    """With catch_up_at_previous_fetch (and hw_waits_for_caught_up): at every state of the paths, the
    fetch and HW steps of every broker, taken or refused; the held-read form; then random runs."""
    lag = {"replica_lag_time_max_ticks": 2}  # tests/prev_fetch.py's
    cfg = replace(_config(protocol, 3, waits=True, previous=True), **lag)
    assert replay(cfg, BEHIND).states[-1].replicas[0].hw == 1  # the path holds the HW back
    split = replace(_config(protocol, 3, split=True, waits=True, previous=True), **lag)
    seen: Counter = Counter()
    for config, bounds, path in (
        (cfg, PREVIOUS_BOUNDS, STEADY_PATH),
        (cfg, PREVIOUS_BOUNDS, BEHIND_PATH),
        (split, replace(PREVIOUS_BOUNDS, held_reads=True), _held_path(STEADY_PATH)),
    ):
        s = initial_state(config)
        for st in path + [None]:
            steps = [Step(name, r) for name in HW_STEPS + ("read_fetch", "read_fetch_hw") for r in range(3)]
            for t in steps + [Step("produce", 0, 1)]:
                outcome = check_transition(config, bounds, s, t)
                assert outcome.kind != "mismatch", f"{protocol}: {t.to_json()} in {s}: {outcome.detail}"
                seen[t.name, outcome.kind] += 1
            if st is not None:
                s = apply(config, s, st)[0]
        assert s.replicas[0].last_fetch_leo, "the path reaches a leader's last Fetch state"
    assert seen["handle_fetch", "agree"] >= 10 and seen["read_fetch_hw", "agree"] >= 2, seen
    seen = drive(protocol, seed=3, states=10, taken=3, refused=2, start=STEADY_PATH, previous=True)
    assert seen["handle_fetch", "agree"] >= 2, seen
    seen = drive(
        protocol, seed=4, states=10, taken=3, refused=2, start=_held_path(STEADY_PATH), split=True, previous=True
    )
    assert seen["handle_fetch", "agree"] >= 2, seen


def test_a_last_fetch_state_round_trips_and_needs_its_slots():
    cfg = _config("kip-966", 3, split=True, previous=True)
    solver = z3.Solver()
    solver.check()
    bounds = replace(PREVIOUS_BOUNDS, held_reads=True)
    for s in replay(cfg, [st.to_json() for st in _held_path(STEADY_PATH)]).states:
        assert decode(bounds, values_of(solver.model(), constant(bounds, embed(bounds, s)))) == s
    with pytest.raises(OutOfBounds, match="last Fetch"):
        embed(replace(bounds, prev_fetch=False), s)


@pytest.mark.parametrize("protocol", ["kip-279", "kip-903", "kip-966"])
def test_encode_decode_round_trip(protocol):
    """Every state of a run, and of the paths above, decodes from its encoding to itself (values
    read back through z3): broker epochs, ELR, last known leader, pending epochs included."""
    cfg = _config(protocol, 1)
    rng = random.Random(5)
    solver = z3.Solver()
    solver.check()

    def round_trip(s) -> None:
        assert decode(BOUNDS, values_of(solver.model(), constant(BOUNDS, embed(BOUNDS, s)))) == s

    s = initial_state(cfg)
    for _ in range(40):
        round_trip(s)
        nexts = [t for st in enabled(cfg, s) if unsupported(st) is None for t in [apply(cfg, s, st)[0]] if _fits(t)]
        s = rng.choice(nexts)
    for steps in PATHS.values():
        s = initial_state(cfg)
        for st in steps:
            if why_disabled(cfg, s, st) is None:
                s = apply(cfg, s, st)[0]
                round_trip(s)


def test_unsupported_steps_are_refused_by_name(monkeypatch):
    """A step kind without an encoding is refused naming it (every kind of the alphabet has one)."""
    assert set(ENCODED) == set(STEPS)
    cfg = _config("kip-320", 0)
    s = constant(BOUNDS, embed(BOUNDS, initial_state(cfg)))
    monkeypatch.delitem(ENCODED, "tick")
    with pytest.raises(Unsupported, match="step 'tick' has no SMT encoding"):
        successor(cfg, rules_for("kip-320"), BOUNDS, s, Step("tick"))


def test_every_variant_of_the_model_is_encoded():
    assert sorted(RULES) == sorted(PROTOCOLS)
    with pytest.raises(UnsupportedVariant, match="kip-999"):
        rules_for("kip-999")


def test_states_past_the_bounds_are_refused():
    cfg = _config("kip-320", 0)
    s = initial_state(cfg)
    for _ in range(4):
        s = apply(cfg, s, {"step": "produce", "replica": 0, "acks": 1})[0]
    with pytest.raises(OutOfBounds, match="log of 4 entries"):
        embed(BOUNDS, s)


@pytest.mark.parametrize("protocol", ["kip-320", "kip-966"])
def test_an_expansion_naming_its_follower_agrees(protocol):
    """``expand_isr`` with a follower (Kafka's maybeExpandIsr adds the one whose Fetch it handles):
    the encoding takes it for the caught-up follower it names and refuses it for one in the ISR."""
    shrunk = [Step("tick")] * 3 + [Step("shrink_isr", 0), Step("handle_alter_partition", 0)]
    shrunk.append(Step("handle_alter_partition_response", 0))
    for f in (1, 2):
        shrunk += [Step("send_fetch", f), Step("handle_fetch", f), Step("handle_fetch_response", f)]
    cfg = _config(protocol, 0)
    s = replay(cfg, [st.to_json() for st in shrunk]).states[-1]
    assert s.controller.isr == (0,)
    for follower, kind in ((0, "refused"), (1, "agree"), (2, "agree"), (-1, "agree")):
        outcome = check_transition(cfg, BOUNDS, s, Step("expand_isr", 0, arg=follower))
        assert outcome.kind == kind, (follower, outcome.detail)
    assert apply(cfg, s, Step("expand_isr", 0, arg=2))[0].replicas[0].pending_isr == (0, 2)


# tests/metadata_cache.py: a fenced follower caught up within the lag time holds the HW until the leader's
# cache learns of the fence; a zombie and a rejoined broker that expand_isr proposes or not by the cache
CACHE_BOUNDS = replace(BOUNDS, metadata_cache=True)


@pytest.mark.parametrize(
    "protocol", [pytest.param(p, marks=pytest.mark.slow) for p in ("hw-truncation", "kip-101", "kip-320")] + ["kip-966"]
)
def test_the_metadata_cache_agrees(protocol):
    """With metadata_cache (and hw_waits_for_caught_up): at every state of the paths, the cache's update,
    the HW steps and expand_isr of every broker, taken or refused; then random runs."""
    cfg = _config(protocol, 3, waits=True, cache=True)
    assert replay(cfg, TAKEN_OUT + TOLD_REACHED).states[-1].replicas[0].hw == 0  # the path holds the HW back
    seen: Counter = Counter()
    for path in (TAKEN_OUT + TOLD + TOLD_REACHED, TAKEN_OUT + TOLD_REACHED + TOLD, ZOMBIE + TOLD, REJOINED + TOLD):
        s = initial_state(cfg)
        for st in [Step.from_json(x) for x in path] + [None]:
            names = HW_STEPS + ("update_metadata_cache", "restart")
            for t in [Step(name, r) for name in names for r in range(cfg.replicas)]:
                outcome = check_transition(cfg, CACHE_BOUNDS, s, t)
                assert outcome.kind != "mismatch", f"{protocol}: {t.to_json()} in {s}: {outcome.detail}"
                seen[t.name, outcome.kind] += 1
            if st is not None:
                s = apply(cfg, s, st)[0]
    assert seen["update_metadata_cache", "agree"] >= 10 and seen["expand_isr", "agree"] >= 10, seen
    seen = drive(protocol, seed=5, states=10, taken=3, refused=2, start=[Step.from_json(x) for x in ZOMBIE], cache=True)
    assert seen["handle_fetch", "agree"] >= 2, seen


def test_a_metadata_cache_round_trips_and_needs_its_slots():
    cfg = _config("kip-966", 3, cache=True)
    solver = z3.Solver()
    solver.check()
    for s in replay(cfg, REJOINED + TOLD).states:
        assert decode(CACHE_BOUNDS, values_of(solver.model(), constant(CACHE_BOUNDS, embed(CACHE_BOUNDS, s)))) == s
    with pytest.raises(OutOfBounds, match="metadata cache"):
        embed(BOUNDS, s)
    with pytest.raises(OutOfBounds, match="metadata cache"):
        embed(CACHE_BOUNDS, initial_state(_config("kip-966", 3)))


# tests/unfence.py: registrations awaiting unfence (unfence_at_heartbeat); the kill soak's with the caches too
UNFENCE_BOUNDS = replace(BOUNDS, unfence=True)
UNFENCE_PATHS = (
    KILL_SOAK + FENCE_0 + UNFENCE_1,
    LAST_MEMBER + [{"step": "unfence", "replica": 0}, {"step": "elect"}],
    FOLLOWER_BACK + [{"step": "unfence", "replica": 2}, {"step": "handle_alter_partition_response", "replica": 0}],
    [{"step": "fence", "replica": 2}, {"step": "unfence", "replica": 2}],
)
CONTROLLER_STEPS = ("unfence", "fence", "rejoin", "register", "update_metadata_cache", "handle_alter_partition")


def _controller_steps_agree(cfg, bounds: Bounds, paths, names: tuple = CONTROLLER_STEPS) -> Counter:
    """At every state of ``paths``: the elections and the steps ``names`` of every broker, taken or refused."""
    seen: Counter = Counter()
    for path in paths:
        s = initial_state(cfg)
        for st in [Step.from_json(x) for x in path] + [None]:
            steps = [Step(name, r) for name in names for r in range(cfg.replicas)]
            for t in steps + [Step("elect", r) for r in range(-1, cfg.replicas)]:
                outcome = check_transition(cfg, bounds, s, t)
                assert outcome.kind != "mismatch", f"{cfg.protocol}: {t.to_json()} in {s}: {outcome.detail}"
                seen[t.name, outcome.kind] += 1
            if st is not None:
                s = apply(cfg, s, st)[0]
    return seen


# a minute each: kip-966's in the slow run
@pytest.mark.parametrize("protocol", ["kip-903", pytest.param("kip-966", marks=pytest.mark.slow)])
def test_the_unfencing_agrees(protocol):
    """With unfence_at_heartbeat: at every state of the paths, the elections, the unfencing, fences,
    registrations and AlterPartitions of every broker, taken or refused (with the metadata caches on the
    kill soak's path); then random runs."""
    seen = _controller_steps_agree(_config(protocol, 4, unfence=True), UNFENCE_BOUNDS, UNFENCE_PATHS)
    assert seen["unfence", "agree"] >= 10 and seen["elect", "agree"] >= 30 and seen["fence", "refused"] >= 30, seen
    cached = KILL_SOAK + FENCE_0 + [{"step": "update_metadata_cache", "replica": 2}] + UNFENCE_1
    seen = _controller_steps_agree(
        _config(protocol, 4, cache=True, unfence=True), replace(UNFENCE_BOUNDS, metadata_cache=True), [cached]
    )
    assert seen["update_metadata_cache", "agree"] >= 10, seen
    start = [Step.from_json(x) for x in KILL_SOAK]
    seen = drive(protocol, seed=6, states=10, taken=3, refused=2, start=start, unfence=True)
    assert seen["register", "agree"] >= 1, seen


def test_registrations_awaiting_unfence_round_trip_and_need_their_slots():
    cfg = _config("kip-966", 3, unfence=True)
    bounds = replace(BOUNDS, unfence=True)
    solver = z3.Solver()
    solver.check()
    for s in replay(cfg, KILL_SOAK + FENCE_0 + UNFENCE_1).states:
        assert decode(bounds, values_of(solver.model(), constant(bounds, embed(bounds, s)))) == s
    with pytest.raises(OutOfBounds, match="awaiting unfence"):
        embed(BOUNDS, replay(cfg, KILL_SOAK).states[-1])


# tests/controlled_shutdown.py: a follower's and a leader's controlled shutdown, what the brokers in it are
# refused (elections, an ISR expansion, the caches' eligibility), and the fence and registration that end it
SHUTDOWN_BOUNDS = replace(CACHE_BOUNDS, controlled_shutdown=True)
SHUTDOWN_STEPS = HW_STEPS + ("controlled_shutdown", "fence", "update_metadata_cache", "handle_alter_partition")


# a minute each: kip-903's in the slow run
@pytest.mark.parametrize("protocol", [pytest.param("kip-903", marks=pytest.mark.slow), "kip-966"])
def test_the_controlled_shutdown_agrees(protocol):
    """With kraft_controlled_shutdown (and metadata_cache, hw_waits_for_caught_up): at every state of the
    paths, the steps it changes, for every broker, taken or refused; then random runs."""
    cfg = _config(protocol, 3, waits=True, cache=True, shutdown=True)
    ended = [*STOPPED, {"step": "fence", "replica": 2}, {"step": "controlled_shutdown", "replica": 1}]
    restarted = [*LEADER_STOPPED, {"step": "crash", "replica": 0, "kind": "clean"}]
    restarted += [{"step": "restart", "replica": 0}, {"step": "register", "replica": 0}]
    seen = _controller_steps_agree(cfg, SHUTDOWN_BOUNDS, (STOPPED + STOPPED_REACHED, ended, restarted), SHUTDOWN_STEPS)
    assert seen["controlled_shutdown", "agree"] >= 10 and seen["controlled_shutdown", "refused"] >= 10, seen
    seen = drive(protocol, seed=7, states=12, taken=3, refused=2, shutdown=True)
    assert seen["controlled_shutdown", "agree"] + seen["controlled_shutdown", "refused"] >= 1, seen


def test_brokers_in_controlled_shutdown_round_trip_and_need_their_slots():
    cfg = _config("kip-966", 3, cache=True, shutdown=True)
    solver = z3.Solver()
    solver.check()
    for s in replay(cfg, STOPPED + [{"step": "controlled_shutdown", "replica": 0}]).states:
        assert (
            decode(SHUTDOWN_BOUNDS, values_of(solver.model(), constant(SHUTDOWN_BOUNDS, embed(SHUTDOWN_BOUNDS, s))))
            == s
        )
    assert s.controller.in_controlled_shutdown == (0, 2)
    with pytest.raises(OutOfBounds, match="controlled shutdown"):
        embed(CACHE_BOUNDS, s)


@pytest.mark.parametrize("protocol", ["kip-903", "kip-966"])
def test_the_unfencing_and_the_controlled_shutdown_agree(protocol):
    """With both switches (tests/unfence_with_shutdown.py): a broker awaiting unfence starts no controlled
    shutdown, one in controlled shutdown is fenced and never unfenced, a registration ends it."""
    cfg = _config(protocol, 4, unfence=True, shutdown=True)
    bounds = replace(UNFENCE_BOUNDS, controlled_shutdown=True)
    paths = (SHUT_DOWN_REJOINED, SHUT_DOWN_REGISTERED)
    seen = _controller_steps_agree(cfg, bounds, paths, CONTROLLER_STEPS + ("controlled_shutdown",))
    assert seen["controlled_shutdown", "agree"] >= 10 and seen["controlled_shutdown", "refused"] >= 10, seen
    assert seen["unfence", "agree"] >= 3 and seen["fence", "agree"] >= 10, seen
