"""README is a front page and docs/ a page per topic: every page says what it is for and links back,
every link lands, and every module and file the pages name exists (a move that leaves a page
behind fails here)."""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
PAGES = [README, *DOCS]
# the project's folders, and conformance/'s rooms as the README's tour names them
FOLDER = re.compile(r"`((?:model|specs|impl|conformance|tests|benchmarks|docs)/[\w./-]*)")
ROOM = re.compile(r"`((?:cli|core|engines|generators|reports)/[\w./-]*)`")
MODULE = re.compile(r"(?<![\w.])isrcheck(?:\.[A-Za-z_]\w*)+")  # not a TOML table such as tool.isrcheck.gate
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    anchors, fenced = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        fenced ^= line.startswith("```")
        if line.startswith("#") and not fenced:
            anchors.add(_slug(line.lstrip("#")))
    return anchors


def test_the_readme_is_a_front_page_linking_every_docs_page():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    for page in DOCS:
        assert f"](docs/{page.name})" in text, f"README does not link docs/{page.name}"


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.name)
def test_a_docs_page_opens_with_its_purpose_and_a_link_back(page):
    lines = page.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("# ") and lines[1] == "", f"{page.name}: a title, then its purpose"
    paragraph = " ".join(lines[2 : lines.index("", 2)])
    assert paragraph and not paragraph.startswith(("#", "|", "```", "- ")), f"{page.name}: no purpose paragraph"
    assert "](../README.md" in paragraph, f"{page.name}: its first paragraph does not link back to README"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_lands(page):
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        landed = (page.parent / path).resolve() if path else page
        assert landed.exists(), f"{page.name}: {target} is missing"
        if anchor:
            assert anchor in _anchors(landed), f"{page.name}: {target} names no heading"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_file_and_folder_named_exists(page):
    text = page.read_text(encoding="utf-8")
    named = [ROOT / p for p in FOLDER.findall(text)] + [ROOT / "conformance" / p for p in ROOM.findall(text)]
    for path in named:
        if "*" in path.name:
            assert list(path.parent.glob(path.name)), f"{page.name}: nothing matches {path.relative_to(ROOT)}"
        else:
            assert path.exists(), f"{page.name}: {path.relative_to(ROOT)} does not exist"


def _resolves(dotted: str) -> bool:
    """``dotted`` is a module of the distribution, or a name defined in one."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if found:
            value = importlib.import_module(module)
            for name in parts[cut:]:
                if not hasattr(value, name):
                    return False
                value = getattr(value, name)
            return True
    return False


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_module_named_exists(page):
    for dotted in sorted(set(MODULE.findall(page.read_text(encoding="utf-8")))):
        assert _resolves(dotted), f"{page.name}: {dotted} does not exist"
