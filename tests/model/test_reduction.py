"""Partial-order reduction in the explorer: the footprints hold for what steps do, steps found
independent commute, a disabled step waits for one of its enablers, each persistent set stays one
along the paths it leaves out and hides nothing a checked property reads, and the reduced search
gives the verdicts of the unreduced one, property by property, for every variant at every scope
the explorer's tests explore."""

import dataclasses
import itertools

import pytest
from explorer_scopes import ALL_FAULTS, COMPARED, DEFAULT, EXPLORED, KAFKA_14139, SMALL, WITH_READS

from isrcheck.model import PROTOCOLS, ModelConfig, Scope, explore, replay
from isrcheck.model.budget import EMPTY_LEDGER
from isrcheck.model.explorer import moves, reachable_states
from isrcheck.model.footprint import (
    changed,
    context,
    group,
    ledger_changed,
    ledger_reads,
    ledger_step,
    prune_reads,
    pushes,
    reads,
    static_reads,
    writes,
)
from isrcheck.model.losses import LAST_REPLICA_STANDING
from isrcheck.model.observed import GROWING, VIEWS_OF, views
from isrcheck.model.reduction import Reduction
from isrcheck.specs import BY_ID, PROPERTIES

ROUNDS_WITH_FAULTS = Scope(
    **{**ALL_FAULTS.to_json(), "fetch_rounds": True, "acks": (1, -1), "crash_kinds": ("clean", "process")}
)
# (protocol, config, scope) the footprint tests walk: steps one at a time with every fault class,
# fetch rounds with every fault class, the known losses left out, history reads
WALKED = [
    ("kip-966", dict(), ALL_FAULTS),
    ("kip-320", dict(), ALL_FAULTS),
    ("hw-truncation", dict(replicas=2, min_insync_replicas=1), ALL_FAULTS),
    ("kip-279", dict(), ROUNDS_WITH_FAULTS),
    ("kip-903", dict(), ROUNDS_WITH_FAULTS),
    (
        "kip-320",
        dict(),
        Scope(max_records=1, max_crashes=2, max_power_losses=1, exclude_known_losses=True, max_disk_losses=1),
    ),
    ("kip-101", dict(), WITH_READS),
    # a restart, its registration and the LeaderAndIsr that ends it (kip-966's split restart)
    ("kip-966", dict(), Scope(max_records=1, max_epoch=2, max_crashes=1, max_drops=1, max_clock=1, fetch_rounds=False)),
]
WALKED_IDS = [f"{p}-{i}" for i, (p, _, _) in enumerate(WALKED)]


def _fast_last(cases, ids):
    """The cases as pytest params, all but the last (the smallest) marked slow: the default run
    keeps one small case of each check, ``-m slow`` takes the rest."""
    return [
        pytest.param(*c, id=i, marks=() if k == len(cases) - 1 else pytest.mark.slow)
        for k, (c, i) in enumerate(zip(cases, ids))
    ]


def _setup(protocol, settings, scope):
    config = ModelConfig(protocol=protocol, **settings)
    exclude_lrs = scope.exclude_known_losses and LAST_REPLICA_STANDING.name in config.rules.known_losses
    return config, lambda s, ledger=EMPTY_LEDGER: list(
        moves(config, scope, s, ledger, exclude_lrs, config.rules.known_losses)
    )


def _every_third(protocol, settings, scope, max_states):
    """``moves_of``, a reducer checking no property, and every third state of the first
    ``max_states`` the scope reaches."""
    config, moves_of = _setup(protocol, settings, scope)
    states = [s for k, s in enumerate(reachable_states(config, scope, max_states=max_states)) if k % 3 == 0]
    return moves_of, Reduction(config, scope, []), states


def _fetch_queues(ctx):
    return ctx.L.queues("fetch_requests") | ctx.L.queues("fetch_responses") if ctx.rounds else 0


