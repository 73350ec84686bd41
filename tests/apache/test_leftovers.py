"""What a killed run leaves behind (JVMs in sessions of their own, lazy file system mounts, network
namespaces) is found and cleaned up by the next run of the same folder, which then starts the same
cluster."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from isrcheck.conformance.engines.apache.cluster import KafkaCluster, KafkaSettings, _is_our_jvm, free_port_base
from isrcheck.conformance.engines.apache.distribution import DEFAULT_VERSION, distribution

STARTER = """
import sys, time
from isrcheck.conformance.engines.apache.cluster import KafkaCluster, KafkaSettings
from isrcheck.conformance.engines.apache.distribution import distribution
settings = KafkaSettings(brokers=2, port=int(sys.argv[2]), lazyfs=True, network=sys.argv[3], topics=[("t", 1)])
KafkaCluster(settings, sys.argv[1], distribution(sys.argv[4])).start()
print("ready", flush=True)
time.sleep(600)
"""


@pytest.mark.slow
@pytest.mark.parametrize("network", ["loopback", "netns"])
def test_a_killed_runs_jvms_mounts_and_namespaces_are_cleaned_up_by_the_next(tmp_path, network):
    directory, port = tmp_path / "cluster", free_port_base(3)
    starter = subprocess.Popen(
        [sys.executable, "-c", STARTER, str(directory), str(port), network, DEFAULT_VERSION],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert starter.stdout.readline().strip() == "ready"
    finally:
        starter.send_signal(signal.SIGKILL)  # no clean stop: JVMs, mounts and namespaces stay
        starter.wait()
    left = json.loads((directory / "pids.json").read_text())["pids"]
    assert all(_is_our_jvm(pid, directory.resolve()) for pid in left)
    said: list[str] = []
    cluster = KafkaCluster(
        KafkaSettings(brokers=2, port=port, lazyfs=True, network=network, topics=[("t", 1)]),
        directory,
        distribution(DEFAULT_VERSION),
        say=said.append,
    )
    cluster.start()
    try:
        assert sum("a killed run left running" in line for line in said) == len(left), said
        assert any("lazy file system a killed run left behind" in line for line in said), said
        if network == "netns":
            assert any("network namespace a killed run left behind" in line for line in said), said
        assert not any(os.path.exists(f"/proc/{pid}") and _is_our_jvm(pid, directory.resolve()) for pid in left)
        assert "formatting" not in " ".join(said)  # the same cluster again
    finally:
        assert cluster.stop()
    time.sleep(0.5)
    mounts = open("/proc/self/mountinfo").read()
    assert str(directory.resolve()) not in mounts
