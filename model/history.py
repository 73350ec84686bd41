"""The ghost history: what clients were told and the faults so far, computed once.

It is a function of each step and the outputs it gave, nothing else, so the model (after each of
its own steps) and the conformance layer (after each step of the implementation, from the
implementation's own client responses) derive it with this one function: the history properties
(``NoLostAckedWrite``, ``NoDivergentRead``, ``MonotonicHighWatermark``, ``NoUncommittedRead``)
judge both sides by the same bookkeeping. The fault counters bound the explorer's scope.
"""

from __future__ import annotations

from typing import NamedTuple

from .alphabet import NONE, STEPS

# step name -> the fault classes (alphabet.FAULTS) a step of it may be
_FAULTS_OF = {name: kind.faults for name, kind in STEPS.items() if kind.faults}
_COUNTED = frozenset(("produce", *_FAULTS_OF))
# the steps whose counting reads the state before them (was the broker fenced, alive); a module
# constant, not a class attribute, since a NamedTuple's body holds only its fields for mypy(c)
READS_BEFORE = frozenset(
    name for name, faults in _FAULTS_OF.items() if any(f.when in ("unfenced", "alive") for f in faults)
)


class History(NamedTuple):
    """The ghost variables, in the order they close ``State``. ``after`` reads the state before
    the step only for the steps in ``READS_BEFORE`` (was the broker fenced, alive)."""

    records_produced: int  # records produced so far (the next produce's first record is this + 1)
    acked: tuple  # (offset, record) of acks=all writes answered NONE, sorted
    consumed: tuple  # (offset, record) returned to consumers, sorted, distinct
    max_consumer_hw: int  # highest HW a consume returned (-1 none yet)
    consumer_hw_regressed: bool  # a consume returned an HW below an earlier one
    # one counter per fault class (alphabet.FAULTS names each one's counter and what it counts)
    crashes: int
    power_losses: int
    drops: int
    bounces: int
    zombies: int
    leader_moves: int
    disk_losses: int
    corruptions: int
    disk_failures: int
    fsync_failures: int
    live_corruptions: int

    def after(self, st, outputs: list[dict], before) -> "History":
        """The history once step ``st`` (a ``Step``), taken in state ``before``, gave ``outputs``."""
        name = st.name
        if not outputs and name not in _COUNTED:
            return self
        h = self
        if name == "produce":
            h = h._replace(records_produced=h.records_produced + st.records)
        else:
            for fault in _FAULTS_OF.get(name, ()):
                if fault.counts(st, before):
                    h = h._replace(**{fault.counter: getattr(h, fault.counter) + 1})
        for out in outputs:
            if out["error"] != NONE:
                continue
            if out["type"] == "produce":
                if out["acks"] == -1:
                    written = tuple((out["offset"] + i, out["record"] + i) for i in range(out["records"]))
                    h = h._replace(acked=_merged(h.acked, written))
                continue
            new = set(map(tuple, out["records"])).difference(h.consumed)
            if new:
                h = h._replace(consumed=_merged(h.consumed, tuple(sorted(new))))
            hw = out["hw"]
            if hw < h.max_consumer_hw:
                h = h._replace(consumer_hw_regressed=True)
            elif hw > h.max_consumer_hw:
                h = h._replace(max_consumer_hw=hw)
        return h


def _merged(kept: tuple, new: tuple) -> tuple:
    """Two sorted tuples as one: new writes and reads mostly come after all earlier ones, and a
    long run must not sort everything it was told at every step."""
    if not kept or not new or kept[-1] < new[0]:
        return kept + new
    return tuple(sorted(kept + new))


EMPTY_HISTORY = History(0, (), (), -1, False, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