@pytest.mark.parametrize("protocol,settings,scope", _fast_last(WALKED, WALKED_IDS))
def test_footprints_cover_what_each_step_reads_and_changes(protocol, settings, scope):
    # what a step changes is among what its kind may write, and among what it reads or assigns
    # (so nothing left out of a persistent set can change how it acts); what it reads in a state
    # is among what it may read anywhere; a message it sends is in a FIFO its kind may push to
    config, moves_of = _setup(protocol, settings, scope)
    ctx = context(config, scope)
    L = ctx.L
    checked = 0
    for s in reachable_states(config, scope, max_states=1500):
        for steps, t, inside, mid, led, pruned in moves_of(s):
            g = group(steps[0])
            r = reads(ctx, g, s)
            assert r & ~static_reads(ctx, g) == 0, g
            if pruned:
                continue
            ledger_st, ledger_after = (steps[1], inside[0]) if inside else (steps[0], t)
            r |= ledger_reads(ctx, ledger_step(ctx, g), g[1], s, EMPTY_LEDGER, ledger_st, ledger_after)
            r |= prune_reads(ctx, s, t)
            assert r & ~static_reads(ctx, g) == 0, g
            w = (changed(L, s, t) | (changed(L, s, inside[0]) if inside else 0)) & ~_fetch_queues(ctx)
            w |= ledger_changed(L, EMPTY_LEDGER, led) | (ledger_changed(L, EMPTY_LEDGER, mid) if mid else 0)
            assert w & ~writes(ctx, g) == 0, (g, bin(w & ~writes(ctx, g)))
            assert w & ~L.added & ~r == 0, (g, bin(w & ~L.added & ~r))
            for field, bits in L.queue.items():
                for x, bit in enumerate(bits):
                    if len(getattr(t, field)[x]) > len(getattr(s, field)[x]):
                        assert bit & pushes(ctx, g), (g, field, x)
            checked += 1
    assert checked > 2000


@pytest.mark.parametrize(
    "protocol,settings,scope", _fast_last(WALKED[:5] + WALKED[6:], WALKED_IDS[:5] + WALKED_IDS[6:])
)
def test_steps_found_independent_commute(protocol, settings, scope):
    # two enabled steps neither of whose groups the other's footprint pulls in: each stays enabled
    # after the other, and both orders end in the same state with the same fault ledger (the scope
    # leaving Last Replica Standing out is not walked: there every ledger step reads what a data
    # loss changes, so no two steps are independent)
    moves_of, reducer, states = _every_third(protocol, settings, scope, 900)
    pairs = 0
    for s in states:
        here = [m for m in moves_of(s) if not m[5]]
        gids = [reducer.gid[group(m[0][0])] for m in here]
        conflicts = {
            g: reducer._conflicts(s, EMPTY_LEDGER, here, g, [i for i, h in enumerate(gids) if h == g], 1)
            for g in set(gids)
        }
        after: dict = {}
        for (i, a), (j, b) in itertools.combinations(enumerate(here), 2):
            ga, gb = gids[i], gids[j]
            if ga == gb or conflicts[ga] >> gb & 1 or conflicts[gb] >> ga & 1:
                continue
            for n, m in ((i, a), (j, b)):
                if n not in after:
                    after[n] = {x[0]: x for x in moves_of(m[1], m[4])}
            assert b[0] in after[i] and a[0] in after[j], (a[0], b[0])
            ab, ba = after[i][b[0]], after[j][a[0]]
            assert (ab[1], ab[4], ab[5]) == (ba[1], ba[4], ba[5]), (a[0], b[0])
            pairs += 1
    assert pairs > 500


@pytest.mark.parametrize("protocol,settings,scope", _fast_last(WALKED, WALKED_IDS))
def test_a_disabled_group_waits_for_one_of_its_enablers(protocol, settings, scope):
    # a group with no enabled step stays so after any step outside the groups its enabling
    # condition names (none at all past a scope bound that only grows)
    moves_of, reducer, states = _every_third(protocol, settings, scope, 1200)
    checked = 0
    for s in states:
        here = moves_of(s)
        present = {reducer.gid[group(m[0][0])] for m in here}
        for g in range(len(reducer.groups)):
            if g in present:
                continue
            enablers = reducer._conflicts(s, EMPTY_LEDGER, here, g, (), 0)
            for m in here:
                if m[5] or enablers >> reducer.gid[group(m[0][0])] & 1:
                    continue
                later = {reducer.gid[group(n[0][0])] for n in moves_of(m[1], m[4]) if not n[5]}
                assert g not in later, (reducer.groups[g], m[0])
                checked += 1
    assert checked > 1000


