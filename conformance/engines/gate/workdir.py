"""The engines' own folders under ``--out`` (``DIR/<engine>/<protocol>/``): each run starts them
afresh, yet removes only what a gate wrote there. After an engine runs, every file and folder it
left is listed in the folder's ``.isrcheck-gate.json``; the next run deletes exactly those, and
refuses (bad input) to touch a folder holding anything it does not list."""

from __future__ import annotations

import json
import os
from pathlib import Path

from isrcheck.conformance.engines.gate.config import ConfigError
from isrcheck.conformance.vocabulary import read_text

MANIFEST = ".isrcheck-gate.json"
_TMP = MANIFEST + ".tmp"
_TAG = "isrcheck gate"


def _entries(folder: Path) -> list[str]:
    """Every file and folder under ``folder`` (folders ending in ``/``; a link is a file),
    relative, sorted; the manifest itself left out."""
    out = []
    for root, dirs, files in os.walk(folder):
        rel = Path(root).relative_to(folder)
        for d in dirs:
            out.append((rel / d).as_posix() + ("" if (Path(root) / d).is_symlink() else "/"))
        out += [(rel / f).as_posix() for f in files]
    return sorted(e for e in out if e not in (MANIFEST, _TMP))


def _listed(folder: Path) -> set[str]:
    path = folder / MANIFEST
    if not path.is_file():
        return set()
    try:
        doc = json.loads(read_text(path, "a manifest", error=ValueError))
    except (ValueError, RecursionError):
        return set()
    if not (isinstance(doc, dict) and doc.get("written_by") == _TAG and isinstance(doc.get("entries"), list)):
        return set()
    return {e for e in doc["entries"] if isinstance(e, str)}


def start_afresh(folder: Path) -> None:
    """Make ``folder`` empty for a new engine run: delete what the last run listed, or raise
    ConfigError naming the first entry it did not write (nothing is deleted then)."""
    if folder.exists() and not folder.is_dir():
        raise ConfigError(
            f"--out: {folder} is a file, not a folder isrcheck gate wrote; move it or choose another --out"
        )
    if not folder.exists():
        folder.mkdir(parents=True)
        return
    listed = _listed(folder)
    foreign = [e for e in _entries(folder) if e not in listed]
    if foreign:
        raise ConfigError(
            f"--out: {folder / foreign[0].rstrip('/')} was not written by isrcheck gate "
            f"(not listed in {folder / MANIFEST}); move it or choose another --out"
        )
    entries = _entries(folder)
    try:
        for entry in entries:
            if not entry.endswith("/"):
                (folder / entry).unlink()
        for entry in sorted((e for e in entries if e.endswith("/")), key=len, reverse=True):
            (folder / entry).rmdir()  # deepest first; each held only what was listed, now gone
        for name in (MANIFEST, _TMP):
            (folder / name).unlink(missing_ok=True)
    except OSError as exc:
        raise ConfigError(f"--out: cannot remove the last run's {exc.filename}: {exc.strerror or exc}") from None


def record(folder: Path) -> None:
    """List everything in ``folder`` as the gate's own (it was empty when the engine started)."""
    path, tmp = folder / MANIFEST, folder / _TMP
    tmp.write_text(json.dumps({"written_by": _TAG, "entries": _entries(folder)}, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)
