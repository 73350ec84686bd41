"""Same inputs, same trace: random walks and replays are identical across processes and hash seeds."""

import json
import os
import subprocess
import sys

from isrcheck.conformance import Schedule, random_walk, run_schedule

PROGRAM = """
import json, sys
from isrcheck.conformance import random_walk
schedule, verdict = random_walk(7, "kip-320", 120, "default", swarm=sys.argv[1] == "swarm")
print(json.dumps({"schedule": schedule.to_json(), "verdict": verdict.to_json()}, sort_keys=True))
"""


def _walk_in_subprocess(hash_seed: str, swarm: str = "uniform") -> dict:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    proc = subprocess.run([sys.executable, "-c", PROGRAM, swarm], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_walks_are_identical_across_processes_and_hash_seeds():
    first, second = _walk_in_subprocess("1"), _walk_in_subprocess("4242")
    assert first == second
    here_schedule, here_verdict = random_walk(7, "kip-320", 120, "default")
    assert first["verdict"]["trace_hash"] == here_verdict.trace_hash
    assert first["verdict"]["coverage"] == list(here_verdict.coverage)


def test_swarm_walks_are_identical_across_processes_and_hash_seeds():
    first, second = _walk_in_subprocess("1", "swarm"), _walk_in_subprocess("4242", "swarm")
    assert first == second
    assert first["schedule"]["steps"] != _walk_in_subprocess("1")["schedule"]["steps"]
    schedule, verdict = random_walk(7, "kip-320", 120, "default", swarm=True)
    assert first["verdict"]["trace_hash"] == verdict.trace_hash
    assert "swarm" in first["schedule"]["description"]


def test_a_walk_replays_to_the_same_verdict_without_its_seed():
    for seed in range(5):
        schedule, verdict = random_walk(seed, "kip-279", 80, "heavy")
        replayed = run_schedule(Schedule.from_json(json.loads(schedule.dumps())))
        assert replayed == verdict


def test_different_seeds_give_different_traces_and_coverage_reports_shapes():
    a = random_walk(1, "kip-320", 60, "default")[1]
    b = random_walk(2, "kip-320", 60, "default")[1]
    assert a.trace_hash != b.trace_hash
    assert any(c.startswith("s:") for c in a.coverage) and any(">" in c for c in a.coverage)
    assert list(a.coverage) == sorted(a.coverage)
