"""The module import graph of a package, read from the source without importing it: shared by the
tests that hold impl's independence and conformance's rooms.

Imports inside functions count (they run too, only later); imports under ``if TYPE_CHECKING:`` do
not (they never run).
"""

from __future__ import annotations

import ast
from pathlib import Path


def modules(root: Path, package: str) -> dict[str, Path]:
    """Module name -> file; a package is its ``__init__``."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join((package, *parts))] = path
    return found


def _type_checking_only(tree: ast.Module) -> set[ast.AST]:
    """Imports under ``if TYPE_CHECKING:``: they never run, so they cannot form a runtime cycle."""
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            for stmt in node.body:
                skipped.update(ast.walk(stmt))
    return skipped


def imported_names(module: str, path: Path) -> list[tuple[str, list[str], bool]]:
    """(absolute base, imported names, runs) per import statement. A relative import that climbs
    above the top package stays as written (``...model``)."""
    tree = ast.parse(path.read_text(), str(path))
    static = _type_checking_only(tree)
    package = (module if path.name == "__init__.py" else module.rpartition(".")[0]).split(".")
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, [], node not in static) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level > len(package):
                base = "." * node.level + (node.module or "")
            elif node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module
            found.append((base, [alias.name for alias in node.names], node not in static))
    return found


def import_graph(root: Path, package: str) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(runtime edges, every edge) between the modules under ``root``; other targets keep their name.

    Importing ``pkg.mod`` runs ``pkg/__init__`` first, so it depends on ``pkg`` too, unless ``pkg``
    already encloses the importer (then it is running or has run)."""
    mods = modules(root, package)
    runtime: dict[str, set[str]] = {m: set() for m in mods}
    every: dict[str, set[str]] = {m: set() for m in mods}
    for module, path in mods.items():
        enclosing = {module.rsplit(".", i)[0] for i in range(module.count(".") + 1)}
        for base, names, runs in imported_names(module, path):
            targets = {base} if base.startswith(".") else _targets(base, names, mods.keys(), enclosing)
            targets.discard(module)
            for graph in (runtime, every) if runs else (every,):
                graph[module] |= targets
    return runtime, every


def _targets(base: str, names: list[str], mods, enclosing: set[str]) -> set[str]:
    """The modules one import runs: each imported submodule, or ``base`` for a name defined there,
    and the packages above them that do not enclose the importer. Outside the tree a name may be
    a module or not; both are kept."""
    submodules = {f"{base}.{n}" for n in names if f"{base}.{n}" in mods or base not in mods}
    explicit = submodules | ({base} if len(submodules) < len(names) or not names else set())
    targets = set(explicit)
    for target in explicit:
        while target := target.rpartition(".")[0]:
            if target not in enclosing:
                targets.add(target)
    return targets


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One shortest cycle per strongly connected component (Tarjan), as [a, b, ..., a]."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v] & graph.keys()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = {stack.pop()}
            while v not in component:
                component.add(stack.pop())
            if len(component) > 1:
                found.append(_shortest_cycle(graph, min(component), component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _shortest_cycle(graph: dict[str, set[str]], start: str, component: set[str]) -> list[str]:
    paths, seen = [[start]], {start}
    while paths:
        path = paths.pop(0)
        for w in sorted(graph[path[-1]] & component):
            if w == start:
                return path + [start]
            if w not in seen:
                seen.add(w)
                paths.append(path + [w])
    raise AssertionError(f"no cycle through {start}")


def within(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def path_to(graph: dict[str, set[str]], start: str, goal) -> list[str] | None:
    paths, seen = [[start]], {start}
    while paths:
        path = paths.pop(0)
        for w in sorted(graph.get(path[-1], ())):
            if goal(w):
                return path + [w]
            if w in graph and w not in seen:
                seen.add(w)
                paths.append(path + [w])
    return None
