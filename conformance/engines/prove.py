"""``isrcheck prove``: bounded model checking and k-induction with z3 over the model's SMT
encoding (``model/smt``), in an exploration scope.

Exit 0: no violation up to the depth (or, with ``--induction``, every property proved); 1: a
property is violated, or with ``--induction`` not proved or unknown within the time budget, or its
search stopped at a failure outside the property's fault budget (the encoding holds no budget;
each counterexample is replayed through the fault ledger to tell which it is);
2: bad input, including a variant, step or scope the encoding does not cover.
"""
from __future__ import annotations

import argparse
import json
import sys

from isrcheck.conformance.vocabulary import Number, UsageError, output_path
from isrcheck.conformance.engines.explore import _build, _save, add_model_arguments

_DEPTH = Number(int, 0, 1_000)
_TIMEOUT = Number(float, 0.001, 86_400.0, "seconds")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    parser.add_argument("--depth", type=_DEPTH, default=20,
                        help="transitions to unroll (a fetch round is one, as in explore; default 20)")
    parser.add_argument("--induction", action="store_true",
                        help="k-induction up to --depth: proved, not proved (with the counterexample to "
                             "induction and whether explore reaches it) or unknown")
    parser.add_argument("--timeout", type=_TIMEOUT, default=600.0, help="seconds per solver call (default 600)")
    parser.add_argument("--budget", type=_TIMEOUT, default=None,
                        help="CPU seconds for the whole run: properties still open then are unknown (default: none)")
    parser.add_argument("--preprocess", action="store_true",
                        help="solve each query on a fresh solver after eliminating the successor constants "
                             "(faster on deep unrollings) instead of push/pop on the one incremental solver")
    parser.add_argument("--stop-at-first", action="store_true", help="stop at the first violation")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--save", metavar="DIR", default=None,
                        help="write each counterexample as a schedule DIR/<protocol>-<property>.json "
                             "expecting that violation (replay it with isrcheck check --expected)")


def run(args) -> int:
    from isrcheck.model.smt.actions import Unsupported
    from isrcheck.model.smt.bmc import bmc, induction, reachable
    from isrcheck.model.smt.protocols import UnsupportedVariant, rules_for

    config, scope, props = _build(args)
    if args.save is not None:
        output_path(args.save, "--save", directory=True)
    try:
        rules_for(config.protocol)
    except UnsupportedVariant as exc:
        raise UsageError(str(exc)) from None
    timeout_ms = int(args.timeout * 1000)
    ids = [p.id for p in props]

    def progress(p) -> None:
        stats = ", ".join(f"{k} {v}" for k, v in sorted(p.stats.items()))
        print(f"depth {p.depth}: {p.seconds:.1f} s" + (f" ({stats})" if stats else ""), file=sys.stderr, flush=True)

    try:
        if args.induction:
            results = []
            for prop in ids:
                r = induction(config, scope, prop, args.depth, timeout_ms, progress, preprocess=args.preprocess)
                if r.verdict == "not proved" and r.cti is not None:
                    r.cti_reachable = reachable(config, scope, r.cti)
                results.append(r)
            return _report_induction(args, config, results)
        result = bmc(config, scope, args.depth, ids, stop_at_first=args.stop_at_first, timeout_ms=timeout_ms,
                     progress=progress, preprocess=args.preprocess, budget_s=args.budget, grown=_grown)
    except Unsupported as exc:
        raise UsageError(str(exc)) from None
    if args.save is not None:
        from types import SimpleNamespace
        found = result.violations + [f for f, _why in result.beyond_budget]
        _save(args.save, config, SimpleNamespace(violations=found), engine="prove")
    if args.json:
        print(json.dumps(result.to_json()))
    else:
        _print_bmc(result)
    if result.violations or result.beyond_budget:  # a search that stopped short proves nothing past it
        return 1
    return 1 if result.unknown else 0


def _grown(bounds) -> None:
    from isrcheck.model.smt.state import QUEUES
    held = ", ".join(f"{q} {bounds.capacity(q)}" for q in QUEUES)
    print(f"a path leaves the message queues' bounds: starting over with capacities {held}", file=sys.stderr,
          flush=True)


def _print_bmc(result) -> None:
    for v in result.violations:
        print(f"{v.property} violated after {v.transitions} transitions ({len(v.trace)} steps), {v.seconds:.1f} s:")
        for st in v.trace:
            print("  " + " ".join(f"{k}={val}" for k, val in st.items()))
    for f, why in result.beyond_budget:
        print(f"{f.property} broken only outside its fault budget after {f.transitions} transitions "
              f"({len(f.trace)} steps): {why}; no violation, but the search of {f.property} stopped there, "
              f"so depths past {f.transitions - 1} are not checked within its budget")
    if result.unknown:
        print(f"unknown within the time budget: {', '.join(result.unknown)}")
    if not result.violations and not result.unknown and not result.beyond_budget:
        print(f"no violation up to depth {result.depth} ({result.seconds:.1f} s)")


def _report_induction(args, config, results) -> int:
    if args.save is not None:
        from types import SimpleNamespace
        _save(args.save, config, SimpleNamespace(violations=[r.found for r in results if r.found]), engine="prove")
    if args.json:
        print(json.dumps({"protocol": config.protocol, "results": [r.to_json() for r in results]}))
    else:
        for r in results:
            line = f"{r.property}: {r.verdict} (k={r.k}, {r.seconds:.1f} s)"
            if r.cti is not None:
                reach = {True: "reachable", False: "not reachable", None: "reachability unknown"}[r.cti_reachable]
                line += f"; counterexample to induction ({reach} according to explore): {r.cti}"
            print(line)
    return 0 if all(r.verdict == "proved" for r in results) else 1
