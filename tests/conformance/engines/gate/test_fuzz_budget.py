"""The fuzz engine's budget on Spark: in seconds it runs blocks of seeds on one session until the
time is spent (a block started is finished); with schedules too, whichever ends first."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from isrcheck.conformance.cli.main import main


def _gate(tmp_path, fuzz: str) -> ET.Element:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.isrcheck.gate]\nprotocols = ['kip-320']\nscenarios = false\nmaster = 'local[1]'\n\n"
        f"[tool.isrcheck.gate.fuzz]\nsteps = 20\n{fuzz}\n"
    )
    assert (
        main(
            [
                "gate",
                "--config",
                str(tmp_path / "pyproject.toml"),
                "--out",
                str(tmp_path / "out"),
                "--junit-xml",
                str(tmp_path / "junit.xml"),
            ]
        )
        == 0
    )
    return ET.parse(tmp_path / "junit.xml").getroot()


@pytest.mark.slow
def test_schedules_end_first_in_blocks(tmp_path):
    _gate(tmp_path, "schedules = 10\nseconds = 600\nblock = 5")
    assert sorted(p.name for p in (tmp_path / "out" / "fuzz" / "kip-320").iterdir()) == ["seeds-0-4", "seeds-5-9"]


@pytest.mark.slow
def test_seconds_end_first(tmp_path):
    root = _gate(tmp_path, "schedules = 1000\nseconds = 0.5\nblock = 5")
    assert sorted(p.name for p in (tmp_path / "out" / "fuzz" / "kip-320").iterdir()) == ["seeds-0-4"]
    assert root.find(".//testcase[@classname='engine.fuzz']/system-out").text.startswith("5 schedules")


def test_the_fuzz_engine_takes_a_mode_and_names_a_bad_one():
    from isrcheck.conformance.engines.gate import fuzz_engine
    from isrcheck.conformance.engines.gate.config import ConfigError

    fuzz_engine.check({"schedules": 5, "mode": "auto"})
    with pytest.raises(ConfigError, match=r"\[tool.isrcheck.gate.fuzz\].mode: expected one of steps, auto"):
        fuzz_engine.check({"schedules": 5, "mode": "timers"})