@pytest.mark.slow
def test_no_fetch_message_is_in_flight_between_fetch_rounds():
    # the footprints of fetch rounds leave the fetch FIFOs out: a round's messages never outlive it
    config = ModelConfig(protocol="kip-320")
    for s in reachable_states(config, ROUNDS_WITH_FAULTS, max_states=3000):
        assert not any(s.fetch_requests) and not any(s.fetch_responses)


@pytest.mark.parametrize(
    "protocol,scope",
    _fast_last(
        [("kip-966", ALL_FAULTS), ("hw-truncation", ALL_FAULTS), ("kip-320", WITH_READS)],
        ["kip-966", "hw-truncation", "kip-320"],
    ),
)
def test_each_property_is_a_function_of_the_views_it_names(protocol, scope):
    # two states alike in every view a property names give it one value; and growing a history
    # view (one more acknowledged or read record, the regression flag set) never makes a failing
    # property hold
    config = ModelConfig(protocol=protocol)
    by_name = views(config.replicas)
    seen = {p.id: {} for p in PROPERTIES}
    failing = 0
    for s in reachable_states(config, scope, max_states=4000):
        for p in PROPERTIES:
            key = tuple(v.value(s) for name in VIEWS_OF[p.id] for v in by_name[name])
            assert seen[p.id].setdefault(key, p.check(s)) == p.check(s), p.id
            if not p.check(s) and set(VIEWS_OF[p.id]) & set(GROWING):
                failing += 1
                more = s._replace(
                    acked=s.acked + ((999, 999),), consumed=s.consumed + ((999, 998),), consumer_hw_regressed=True
                )
                assert not p.check(more), p.id
    assert set(VIEWS_OF) == {p.id for p in PROPERTIES}
    # every property's views vary, but one made only of a history view that never grew here
    # (no consumer saw its HW go back on kip-320)
    assert all(len(values) > 1 for pid, values in seen.items() if values and not set(VIEWS_OF[pid]) <= set(GROWING))


# -- persistent sets, along the paths they leave out ------------------------------------------------

PERSISTENCE = [
    (
        "kip-966",
        dict(replicas=2),
        Scope(
            max_records=1,
            max_epoch=1,
            max_crashes=0,
            max_leader_moves=1,
            max_zombies=1,
            partial_fetches=True,
            hw_checkpoints=True,
            max_clock=1,
        ),
    ),
    ("kip-320", dict(), SMALL),
    ("kip-320", dict(), Scope(max_records=1, max_epoch=2, max_crashes=1, fetch_rounds=False)),
    ("kip-966", dict(), ALL_FAULTS),
    ("kip-279", dict(), ROUNDS_WITH_FAULTS),
]


