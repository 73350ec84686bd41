"""docs/ci.md's config is one the gate accepts as written, with every engine table checked."""

from __future__ import annotations

import re
from pathlib import Path

from isrcheck.conformance.engines.gate.config import load_gate_config
from isrcheck.conformance.engines.gate.engines import NAMES
from isrcheck.conformance.engines.gate.run import engines_to_run

DOC = (Path(__file__).resolve().parents[4] / "docs" / "ci.md").read_text(encoding="utf-8")


def test_the_documented_config_loads_as_written(tmp_path):
    toml = re.search(r"```toml\n(.*?)```", DOC, re.S).group(1)
    (tmp_path / "pyproject.toml").write_text(toml)
    (tmp_path / "tests" / "corpus").mkdir(parents=True)  # a corpus folder must exist
    config = load_gate_config(tmp_path / "pyproject.toml", NAMES)
    assert config.protocols == ("kip-320",) and config.save_to == tmp_path / "tests" / "corpus"
    assert config.engine_options("fuzz") == {
        "schedules": 200,
        "seconds": 300,
        "steps": 60,
        "faults": "default",
        "seed": 0,
        "mode": "steps",
    }
    assert [e.name for e in engines_to_run(config)] == ["explore", "fuzz"]


def test_every_exit_code_is_documented():
    for code in ("| 0 |", "| 1 |", "| 2 |"):
        assert code in DOC
