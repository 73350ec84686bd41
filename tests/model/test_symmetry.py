"""Symmetry reduction and fingerprints in the explorer: renaming brokers commutes with every step
but the election without a target, the reduced search gives the verdicts and shortest
counterexample depths of the unreduced one, and fingerprints are the same in every process."""

import os
import subprocess
import sys

import pytest
from explorer_scopes import ALL_FAULTS, COMPARED

from isrcheck.model import ModelConfig, Scope, Step, explore, replay
from isrcheck.model.budget import EMPTY_LEDGER, FaultLedger
from isrcheck.model.explorer import fingerprint, key_for_fingerprint, reachable_states, state_key, successors
from isrcheck.model.state import permuted
from isrcheck.model.symmetry import all_permutations, compose, inverse, renamed_step
from isrcheck.specs import BY_ID, PROPERTIES


def _untargeted_election(steps) -> bool:
    return steps[0].name == "elect" and steps[0].replica < 0


@pytest.mark.parametrize("protocol", ["hw-truncation", "kip-101", "kip-320", "kip-903", "kip-966"])
def test_renaming_brokers_commutes_with_every_step_but_the_election_by_assignment_order(protocol):
    # The one place that renames brokers (state.permuted) must cover every broker-indexed field:
    # a field it forgets makes a renamed state's successors differ from the renamed successors.
    config = ModelConfig(protocol=protocol, min_insync_replicas=2, unclean_leader_election_enable=protocol == "kip-101")
    loser = FaultLedger(losers=(1,))
    perms = all_permutations(config.replicas)[1:]
    checked = 0
    for k, s in enumerate(reachable_states(config, ALL_FAULTS, max_states=1500)):
        if k % 5:
            continue
        perm = perms[k % len(perms)]
        back = inverse(perm)
        u = permuted(s, perm)
        assert permuted(u, back) == s
        assert [p.check(u) for p in PROPERTIES] == [p.check(s) for p in PROPERTIES]
        mine = {
            (
                tuple(renamed_step(st, perm) for st in steps),
                permuted(t, perm),
                loser.after(s, steps[0], t).permuted(perm),
            )
            for steps, t, _ in successors(config, ALL_FAULTS, s)
            if not _untargeted_election(steps)
        }
        theirs = {
            (steps, t, loser.permuted(perm).after(u, steps[0], t))
            for steps, t, _ in successors(config, ALL_FAULTS, u)
            if not _untargeted_election(steps)
        }
        assert mine == theirs, f"state {k} renamed by {perm}"
        checked += len(mine)
    assert checked > 1000


def _replays_to(config, trace, prop):
    run = replay(config, trace)
    assert not BY_ID[prop].check(run.states[-1])


# the kip-966 scope with every disk fault takes minutes (the default run's budget is ten): slow
_COMPARED = [pytest.param(*c, marks=pytest.mark.slow) if i == 9 else c for i, c in enumerate(COMPARED)]


@pytest.mark.parametrize("protocol,settings,scope", _COMPARED)
def test_the_reduced_search_finds_what_the_unreduced_one_finds(protocol, settings, scope):
    config = ModelConfig(protocol=protocol, **settings)
    full = explore(config, scope, symmetry=False)
    reduced = explore(config, scope)
    assert reduced.complete and full.complete
    assert [(v.property, v.depth) for v in reduced.violations] == [(v.property, v.depth) for v in full.violations]
    assert [(b.property, b.depth) for b in reduced.beyond_budget] == [(b.property, b.depth) for b in full.beyond_budget]
    assert reduced.depth == full.depth
    assert reduced.states <= full.states <= reduced.represented
    assert full.represented == full.states and not full.symmetry and reduced.symmetry
    assert full.symmetric == 0 and reduced.symmetric <= reduced.states
    for v in reduced.violations + reduced.beyond_budget:  # concrete schedules from the initial state
        assert len(v.trace) == v.depth
        _replays_to(config, v.trace, v.property)


def test_symmetry_merges_states_once_no_election_is_ahead():
    # with the epoch budget at 1 no election without a target is ever ahead: the two followers
    # of the initial state are alike from the start
    config, scope = ModelConfig(protocol="kip-101"), Scope(max_records=1, max_epoch=1, max_crashes=1, max_bounces=1)
    full, reduced = explore(config, scope, symmetry=False), explore(config, scope)
    assert reduced.states < 0.6 * full.states
    assert reduced.symmetric == reduced.states - 1  # all but the initial state (stored before the search)


def test_renamings_compose_and_invert():
    perm = (2, 0, 1)
    assert compose(inverse(perm), perm) == compose(perm, inverse(perm)) == (0, 1, 2)
    assert renamed_step(renamed_step(Step("crash", 1, "process"), perm), inverse(perm)) == Step("crash", 1, "process")
    assert renamed_step(Step("elect"), perm) == Step("elect")  # no target: no broker to rename


def test_fingerprints_separate_the_states_the_exact_keys_separate():
    config = ModelConfig(protocol="kip-966")
    keys, fps = set(), set()
    for s in reachable_states(config, ALL_FAULTS, max_states=6000):
        for led in (EMPTY_LEDGER, FaultLedger(losers=(0,), known=("last-replica-standing",))):
            keys.add((state_key(ALL_FAULTS, s), led))
            fps.add(fingerprint(ALL_FAULTS, s, led))
    assert len(keys) == len(fps) > 10_000


@pytest.mark.parametrize("protocol", ["kip-320", "kip-966"])
def test_the_one_pass_fingerprint_hashes_the_readable_key(protocol):
    # fingerprint puts the hash-stable replacements into state_key's blanking pass; a
    # field it blanks differently would merge or split states the readable key does not
    config = ModelConfig(protocol=protocol, min_insync_replicas=2)
    ledgers = (EMPTY_LEDGER, FaultLedger(losers=(2,), stale_reads=True, known=("last-replica-standing",)))
    for scope in (ALL_FAULTS, Scope(max_crashes=1, max_power_losses=0)):
        for s in reachable_states(config, scope, max_states=2500):
            for led in ledgers:
                assert fingerprint(scope, s, led) == hash(key_for_fingerprint(scope, s, led))


def test_fingerprints_are_the_same_in_every_process():
    code = (
        "import hashlib; from isrcheck.model import *; from isrcheck.model.budget import FaultLedger; "
        "from isrcheck.model.explorer import fingerprint, reachable_states; "
        "import sys; sys.path.insert(0, 'tests'); from explorer_scopes import ALL_FAULTS; "
        "led = FaultLedger(losers=(1,), stale_reads=True, known=('last-replica-standing',)); "
        "print(hashlib.sha256(repr([fingerprint(ALL_FAULTS, s, led) for s in "
        "reachable_states(ModelConfig(protocol='kip-966'), ALL_FAULTS, max_states=3000)]).encode()).hexdigest())"
    )
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    outs = {
        subprocess.run(
            [sys.executable, "-c", code],
            env=dict(os.environ, PYTHONHASHSEED=seed),
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "98765")
    }
    assert len(outs) == 1 and len(next(iter(outs)).strip()) == 64