@pytest.mark.parametrize(
    "protocol,settings,scope",
    _fast_last(
        PERSISTENCE[1:] + PERSISTENCE[:1], [f"{p}-{i}" for i, (p, _, _) in enumerate(PERSISTENCE[1:] + PERSISTENCE[:1])]
    ),
)
@pytest.mark.parametrize("checked", [(), ("LeaderInIsr",), ("LogMatching", "NoLostAckedWrite")], ids=len)
def test_reduced_sets_are_persistent_and_hide_what_checked_properties_read(
    protocol, settings, scope, checked, max_states=2500
):
    # From a state the search expands with a reduced set T, along every path of up to two steps
    # outside T: every step of T stays enabled and commutes with the path; a group of T with no
    # enabled step stays so; and where a step of T changes a view a checked property reads, no
    # step of the path changes one of that property's views (the visibility condition)
    config, moves_of = _setup(protocol, settings, scope)
    props = [BY_ID[p] for p in checked]
    reducer = Reduction(config, scope, props)
    by_name = views(config.replicas)
    seen_by = {p: [v for name in VIEWS_OF[p] for v in by_name[name] if name not in GROWING] for p in checked}
    reduced = 0
    for s in reachable_states(config, scope, max_states=max_states):
        here = moves_of(s)
        chosen = reducer.persistent(s, EMPTY_LEDGER, here)
        if chosen is None:
            continue
        reduced += 1
        taken = [here[k] for k in chosen]
        groups = {reducer.gid[group(m[0][0])] for m in taken}
        shown = {p for p in checked for m in taken if any(v.value(m[1]) != v.value(s) for v in seen_by[p])}
        for path in _paths_outside(moves_of, s, groups, reducer, 2):
            end = path[-1]
            later = {m[0]: m for m in moves_of(end[1], end[4])}
            for t in taken:  # t then the path ends where the path then t does
                assert t[0] in later, (t[0], [m[0] for m in path])
                state, ledger = t[1], t[4]
                for m in path:
                    step = {n[0]: n for n in moves_of(state, ledger)}[m[0]]
                    state, ledger = step[1], step[4]
                assert (state, ledger) == (later[t[0]][1], later[t[0]][4])
            for m in path:
                for p in shown:
                    assert all(
                        v.value(m[1]) == v.value(before) for v in seen_by[p] for before in [_before(s, path, m)]
                    ), (p, m[0])
            assert not (
                {reducer.gid[group(m[0][0])] for m in later.values() if not m[5]}
                & (groups - {reducer.gid[group(m[0][0])] for m in here if not m[5]})
            )
    assert reduced > 0


def _before(s, path, m):
    """The state a step of ``path`` (from ``s``) was taken in."""
    k = path.index(m)
    return s if k == 0 else path[k - 1][1]


def _paths_outside(moves_of, s, groups, reducer, depth):
    """Every path of 1..depth enabled steps from ``s`` whose groups are not in ``groups``."""
    frontier = [(s, EMPTY_LEDGER, [])]
    for _ in range(depth):
        nxt = []
        for state, ledger, path in frontier:
            for m in moves_of(state, ledger):
                if m[5] or reducer.gid[group(m[0][0])] in groups:
                    continue
                yield path + [m]
                nxt.append((m[1], m[4], path + [m]))
        frontier = nxt


# -- the reduced search's verdicts ------------------------------------------------------------------


def _verdicts(result):
    """Per property: violated, broken only outside its budget, or neither."""
    violated = {v.property for v in result.violations}
    return {
        p.id: "violated"
        if p.id in violated
        else "beyond"
        if any(b.property == p.id for b in result.beyond_budget)
        else "holds"
        for p in PROPERTIES
    }


def _agree(config, scope, props=PROPERTIES):
    full = explore(config, scope, props, reduction=False)
    reduced = explore(config, scope, props, reduction=True)
    assert full.complete and reduced.complete and reduced.reduction and not full.reduction
    assert _verdicts(reduced) == _verdicts(full)
    assert reduced.states <= full.states
    shortest = {v.property: v.depth for v in full.violations + full.beyond_budget}
    for v in reduced.violations + reduced.beyond_budget:
        # a counterexample may get longer, never shorter, in transitions: with fetch rounds (a round
        # is one transition of up to three steps) it may have fewer steps than the breadth-first one
        if not scope.fetch_rounds:
            assert v.depth >= shortest[v.property]
        run = replay(config, v.trace)
        assert not BY_ID[v.property].check(run.states[-1]) and len(v.trace) == v.depth
    return full, reduced


@pytest.mark.parametrize(
    "protocol,settings,scope",
    _fast_last(
        COMPARED[1:] + EXPLORED + COMPARED[:1],
        [f"{p}-{i}" for i, (p, _, _) in enumerate(COMPARED[1:] + EXPLORED + COMPARED[:1])],
    ),
)
def test_reduced_and_unreduced_searches_agree_property_by_property(protocol, settings, scope):
    _agree(ModelConfig(protocol=protocol, **settings), scope)


@pytest.mark.slow
@pytest.mark.parametrize("scope", sorted({s for _, _, s in COMPARED + EXPLORED} | {DEFAULT}, key=repr))
@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_every_variant_agrees_at_every_scope_the_tests_explore(protocol, scope):
    _agree(ModelConfig(protocol=protocol), scope)


