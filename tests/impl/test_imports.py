"""The module import graph of isrcheck.impl, read from the source without importing it.

No two modules import each other, directly or around a loop (imports inside functions count: they
run too, only later); impl stands alone, without the model, the specs or the conformance code; and
the replication, storage, controller and protocol code cannot tell which runtime it runs on.
"""

from __future__ import annotations

from pathlib import Path

from import_graph import cycles, import_graph, path_to, within

ROOT = "isrcheck.impl"
IMPL = Path(__file__).resolve().parents[2] / "impl"
RUNTIME_NEUTRAL = tuple(f"{ROOT}.{p}" for p in ("replication", "storage", "controller", "protocol"))
RUNTIMES = (f"{ROOT}.sim", f"{ROOT}.real")


RUNTIME_GRAPH, GRAPH = import_graph(IMPL, ROOT)


def test_the_graph_covers_impl():
    assert len(GRAPH) == sum(1 for _ in IMPL.rglob("*.py")) > 30
    assert {f"{ROOT}.replication", f"{ROOT}.sim.clock"} <= RUNTIME_GRAPH[f"{ROOT}.sim.world"]


def test_no_import_cycle():
    found = [" -> ".join(c) for c in cycles(RUNTIME_GRAPH)]
    assert not found, "import cycles:\n" + "\n".join(found)


def test_impl_imports_nothing_else_of_isrcheck():
    outside = [
        f"{m} imports {t}"
        for m, ts in GRAPH.items()
        for t in sorted(ts)
        if t.startswith(".") or t.split(".")[0] == "isrcheck" and not within(t, (ROOT,))
    ]
    assert not outside, "\n".join(outside)


def test_replication_and_storage_do_not_know_their_runtime():
    paths = [path_to(GRAPH, m, lambda t: within(t, RUNTIMES)) for m in GRAPH if within(m, RUNTIME_NEUTRAL)]
    found = [" -> ".join(p) for p in paths if p]
    assert not found, "imports of a runtime:\n" + "\n".join(found)


def test_the_checks_see_cycles_through_functions_and_package_inits(tmp_path):
    pkg = tmp_path / "p"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from .sub import b\n")
    (pkg / "sub" / "__init__.py").write_text("from .. import a\n")
    (pkg / "sub" / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..a import f\n")
    (pkg / "c.py").write_text("from .sub.b import x\nimport isrcheck.model\nfrom .. import elsewhere\n")
    runtime, every = import_graph(pkg, "p")
    assert [" -> ".join(c) for c in cycles(runtime)] == ["p.a -> p.sub -> p.a"]
    assert "p.a" not in runtime["p.sub.b"] and "p.a" in every["p.sub.b"]
    assert runtime["p.c"] == {"p.sub.b", "p.sub", "isrcheck.model", "isrcheck", ".."}
