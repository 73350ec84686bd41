"""What clients saw in one repetition, as the experiment's outcomes (``spec.OUTCOMES``), from the
soak checker's anomalies and the plan's produce steps.

* ``lost-write``: the checker's lost-write (an acknowledged record the final read passed without),
  and, once the final read is complete (it read the partition to its end), every acknowledged
  record it did not return (the checker's ``unseen``): a log that lost its whole tail leaves the
  final read nothing to pass.
* ``divergent-read``: inconsistent offsets (two reads of one offset gave different records); without
  a lost write, any other sign of a log that went back under its clients (a poll that skipped or
  went back, a send acknowledged below an earlier one). With a lost write those are its echoes.
* ``not-enough-replicas``: a produce step none of whose sends was acknowledged, every one refused
  with NOT_ENOUGH_REPLICAS (before append: a definite failure).
* ``unavailable``: a produce step none of whose sends was acknowledged, for another reason
  (no leader: timed out).
* ``anomaly:NAME``: any other anomaly of the checker (a duplicate, an aborted read, an unexpected
  record): promised under every fault, so never predicted.
"""

from __future__ import annotations

from isrcheck.conformance.engines.soak.budget import DURABILITY_ANOMALIES
from isrcheck.conformance.engines.soak.checker import INFORMATIONAL

NOT_ENOUGH_REPLICAS = "NOT_ENOUGH_REPLICAS"


def judged(anomalies: dict, final_read: bool) -> dict:
    """The checker's anomalies with, after a complete final read, its unseen acknowledged records
    counted as lost writes."""
    if not final_read or not anomalies.get("unseen"):
        return anomalies
    return {**anomalies, "lost-write": [*anomalies.get("lost-write", []), *anomalies["unseen"]], "unseen": []}


def outcomes(anomalies: dict, produced: list[dict]) -> tuple[str, ...]:
    """The outcomes, in ``spec.OUTCOMES`` order then the other anomalies; ``anomalies`` the checker's
    instances by name (``judged``), ``produced`` the plan's produce steps."""
    found = {name for name, instances in anomalies.items() if instances and name not in INFORMATIONAL}
    out = []
    if "lost-write" in found:
        out.append("lost-write")
    if "inconsistent-offsets" in found or ("lost-write" not in found and found & DURABILITY_ANOMALIES):
        out.append("divergent-read")
    refused = [p for p in produced if p["ok"] == 0]
    if any(p["errors"] and all(NOT_ENOUGH_REPLICAS in e for e in p["errors"]) and not p["info"] for p in refused):
        out.append("not-enough-replicas")
    if any(not (p["errors"] and all(NOT_ENOUGH_REPLICAS in e for e in p["errors"]) and not p["info"]) for p in refused):
        out.append("unavailable")
    out += [f"anomaly:{name}" for name in sorted(found - DURABILITY_ANOMALIES)]
    return tuple(out)


def operations(anomalies: dict, limit: int = 3) -> dict[str, list[dict]]:
    """Each anomaly's first instances: the operations (history indexes) that prove it and the
    checker's explanation."""
    return {
        name: [{"ops": i.get("ops", []), "explanation": i.get("explanation", "")} for i in instances[:limit]]
        for name, instances in anomalies.items()
        if instances and name not in INFORMATIONAL
    }


__all__ = ["judged", "outcomes", "operations"]
