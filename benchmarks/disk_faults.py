"""How often fuzz and cover reach each disk fault (docs/steps.md, "Disk faults") and each recovery
path it forces: a torn tail of stale or random bytes, a batch corrupted at rest (on a down broker,
or under a live one), a write, fsync or read failing with EIO or ENOSPC; log recovery rejecting a
batch by its CRC (``disk:crc``), a read meeting a damaged batch (``disk:crc-read``: a follower's
CRC check refuses a fetch response, a consumer's fetch fails), a log directory taken offline
(``disk:offline``), the leader's (``disk:offline-leader``, which the controller answers by
electing elsewhere).

    python benchmarks/disk_faults.py [--protocol kip-320] [--schedules 2000] [--master local[2]]
                                     [--parts fuzz,cover]

- ``fuzz``: ``isrcheck fuzz --faults disk --schedules N`` (swarm walks of the ``disk`` profile);
- ``cover``: ``isrcheck cover`` at three two-broker scopes (one record, leader epochs up to 2,
  flushes, no bounce, drop, partial fetch or HW checkpoint), one per group of disk faults: a power
  loss that may tear a tail of garbage; a corruption at rest and one under a live broker, with
  consumes; a disk failure that may be an fsync. One scope with all of them has too many edges to
  run on two loaded cores in minutes (76,434 schedules at one leader epoch).

Each part prints its command, its time and verdicts, then per fault and path the number of
schedules that reached it (lockstep's ``disk:*`` coverage, kept per schedule in the Parquet rows).
"""

from __future__ import annotations

import argparse
import collections
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

COVER_BASE = [
    "--replicas",
    "2",
    "--min-isr",
    "2",
    "--max-records",
    "1",
    "--max-epoch",
    "2",
    "--bounces",
    "0",
    "--max-drops",
    "0",
    "--no-partial-fetches",
    "--no-hw-checkpoints",
    "--flushes",
]
COVER_SCOPES = {
    "tails": [
        "--max-crashes",
        "1",
        "--crash-kinds",
        "process",
        "--max-power-losses",
        "1",
        "--torn-writes",
        "--garbage-tails",
    ],
    "corruptions": [
        "--max-crashes",
        "1",
        "--crash-kinds",
        "process",
        "--max-power-losses",
        "1",
        "--corruptions",
        "1",
        "--live-corruptions",
        "1",
        "--consumes",
    ],
    "failures": ["--max-crashes", "0", "--disk-failures", "1", "--fsync-failures", "1"],
}
PATHS = (
    "disk:tail:stale",
    "disk:tail:random",
    "disk:corrupt",
    "disk:corrupt-live",
    "disk:write:EIO",
    "disk:write:ENOSPC",
    "disk:fsync:EIO",
    "disk:fsync:ENOSPC",
    "disk:read:EIO",
    "disk:crc",
    "disk:crc-read",
    "disk:offline",
    "disk:offline-leader",
)


def run(command: list[str]) -> float:
    print("$ " + " ".join(command), flush=True)
    started = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode not in (0, 1):
        sys.exit(f"{command[1]} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return time.perf_counter() - started


def report(name: str, seconds: float, out: Path, column: str) -> None:
    table = pq.read_table(out / "runs" if (out / "runs").exists() else out, columns=["verdict", column])
    rows = table.to_pylist()
    verdicts = collections.Counter(r["verdict"] for r in rows)
    reached = collections.Counter(p for r in rows for p in set(r[column] or ()) if p.startswith("disk:"))
    print(f"{name}: {len(rows):,} schedules in {seconds:.0f} s; verdicts {dict(verdicts)}")
    for path in PATHS:
        print(f"  {path:22} {reached[path]:6,} schedules ({100 * reached[path] / max(len(rows), 1):.1f} %)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--protocol", default="kip-320")
    parser.add_argument("--schedules", type=int, default=2000)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--parts", default="fuzz,cover")
    args = parser.parse_args()
    parts = args.parts.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        if "fuzz" in parts:
            out = Path(tmp) / "fuzz"
            seconds = run(
                [
                    "isrcheck",
                    "fuzz",
                    "--protocol",
                    args.protocol,
                    "--faults",
                    "disk",
                    "--schedules",
                    str(args.schedules),
                    "--master",
                    args.master,
                    "--out",
                    str(out),
                ]
            )
            report("fuzz --faults disk", seconds, out, "coverage")
        if "cover" in parts:
            for name, scope in COVER_SCOPES.items():
                out = Path(tmp) / f"cover-{name}"
                seconds = run(
                    [
                        "isrcheck",
                        "cover",
                        "--protocol",
                        args.protocol,
                        *COVER_BASE,
                        *scope,
                        "--master",
                        args.master,
                        "--out",
                        str(out),
                    ]
                )
                report(f"cover ({name})", seconds, out, "disk_paths")
    return 0


if __name__ == "__main__":
    sys.exit(main())
