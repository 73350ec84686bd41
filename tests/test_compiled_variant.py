"""benchmarks/build_compiled.py's check of which variant a process loaded (a compiled run that
silently imported pure Python would measure the reference twice), and, slow and where mypyc is
installed, benchmarks/compiled.py's pure and compiled runs giving the same results."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"


def _build_compiled():
    spec = importlib.util.spec_from_file_location("build_compiled", BENCHMARKS / "build_compiled.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build_compiled = _build_compiled()
ALL = [build_compiled.module_name(path) for path in build_compiled.COMPILED]


def test_this_pure_run_loaded_every_listed_module_from_source():
    assert build_compiled.loaded_variant(None) == []


def test_a_run_asked_for_the_compiled_variant_that_loaded_source_names_every_module(tmp_path):
    assert [name for name, _where in build_compiled.loaded_variant(tmp_path)] == ALL


def _loaded_variant_in(build: Path, asked: Path | None) -> list:
    """``loaded_variant(asked)`` in a process with ``build`` first on its path."""
    code = (
        f"import json, pathlib, sys; sys.path.insert(0, {str(BENCHMARKS)!r}); import build_compiled; "
        f"asked = {str(asked) if asked else ''!r}; "
        "print(json.dumps([n for n, _ in build_compiled.loaded_variant(pathlib.Path(asked) if asked else None)]))"
    )
    env = os.environ | {"PYTHONPATH": str(build)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("mypyc") is None, reason='mypyc not installed (pip install ".[compiled]")')
def test_the_compiled_build_is_loaded_and_gives_the_same_results(tmp_path):
    """Built, the compiled modules are what a process with the build on its path loads (and a pure
    run there is told so: this failed before, when a pure check passed whatever was loaded), and
    the benchmark's pure and compiled runs agree on every count, violation and trace hash."""
    build = tmp_path / "compiled"
    build_compiled.build(build)
    assert _loaded_variant_in(build, build) == []
    assert _loaded_variant_in(build, None) == ALL
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "compiled.py"), "--compiled", str(build), "--rounds", "1"]
        + ["--part", "explore", "--max-states", "3000", "--part", "lockstep", "--lockstep-schedules", "10"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.count("same results in both (same seeds): met") == 2, done.stdout
    assert done.stdout.count("each run the variant it was asked for: yes") == 2, done.stdout
