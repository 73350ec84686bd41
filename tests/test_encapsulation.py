"""No module writes another object's private attributes.

A write to ``other._name`` from outside ``other``'s class is a back door: the class can no longer
keep its own invariants (here, the storage engine's crash-safety bookkeeping), and a refactoring
inside it silently breaks the writer. The rule, checked on the syntax tree of every source file:

* an assignment, augmented or annotated assignment, ``for``/``with`` target or ``del`` whose target
  is ``X._name`` or ``X._name[...]`` with ``X`` other than ``self`` or ``cls``;
* ``setattr(X, "_name", ...)``, ``delattr(X, "_name")`` and ``object.__setattr__(X, "_name", ...)``
  with a literal private name and ``X`` other than ``self`` or ``cls``.

Dunder names (``__x__``) are not private. Reading private attributes is not checked here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("impl", "model", "conformance", "specs")
OWNERS = {"self", "cls"}


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _is_owner(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id in OWNERS


def _target_violation(target: ast.expr) -> str | None:
    """``X._name`` or ``X._name[...]`` with X not self/cls, as source text; recurses into tuples."""
    if isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            found = _target_violation(element)
            if found:
                return found
        return None
    if isinstance(target, ast.Starred):
        return _target_violation(target.value)
    while isinstance(target, ast.Subscript):
        target = target.value
    if isinstance(target, ast.Attribute) and _is_private(target.attr) and not _is_owner(target.value):
        return ast.unparse(target)
    return None


def _call_violation(call: ast.Call) -> str | None:
    """setattr/delattr/object.__setattr__ on another object with a literal private name."""
    func = call.func
    if isinstance(func, ast.Name) and func.id in ("setattr", "delattr"):
        pass
    elif (
        isinstance(func, ast.Attribute)
        and func.attr in ("__setattr__", "__delattr__")
        and isinstance(func.value, ast.Name)
        and func.value.id == "object"
    ):
        pass
    else:
        return None
    if len(call.args) < 2:
        return None
    obj, name = call.args[0], call.args[1]
    if (
        isinstance(name, ast.Constant)
        and isinstance(name.value, str)
        and _is_private(name.value)
        and not _is_owner(obj)
    ):
        return ast.unparse(call)
    return None


def _targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return node.targets
    if isinstance(node, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.comprehension)):
        return [node.target]
    if isinstance(node, ast.Delete):
        return node.targets
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return [item.optional_vars for item in node.items if item.optional_vars is not None]
    return []


def violations(source: str, filename: str) -> list[str]:
    """``file:line: text`` for every write to another object's private attribute in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        hits = [(target.lineno, _target_violation(target)) for target in _targets(node)]
        if isinstance(node, ast.Call):
            hits.append((node.lineno, _call_violation(node)))
        found += [(line, hit) for line, hit in hits if hit]
    return [f"{filename}:{line}: {hit}" for line, hit in sorted(found)]


def _sources() -> list[Path]:
    return sorted(p for package in PACKAGES for p in (ROOT / package).rglob("*.py"))


def test_no_module_writes_another_objects_private_attributes():
    assert _sources(), f"no sources found under {ROOT}"
    found = []
    for path in _sources():
        found += violations(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert not found, "writes to another object's private attributes:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "line",
    [
        "log._segments = []",
        "log._segments[0] = s",
        "log._leo += 1",
        "log._hw: int = 0",
        "del log._bases[0]",
        "a, log._leo = 1, 2",
        "for log._x in y: pass",
        "[0 for log._x in y]",
        "with f() as log._x: pass",
        "self.log._leo = 1",
        "setattr(log, '_leo', 1)",
        "delattr(log, '_leo')",
        "object.__setattr__(other, '_leo', 1)",
    ],
)
def test_the_rule_catches_a_back_door(line):
    found = violations(line, "planted.py")
    assert len(found) == 1 and found[0].startswith("planted.py:1: "), found


@pytest.mark.parametrize(
    "line",
    [
        "self._segments = []",
        "cls._registry[k] = v",
        "log.segments = []",
        "log.__dict__ = {}",
        "object.__setattr__(self, '_leo', 1)",
        "setattr(log, 'leo', 1)",
        "x = log._leo",
    ],
)
def test_the_rule_leaves_own_and_public_attributes_alone(line):
    assert violations(line, "fine.py") == []
