"""The rooms of isrcheck.conformance and the one direction of their imports.

From the top down: the command line (``cli``), the HTML ``reports``, the ``engines``, the schedule
``generators``, the lockstep ``core``, and at the bottom the shared vocabulary (``vocabulary``,
``lazy``, ``progress``). A module imports only its own room and the rooms below it, and no modules
import each other around a loop. Names a module loads by string count as imports: the command
registry, the gate's engine table and the packages' lazy exports. A ``__main__`` module is a
program's entry point that nothing imports, so it stands above every room.
"""

from __future__ import annotations

import ast
from pathlib import Path

from import_graph import cycles, import_graph, modules

ROOT = "isrcheck.conformance"
CONFORMANCE = Path(__file__).resolve().parents[2] / "conformance"
ROOMS = ("core", "generators", "engines", "reports", "cli")  # bottom to top, above the vocabulary
BOTTOM = ("vocabulary", "lazy", "progress")


def room(module: str) -> int:
    """The floor of ``module``: 0 the vocabulary, 1 core .. 5 cli, 6 an entry point; the package
    face sits with the highest room it exports from."""
    if module.endswith(".__main__"):
        return len(ROOMS) + 1
    if module == ROOT:
        return max(room(f"{ROOT}.{target}") for target in _lazy_exports(CONFORMANCE / "__init__.py"))
    first = module[len(ROOT) + 1 :].split(".")[0]
    if first in BOTTOM:
        return 0
    return ROOMS.index(first) + 1


def _lazy_exports(path: Path) -> set[str]:
    """The sub-modules named by a package's ``_EXPORTS = {name: module}`` (see ``lazy.py``)."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["_EXPORTS"]:
            return set(ast.literal_eval(node.value).values())
    return set()


def _by_name(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Edges to modules loaded by name: dotted module strings (``"pkg.mod"`` or ``"pkg.mod:func"``)
    and a package's lazy exports."""
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for module, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                target = node.value.partition(":")[0]
                if target in mods and target != module:
                    edges[module].add(target)
        if path.name == "__init__.py":
            edges[module] |= {f"{module}.{sub}" for sub in _lazy_exports(path)}
    return edges


MODULES = modules(CONFORMANCE, ROOT)
RUNTIME, EVERY = import_graph(CONFORMANCE, ROOT)
BY_NAME = _by_name(MODULES)
GRAPH = {m: (RUNTIME[m] | BY_NAME[m]) & MODULES.keys() for m in MODULES}


def test_every_module_is_in_a_room():
    assert len(MODULES) > 60
    strays = [m for m in MODULES if m != ROOT and m[len(ROOT) + 1 :].split(".")[0] not in ROOMS + BOTTOM]
    assert not strays, f"modules outside the rooms {ROOMS + BOTTOM}: {strays}"


def test_the_registry_is_seen():
    assert f"{ROOT}.cli.fuzz" in GRAPH[f"{ROOT}.cli.main"]
    assert f"{ROOT}.engines.cover.gate" in GRAPH[f"{ROOT}.engines.gate.engines"]
    assert f"{ROOT}.core.lockstep" in GRAPH[ROOT]


def test_imports_go_only_downward():
    upward = [
        f"{m} (floor {room(m)}) imports {t} (floor {room(t)})"
        for m in sorted(GRAPH)
        for t in sorted(GRAPH[m])
        if room(t) > room(m)
    ]
    assert not upward, "imports that run back up:\n" + "\n".join(upward)


def test_no_import_cycle():
    found = [" -> ".join(c) for c in cycles(GRAPH)]
    assert not found, "import cycles:\n" + "\n".join(found)


def test_the_vocabulary_imports_nothing_of_isrcheck():
    for name in BOTTOM:
        module = f"{ROOT}.{name}"
        inside = sorted(t for t in EVERY[module] if t.startswith("isrcheck"))
        assert not inside, f"{module} imports {inside}"
