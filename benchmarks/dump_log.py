"""``isrcheck dump-log`` on a large segment: wall-clock seconds and peak resident memory.

Builds one segment of about ``--mb`` MB (100-byte values in batches of 10, the shape the
simulation appends, so that per-record work dominates), then runs ``isrcheck dump-log`` on its
``.log`` (text and ``--json``) and ``.index`` in a child process with the output sent to
/dev/null, and prints seconds and the child's peak RSS. Memory must not grow with the segment.

Usage: python benchmarks/dump_log.py [--mb 200] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

from isrcheck.impl.storage import Log, LogConfig, Record


def build_segment(directory: str, megabytes: int) -> str:
    log = Log.open(directory, LogConfig(segment_bytes=(megabytes + 16) << 20, segment_ms=None, retention_ms=None))
    value = bytes(range(100))
    offset = 0
    while log.size_in_bytes < megabytes << 20:
        log.append_as_leader([Record(b"key-%d" % (offset + i), value) for i in range(10)], leader_epoch=0)
        offset += 10
    log.close()
    return os.path.join(directory, "00000000000000000000.log")


def run_dump(args: list[str]) -> tuple[float, float, int]:
    """Seconds, peak MB and exit code of one ``isrcheck dump-log`` child process."""
    command = [sys.executable, "-m", "isrcheck.conformance.cli.main", "dump-log", *args]
    start = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        child = subprocess.Popen(command, stdout=sink)
        _, status, usage = os.wait4(child.pid, 0)  # this child's own rusage (KB on Linux)
        child.returncode = os.waitstatus_to_exitcode(status)
    return time.perf_counter() - start, usage.ru_maxrss / 1024, child.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=200, help="segment size in MB (default 200)")
    parser.add_argument("--keep", help="build the segment in this directory and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="isrcheck-bench-") as scratch:
        directory = args.keep or os.path.join(scratch, "topic-0")
        path = os.path.join(directory, "00000000000000000000.log")
        if not os.path.exists(path):
            build_segment(directory, args.mb)
        size = os.path.getsize(path) / 1e6
        print(f"dump-log of a {size:.0f} MB segment (100-byte values, batches of 10):")
        for label, dump_args in (("text", [path]), ("--json", [path, "--json"]), (".index", [path[:-4] + ".index"])):
            seconds, peak_mb, code = run_dump(dump_args)
            print(f"  {label:8} {seconds:7.1f} s  peak {peak_mb:7.0f} MB  ({size / seconds:5.1f} MB/s, exit {code})")


if __name__ == "__main__":
    main()
