"""Running a lockstep Hypothesis machine the way the tests do: derandomized, no example database,
generation only (shrinking a stateful run in lockstep is left to users' settings), in a fresh
interpreter.

Why a fresh interpreter: besides its seed, Hypothesis draws constants found in the local modules
loaded so far (``hypothesis.internal.conjecture.providers``), so a derandomized run is the same
every time only in a process whose imports are the same every time; in a test worker they depend
on which tests ran before it. The child draws none: whether isrcheck's own modules count as local
depends on how it was installed (editable or not), and a test must find the same in both."""

import json
import os
import subprocess
import sys
from pathlib import Path

_CHILD = """
import json, sys
import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.internal.conjecture import providers
from isrcheck.conformance.generators.strategies import lockstep_machine

# no constants from local modules: which modules are local differs between an editable install
# and a regular one (site-packages), and so would the derandomized draws
assert hasattr(providers, "_get_local_constants"), "this Hypothesis draws local constants elsewhere"
providers._get_local_constants = lambda: providers._local_constants

protocol, faults, examples, steps, plant, options = json.loads(sys.argv[1])
with pytest.MonkeyPatch.context() as monkeypatch:
    if plant:
        module, _, name = plant.partition(":")
        getattr(__import__(module, fromlist=[name]), name)(monkeypatch)
    machine = lockstep_machine(protocol, faults=faults, **options).TestCase
    machine.settings = settings(max_examples=examples, stateful_step_count=steps, deadline=None, database=None,
                                suppress_health_check=list(HealthCheck), derandomize=True,
                                phases=[Phase.explicit, Phase.generate])
    try:
        machine().runTest()
    except AssertionError as failure:
        print(json.dumps(str(failure)))
    else:
        print(json.dumps(None))
"""


def run_machine(
    protocol: str, faults: str, examples: int, steps: int, plant: str | None = None, **options
) -> str | None:
    """One derandomized run of ``lockstep_machine(protocol, faults, **options)``, with ``plant``
    (``"module:function"``, a function of a ``MonkeyPatch`` importable from the tests) applied
    first; the message of its failure (it names the verdict), or None when it passed."""
    tests = Path(__file__).resolve().parent
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tests), str(tests / "conformance"), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, json.dumps([protocol, faults, examples, steps, plant, options])],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])