def test_the_comparison_catches_a_reduction_that_ignores_dependence(monkeypatch):
    # the comparison above can fail: with no group pulling in another, the reduced search misses
    # hw-truncation's WeakIsr and StrongIsr violations
    monkeypatch.setattr(Reduction, "_conflicts", lambda *_args: 0)
    protocol, settings, scope = COMPARED[0]
    with pytest.raises(AssertionError):
        _agree(ModelConfig(protocol=protocol, **settings), scope)


def test_a_reduced_set_that_reaches_nothing_new_expands_its_state_fully(monkeypatch):
    # the cycle condition: a state whose reduced set leads only to states seen before takes every
    # step; a reducer offering an empty set every time gives the unreduced search exactly
    config = ModelConfig(protocol="kip-101")
    full = explore(config, KAFKA_14139, reduction=False)
    monkeypatch.setattr(Reduction, "persistent", lambda *_args: [])
    proviso = explore(config, KAFKA_14139, reduction=True)
    assert (proviso.states, proviso.transitions, proviso.reduced) == (full.states, full.transitions, 0)
    assert _verdicts(proviso) == _verdicts(full)


def test_reduction_is_off_by_default_and_reports_what_it_reduced():
    # with one property checked it merges a few states (with every one, none: docs/figures.md)
    config = ModelConfig(protocol="kip-320")
    plain = explore(config, SMALL)
    assert not plain.reduction and plain.reduced == 0
    full, reduced = _agree(config, SMALL, [BY_ID["LeaderInIsr"]])
    assert reduced.reduced > 0 and reduced.states < full.states
    assert reduced.to_json()["reduction"] is True and reduced.to_json()["reduced"] == reduced.reduced


def test_a_property_the_reduction_does_not_know_turns_it_off():
    # its views are unknown, so every step may be visible to it: every state expands fully
    from isrcheck.specs import Property

    # (one that holds throughout: a violated property is no longer checked, so the rest would reduce)
    odd = Property(
        "Odd",
        "no broker holds more than five records",
        "test",
        "invariant",
        lambda s: all(len(r.log) <= 5 for r in s.replicas),
    )
    config = ModelConfig(protocol="kip-320")
    full = explore(config, SMALL, [odd], reduction=False)
    reduced = explore(config, SMALL, [odd], reduction=True)
    assert reduced.reduced == 0 and (reduced.states, reduced.transitions) == (full.states, full.transitions)
    assert [v.depth for v in reduced.violations] == [v.depth for v in full.violations]


def test_explore_reduction_flag_says_what_it_did_and_may_not_give_the_shortest(tmp_path):
    # --reduction turns it on and says counterexamples may be longer; the saved schedule says so
    # too; the default (--no-reduction) keeps every counterexample a shortest
    import json
    import subprocess
    import sys

    from isrcheck.conformance.core.schedule import load_schedule

    base = [
        sys.executable,
        "-m",
        "isrcheck.conformance.cli.main",
        "explore",
        "--protocol",
        "hw-truncation",
        "--replicas",
        "2",
        "--min-isr",
        "1",
        "--max-records",
        "1",
        "--max-epoch",
        "3",
        "--max-crashes",
        "1",
    ]
    runs = {}
    for flag in ("--reduction", "--no-reduction"):
        done = subprocess.run(base + [flag, "--json", "--save", str(tmp_path / flag)], capture_output=True, text=True)
        assert done.returncode == 1, done.stderr
        runs[flag] = json.loads(done.stdout)
    assert runs["--reduction"]["reduction"] is True and runs["--no-reduction"]["reduction"] is False
    assert (
        {v["property"] for v in runs["--reduction"]["violations"]}
        == {v["property"] for v in runs["--no-reduction"]["violations"]}
        != set()
    )
    saved = load_schedule(tmp_path / "--reduction" / "hw-truncation-StrongIsr.json")
    assert "partial-order reduction: maybe not the shortest" in saved.description
    shortest = load_schedule(tmp_path / "--no-reduction" / "hw-truncation-StrongIsr.json")
    assert shortest.description.startswith("shortest counterexample to StrongIsr")
    text = subprocess.run(base + ["--reduction"], capture_output=True, text=True).stdout
    assert "--no-reduction gives the shortest" in text


