"""``isrcheck fuzz`` as CI runs it: exit codes, clear errors, kill and resume, replayable failures."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from isrcheck.conformance.cli import main


def _fuzz(*args, env=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "isrcheck.conformance.campaign", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.parametrize("args, message", [
    (["--protocol", "kip-999", "--schedules", "10"], "unknown --protocol 'kip-999'"),
    (["--protocol", "kip-320", "--schedules", "0"], "--schedules must be at least 1"),
    (["--protocol", "kip-320", "--schedules", "5", "--partitions", "0"], "--partitions must be"),
    (["--protocol", "kip-320", "--schedules", "5", "--steps", "-3"], "--steps must be"),
    (["--protocol", "kip-320", "--schedules", "5", "--master", "nonsense://x"],
     "'nonsense://x' is not a Spark master URL"),
])
def test_bad_arguments_exit_2_with_a_message(args, message, capsys, tmp_path):
    assert main(["fuzz", *args, "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "c").exists()


def test_unknown_fault_profile_and_foreign_directory_exit_2(capsys, tmp_path):
    assert main(["fuzz", "--protocol", "kip-320", "--schedules", "5", "--faults", "no-such",
                 "--out", str(tmp_path / "c")]) == 2
    assert "unknown --faults 'no-such'" in capsys.readouterr().err
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("not a campaign")
    assert main(["fuzz", "--protocol", "kip-320", "--schedules", "5",
                 "--out", str(tmp_path / "mine")]) == 2
    assert "holds no campaign.json" in capsys.readouterr().err


def test_missing_java_is_a_one_line_error_with_exit_2(tmp_path):
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "no-jdk"), "PATH": os.path.dirname(sys.executable)}
    proc = _fuzz("--protocol", "kip-320", "--schedules", "5", "--out", tmp_path / "c", env=env)
    assert proc.returncode == 2, proc.stderr
    assert "Spark needs Java 17 or newer" in proc.stderr
    assert "Traceback" not in proc.stderr and "at org.apache" not in proc.stderr


def test_killed_campaign_resumes_with_every_seed_exactly_once(tmp_path):
    out = tmp_path / "c"
    cmd = [sys.executable, "-m", "isrcheck.conformance.campaign", "--protocol", "kip-320",
           "--schedules", "240", "--steps", "40", "--partitions", "24", "--master", "local[2]",
           "--out", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while len(list((out / "ranges").glob("*.json"))) < 3:
            assert proc.poll() is None, "the campaign ended before it could be killed"
            assert time.monotonic() < deadline, "no task completed in time"
            time.sleep(0.1)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the driver, its JVM and its Python workers
        proc.wait()
    done = [json.loads(p.read_text()) for p in (out / "ranges").glob("*.json")]
    assert 3 <= len(done) < 24
    # What the killed run left is a readable dataset of exactly its completed ranges.
    partial = pq.read_table(out / "runs", columns=["seed"]).column("seed").to_pylist()
    assert len(partial) >= sum(d["rows"] for d in done)

    proc = _fuzz(*cmd[3:], "--json")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["run"]["skipped_completed"] >= sum(d["rows"] for d in done)
    assert summary["run"]["executed"] + summary["run"]["skipped_completed"] == 240
    seeds = pq.read_table(out / "runs", columns=["seed"]).column("seed").to_pylist()
    assert sorted(seeds) == list(range(240))
    assert not [p for p in out.rglob(".*.tmp")]


def test_hw_truncation_failures_replay_with_isrcheck_check(tmp_path):
    out = tmp_path / "c"
    proc = _fuzz("--protocol", "hw-truncation", "--schedules", "60", "--steps", "60",
                 "--master", "local[2]", "--shrink-budget", "3", "--out", out, "--json")
    assert proc.returncode == 1, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["failing_schedules"] > 0 and summary["failures"]
    index = json.loads((out / "failures" / "index.json").read_text())
    for entry in index[:3]:
        for key, verdict in (("file", "shrunk_verdict"), ("original_file", "original_verdict")):
            check = subprocess.run([sys.executable, "-m", "isrcheck.conformance.cli", "check",
                                    str(out / entry[key]), "--json"],
                                   capture_output=True, text=True, timeout=120)
            assert check.returncode == 1, check.stderr
            replay = json.loads(check.stdout)
            assert (replay["verdict"], replay["property"]) == \
                (entry[verdict]["verdict"], entry[verdict]["property"])
            assert replay["as_expected"] is True
        assert entry["shrunk_steps"] <= entry["steps"]
