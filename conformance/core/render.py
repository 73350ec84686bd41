"""A compact text picture of an abstract state, for verdicts and the CLI (one line per broker),
and of a step (``produce(replica=0, acks=-1)``)."""

from __future__ import annotations


def step_text(step: dict) -> str:
    """A schedule step as a call: its name and its fields, e.g. ``crash(replica=1, kind=power)``."""
    args = ", ".join(f"{k}={v}" for k, v in step.items() if k != "step")
    return f"{step['step']}({args})"


def _log(log) -> str:
    # offset:epoch/record, e.g. "0:0/1 1:0/2 2:1/4"
    return " ".join(f"{e[0]}:{e[1]}/{e[2]}" for e in log) or "-"


def render_state(state) -> str:
    c = state.controller
    lines = [
        f"  controller: leader={c.leader} epoch={c.leader_epoch} isr={list(c.isr)} "
        f"partition_epoch={c.partition_epoch} fenced={list(c.fenced)} now={state.now}"
    ]
    for i, r in enumerate(state.replicas):
        role = "leader" if r.alive and r.leader == i else ("down" if not r.alive else f"follows {r.leader}")
        lines.append(
            f"  broker {i} ({role}): leo={len(r.log)} hw={r.hw} durable={r.durable} "
            f"epoch={r.leader_epoch} isr={list(r.isr)} log=[{_log(r.log)}]"
        )
    lines.append(f"  clients: acked={[list(p) for p in state.acked]} consumed={[list(p) for p in state.consumed]}")
    return "\n".join(lines)