# the checks above, walked with a leader's fetch handling split (docs/steps.md, split_fetch_handling)
SPLIT_SCOPE = Scope(max_records=1, max_epoch=2, max_crashes=1, max_drops=1, max_clock=1, fetch_rounds=False)
SPLIT_SETTINGS = dict(split_fetch_handling=True)


def test_footprints_of_the_split_cover_what_each_step_reads_and_changes():
    test_footprints_cover_what_each_step_reads_and_changes("kip-966", SPLIT_SETTINGS, SPLIT_SCOPE)


def test_steps_of_the_split_found_independent_commute():
    test_steps_found_independent_commute("kip-320", SPLIT_SETTINGS, SPLIT_SCOPE)


def test_a_disabled_group_of_the_split_waits_for_one_of_its_enablers():
    test_a_disabled_group_waits_for_one_of_its_enablers("kip-966", SPLIT_SETTINGS, SPLIT_SCOPE)


def test_reduced_sets_of_the_split_are_persistent():
    test_reduced_sets_are_persistent_and_hide_what_checked_properties_read(
        # read_fetch_hw' states come first: the first reduced set is the 3,226th state
        "kip-966",
        SPLIT_SETTINGS,
        SPLIT_SCOPE,
        ("LogMatching", "NoLostAckedWrite"),
        max_states=5000,
    )


def test_the_reduced_search_of_the_split_agrees_with_the_unreduced_one():
    test_reduced_and_unreduced_searches_agree_property_by_property(
        "kip-966",
        SPLIT_SETTINGS,
        Scope(max_records=1, max_epoch=2, max_crashes=0, max_drops=1, max_clock=1, fetch_rounds=False),
    )


# the checks above, walked with becoming a follower split (docs/steps.md, split_become_follower)
STALE_SCOPE = Scope(max_records=1, max_epoch=2, max_crashes=1, max_drops=1, max_leader_moves=1, fetch_rounds=False)
STALE_SETTINGS = dict(split_become_follower=True)


# with fetch rounds too: a stale fetcher's round reads and changes its old leader
@pytest.mark.parametrize(
    "protocol,scope",
    [
        ("hw-truncation", STALE_SCOPE),
        ("kip-966", STALE_SCOPE),
        ("kip-320", dataclasses.replace(STALE_SCOPE, fetch_rounds=True)),
    ],
)
def test_footprints_of_the_stale_fetcher_cover_what_each_step_reads_and_changes(protocol, scope):
    test_footprints_cover_what_each_step_reads_and_changes(protocol, STALE_SETTINGS, scope)


def test_steps_of_the_stale_fetcher_found_independent_commute():
    test_steps_found_independent_commute("kip-101", STALE_SETTINGS, STALE_SCOPE)


@pytest.mark.slow  # over a minute
def test_a_disabled_group_of_the_stale_fetcher_waits_for_one_of_its_enablers():
    test_a_disabled_group_waits_for_one_of_its_enablers("kip-966", STALE_SETTINGS, STALE_SCOPE)


def test_reduced_sets_of_the_stale_fetcher_are_persistent():
    test_reduced_sets_are_persistent_and_hide_what_checked_properties_read(
        "kip-320", STALE_SETTINGS, STALE_SCOPE, ("LogMatching", "NoLostAckedWrite")
    )


# the checks above, walked with the HW waiting for caught-up followers (docs/steps.md,
# hw_waits_for_caught_up): at lag 0 a tick ends every follower's being caught up, so the HW steps
# read the clock
WAITS_SCOPE = Scope(max_records=1, max_epoch=2, max_crashes=1, max_drops=1, max_clock=1, fetch_rounds=False)
WAITS_SETTINGS = dict(hw_waits_for_caught_up=True, replica_lag_time_max_ticks=0)


def test_footprints_of_the_hw_waiting_cover_what_each_step_reads_and_changes():
    test_footprints_cover_what_each_step_reads_and_changes("kip-966", WAITS_SETTINGS, WAITS_SCOPE)


def test_steps_of_the_hw_waiting_found_independent_commute():
    test_steps_found_independent_commute("kip-966", WAITS_SETTINGS, WAITS_SCOPE)


