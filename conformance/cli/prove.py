"""``isrcheck prove``: bounded model checking, k-induction and inductive invariants (Houdini) with
z3 over the model's SMT encoding (``model/smt``), in an exploration scope.

Exit 0: no violation up to the depth (or, with ``--induction``, every property proved; with
``--invariant`` or ``--check-invariant``, every target implied by an inductive invariant); 1: a
property is violated, or with ``--induction`` not proved or unknown within the time budget, or its
search stopped at a failure outside the property's fault budget (the encoding holds no budget;
each counterexample is replayed through the fault ledger to tell which it is), or a target is not
implied (with its counterexample to induction), or a saved invariant is not inductive;
2: bad input, including a variant, step or scope the encoding does not cover and a malformed
invariant file.
"""

from __future__ import annotations

import argparse
import json
import sys
from types import SimpleNamespace

from isrcheck.conformance.cli.explore import _build, _save, add_model_arguments
from isrcheck.conformance.vocabulary import Number, UsageError, output_path, read_text

_DEPTH = Number(int, 0, 1_000)
_TIMEOUT = Number(float, 0.001, 86_400.0, "seconds")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser, protocol_required=False)
    parser.add_argument(
        "--depth",
        type=_DEPTH,
        default=20,
        help="transitions to unroll (a fetch round is one, as in explore; default 20)",
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument(
        "--induction",
        action="store_true",
        help="k-induction up to --depth: proved, not proved (with the counterexample to "
        "induction and whether explore reaches it) or unknown",
    )
    mode.add_argument(
        "--invariant",
        action="store_true",
        help="Houdini: the inductive conjunction of the candidate grammar (filtered by the states "
        "explore reaches at the scope; epochs and fault counts unbounded) and which targets "
        "(--property; default StrongIsr, LogMatching, LeaderCompleteness, NoLostAckedWrite) it "
        "implies; --save FILE writes it",
    )
    parser.add_argument(
        "--filter-states",
        type=Number(int, 1, 10**9),
        default=10_000,
        help="with --invariant: filter the candidates by the first N states explore reaches at "
        "the scope, breadth first (default 10000)",
    )
    mode.add_argument(
        "--check-invariant",
        metavar="FILE",
        default=None,
        help="re-check a saved invariant: inductive, and implying its targets (or --property)",
    )
    parser.add_argument(
        "--timeout",
        type=_TIMEOUT,
        default=None,
        help="seconds per solver call (default 600; 10 with --invariant and --check-invariant)",
    )
    parser.add_argument(
        "--budget",
        type=_TIMEOUT,
        default=None,
        help="CPU seconds for the whole run: properties still open then are unknown (default: none)",
    )
    parser.add_argument(
        "--preprocess",
        action="store_true",
        help="solve each query on a fresh solver after eliminating the successor constants "
        "(faster on deep unrollings) instead of push/pop on the one incremental solver",
    )
    parser.add_argument("--stop-at-first", action="store_true", help="stop at the first violation")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--save",
        metavar="DIR",
        default=None,
        help="write each counterexample as a schedule DIR/<protocol>-<property>.json "
        "expecting that violation (replay it with isrcheck check --expected); with "
        "--invariant, the invariant to FILE",
    )


def run(args) -> int:
    # z3: loaded only when proving, not for --help
    from isrcheck.model.smt.actions import Unsupported
    from isrcheck.model.smt.bmc import bmc, induction, reachable
    from isrcheck.model.smt.protocols import UnsupportedVariant, rules_for

    if args.check_invariant is not None:
        return _check_invariant(args)
    if args.protocol is None:
        raise UsageError("the following arguments are required: --protocol")
    config, scope, props = _build(args)
    if args.save is not None:
        output_path(args.save, "--save", directory=not args.invariant)
    try:
        rules_for(config.protocol)
    except UnsupportedVariant as exc:
        raise UsageError(str(exc)) from None
    if args.invariant:
        return _invariant(args, config, scope)
    timeout_ms = int((args.timeout or 600.0) * 1000)
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
        result = bmc(
            config,
            scope,
            args.depth,
            ids,
            stop_at_first=args.stop_at_first,
            timeout_ms=timeout_ms,
            progress=progress,
            preprocess=args.preprocess,
            budget_s=args.budget,
            grown=_grown,
        )
    except Unsupported as exc:
        raise UsageError(str(exc)) from None
    if args.save is not None:
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
    # z3: loaded only when proving
    from isrcheck.model.smt.state import QUEUES

    held = ", ".join(f"{q} {bounds.capacity(q)}" for q in QUEUES)
    print(
        f"a path leaves the message queues' bounds: starting over with capacities {held}", file=sys.stderr, flush=True
    )


def _print_bmc(result) -> None:
    for v in result.violations:
        print(f"{v.property} violated after {v.transitions} transitions ({len(v.trace)} steps), {v.seconds:.1f} s:")
        for st in v.trace:
            print("  " + " ".join(f"{k}={val}" for k, val in st.items()))
    for f, why in result.beyond_budget:
        print(
            f"{f.property} broken only outside its fault budget after {f.transitions} transitions "
            f"({len(f.trace)} steps): {why}; no violation, but the search of {f.property} stopped there, "
            f"so depths past {f.transitions - 1} are not checked within its budget"
        )
    if result.unknown:
        print(f"unknown within the time budget: {', '.join(result.unknown)}")
    if not result.violations and not result.unknown and not result.beyond_budget:
        print(f"no violation up to depth {result.depth} ({result.seconds:.1f} s)")


