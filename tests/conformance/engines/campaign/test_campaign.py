"""Campaigns on embedded Spark: Parquet rows, failures, resume, partition independence.

One local[2] SparkSession is shared by the whole module (JVM start-up costs seconds).
"""

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from isrcheck.conformance import SutSpec, load_schedule, random_walk
from isrcheck.conformance.cli.main import main
from isrcheck.conformance.engines.campaign import ROW_SCHEMA, CampaignParams, run_campaign


def _campaign(
    spark, out, protocol="kip-320", schedules=60, seed=0, partitions=None, faults="default", steps=30, swarm=True
):
    params = CampaignParams(
        protocol, schedules=schedules, seed=seed, steps=steps, faults=faults, shrink_budget_s=1.0, swarm=swarm
    )
    return run_campaign(params, out, spark=spark, partitions=partitions)


def _keys(path):
    table = pq.read_table(path / "runs", columns=["seed", "verdict", "trace_hash"])
    return sorted(zip(*(table.column(c).to_pylist() for c in ("seed", "verdict", "trace_hash"))))


@pytest.mark.slow  # 16 s of two campaigns
def test_rows_are_the_same_whatever_the_number_of_partitions(spark, tmp_path):
    one = _campaign(spark, tmp_path / "one", schedules=10, seed=7, partitions=1)
    five = _campaign(spark, tmp_path / "five", schedules=10, seed=7, partitions=5)
    assert one.summary["run"]["tasks"] == 1 and five.summary["run"]["tasks"] == 5
    assert _keys(tmp_path / "one") == _keys(tmp_path / "five")
    assert [k[0] for k in _keys(tmp_path / "one")] == list(range(7, 17))
    assert one.summary["by_verdict"] == five.summary["by_verdict"]
    assert one.summary["distinct_coverage"] == five.summary["distinct_coverage"] > 0


@pytest.mark.slow  # 80 to 170 s of Spark reading the rows back; pyarrow reads them in the other campaign tests
def test_parquet_rows_are_readable_by_pyarrow_and_spark(spark, tmp_path):
    result = _campaign(spark, tmp_path / "c", schedules=40, faults="none")
    assert result.exit_code == 0 and result.summary["by_verdict"] == {"pass": 40}
    table = pq.read_table(tmp_path / "c" / "runs")
    assert table.num_rows == 40
    assert set(table.column("protocol").to_pylist()) == {"kip-320"}
    df = spark.read.parquet(str(tmp_path / "c" / "runs"))
    assert df.count() == 40 and df.where("verdict = 'pass'").count() == 40
    summary = json.loads((tmp_path / "c" / "summary.json").read_text())
    assert summary["run"]["parallelism"] == 2 and summary["run"]["master"] == "local[2]"
    assert summary["refusals"] == 0.1  # walks propose steps the model refuses by default
    growth = summary["coverage_growth"]
    assert growth[-1]["schedules"] == 40 and growth[-1]["distinct"] == summary["distinct_coverage"]
    assert [g["distinct"] for g in growth] == sorted(g["distinct"] for g in growth)
    assert summary["distinct_abstract_states"] == growth[-1]["abstract_states"] > 0
    assert sum(summary["coverage_by_kind"].values()) == summary["distinct_coverage"]
    # Spark's figure agrees with counting the rows directly.
    items = {i for cov in table.column("coverage").to_pylist() for i in cov}
    assert len(items) == summary["distinct_coverage"]
    assert len({i for i in items if i.startswith("s:")}) == summary["distinct_abstract_states"]


def test_failures_are_shrunk_deduplicated_and_replay_with_isrcheck_check(spark, tmp_path, capsys):
    out = tmp_path / "c"
    # hw-truncation loses data with no fault at all (its HW truncation, within every budget);
    # uniform walks, which take every kind of the profile, find it in these 40 seeds
    result = _campaign(spark, out, protocol="hw-truncation", schedules=40, steps=150, faults="none", swarm=False)
    assert result.exit_code == 1
    summary = result.summary
    assert any(k.startswith("violation:") for k in summary["by_property"])
    assert all(b["checked_within"] + b["outside"] == 40 for b in summary["budgets"].values())
    assert summary["failing_schedules"] == sum(v for k, v in summary["by_verdict"].items() if k != "pass") > 0
    index = json.loads((out / "failures" / "index.json").read_text())
    assert [e["id"] for e in index] == [f["id"] for f in summary["failures"]]
    assert len({e["id"] for e in index}) == len(index) == summary["distinct_failures"]
    assert sum(e["seeds"] for e in index) == summary["failing_schedules"]
    rows = {r["seed"]: r for r in pq.read_table(out / "runs").to_pylist()}
    for entry in index[:3]:
        row = rows[entry["seed"]]
        assert row["failure_id"] == entry["id"] and row["verdict"] == entry["verdict"]
        for key, seen in (("original_file", "original_verdict"), ("file", "shrunk_verdict")):
            capsys.readouterr()
            assert main(["check", str(out / entry[key]), "--json"]) == 1
            replay = json.loads(capsys.readouterr().out)
            assert (replay["verdict"], replay["property"]) == (entry[seen]["verdict"], entry[seen]["property"])
            assert replay["as_expected"] is True
            if key == "original_file":  # the very run the campaign recorded
                assert replay["trace_hash"] == row["trace_hash"]
                assert len(load_schedule(out / entry[key]).steps) == row["steps"]
        assert entry["shrunk_steps"] <= row["steps"]