# and with a follower caught up as of its previous Fetch (docs/steps.md, catch_up_at_previous_fetch):
# a fetch writes its leader's last Fetch state, and at lag 1 the time it keeps decides lagging
PREVIOUS_SETTINGS = dict(catch_up_at_previous_fetch=True, hw_waits_for_caught_up=True, replica_lag_time_max_ticks=1)


def test_footprints_of_the_previous_fetch_rule_cover_what_each_step_reads_and_changes():
    test_footprints_cover_what_each_step_reads_and_changes("kip-966", PREVIOUS_SETTINGS, WAITS_SCOPE)


def test_steps_of_the_previous_fetch_rule_found_independent_commute():
    test_steps_found_independent_commute("kip-966", PREVIOUS_SETTINGS, WAITS_SCOPE)


# and with the brokers' metadata caches (docs/steps.md, metadata_cache): update_metadata_cache reads the
# controller's registrations, expand_isr and the HW's wait read the leader's cache; a zombie's fence and
# a rejoin change the registrations while its cache and the others' lag
CACHE_SCOPE = Scope(max_records=1, max_epoch=2, max_crashes=1, max_zombies=1, max_clock=1, fetch_rounds=False)
CACHE_SETTINGS = dict(metadata_cache=True, hw_waits_for_caught_up=True, replica_lag_time_max_ticks=1)


def test_footprints_of_the_metadata_cache_cover_what_each_step_reads_and_changes():
    test_footprints_cover_what_each_step_reads_and_changes("kip-903", CACHE_SETTINGS, CACHE_SCOPE)


def test_steps_of_the_metadata_cache_found_independent_commute():
    test_steps_found_independent_commute("kip-903", CACHE_SETTINGS, CACHE_SCOPE)


def test_a_disabled_group_of_the_metadata_cache_waits_for_one_of_its_enablers():
    test_a_disabled_group_waits_for_one_of_its_enablers("kip-903", CACHE_SETTINGS, CACHE_SCOPE)


# and with registrations awaiting unfence (docs/steps.md, unfence_at_heartbeat): unfence reads and writes
# the controller's fenced and awaiting brokers, elections and AlterPartition read them, the caches too
UNFENCE_SETTINGS = dict(unfence_at_heartbeat=True, metadata_cache=True)


def test_footprints_of_the_unfencing_cover_what_each_step_reads_and_changes():
    test_footprints_cover_what_each_step_reads_and_changes("kip-966", UNFENCE_SETTINGS, CACHE_SCOPE)


def test_steps_of_the_unfencing_found_independent_commute():
    test_steps_found_independent_commute("kip-966", UNFENCE_SETTINGS, CACHE_SCOPE)


def test_a_disabled_group_of_the_unfencing_waits_for_one_of_its_enablers():
    test_a_disabled_group_waits_for_one_of_its_enablers("kip-966", UNFENCE_SETTINGS, CACHE_SCOPE)


# and with brokers in controlled shutdown (docs/steps.md, kraft_controlled_shutdown): controlled_shutdown
# changes the partition and who is active, which elections, AlterPartition and the caches read; a fence
# and a registration end it
SHUTDOWN_SETTINGS = dict(CACHE_SETTINGS, kraft_controlled_shutdown=True)


@pytest.mark.parametrize("protocol", ["kip-903", "kip-966"])
def test_footprints_of_the_controlled_shutdown_cover_what_each_step_reads_and_changes(protocol):
    test_footprints_cover_what_each_step_reads_and_changes(protocol, SHUTDOWN_SETTINGS, CACHE_SCOPE)


@pytest.mark.parametrize("protocol", ["kip-903", "kip-966"])
def test_steps_of_the_controlled_shutdown_found_independent_commute(protocol):
    test_steps_found_independent_commute(protocol, SHUTDOWN_SETTINGS, CACHE_SCOPE)


@pytest.mark.slow  # 45 to 90 s; the switch's commutation runs by default (above)
def test_a_disabled_group_of_the_controlled_shutdown_waits_for_one_of_its_enablers():
    test_a_disabled_group_waits_for_one_of_its_enablers("kip-966", SHUTDOWN_SETTINGS, CACHE_SCOPE)