def _report_induction(args, config, results) -> int:
    if args.save is not None:
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


# -- inductive invariants (--invariant, --check-invariant) --------------------------------------------------


def _targets(args, default) -> list[str]:
    # z3: loaded only when proving
    from isrcheck.model.smt.properties import FORMULAS

    if not args.property:
        return list(default)
    missing = [p for p in args.property if p not in FORMULAS]
    if missing:
        raise UsageError(f"property {', '.join(missing)} has no SMT formula to prove")
    return sorted(set(args.property))


def _invariant(args, config, scope) -> int:
    # z3: loaded only when proving
    from isrcheck.model.smt.actions import Unsupported
    from isrcheck.model.smt.houdini import houdini, save
    from isrcheck.model.smt.invariants import TARGETS

    targets = _targets(args, TARGETS)
    timeout_ms = int((args.timeout or 10.0) * 1000)
    try:
        result = houdini(
            config,
            scope,
            targets,
            timeout_ms,
            max_states=args.filter_states,
            progress=lambda msg: print(msg, file=sys.stderr, flush=True),
        )
    except Unsupported as exc:
        raise UsageError(str(exc)) from None
    if args.save is not None:
        save(result, args.save)
    fig = result.figures
    _report_invariant(
        args,
        result,
        f"{config.protocol}: {fig['candidates']} candidates, {fig['after_filter']} "
        f"true in the first {fig['filter_states']:,} states explore reaches at the scope, "
        f"{fig['rounds']} Houdini rounds",
    )
    return 0 if result.proved else 1


def _check_invariant(args) -> int:
    # z3: loaded only when proving
    from isrcheck.model.smt.actions import Unsupported
    from isrcheck.model.smt.houdini import InvariantFileError, check_invariant, load
    from isrcheck.model.smt.protocols import UnsupportedVariant, rules_for

    if args.save is not None:
        raise UsageError("--save does not go with --check-invariant (the file is what is checked)")
    try:
        config, scope, conjuncts, recorded = load(
            args.check_invariant, read_text(args.check_invariant, "an invariant file")
        )
        rules_for(config.protocol)
    except (InvariantFileError, UnsupportedVariant) as exc:
        raise UsageError(str(exc)) from None
    if args.protocol is not None and args.protocol != config.protocol:
        raise UsageError(f"--protocol {args.protocol}: {args.check_invariant} is an invariant of {config.protocol}")
    targets = _targets(args, [t for t, verdict in recorded.items() if verdict == "implied"])
    try:
        result = check_invariant(config, scope, conjuncts, targets, int((args.timeout or 10.0) * 1000))
    except Unsupported as exc:
        raise UsageError(str(exc)) from None
    _report_invariant(args, result, f"{args.check_invariant} ({config.protocol})")
    return 0 if result.proved else 1


def _report_invariant(args, result, head: str) -> None:
    if args.json:
        print(json.dumps(result.to_json()))
        return
    # z3: loaded only when proving
    from isrcheck.model.smt.houdini import bounds_json

    verdict = (
        "inductive"
        if result.inductive and not result.unknown
        else ("unknown (a query ran out of time)" if result.unknown else "NOT inductive")
    )
    fig = result.figures
    print(
        f"{head}; {len(result.conjuncts)} conjuncts, {verdict} ({fig['queries']} one-transition queries, "
        f"the longest {fig['max_query_seconds']:.2f} s; {fig['seconds']:.1f} s in all)"
    )
    b = bounds_json(result.bounds)
    print(
        f"bounds kept: {b['replicas']} replicas, logs of at most {b['log_entries']} entries, FIFO capacities per "
        f"broker: "
        + ", ".join(f"{k[: -len('_per_broker')]} {v}" for k, v in b.items() if k.endswith("_per_broker"))
        + "; unbounded: leader, partition and broker epochs, and the number of crashes, elections and other "
        "faults of the scope's fault classes"
    )
    for c in result.broken:
        where = "the initial state" if not c.steps else "step " + " ".join(json.dumps(st) for st in c.steps)
        print(f"  {c.conjunct} does not hold after {where} from: {c.state}")
    for line in result.unknown:
        print(f"  unknown (timeout) for the transition {line}")
    if result.timed_out:
        print(
            f"{len(result.timed_out)} candidates dropped because the solver did not decide them within --timeout "
            f"(sound: only what is proved is kept), e.g. {result.timed_out[0]}"
        )
    for t, ok in sorted(result.targets.items()):
        if ok:
            print(f"{t}: implied by the inductive invariant")
            continue
        cti = result.ctis.get(t)
        if cti is not None and cti.explorer_trace is not None:
            kind = f"broken outside its fault budget ({cti.beyond_budget})" if cti.beyond_budget else "violated"
            print(f"{t}: not implied; {kind}: explore reaches it after {len(cti.explorer_trace)} steps:")
            for st in cti.explorer_trace:
                print("  " + " ".join(f"{k}={v}" for k, v in st.items()))
        elif cti is not None and cti.state is not None:
            reach = {True: "reached", False: "not reached", None: "not looked for"}[cti.reached]
            print(
                f"{t}: not implied; counterexample to induction ({reach} by explore at the scope): the "
                f"transition {' '.join(json.dumps(st) for st in cti.steps)} from {cti.state}"
            )
        else:
            print(f"{t}: not implied by the conjunction")
