"""isrcheck sim: same arguments, same trace in any process and under any PYTHONHASHSEED."""

import json
import os
import subprocess
import sys

import pytest

ARGS = ["--protocol", "kip-320", "--replicas", "3", "--seed", "11", "--steps", "150", "--json"]


def sim(args, hashseed):
    env = {**os.environ, "PYTHONHASHSEED": str(hashseed)}
    proc = subprocess.run(
        [sys.executable, "-m", "isrcheck.conformance.cli.main", "sim", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    return proc


def test_same_arguments_give_the_same_trace_hash_in_separate_processes():
    runs = [sim(ARGS, seed) for seed in (0, 1, 4242)]
    outs = [json.loads(p.stdout) for p in runs]
    assert all(p.returncode == 0 for p in runs), [p.stderr for p in runs]
    assert len({o["trace_hash"] for o in outs}) == 1
    assert outs[0] == outs[1] == outs[2]
    for key in ("produced", "acked", "committed", "leader_changes", "isr_changes", "crashes", "logs_agree"):
        assert key in outs[0]
    assert outs[0]["crashes"] > 0 and outs[0]["leader_changes"] > 0 and outs[0]["messages_lost"] > 0


def test_another_seed_gives_another_trace():
    a = json.loads(sim(ARGS, 0).stdout)
    b = json.loads(sim([x if x != "11" else "12" for x in ARGS], 0).stdout)
    assert a["trace_hash"] != b["trace_hash"]


@pytest.mark.parametrize(
    "args,named",
    [
        (["--protocol", "kip-0"], "--protocol"),
        (["--replicas", "0"], "--replicas"),
        (["--steps", "-1"], "--steps"),
        (["--seed", "x"], "--seed"),
        (["--crash-kinds", "clean,meteor"], "--crash-kinds"),
    ],
)
def test_bad_arguments_exit_2_with_a_message(args, named):
    proc = sim(args, 0)
    assert proc.returncode == 2
    assert named in proc.stderr and "Traceback" not in proc.stderr


def test_text_summary_names_what_clients_saw_and_the_trace():
    proc = sim(["--protocol", "kip-279", "--replicas", "2", "--seed", "3", "--steps", "60"], 0)
    assert proc.returncode in (0, 1), proc.stderr
    assert "kip-279, 2 replicas, seed 3, 60 steps" in proc.stdout
    assert "logs agree" in proc.stdout and "trace hash" in proc.stdout
