"""Python's cycle collector off while a search holds many values: the explorer's frontier and the
validator's candidates are tuples and trees, with no cycles to collect (reference counting frees
them), and each full collection walks every object alive, so their cost grew with the search."""

from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def no_cycle_collection():
    """The collector off inside (a decorator too), back on after if it was on."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


__all__ = ["no_cycle_collection"]
