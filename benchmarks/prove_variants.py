"""``isrcheck prove`` on the broker-epoch variants and the partial steps, beside ``isrcheck explore``:
per scope and variant the explorer's states, graph depth and shortest violations, and the
symbolic engine's shortest violations (in the explorer's transitions) and CPU seconds.

    python benchmarks/prove_variants.py [--scope NAME ...] [--protocol P ...]

In-process and one at a time (one core); CPU seconds, as the machine may be shared.
"""

from __future__ import annotations

import argparse
import time

from isrcheck.model import ModelConfig, Scope, explore
from isrcheck.model.alphabet import HANDLE_FETCH, HANDLE_FETCH_RESPONSE
from isrcheck.model.smt.bmc import bmc, bounds_for
from isrcheck.model.smt.state import QUEUES
from isrcheck.specs import BY_ID

ALL = tuple(BY_ID)
LOSS = ("NoLostAckedWrite", "LeaderCompleteness")
# name: (replicas, min ISR, scope, properties, depth or None for the explored graph's)
SCOPES = {
    "last-known-leader": (
        1,
        1,
        Scope(max_records=1, max_epoch=2, max_crashes=1, max_power_losses=1, crash_kinds=(), max_bounces=1),
        ALL,
        None,
    ),
    "last-replica-standing": (2, 2, Scope(max_records=1, max_crashes=2, max_power_losses=1), LOSS, 10),
    "partial-fetches": (
        2,
        1,
        Scope(max_records=2, max_epoch=1, max_crashes=0, partial_fetches=True, acks=(1,)),
        ("HighWatermarkBound", "WeakIsr", "StrongIsr", "LogMatching"),
        None,
    ),
    "torn-writes": (
        1,
        1,
        Scope(
            max_records=2,
            max_epoch=1,
            max_crashes=1,
            max_power_losses=1,
            crash_kinds=(),
            torn_writes=True,
            max_batch_records=2,
            max_bounces=1,
        ),
        ALL,
        None,
    ),
}


def transitions(trace: list[dict]) -> int:
    return sum(1 for st in trace if st["step"] not in (HANDLE_FETCH, HANDLE_FETCH_RESPONSE))


def found(violations, props) -> str:
    out = [f"{p}@{d}" for p, d in sorted(violations.items(), key=lambda x: (x[1], x[0])) if p in props]
    return ", ".join(out) or "none"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scope", action="append", choices=sorted(SCOPES))
    ap.add_argument("--protocol", action="append")
    args = ap.parse_args()
    protocols = args.protocol or ["kip-320", "kip-903", "kip-966"]
    print(
        "| scope | protocol | explore: states, depth, s | explore: violations | prove: depth, CPU s | prove: violations |"
    )
    print("|---|---|---|---|---|---|")
    for name in args.scope or list(SCOPES):
        replicas, min_isr, scope, props, depth = SCOPES[name]
        for protocol in protocols:
            config = ModelConfig(protocol=protocol, replicas=replicas, min_insync_replicas=min_isr)
            t = time.process_time()
            ex = explore(config, scope)
            ex_s = time.process_time() - t
            expected = {v.property: transitions(v.trace) for v in ex.violations}
            result = bmc(
                config, scope, ex.depth if depth is None else depth, props, preprocess=True, timeout_ms=600_000
            )
            first = bounds_for(config, scope)
            widened = [
                f"{q} {result.bounds.capacity(q)}" for q in QUEUES if result.bounds.capacity(q) > first.capacity(q)
            ]
            note = f" (queues widened: {', '.join(widened)})" if widened else ""
            note += f" (unknown: {', '.join(result.unknown)})" if result.unknown else ""
            got = {v.property: v.transitions for v in result.violations}
            print(
                f"| {name} | {protocol} | {ex.states:,}, {ex.depth}, {ex_s:.2f} | {found(expected, props)} | "
                f"{result.depth}{note}, {result.cpu_seconds:.1f} | {found(got, props)} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
