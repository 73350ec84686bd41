"""Same operations, same bytes: the files a log writes do not depend on the process or on
PYTHONHASHSEED (compaction's key map, directory listings and crash handling are all ordered)."""

import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import hashlib, random
    from isrcheck.impl.storage import Log, LogConfig, Record, SimulatedFileSystem
    now = [0]
    fs = SimulatedFileSystem()
    config = LogConfig(segment_bytes=400, index_interval_bytes=64, cleanup_policy="compact,delete",
                       retention_bytes=3000, delete_retention_ms=50, compression_type="gzip")
    log = Log.open("/d", config, fs=fs, clock=lambda: now[0])
    rng = random.Random(11)
    for i in range(300):
        now[0] += rng.randrange(3)
        key = rng.choice([b"a", b"b", b"c", b"d", b"e", b"f", b"g"])
        log.append_as_leader([Record(key, None if i % 13 == 0 else b"%d" % i)], i // 40)
        if i % 50 == 49:
            log.high_watermark = log.log_end_offset
            log.compact()
            log.delete_old_segments()
            log.truncate_to(log.log_end_offset - 3)
        if i % 70 == 0:
            log.flush()
    fs.power_loss(random.Random(5))
    log = Log.open("/d", config, fs=fs, clock=lambda: now[0])
    digest = hashlib.sha256()
    for name in fs.listdir("/d"):
        digest.update(name.encode() + b"\\0" + fs.read_file("/d/" + name) + b"\\0")
    print(digest.hexdigest(), log.log_start_offset, log.log_end_offset, log.recovery_report.events)
""")


def run(seed: str) -> str:
    env = dict(os.environ, PYTHONHASHSEED=seed)
    return subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True, timeout=120
    ).stdout


def test_log_files_are_identical_across_processes_and_hash_seeds():
    outputs = {run(seed) for seed in ("0", "1", "4242")}
    assert len(outputs) == 1, outputs
    digest, start, end = outputs.pop().split()[:3]
    assert len(digest) == 64 and 0 < int(start) < int(end)
