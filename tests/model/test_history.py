"""The ghost history is declared once: a fault class declared in the alphabet gives the history,
the model's state and the SMT encoding's state its counter, with no other edit."""

import subprocess
import sys
import textwrap

from isrcheck.model import State, initial_state
from isrcheck.model.config import ModelConfig
from isrcheck.model.history import COUNTERS, EMPTY_HISTORY, PINNED_COUNTERS, History
from isrcheck.model.state import GHOSTS_AT

# A fault class added to the tick step, then the modules that derive the ghost fields reloaded:
# what a contributor's one edit to model/alphabet.py does to them.
_NEW_FAULT = textwrap.dedent(
    """
    import importlib
    from isrcheck.model import alphabet, history, state
    from isrcheck.model.config import ModelConfig
    from isrcheck.model.smt import state as smt_state

    kind = alphabet.STEPS["tick"]
    fault = alphabet.Fault("clock_jump", "clock_jumps", "always", "the clock jumped")
    alphabet.STEPS["tick"] = kind._replace(faults=(fault,))
    alphabet.FAULTS = tuple(f for k in alphabet.STEPS.values() for f in k.faults)
    for module in (history, state, smt_state):
        importlib.reload(module)

    s = state.initial_state(ModelConfig(protocol="kip-320"))
    assert state.State._fields[state.GHOSTS_AT :] == history.History._fields
    assert "clock_jumps" in history.COUNTERS, history.COUNTERS
    assert s.clock_jumps == 0 and s.history == history.EMPTY_HISTORY
    assert history.EMPTY_HISTORY.after(alphabet.Step("tick"), [], s).clock_jumps == 1
    b = smt_state.Bounds(replicas=3, log=2, records=2)
    assert smt_state.schema(b)["h.clock_jumps"] is False  # an Int
    assert smt_state.decode(b, smt_state.embed(b, s)) == s
    print("ok")
    """
)


def test_a_fault_class_declared_in_the_alphabet_is_a_ghost_counter_everywhere():
    done = subprocess.run([sys.executable, "-c", _NEW_FAULT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_the_ghost_fields_close_the_state_pinned_counters_first():
    """The trace hashes pin the order of the ghost fields: the first fault counters keep theirs."""
    assert State._fields[GHOSTS_AT:] == History._fields
    assert History._fields[5:] == COUNTERS and COUNTERS[: len(PINNED_COUNTERS)] == PINNED_COUNTERS
    assert initial_state(ModelConfig(protocol="kip-320")).history == EMPTY_HISTORY
    assert EMPTY_HISTORY.max_consumer_hw == -1 and not any(getattr(EMPTY_HISTORY, c) for c in COUNTERS)
