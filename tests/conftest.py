"""Fixtures shared by the whole suite: the scenario corpus and running isrcheck as a program.

Tests are laid out like the packages (tests/model, tests/impl/..., tests/conformance,
tests/campaign, tests/cli); a test that takes a ``scenario_file`` argument runs once per schedule
of ``specs/scenarios``.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import isrcheck.specs

SCENARIO_DIR = Path(isrcheck.specs.__file__).parent / "scenarios"
SCENARIO_FILES = sorted(SCENARIO_DIR.glob("*.json"))


def pytest_generate_tests(metafunc):
    if "scenario_file" in metafunc.fixturenames:
        metafunc.parametrize("scenario_file", SCENARIO_FILES, ids=lambda p: p.stem)


@pytest.fixture(scope="session")
def scenario_files() -> list[Path]:
    """Every schedule of the shipped scenario corpus, by name."""
    return SCENARIO_FILES


@pytest.fixture(scope="session")
def scenario():
    """``scenario("kip101-scenario1")`` -> the path of that shipped schedule, as a string."""
    def path(name: str) -> str:
        found = SCENARIO_DIR / f"{name}.json"
        assert found.exists(), f"no scenario {name!r} in {SCENARIO_DIR}"
        return str(found)
    return path


@pytest.fixture(scope="session")
def isrcheck_cli():
    """Run ``isrcheck ARGS...`` as its own process: ``isrcheck_cli("check", path, hash_seed="7")``."""
    def run(*args, hash_seed: str | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
        env = dict(os.environ)
        if hash_seed is not None:
            env["PYTHONHASHSEED"] = hash_seed
        return subprocess.run([sys.executable, "-m", "isrcheck.conformance.cli", *map(str, args)],
                              capture_output=True, text=True, env=env, timeout=timeout)
    return run
