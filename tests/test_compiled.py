"""Which variant a run tests: the pure-Python reference, or, when ``ISRCHECK_COMPILED`` names its
directory, the compiled build of ``benchmarks/build_compiled.py`` (.ci/run runs a subset of the
suite that way, with the directory first on ``PYTHONPATH``)."""

from __future__ import annotations

import pytest
from conftest import COMPILED_DIR, build_compiled


def test_every_listed_module_is_of_the_variant_asked_for():
    """Compiled run: each module of the build an extension module from its directory; any other
    run: each the pure source, so a stray compiled directory on the path is not tested as the reference."""
    assert build_compiled().loaded_variant(COMPILED_DIR) == []


@pytest.mark.skipif(COMPILED_DIR is None, reason="the pure run: ISRCHECK_COMPILED is not set")
def test_the_compiled_build_is_of_the_sources_under_test():
    """The build copies the packages it compiles: one made from other sources tests other code."""
    assert build_compiled().is_current(COMPILED_DIR), f"{COMPILED_DIR} was built from other sources"
