"""Readable differences between two abstract states (or outputs): one line per differing leaf.

Works on any mix of dataclasses, named tuples, tuples/lists, dicts, sets and scalars, so the
diff names fields as the model names them (``replicas[1].hw: model 2, impl 1``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterator

MAX_LINES = 40


def common_prefix(a: tuple, b: tuple) -> int:
    """How many leading items ``a`` and ``b`` share (by value). Tuples that share their prefix
    objects (a log extended or cut by a step) compare at C speed, item by item only after it."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    return next(k for k in range(n) if a[k] != b[k])


def _fields(obj: Any) -> list[tuple[str, Any]] | None:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return [(f.name, getattr(obj, f.name)) for f in dataclasses.fields(obj)]
    names = getattr(type(obj), "_fields", None)
    if isinstance(obj, tuple) and names is not None:
        return list(zip(names, obj))
    slots = getattr(type(obj), "__slots__", None)
    if slots and not isinstance(obj, (tuple, list, dict)):
        return [(name, getattr(obj, name)) for name in slots if hasattr(obj, name)]
    return None


def differences(a: Any, b: Any) -> Iterator[tuple[str, Any, Any]]:
    """``(path, value in a, value in b)`` per differing leaf, in field order: a list or tuple of
    another length (or longer than 8 items) is one leaf, so a log cut or extended comes whole."""
    return _walk("", a, b)


def _walk(path: str, a: Any, b: Any) -> Iterator[tuple[str, Any, Any]]:
    if a == b:
        return
    fa, fb = _fields(a), _fields(b)
    if fa is not None and fb is not None and type(a) is type(b):
        for (name, va), (_, vb) in zip(fa, fb):
            yield from _walk(f"{path}.{name}" if path else name, va, vb)
        return
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)) and len(a) == len(b) and len(a) <= 8:
        for i, (va, vb) in enumerate(zip(a, b)):
            yield from _walk(f"{path}[{i}]", va, vb)
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=repr):
            yield from _walk(f"{path}[{key!r}]", a.get(key, "<absent>"), b.get(key, "<absent>"))
        return
    yield path or "<root>", a, b


def _show(value: Any) -> str:
    if isinstance(value, (set, frozenset)):
        value = sorted(value, key=repr)
    text = repr(value)
    return text if len(text) <= 200 else text[:197] + "..."


def diff(a: Any, b: Any, left: str = "model", right: str = "impl") -> str:
    """Lines ``path: <left value> != <right value>``; empty when equal."""
    lines = [f"{path}: {_show(va)} != {_show(vb)}" for path, va, vb in _walk("", a, b)]
    head = f"({left} != {right})"
    if len(lines) > MAX_LINES:
        lines = lines[:MAX_LINES] + [f"... and {len(lines) - MAX_LINES} more"]
    return "\n".join([head] + lines) if lines else ""
