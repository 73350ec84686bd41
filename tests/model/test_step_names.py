"""Step names are spelled once: model/alphabet.py declares a constant per step (``CRASH = "crash"``)
and model/actions.py registers each step's guard and effect by name; everywhere else code names a
step through the constant, so a renamed or removed step fails at import, not silently at run time.

The scan looks where a step name stands for a step: ``Step("...")``, ``STEPS["..."]``,
``ACTIONS["..."]``, a ``{"step": "..."}`` schedule entry, and a comparison of a step's name
(``st.name``, ``name``, ``step``, ``e.step``, ``x["step"]``, ``x.get("step")``) with a literal.
The same words mean other things elsewhere (a produce output's ``type``, a soak fault hook, a
driver failure kind), which it leaves alone."""

import ast
from pathlib import Path

from isrcheck.model import alphabet

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("model", "conformance", "benchmarks")
OWNERS = {"model/alphabet.py", "model/actions.py"}
NAMES = frozenset(alphabet.STEPS)


def _names_a_step(node: ast.AST) -> bool:
    """Whether ``node`` is an expression holding a step's name."""
    if isinstance(node, ast.Name):
        return node.id in ("name", "step", "step_name")
    if isinstance(node, ast.Attribute):
        return node.attr in ("name", "step")
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "step"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        return bool(node.args) and isinstance(node.args[0], ast.Constant) and node.args[0].value == "step"
    return False


def _literals(node: ast.AST) -> list[ast.Constant]:
    """The step-name literals of ``node``: itself, or the items of a tuple, list or set of them."""
    items = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    return [x for x in items if isinstance(x, ast.Constant) and x.value in NAMES]


def step_literals(tree: ast.AST) -> list[ast.Constant]:
    """Every step name spelled as a literal where it stands for a step."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Step" and node.args:
            found += _literals(node.args[0])
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            if node.value.id in ("STEPS", "ACTIONS"):
                found += _literals(node.slice)
        elif isinstance(node, ast.Dict):
            found += [v for k, v in zip(node.keys, node.values) if isinstance(k, ast.Constant) and k.value == "step"]
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_names_a_step(side) for side in sides):
                found += [lit for side in sides for lit in _literals(side)]
    return [x for x in found if isinstance(x, ast.Constant) and x.value in NAMES]


def test_the_scan_finds_each_way_of_spelling_a_step():
    code = (
        'Step("crash", 0)\nSTEPS["fence"]\n{"step": "tick"}\nif st.name == "drop": pass\n'
        'if name in ("elect", "other"): pass\nif x.get("step") != "flush": pass\n'
        'if out["type"] == "produce": pass\nif kind == "crash": pass\n'
    )
    assert sorted(x.value for x in step_literals(ast.parse(code))) == [
        "crash",
        "drop",
        "elect",
        "fence",
        "flush",
        "tick",
    ]


def test_no_step_name_is_spelled_as_a_literal_outside_the_alphabet():
    places = []
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel in OWNERS:
                continue
            for lit in step_literals(ast.parse(path.read_text(encoding="utf-8"))):
                places.append(f"{rel}:{lit.lineno}: {lit.value!r} (use alphabet.{lit.value.upper()})")
    assert not places, "\n".join(places)


def test_every_step_has_its_constant():
    assert all(getattr(alphabet, name.upper()) == name for name in alphabet.STEPS)
