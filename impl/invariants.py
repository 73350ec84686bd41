"""Invariants asserted where a broken one would otherwise travel on in silence, as TigerBeetle
asserts at its invariants: a wrong high watermark, a leader epoch going back or an election outside
the ISR would reach the clients as lost or invented records many steps later, far from its cause.

``check(condition, message, *args)`` raises ``InvariantBroken`` (the message formatted only then,
so a check costs one comparison). Where it lands:

* in the simulation and under lockstep, the exception reaches the harness as the implementation
  failing at that step (a divergence naming it);
* in a real node process (``isrcheck serve``, soaks) it halts the process with exit code
  ``BROKEN_INVARIANT_EXIT`` and one CRITICAL log line naming the invariant, as Kafka halts a broker on
  a fatal state (``Exit.halt``) rather than serve from it (``halt``: the node's event loop, its
  connections' handlers and its Kafka listener call it).

The invariants (each at its code): a leader's HW never above the LEO of a maximal-ISR member it
counted (``Partition.maybe_increment_leader_hw``); a replica's HW never above its own LEO
(``Partition._set_hw``); a replica's leader epoch never decreasing (``apply_leader_and_isr``); a
leader in every ISR it proposes (``Partition._propose``); a truncation never below the log start
offset (``Partition.truncate_to``); the controller electing within the ISR or ELR (or KIP-966's last
known leader) unless unclean election is on (``QuorumController.elect``).
"""

from __future__ import annotations

import logging
import os

BROKEN_INVARIANT_EXIT = 3  # a node process's exit code when it halted on a broken invariant


class InvariantBroken(AssertionError):
    """An invariant of the replication protocol does not hold: the process must not go on."""


def check(condition: bool, message: str, *args: object) -> None:
    """Raise InvariantBroken(``message % args``) unless ``condition``."""
    if not condition:
        raise InvariantBroken(message % args if args else message)


def halt(exc: InvariantBroken) -> None:
    """A node process found ``exc``: one CRITICAL line, then exit at once (nothing flushed, no
    shutdown that could write what the broken state holds), as Kafka's Exit.halt."""
    logging.getLogger("isrcheck.invariants").critical("invariant broken: %s; halting", exc)
    logging.shutdown()
    os._exit(BROKEN_INVARIANT_EXIT)


def halt_on_broken_invariant(loop, context: dict) -> None:
    """An asyncio exception handler: a broken invariant in a timer or task halts the process;
    anything else goes to asyncio's default handler."""
    if isinstance(context.get("exception"), InvariantBroken):
        halt(context["exception"])
    loop.default_exception_handler(context)


__all__ = ["BROKEN_INVARIANT_EXIT", "InvariantBroken", "check", "halt", "halt_on_broken_invariant"]
