"""Partial-order reduction figures: states visited with and without it, side by side in one process.

    python benchmarks/reduction.py                       # kip-320's default scope, then kip-966's (3 brokers)
    python benchmarks/reduction.py --ceiling             # also what reducing interleavings could give at most
    python benchmarks/reduction.py --protocol kip-320 --property LeaderInIsr --max-epoch 2

For each variant: the unreduced search (``explore(..., reduction=False)``), then the reduced one,
each with every property (or the ``--property`` ones), symmetry on as ``isrcheck explore`` runs
it; one line each (states, transitions, states expanded with a reduced set, depth, wall and CPU
seconds, violations), their ratio, and the targets of issue 47 met or NOT met: at least 3x fewer
states on kip-320's default scope, and kip-966's default scope with three brokers complete within
10 minutes.

``--ceiling`` also runs an optimistic relaxation of the reduction, unsound on purpose: in each
state it judges dependence only among the enabled steps, by what each reads and changes there
(no enabling sets, no steps of later states), and takes the smallest set closed under it and under
visibility (a set with a step that changes what a checked property reads holds every enabled such
step). What it merges estimates the most any persistent-set reduction could merge in the scope.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from isrcheck.model import PROTOCOLS, ModelConfig, Scope, explore
from isrcheck.model.budget import EMPTY_LEDGER
from isrcheck.model.explorer import moves, state_key
from isrcheck.model.footprint import changed, context, group, ledger_reads, ledger_step, reads
from isrcheck.model.losses import LAST_REPLICA_STANDING
from isrcheck.model.observed import GROWING, VIEWS_OF, views
from isrcheck.model.state import initial_state
from isrcheck.specs import BY_ID, PROPERTIES

_BOUNDS = ("max_records", "max_epoch", "max_crashes", "max_power_losses", "max_clock", "max_drops")


def main() -> None:
    default = Scope()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--protocol", action="append", choices=sorted(PROTOCOLS), help="default: kip-320, then kip-966")
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--property", action="append", choices=sorted(BY_ID), help="default: every property")
    for name in _BOUNDS:
        parser.add_argument("--" + name.replace("_", "-"), type=int, default=getattr(default, name))
    parser.add_argument("--ceiling", action="store_true", help="also the optimistic relaxation (see above)")
    args = parser.parse_args()
    scope = Scope(
        **{
            **default.to_json(),
            **{k: getattr(args, k) for k in _BOUNDS},
            "acks": default.acks,
            "crash_kinds": default.crash_kinds,
        }
    )
    props = [BY_ID[p] for p in args.property] if args.property else PROPERTIES
    print("command: python benchmarks/reduction.py " + " ".join(sys.argv[1:]))
    print(
        f"replicas {args.replicas}; properties: {'every one' if not args.property else ', '.join(args.property)}; "
        f"scope: {scope.to_json()}; load average {os.getloadavg()[0]:.1f}"
    )
    print(
        f"{'protocol':<14}{'reduction':>10}{'states':>10}{'transitions':>13}{'reduced':>9}{'depth':>7}"
        f"{'complete':>10}{'wall s':>9}{'cpu s':>8}  violations (property@steps)"
    )
    is_default = scope == default and args.replicas == 3 and not args.property
    for name in args.protocol or ["kip-320", "kip-966"]:
        config = ModelConfig(protocol=name, replicas=args.replicas, min_insync_replicas=min(2, args.replicas))
        runs = {}
        for reduction in (False, True):
            cpu = time.process_time()
            result = explore(config, scope, props, reduction=reduction)
            runs[reduction] = result, time.process_time() - cpu
            found = ", ".join(f"{v.property}@{v.depth}" for v in result.violations) or "-"
            print(
                f"{name:<14}{'on' if reduction else 'off':>10}{result.states:>10,}{result.transitions:>13,}"
                f"{result.reduced:>9,}{result.depth:>7}{str(result.complete):>10}{result.seconds:>9.1f}"
                f"{runs[reduction][1]:>8.1f}  {found}",
                flush=True,
            )
        (off, cpu_off), (on, cpu_on) = runs[False], runs[True]
        ratio = off.states / max(on.states, 1)
        print(
            f"{name:<14}unreduced / reduced: states {ratio:.3f}x, cpu {cpu_off / max(cpu_on, 1e-9):.2f}x "
            f"(load average {os.getloadavg()[0]:.1f})"
        )
        if name == "kip-320" and is_default:
            _target("at least 3x fewer states on kip-320's default scope", ratio >= 3, f"{ratio:.3f}x")
        if name == "kip-966" and is_default:
            for reduction, (result, _cpu) in runs.items():
                _target(
                    f"kip-966's default scope, three brokers, complete within 10 minutes "
                    f"(reduction {'on' if reduction else 'off'})",
                    result.complete and result.seconds <= 600,
                    f"{'complete' if result.complete else 'incomplete'} in {result.seconds:.0f} s wall",
                )
        if args.ceiling:
            cpu = time.process_time()
            full, relaxed = relaxation(config, scope, props, False), relaxation(config, scope, props, True)
            print(
                f"{name:<14}ceiling (optimistic relaxation; no symmetry, no fault ledger): {full:,} states "
                f"unreduced, {relaxed:,} relaxed: at most about {full / relaxed:.2f}x "
                f"({time.process_time() - cpu:.0f} CPU s for both)",
                flush=True,
            )


def _target(what: str, met: bool, measured: str) -> None:
    """A target of issue 47 beside what this run measured, said plainly when not met."""
    print(f"  target: {what}: {'met' if met else 'NOT met'} ({measured})")


def relaxation(config: ModelConfig, scope: Scope, props, relaxed: bool) -> int:
    """States a breadth-first search visits (no symmetry, no fault ledger) taking every enabled step,
    or with ``relaxed`` the optimistic relaxation of the module docstring, with the cycle condition."""
    ctx = context(config, scope)
    L = ctx.L
    by_name = views(config.replicas)
    seen_views = list({v for p in props for name in VIEWS_OF[p.id] if name not in GROWING for v in by_name[name]})
    exclude = scope.exclude_known_losses and LAST_REPLICA_STANDING.name in config.rules.known_losses
    known = config.rules.known_losses
    init = initial_state(config)
    seen = {state_key(scope, init)}
    frontier = [init]
    while frontier:
        nxt = []
        for s in frontier:
            here = [m for m in moves(config, scope, s, EMPTY_LEDGER, exclude, known) if not m[5]]
            if not relaxed:
                for m in here:
                    _add(scope, m[1], seen, nxt)
                continue
            foot = []
            for steps, t, inside, _mid, _led, _pruned in here:
                g = group(steps[0])
                after = inside[0] if inside else t
                r = reads(ctx, g, s) | ledger_reads(
                    ctx, ledger_step(ctx, g), g[1], s, EMPTY_LEDGER, steps[1] if inside else steps[0], after
                )
                w = changed(L, s, t) | (changed(L, s, inside[0]) if inside else 0)
                visible = any(v.value(x) != v.value(s) for v in seen_views for x in (t, after))
                foot.append((r, w & ~L.added, w & L.added, visible))
            order = _smallest_closed(foot)
            fresh = False
            for k in order:
                fresh |= _add(scope, here[k][1], seen, nxt)
            if not fresh or len(order) == len(here):
                for k in range(len(here)):
                    if k not in order:
                        _add(scope, here[k][1], seen, nxt)
        frontier = nxt
    return len(seen)


def _smallest_closed(foot: list) -> list[int]:
    """The smallest set of enabled steps closed under dependence among them and visibility."""

    def dependent(a, b) -> bool:
        (ra, wa, aa, _), (rb, wb, ab, _) = foot[a], foot[b]
        return bool(wa & (rb | wb | ab) or wb & (ra | aa) or aa & rb or ab & ra)

    best = list(range(len(foot)))
    visible = [k for k, f in enumerate(foot) if f[3]]
    for seed in range(len(foot)):
        chosen, todo = {seed}, [seed]
        while todo and len(chosen) < len(best):
            a = todo.pop()
            more = [b for b in range(len(foot)) if b not in chosen and dependent(a, b)]
            if foot[a][3]:
                more += [b for b in visible if b not in chosen and b not in more]
            chosen.update(more)
            todo += more
        if len(chosen) < len(best):
            best = sorted(chosen)
    return best


def _add(scope: Scope, t, seen: set, nxt: list) -> bool:
    key = state_key(scope, t)
    if key in seen:
        return False
    seen.add(key)
    nxt.append(t)
    return True


if __name__ == "__main__":
    main()