def _files(out):
    return {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_rerun_resumes_and_other_parameters_are_refused_keeping_every_file(spark, tmp_path, capsys):
    out = tmp_path / "c"
    first = _campaign(spark, out, schedules=30, faults="none")
    again = _campaign(spark, out, schedules=30, faults="none")
    assert again.summary["run"]["executed"] == 0 and again.summary["run"]["skipped_completed"] == 30
    assert again.summary["by_verdict"] == first.summary["by_verdict"]
    assert [k[0] for k in _keys(out)] == list(range(30))
    kept = _files(out)
    made = {"--protocol": "kip-320", "--seed": "0", "--schedules": "30", "--steps": "30", "--faults": "none"}
    for option, value in (
        ("--schedules", "45"),
        ("--seed", "5"),
        ("--steps", "50"),
        ("--faults", "default"),
        ("--protocol", "kip-101"),
    ):
        args = [x for kv in {**made, option: value}.items() for x in kv]
        assert main(["fuzz", *args, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert f"--out {out} was made with {option} {made[option]}, not {value};" in err
        assert "Traceback" not in err
    assert _files(out) == kept  # the summary, failures, rows and ledger as they were


# 120 tiny schedules in 24 tasks: long enough to stop in the middle, short enough to resume.
_SEEDS, _STEPS = 120, 20
_STOPPED = [
    "--protocol",
    "kip-320",
    "--schedules",
    str(_SEEDS),
    "--steps",
    str(_STEPS),
    "--faults",
    "none",
    "--partitions",
    "24",
    "--master",
    "local[2]",
]


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid``, from /proc (PySpark's worker daemon moves to a process group
    of its own, so a signal to the driver's group does not reach its Python workers)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):  # the process ended meanwhile
            continue
        children.setdefault(ppid, []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def _kill_all(pids: list[int]) -> None:
    """SIGKILL ``pids`` and wait until they are gone (a machine losing power leaves no worker
    finishing its task)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 30
    while any(_running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)


def _running(pid: int) -> bool:
    try:  # a zombie has ended: it waits only for its parent to collect it
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _stop_after(out, ranges: int, sig: int, stderr) -> tuple[subprocess.Popen, list[str]]:
    """Run ``isrcheck fuzz`` in its own process group and send ``sig`` to the whole group (as a
    terminal's Ctrl-C does) once ``ranges`` seed ranges are complete; returns it and its args.
    SIGKILL goes to every process of the run, the Python workers too."""
    args = ["fuzz", *_STOPPED, "--out", str(out)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "isrcheck.conformance.cli.main", *args],
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # as a foreground job
    try:
        deadline = time.monotonic() + 300
        while len(list((out / "ranges").glob("*.json"))) < ranges:
            assert proc.poll() is None, "the campaign ended before it was stopped"
            assert time.monotonic() < deadline, "no task completed in time"
            time.sleep(0.05)
        workers = _descendants(proc.pid) if sig == signal.SIGKILL else []
        os.killpg(proc.pid, sig)
        _kill_all(workers)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the driver, its JVM and its Python workers
            proc.wait()
    return proc, args


def _resume(spark, out) -> tuple[list[dict], object]:
    """The same command again, after a stop: every seed exactly once, with the rows a process
    that was never stopped computes. Returns the stopped run's markers and the resumed result."""
    done = [json.loads(p.read_text()) for p in (out / "ranges").glob("*.json")]
    assert 2 <= len(done) < 24
    params = CampaignParams("kip-320", schedules=_SEEDS, steps=_STEPS, faults="none")
    resumed = run_campaign(params, out, spark=spark, partitions=24)
    run = resumed.summary["run"]
    assert run["skipped_completed"] >= sum(d["rows"] for d in done)
    assert run["executed"] + run["skipped_completed"] == _SEEDS
    rows = pq.read_table(out / "runs", columns=["seed", "verdict", "trace_hash"]).to_pylist()
    assert sorted(r["seed"] for r in rows) == list(range(_SEEDS))
    for row in rows[::40]:  # another process, hash seed and JVM than this one
        _, verdict = random_walk(row["seed"], "kip-320", _STEPS, faults="none", swarm=True)
        assert (verdict.kind, verdict.trace_hash) == (row["verdict"], row["trace_hash"])
    assert not list(out.rglob(".*.tmp"))
    return done, resumed


def test_killed_campaign_resumes_with_every_seed_exactly_once(spark, tmp_path):
    out = tmp_path / "c"
    with open(tmp_path / "stderr.txt", "wb") as err:
        _stop_after(out, 3, signal.SIGKILL, err)
    # What the killed run left is a readable dataset holding at least its completed ranges. The
    # markers are read first: a Python worker of the killed JVM may still finish a task for a
    # moment, and a marker is written only after its Parquet file, never before.
    marked = sum(json.loads(p.read_text())["rows"] for p in (out / "ranges").glob("*.json"))
    assert pq.read_table(out / "runs", columns=["seed"]).num_rows >= marked
    _, resumed = _resume(spark, out)
    assert resumed.exit_code == 0 and resumed.summary["by_verdict"] == {"pass": _SEEDS}


@pytest.mark.slow  # 15 to 23 s; a killed campaign's resume runs by default (above)
def test_ctrl_c_keeps_what_is_done_and_the_same_command_resumes(spark, tmp_path):
    out = tmp_path / "c"
    with open(tmp_path / "stderr.txt", "wb") as err:
        proc, args = _stop_after(out, 2, signal.SIGINT, err)
    err = (tmp_path / "stderr.txt").read_text()
    assert proc.returncode == 130, err
    said = [line for line in err.splitlines() if line.startswith("isrcheck fuzz:")]
    assert said == [
        f"isrcheck fuzz: interrupted; the completed seed ranges stay in {out}; to resume, "
        f"run the same command: {shlex.join(['isrcheck', *args])}"
    ]
    assert "Traceback" not in err and "ERROR" not in err and "at org.apache" not in err
    _resume(spark, out)


def test_a_damaged_part_is_set_aside_and_only_its_seeds_run_again(spark, tmp_path):
    out = tmp_path / "c"
    _campaign(spark, out, schedules=40, partitions=4, faults="none")
    before = _keys(out)
    parts = sorted((out / "runs" / "protocol=kip-320").glob("part-*.parquet"))
    truncated, damaged = parts[1], parts[3]
    with open(truncated, "r+b") as fh:  # a copy cut short; its marker survived
        fh.truncate(truncated.stat().st_size // 2)
    # Bits flipped on the disk, at the end of the coverage column's last page: in the data, not
    # in the statistics or padding no reader looks at.
    coverage = pq.ParquetFile(damaged).metadata.row_group(0).column(ROW_SCHEMA.get_field_index("coverage"))
    end = (coverage.dictionary_page_offset or coverage.data_page_offset) + coverage.total_compressed_size
    data = bytearray(damaged.read_bytes())
    data[end - 16 : end] = bytes(b ^ 0x5A for b in data[end - 16 : end])
    damaged.write_bytes(bytes(data))
    again = _campaign(spark, out, schedules=40, partitions=4, faults="none")
    assert again.summary["run"]["rerun_damaged"] == 2
    assert again.summary["run"]["executed"] == 20 and again.summary["run"]["skipped_completed"] == 20
    assert _keys(out) == before  # every seed once, with the rows it had
    assert sorted(p.name for p in truncated.parent.glob(".*")) == [
        f".{truncated.name}.damaged",
        f".{damaged.name}.damaged",
    ]
    assert (truncated.parent / f".{damaged.name}.damaged").read_bytes() == bytes(data)


def test_a_campaign_through_the_driver_protocol_gives_the_in_process_rows(spark, tmp_path):
    """Each Spark worker starts its own ``python -m isrcheck.impl.sut`` and keeps it for its seeds."""
    params = dict(schedules=24, seed=3, steps=40, faults="default", shrink_budget_s=1.0)
    here = run_campaign(CampaignParams("hw-truncation", **params), tmp_path / "here", spark=spark)
    server = SutSpec(f"{sys.executable} -m isrcheck.impl.sut")
    there = run_campaign(CampaignParams("hw-truncation", **params, sut=server), tmp_path / "there", spark=spark)
    assert _keys(tmp_path / "here") == _keys(tmp_path / "there")
    assert here.summary["by_verdict"] == there.summary["by_verdict"]
    assert json.loads((tmp_path / "there" / "campaign.json").read_text())["sut"].endswith("-m isrcheck.impl.sut")
    assert "sut" not in json.loads((tmp_path / "here" / "campaign.json").read_text())
