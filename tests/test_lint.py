"""The linter and formatter hold every Python file of the repository (pyproject.toml's ``[tool.ruff]``):
line length, import order, unused or undefined names are the tool's to keep, not a reviewer's."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _ruff(*args: str) -> subprocess.CompletedProcess:
    # the environment's own ruff first: the suite may run as .venv/bin/python without the venv on PATH
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    assert ruff, "ruff is missing: it is one of the dev extras (pip install '.[dev]')"
    return subprocess.run([ruff, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    "args", [("check", "--output-format", "concise", "."), ("format", "--check", ".")], ids=["check", "format"]
)
def test_ruff_holds_every_file(args):
    done = _ruff(*args)
    assert done.returncode == 0, f"ruff {' '.join(args)}:\n{done.stdout}{done.stderr}"


def test_ruff_looks_at_the_files(tmp_path):
    # a passing run means something only if ruff reads this configuration and these files
    bad = tmp_path / "bad.py"
    bad.write_text("import os\nx = undefined_name\n")
    done = _ruff("check", "--output-format", "concise", str(bad))
    assert done.returncode == 1 and "F401" in done.stdout and "F821" in done.stdout
    listed = _ruff("check", "--show-files", ".").stdout
    assert "model/actions.py" in listed and "impl/real/serve.py" in listed and "tests/test_lint.py" in listed
