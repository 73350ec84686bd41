"""``isrcheck soak --protocol P --duration SECONDS``: the implementation as real processes under
concurrent clients and wall-clock faults for a bounded time, its history checked at the end.

Exit 0 no anomaly, 1 a history property failed (or the cluster never served a final read),
2 bad arguments.
"""
from __future__ import annotations

import asyncio
import json
import tempfile

from isrcheck.conformance.vocabulary import SECONDS, SEED, Number, UsageError, output_path
from isrcheck.conformance.core.schedule import PROTOCOLS

PRODUCERS = Number(int, 1, 64)
REPLICAS = Number(int, 1, 5)


def add_arguments(parser) -> None:
    from isrcheck.conformance.engines.soak.driver import FAULTS
    parser.add_argument("--protocol", required=True, choices=PROTOCOLS)
    parser.add_argument("--duration", type=SECONDS, required=True, metavar="SECONDS",
                        help=f"how long clients and faults run ({SECONDS.describe()})")
    parser.add_argument("--faults", default="crash", choices=tuple(FAULTS),
                        help="none; crash: SIGTERM clean shutdowns and SIGKILL process crashes (default); "
                             "power: also power losses (SIGKILL, then what was not fsynced is discarded)")
    parser.add_argument("--seed", type=SEED, default=0, help="seed of the fault loop")
    parser.add_argument("--replicas", type=REPLICAS, default=3)
    parser.add_argument("--min-insync-replicas", type=REPLICAS, default=2)
    parser.add_argument("--producers", type=PRODUCERS, default=4, help="concurrent acks=all producers")
    parser.add_argument("--dir", default=None, metavar="DIR",
                        help="where logs, node output and history.jsonl go (default: a temporary directory)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def run(args) -> int:
    from isrcheck.conformance.engines.soak.driver import run_soak

    if args.min_insync_replicas > args.replicas:
        raise UsageError(f"--min-insync-replicas {args.min_insync_replicas} > --replicas {args.replicas}")
    if args.dir is not None:
        output_path(args.dir, "--dir", directory=True)
    with tempfile.TemporaryDirectory(prefix="isrcheck-soak-") as scratch:
        directory = args.dir or scratch
        try:
            result = asyncio.run(run_soak(args.protocol, directory, args.duration, args.faults, args.seed,
                                          args.replicas, args.min_insync_replicas, args.producers))
        except RuntimeError as exc:  # a node that does not start
            raise UsageError(str(exc)) from None
    if args.json:
        print(json.dumps(result.to_json(), indent=2))
    else:
        kinds = {}
        for _t, kind, _b in result.faults:
            kinds[kind] = kinds.get(kind, 0) + 1
        print(f"soak {args.protocol}: {result.seconds:.1f} s, {result.acked} acknowledged writes "
              f"({result.acked_per_s:.1f}/s) of {result.produced} produced, {result.reads} reads")
        print(f"  faults: {', '.join(f'{k} {v}' for k, v in sorted(kinds.items())) or 'none'}"
              f"; errors: {', '.join(f'{k} {v}' for k, v in sorted(result.errors.items())) or 'none'}"
              f"; power losses discarded {result.lost_bytes} bytes; final HW {result.final_hw}")
        print("  anomalies: " + (", ".join(result.anomalies) if result.anomalies else "none"))
    return 1 if result.anomalies else 0
