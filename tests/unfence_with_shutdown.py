"""The scenarios the tests of ``unfence_at_heartbeat`` and ``kraft_controlled_shutdown`` together share
(docs/steps.md, "Controller state": active means neither fenced nor awaiting unfence nor in controlled shutdown).

``SHUT_DOWN``: the kill soak's broker 1, unfenced by its heartbeat, starts its controlled shutdown.
``FENCED``: then its session ends, which ends the controlled shutdown; ``REJOINED``: it registers again
and awaits unfence. ``REGISTERED``: instead it shuts down cleanly, restarts and registers."""

from __future__ import annotations

from controlled_shutdown import SWITCH
from split_switches import step
from unfence import KILL_SOAK, UNFENCE, UNFENCE_1, back

BOTH = {**UNFENCE, **SWITCH}

SHUT_DOWN = [*KILL_SOAK, *UNFENCE_1, step("controlled_shutdown", 1)]
FENCED = [*SHUT_DOWN, step("fence", 1)]
REJOINED = [*FENCED, step("rejoin", 1)]
REGISTERED = [*SHUT_DOWN, step("crash", 1, kind="clean"), *back(1)]
