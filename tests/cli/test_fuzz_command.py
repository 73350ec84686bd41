"""``isrcheck fuzz`` as CI runs it: exit codes and clear errors; the issue's acceptance campaigns (slow)."""

import json
import os
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from isrcheck.conformance.cli.main import main


def _fuzz(*args, env=None, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "isrcheck.conformance.engines.campaign", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (["--protocol", "kip-999", "--schedules", "10"], "unknown --protocol 'kip-999'"),
        (["--protocol", "kip-320", "--schedules", "0"], "--schedules: expected an integer 1..1,000,000,000"),
        (["--protocol", "kip-320", "--schedules", "5", "--partitions", "0"], "--partitions: expected"),
        (["--protocol", "kip-320", "--schedules", "5", "--steps", "-3"], "--steps: expected"),
        (
            ["--protocol", "kip-320", "--schedules", "5", "--seed", str(2**63 - 3)],
            "the last seed, 9,223,372,036,854,775,809, is past the largest",
        ),
        (
            ["--protocol", "kip-320", "--schedules", "5", "--master", "nonsense://x"],
            "'nonsense://x' is not a Spark master URL",
        ),
        (["--protocol", "kip-320", "--schedules", "5", "--master", "local[0]"], "'local[0]' is not a Spark master URL"),
        (["--protocol", "kip-320", "--schedules", "5", "--master", "foo://"], "'foo://' is not a Spark master URL"),
        (["--protocol", "kip-320", "--schedules", "5", "--master", "spark://host:70000"], "is not a Spark master URL"),
        (
            ["--protocol", "kip-320", "--schedules", "5", "--refusals", "1.5"],
            "--refusals: expected a number of shares 0.0..1.0",
        ),
    ],
)
def test_bad_arguments_exit_2_with_a_message(args, message, capsys, tmp_path):
    assert main(["fuzz", *args, "--out", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "c").exists()


def test_unknown_fault_profile_and_foreign_directory_exit_2(capsys, tmp_path):
    assert (
        main(["fuzz", "--protocol", "kip-320", "--schedules", "5", "--faults", "no-such", "--out", str(tmp_path / "c")])
        == 2
    )
    assert "unknown --faults 'no-such'" in capsys.readouterr().err
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("not a campaign")
    assert main(["fuzz", "--protocol", "kip-320", "--schedules", "5", "--out", str(tmp_path / "mine")]) == 2
    assert "holds no campaign.json" in capsys.readouterr().err
    (tmp_path / "file").write_text("x")
    assert main(["fuzz", "--protocol", "kip-320", "--schedules", "5", "--out", str(tmp_path / "file" / "c")]) == 2
    assert f"{tmp_path / 'file'} is a file, not a directory" in capsys.readouterr().err


def test_missing_java_is_a_one_line_error_with_exit_2(tmp_path):
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "no-jdk"), "PATH": os.path.dirname(sys.executable)}
    proc = _fuzz("--protocol", "kip-320", "--schedules", "5", "--out", tmp_path / "c", env=env)
    assert proc.returncode == 2, proc.stderr
    assert "Spark needs Java 17 or newer" in proc.stderr
    assert "Traceback" not in proc.stderr and "at org.apache" not in proc.stderr


# slow (19 s and 9 s): tests/conformance/test_sut.py drives the same driver protocol in the default run
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["random", "guided"])
def test_fuzz_drives_the_system_under_test_it_is_given(mode, tmp_path, faulty_sut):
    """kip-320 passes in process; a --sut that answers one step with an internal error shows as a
    divergence in the campaign's verdicts, with or without --guided, and every Spark worker keeps
    the one process it started for the schedules it runs."""
    once, starts = tmp_path / "once", tmp_path / "starts"
    args = [
        "--protocol",
        "kip-320",
        "--schedules",
        "12",
        "--steps",
        "20",
        "--shrink-budget",
        "1",
        "--master",
        "local[2]",
        "--out",
        tmp_path / "c",
        "--json",
        "--sut",
        f"{faulty_sut} internal 5 {once} {starts}",
    ]
    proc = _fuzz(*args, *(["--guided", "--rounds", "2"] if mode == "guided" else []))
    assert proc.returncode == 1, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["by_verdict"].get("divergence", 0) >= 1, summary["by_verdict"]
    campaign = json.loads((tmp_path / "c" / "campaign.json").read_text())
    assert campaign["sut"] == f"{faulty_sut} internal 5 {once} {starts}"
    # the command's own check of --sut, then one process per worker, not one per schedule
    assert 1 < len(starts.read_text().splitlines()) < 12


@pytest.mark.slow
def test_issue_campaigns_kip_320_clean_and_hw_truncation_failing(tmp_path):
    """The issue's acceptance runs, in local mode with the default arguments."""
    out = tmp_path / "kip-320"
    proc = _fuzz("--protocol", "kip-320", "--schedules", "2000", "--out", out, "--json", timeout=1800)
    summary = json.loads(proc.stdout)
    assert proc.returncode == 0, summary["by_verdict"]
    assert summary["by_verdict"] == {"pass": 2000}
    assert pq.read_table(out / "runs").num_rows == 2000
    from isrcheck.conformance.engines.campaign import start_spark

    spark = start_spark("local[1]")
    try:
        assert spark.read.parquet(str(out / "runs")).count() == 2000
    finally:
        spark.stop()
    out = tmp_path / "hw-truncation"
    proc = _fuzz(
        "--protocol",
        "hw-truncation",
        "--schedules",
        "2000",
        "--shrink-budget",
        "5",
        "--out",
        out,
        "--json",
        timeout=1800,
    )
    assert proc.returncode == 1, proc.stderr
    for entry in json.loads((out / "failures" / "index.json").read_text()):
        for key, seen in (("file", "shrunk_verdict"), ("original_file", "original_verdict")):
            check = subprocess.run(
                [sys.executable, "-m", "isrcheck.conformance.cli.main", "check", str(out / entry[key]), "--json"],
                capture_output=True,
                text=True,
                timeout=300,
            )
            replay = json.loads(check.stdout)
            assert check.returncode == 1 and replay["as_expected"] is True, (entry, replay)
            assert (replay["verdict"], replay["property"]) == (entry[seen]["verdict"], entry[seen]["property"])


def test_the_summary_says_which_wall_time_the_progress_showed():
    """The progress ends with the schedules' time; the summary's wall time includes Spark's start
    and the aggregation: it says so, rather than print a second figure that seems to disagree."""
    import io

    from rich.console import Console

    from isrcheck.conformance.cli.fuzz import print_summary

    summary = {
        "protocol": "kip-320",
        "schedules": 400,
        "seed": 0,
        "steps": 60,
        "faults": "default",
        "swarm": {"enabled": True},
        "by_verdict": {"pass": 400},
        "coverage_by_kind": {},
        "failures": [],
        "run": {
            "executed": 400,
            "skipped_completed": 0,
            "tasks": 4,
            "master": "local[2]",
            "parallelism": 2,
            "schedules_per_s": 1.8,
            "wall_time_s": 274.2,
            "job_seconds": 223.0,
        },
    }
    out = io.StringIO()
    print_summary(summary, "campaigns/kip-320", Console(file=out, width=300))
    assert "wall 274.2 s, of which the schedules 223.0 s (the progress' time)" in out.getvalue()
