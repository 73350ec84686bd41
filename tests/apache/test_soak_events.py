"""A soak of Apache Kafka with its replication events recorded (``isrcheck soak --cluster kafka
--events``): the recording is translated and validated when the soak ends, and its verdict is part of
the run's (results.json's ``validation``; an unexplained log is the anomaly event-log-not-explained)."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from isrcheck.conformance.cli.main import main

pytestmark = [
    pytest.mark.slow,  # a Kafka cluster of four JVMs with the agent, about a minute and a half
    pytest.mark.skipif(shutil.which("java") is None, reason="Apache Kafka needs java"),
]


def test_a_kafka_soak_under_pauses_is_explained_by_the_model(tmp_path, capsys):
    """Pauses stop a broker's process and resume it (no restart, the one thing the model cannot yet
    take from Kafka's events: docs/validate.md, the frontier): every partition's events explained."""
    if not os.path.exists("/dev/fuse"):
        pytest.skip("no FUSE")
    code = main(
        [
            "soak",
            "--cluster",
            "kafka:4.4.0",
            "--events",
            "--faults",
            "pause",
            "--duration",
            "40",
            "--seed",
            "3",
            "--dir",
            str(tmp_path / "soak"),
        ]
    )
    out = capsys.readouterr().out
    results = json.loads((tmp_path / "soak" / "results.json").read_text())
    assert results["validation"]["verdict"] == "explained", out
    assert code == 0, out
    assert "explained:" in out and results["validation"]["events"] > 1000
