"""Build the compiled variant benchmarks/compiled.py measures: hot modules through mypyc, in a folder of its own.

    python benchmarks/build_compiled.py [--out build/compiled]
    PYTHONPATH=build/compiled python ...        # the compiled variant: same code, same results

The pure-Python source stays the reference (``pip install .`` installs it and needs no compiler):
this copies the packages that hold a compiled module (``isrcheck.model``, ``isrcheck.specs``)
whole into ``OUT/isrcheck/``, compiles the modules of ``COMPILED`` there with
mypyc (``pip install ".[compiled]"`` and a C compiler), and writes ``OUT/compiled.json`` naming them
with a digest of the sources they were built from. ``isrcheck`` is a namespace package, so with
``OUT`` first on ``PYTHONPATH`` those two packages come from ``OUT`` (an extension module is
imported before the ``.py`` beside it) and the others from the installation.
``benchmarks/compiled.py`` builds it and checks that each of its runs loaded the variant it asked
for (``loaded_variant``). Measured, it does not pay enough to be a supported variant
(docs/figures.md, "A compiled path").
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# source folder -> package (pyproject.toml's [tool.setuptools.package-dir]) for the packages copied
PACKAGES = {"model": "model", "specs": "specs"}
# The model's modules the profiles of explore and fuzz put on top, by source path; each compiles
# unchanged or with annotations only. Left out (docs/figures.md, "A compiled path"): model/actions.py,
# whose actions are plain functions made static methods at class creation, which mypyc compiles as
# methods of native classes (every guard and effect would need an explicit @staticmethod), and
# impl/'s and conformance/'s modules, which gave lockstep no measurable gain.
COMPILED = [
    "model/state.py",
    "model/next_state.py",
    "model/semantics.py",
    "model/explorer.py",
    "model/constraints.py",
    "model/symmetry.py",
    "model/budget.py",
    "model/reads.py",
    "model/alphabet.py",
    "model/history.py",
    "model/losses.py",
    "specs/properties.py",
]
MYPY_FLAGS = ["--ignore-missing-imports", "--follow-imports=silent", "--explicit-package-bases", "--no-incremental"]


def source_digest() -> str:
    """A digest of every file copied: a build from other sources is stale."""
    digest = hashlib.sha256()
    for folder in PACKAGES:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def module_name(path: str) -> str:
    """The module a source path compiles to: ``model/state.py`` is ``isrcheck.model.state``."""
    folder, rest = path.split("/", 1)
    return f"isrcheck.{PACKAGES[folder]}." + rest[: -len(".py")].replace("/", ".")


def is_current(out: Path) -> bool:
    """``out`` holds a build of today's sources."""
    manifest = out / "compiled.json"
    return manifest.exists() and json.loads(manifest.read_text())["sources"] == source_digest()


def loaded_variant(compiled_dir: Path | None) -> list[tuple[str, str]]:
    """The modules of ``COMPILED`` this process did not load as asked, with where each came from:
    with ``compiled_dir``, each must be an extension module in it; without, the pure source."""
    wrong = []
    for name in map(module_name, COMPILED):
        where = Path(importlib.import_module(name).__file__ or "")
        if compiled_dir is None:
            asked = where.suffix == ".py"
        else:
            asked = where.suffix != ".py" and compiled_dir.resolve() in where.parents
        if not asked:
            wrong.append((name, str(where)))
    return wrong


def build(out: Path) -> dict:
    """Copy the packages into ``out/isrcheck`` and compile the modules of ``COMPILED`` there in place."""
    if out.exists():
        print(f"build_compiled: removing the previous build in {out}")
        shutil.rmtree(out)
    target = out / "isrcheck"
    for folder, package in PACKAGES.items():
        shutil.copytree(ROOT / folder, target / package, ignore=shutil.ignore_patterns("__pycache__"))
    modules = list(map(module_name, COMPILED))
    sources = [name.replace(".", "/") + ".py" for name in modules]
    if importlib.util.find_spec("mypyc") is None:
        raise SystemExit('build_compiled: mypyc is not installed here (it comes with mypy: pip install ".[compiled]")')
    started = time.monotonic()
    command = [sys.executable, "-m", "mypyc", *MYPY_FLAGS, *sources]
    done = subprocess.run(command, cwd=out, capture_output=True, text=True, env=os.environ | {"MYPYPATH": str(out)})
    if done.returncode != 0:  # a type error mypyc refuses, or no C compiler: its own words
        raise SystemExit(f"build_compiled: mypyc failed in {out}:\n{(done.stdout + done.stderr)[-4000:]}")
    seconds = time.monotonic() - started
    shutil.rmtree(out / "build", ignore_errors=True)  # mypyc's C sources and objects
    manifest = {"modules": modules, "sources": source_digest(), "build_seconds": round(seconds, 1)}
    (out / "compiled.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "compiled")
    args = parser.parse_args()
    manifest = build(args.out.resolve())
    size = sum(p.stat().st_size for p in args.out.rglob("*.so"))
    print(
        f"build_compiled: {len(manifest['modules'])} modules compiled into {args.out} in "
        f"{manifest['build_seconds']} s, {size / 2**20:.1f} MiB of extension modules"
    )


if __name__ == "__main__":
    main()
