"""The distribution ships every package of the source tree: a sub-package pyproject.toml does not
list is missing from a plain ``pip install .`` while an editable install still finds it."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_folder_is_listed_in_pyproject():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(setuptools["packages"])
    found = {
        package + ".".join([""] + list(init.parent.relative_to(ROOT / folder).parts))
        for package, folder in setuptools["package-dir"].items()
        for init in (ROOT / folder).rglob("__init__.py")
    }
    assert found - listed == set(), f"packages pyproject.toml does not list: {sorted(found - listed)}"
