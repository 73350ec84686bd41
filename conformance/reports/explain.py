"""What went wrong in a failed run, in one sentence of Kafka's words, found in its trace.

For a violation, the witness of the property (``WITNESSES``, one finder per property of
``isrcheck.specs``): the broker and offset that break it, the client output that promised the
record (a producer's acks=all answer, a consumer's read) and, when the trace shows one, the step
that removed it (a power loss before fsync, a lost disk, a truncation). For a divergence, what
each side did at the step where they part, from the differences of the two abstract states or
outputs (``diff.differences``). The finders read the model's State fields that
``specs.properties`` lists; a state they cannot read (or a property without a finder) gives the
property's statement instead, so an explanation never fails a report.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from isrcheck.conformance.core.diff import common_prefix, differences
from isrcheck.conformance.core.render import step_text
from isrcheck.conformance.core.run import Run
from isrcheck.conformance.core.verdict import DIVERGENCE, PASS, VIOLATION
from isrcheck.conformance.core.wire import wire_view
from isrcheck.model.alphabet import CRASH, LOSE_DISK, NONE, RESTART
from isrcheck.specs import BY_ID


@dataclass(frozen=True)
class Explanation:
    """``sentence`` says what went wrong at ``step`` (the first bad step); ``replica`` is the
    broker it is about, ``promised`` the step whose output told a client of the record, ``cause``
    the step that removed it (a power loss, a lost disk, a truncation) or wrote the entry in
    conflict (None where the sentence names none)."""

    sentence: str
    step: int | None
    replica: int | None = None
    promised: int | None = None
    cause: int | None = None


def first_bad(verdict) -> tuple[str | None, int | None, str | None]:
    """``(property, step, why outside its budget)`` of what a run's page and sentence explain: its
    failure, or for a pass, the first property it broke outside its fault budget (``why`` says how
    the run was outside it); ``(None, None, None)`` when there is nothing to explain."""
    if verdict is None:
        return None, None, None
    if verdict.failed:
        return verdict.property, verdict.step, None
    if verdict.beyond_budget:
        return verdict.beyond_budget[0]
    return None, None, None


def explain(trace: Run) -> Explanation | None:
    """The explanation of a failed run, or of a run that broke a property only outside its fault
    budget (None for a clean pass or an invalid schedule). ``trace`` is a recorded run
    (``Lockstep.run(..., record=True)``)."""
    v = trace.verdict
    if v is None or not (v.failed or v.beyond_budget) or trace.initial is None:
        return None
    prop, step, why = first_bad(v)
    run = _Run(trace, step)
    try:
        if v.kind == DIVERGENCE:
            found = _divergence(run)
        elif v.kind in (VIOLATION, PASS):
            found = WITNESSES.get(prop, _no_witness)(run, run.state)
        else:
            found = None
    except Exception:  # a state of a shape the finders do not know: the statement says it instead
        found = None
    found = found or Explanation(_fallback(run, prop), step)
    if why is None:
        return found
    return Explanation(
        f"{found.sentence} This is outside {prop}'s fault budget ({why}): Kafka does not promise "
        "it there, so it is no violation.",
        found.step,
        found.replica,
        found.promised,
        found.cause,
    )


# -- the trace as the finders read it -------------------------------------------------------------


class _Run:
    """The frames up to the first bad step: the state before and after each step, its outputs."""

    def __init__(self, trace: Run, bad: int | None) -> None:
        self.trace = trace
        self.frames = trace.frames
        self.bad = bad if bad is not None else len(trace.frames) - 1
        self.state = self.frames[self.bad].state if 0 <= self.bad < len(self.frames) else trace.initial

    def before(self, i: int):
        return self.frames[i - 1].state if i > 0 else self.trace.initial

    def after(self, i: int):
        return self.frames[i].state

    def step(self, i: int) -> str:
        return f"step {i} {step_text(self.frames[i].step)}"

    def outputs(self):
        """``(step, output)`` of every answer a client got, in order."""
        for f in self.frames[: self.bad + 1]:
            for out in f.outputs:
                yield f.index, out


def _fallback(run: _Run, prop: str | None) -> str:
    v = run.trace.verdict
    where = run.step(run.bad) if 0 <= run.bad < len(run.frames) else "the start"
    if v.kind in (VIOLATION, PASS) and prop in BY_ID:
        return f"After {where}, {prop} fails: {BY_ID[prop].statement}"
    first = (v.diff or "").splitlines()[:1]
    return f"{v.summary()}: {first[0]}" if first else v.summary()


def _no_witness(run, state):
    return None


# -- words for logs, records and clients --------------------------------------------------------------


def _holds(rep, offset: int, record: int) -> bool:
    return offset < len(rep.log) and rep.log[offset][2] == record


def _entry(e) -> str:
    return f"epoch {e[1]}, record {e[2]}"


def _status(state, r: int) -> str:
    rep = state.replicas[r]
    if not rep.alive:
        return "down"
    return "leader" if rep.leader == r else "follower"


def _acked_at(run: _Run, offset: int, record: int) -> int | None:
    """The step whose acks=all produce answer NONE covered ``record`` at ``offset``."""
    for i, out in run.outputs():
        if out.get("type") == "produce" and out.get("acks") == -1 and out.get("error") == NONE:
            first = out["offset"]
            if first <= offset < first + out["records"] and out["record"] + offset - first == record:
                return i
    return None


def _reads(run: _Run):
    """``(step, broker, offset, record, hw)`` per record a consumer read, in order."""
    for i, out in run.outputs():
        if out.get("type") == "consume" and out.get("error") == NONE:
            for offset, record in out["records"]:
                yield i, out["replica"], offset, record, out["hw"]


def _read_at(run: _Run, offset: int, record: int) -> tuple[int, int] | None:
    return next(((i, b) for i, b, o, rec, _hw in _reads(run) if (o, rec) == (offset, record)), None)


def _promise(run: _Run, state, offset: int, record: int) -> tuple[str, int | None]:
    """What a client was told of ``record`` at ``offset``: the words and the step."""
    if (offset, record) in state.acked:
        i = _acked_at(run, offset, record)
        return "which a producer was told was written with acks=all" + (f" at step {i}" if i is not None else ""), i
    if (offset, record) in state.consumed:
        read = _read_at(run, offset, record)
        if read is None:
            return "which a consumer read", None
        return f"which a consumer read from broker {read[1]} at step {read[0]}", read[0]
    return "", None


def _lost(run: _Run, r: int, offset: int, record: int, who: str = "") -> tuple[str, int] | None:
    """How broker ``r`` lost ``record`` at ``offset`` (the last step that took it from its log),
    told with ``who`` as the subject (``broker r`` by default), and the step that caused it."""
    for i in range(min(run.bad, len(run.frames) - 1), -1, -1):
        before, after = run.before(i).replicas[r], run.after(i).replicas[r]
        if _holds(before, offset, record) and not _holds(after, offset, record):
            return _how(run, i, r, before, after, who or f"broker {r}")
    return None


def _how(run: _Run, i: int, r: int, before, after, who: str) -> tuple[str, int]:
    name = run.frames[i].step.get("step")
    whose = "its" if who == "it" else f"{who}'s"
    if name == RESTART and before.power_lost:  # log recovery cut the log to its fsynced prefix
        crash = next(
            (
                k
                for k in range(i - 1, -1, -1)
                if run.frames[k].step.get("step") in (CRASH, LOSE_DISK) and run.frames[k].step.get("replica") == r
            ),
            None,
        )
        if crash is not None and run.frames[crash].step.get("kind") == "power":
            return f"{who} lost power at step {crash} before it fsynced it", crash
        return f"{who} restarted at step {i} without its unflushed data", i
    if name == LOSE_DISK:
        return f"{whose} log directory was replaced by an empty one at step {i}", i
    cut = len(after.log)
    if cut < len(before.log):
        hw = " (its HW)" if cut == before.hw else ""
        return f"{who} truncated its log to offset {cut}{hw} at {run.step(i)}", i
    return f"{who} overwrote it at {run.step(i)}", i


def _held_by(state, offset: int, record: int, but: int) -> str:
    others = [
        f"broker {b} ({_status(state, b)})"
        for b, rep in enumerate(state.replicas)
        if b != but and _holds(rep, offset, record)
    ]
    if not others:
        return "no broker holds it any more"
    return "it is only on " + " and ".join(others)


def _lacks(rep, offset: int, record: int) -> str:
    """``does not hold offset 1 (record 2)`` or ``holds record 3 at offset 1, not record 2``."""
    if offset < len(rep.log):
        return f"holds record {rep.log[offset][2]} at offset {offset}, not record {record}"
    return f"does not hold offset {offset} (record {record})"


def _election(run: _Run, leader: int, epoch: int) -> str:
    """``elected leader in epoch 3 at step 9``, saying how when not from the ISR (nor the ELR)."""
    for i in range(min(run.bad, len(run.frames) - 1) + 1):
        c, was = run.after(i).controller, run.before(i).controller
        if (c.leader, c.leader_epoch) == (leader, epoch) and (was.leader, was.leader_epoch) != (leader, epoch):
            how = ""
            if leader not in was.isr and leader not in getattr(was, "elr", ()):
                if getattr(was, "last_known_leader", -1) == leader:
                    how = " as the last known leader (KIP-966)"
                else:
                    how = f" by an unclean election (the ISR was {list(was.isr) or 'empty'})"
            return f"elected leader in epoch {epoch} at step {i}{how}"
    return f"leader in epoch {epoch}"


def _leader(run: _Run, state, r: int) -> str:
    """How broker ``r`` leads: elected by the controller, or presuming a leadership it lost."""
    c, rep = state.controller, state.replicas[r]
    if c.leader == r and rep.leader_epoch == c.leader_epoch:
        return f"Broker {r}, {_election(run, r, c.leader_epoch)}"
    now = f"broker {c.leader}" if c.leader >= 0 else "no broker"
    return (
        f"Broker {r}, still acting as leader of epoch {rep.leader_epoch} (the controller's leader in "
        f"epoch {c.leader_epoch} is {now})"
    )


def _sentence(*parts: str) -> str:
    return "".join(parts).rstrip(",; ") + "."


# -- witnesses, one per property ----------------------------------------------------------------------


def _missing(run: _Run, state, r: int, subject: str, pairs) -> Explanation | None:
    """``subject`` (broker ``r``) lacks the first of ``pairs`` it should hold: what it lacks, what a
    client was told of it, and how it went (or where it still is)."""
    if r < 0:
        return None
    rep = state.replicas[r]
    missing = next(((o, rec) for o, rec in pairs if not _holds(rep, o, rec)), None)
    if missing is None:
        return None
    o, rec = missing
    told, promised = _promise(run, state, o, rec)
    lost = _lost(run, r, o, rec)
    if lost is not None:
        how, removed = f"; it was lost when {lost[0]}", lost[1]
    else:
        how, removed = f"; broker {r} never held it, and {_held_by(state, o, rec, r)}", None
    return Explanation(
        _sentence(subject, ", ", _lacks(rep, o, rec), ", " + told if told else "", how), run.bad, r, promised, removed
    )


def _lost_acked_write(run, state):
    r = state.controller.leader
    return _missing(run, state, r, _leader(run, state, r), state.acked)


def _uncommitted_read(run, state):
    r = state.controller.leader
    return _missing(run, state, r, _leader(run, state, r), state.consumed)


def _leader_completeness(run, state):
    c = state.controller
    subject = f"Broker {c.leader}, {_election(run, c.leader, c.leader_epoch)}"
    return _missing(run, state, c.leader, subject, tuple(state.acked) + tuple(state.consumed))


def _elr_completeness(run, state):
    c = state.controller
    for m in c.elr:
        if state.replicas[m].alive:
            found = _missing(
                run,
                state,
                m,
                f"Broker {m}, in the controller's ELR {list(c.elr)}",
                tuple(state.acked) + tuple(state.consumed),
            )
            if found is not None:
                return found
    return None


def _isr_gap(own_view: bool):
    """Strong/WeakIsr: a leader's entry below its HW that an ISR member lacks or holds otherwise."""

    def find(run, state):
        for i, lead in enumerate(state.replicas):
            if not (lead.alive and lead.leader == i):
                continue
            for m in _isr(state, i, own_view):
                log = state.replicas[m].log
                k = next((k for k in range(lead.hw) if k >= len(log) or log[k] != lead.log[k]), None)
                if k is not None:
                    return _isr_witness(run, state, i, m, k, own_view)
        return None

    return find


def _isr(state, leader: int, own_view: bool) -> tuple:
    return state.replicas[leader].isr if own_view else state.controller.isr


def _isr_witness(run, state, i: int, m: int, k: int, own_view: bool) -> Explanation:
    lead, member = state.replicas[i], state.replicas[m]
    entry = lead.log[k]
    isr = _isr(state, i, own_view)
    whose = f"broker {i}'s own ISR view" if own_view else "the controller's ISR"
    joined = next(
        (
            j
            for j in range(min(run.bad, len(run.frames) - 1), -1, -1)
            if m in _isr(run.after(j), i, own_view) and m not in _isr(run.before(j), i, own_view)
        ),
        None,
    )
    since = f" since {run.step(joined)}" if joined is not None else ""
    if k >= len(member.log):
        has = f"does not hold it (its LEO is {len(member.log)})"
    elif member.log[k][1:3] != entry[1:3]:
        has = f"holds {_entry(member.log[k])} there"
    else:
        has = f"holds it in the batch at offset {member.log[k][3]}, not {entry[3]}"
    told, promised = _promise(run, state, k, entry[2])
    how, removed = "", None
    lost = _lost(run, m, k, entry[2])
    if lost is not None:
        how, removed = f"; it was lost when {lost[0]}", lost[1]
    elif k < len(member.log):  # the leader may have held the member's record there and lost it
        other = member.log[k][2]
        lost = _lost(run, i, k, other, "it")
        if lost is not None:
            how, removed = f"; broker {i} had held record {other} there too, until {lost[0]}", lost[1]
    return Explanation(
        _sentence(
            _leader(run, state, i),
            f", has offset {k} ({_entry(entry)}) below its HW {lead.hw}",
            f", {told}" if told else "",
            f", but broker {m}, in {whose} {list(isr)}{since}, {has}",
            how,
        ),
        run.bad,
        m,
        promised,
        removed,
    )


def _log_matching(run, state):
    logs = [tuple(r.log) for r in state.replicas]
    for x in range(len(logs)):
        for y in range(x + 1, len(logs)):
            a, b = logs[x], logs[y]
            n = min(len(a), len(b))
            d = common_prefix(a, b)
            k = next((k for k in range(d, n) if a[k][1] == b[k][1]), None)
            if k is None:
                continue
            step, z = max((_written(run, r, k), r) for r in (x, y))
            tail = ""
            if step >= 0:
                kept = "on top of its own" if run.before(step).replicas[z].log[d : d + 1] == (logs[z][d],) else "with"
                tail = f"; broker {z} got offset {k} at {run.step(step)}, {kept} offset {d}"
            return Explanation(
                _sentence(
                    f"Brokers {x} and {y} both hold offset {k} in leader epoch {a[k][1]}, yet their logs differ below "
                    f"it: at offset {d} broker {x} has {_entry(a[d])}, broker {y} {_entry(b[d])}",
                    tail,
                ),
                run.bad,
                z,
                None,
                step if step >= 0 else None,
            )
    return None


def _written(run: _Run, r: int, offset: int) -> int:
    """The last step that put broker ``r``'s current entry at ``offset`` there (-1: none seen)."""
    entry = run.state.replicas[r].log[offset]
    for i in range(min(run.bad, len(run.frames) - 1), -1, -1):
        if run.before(i).replicas[r].log[offset : offset + 1] != (entry,) and run.after(i).replicas[r].log[
            offset : offset + 1
        ] == (entry,):
            return i
    return -1


def _hw_bound(run, state):
    for r, rep in enumerate(state.replicas):
        if rep.hw > len(rep.log):
            return Explanation(
                f"After {run.step(run.bad)}, broker {r}'s HW is {rep.hw}, beyond its LEO {len(rep.log)}.", run.bad, r
            )
    return None


def _leader_in_isr(run, state):
    c = state.controller
    return Explanation(
        f"After {run.step(run.bad)}, the controller's leader, broker {c.leader} of epoch "
        f"{c.leader_epoch}, is not in its ISR {list(c.isr)}.",
        run.bad,
        c.leader,
    )


def _quorum_superset(run, state):
    c = state.controller
    if c.leader < 0:
        return None
    lead = state.replicas[c.leader]
    maximal = set(lead.isr) | set(lead.pending_isr or ())
    m = min(set(c.isr) - maximal)
    pending = f" (pending {list(lead.pending_isr)})" if lead.pending_isr is not None else ""
    return Explanation(
        _sentence(
            _leader(run, state, c.leader),
            f", advances its HW over the ISR {list(lead.isr)}{pending}, which leaves "
            f"out broker {m} of the controller's ISR {list(c.isr)}, after {run.step(run.bad)}",
        ),
        run.bad,
        m,
    )


def _divergent_read(run, state):
    seen: dict[int, tuple[int, int, int]] = {}
    for i, b, o, rec, _hw in _reads(run):
        first = seen.setdefault(o, (rec, i, b))
        if first[0] != rec:
            return Explanation(
                f"Offset {o} was read as record {first[0]} from broker {first[2]} at step {first[1]} "
                f"and as record {rec} from broker {b} at step {i}.",
                run.bad,
                b,
                first[1],
            )
    return None


def _monotonic_hw(run, state):
    top = None  # (hw, step, broker)
    for i, out in run.outputs():
        if out.get("type") != "consume" or out.get("error") != NONE:
            continue
        if top is not None and out["hw"] < top[0]:
            return Explanation(
                f"A consumer was shown HW {top[0]} by broker {top[2]} at step {top[1]}, then HW "
                f"{out['hw']} by broker {out['replica']} at step {i}.",
                run.bad,
                out["replica"],
                top[1],
            )
        if top is None or out["hw"] > top[0]:
            top = (out["hw"], i, out["replica"])
    return None


def _duplicate_offsets(run, state):
    for r, rep in enumerate(state.replicas):
        where: dict[int, int] = {}
        for e in rep.log:
            if where.setdefault(e[2], e[0]) != e[0]:
                return Explanation(
                    f"Broker {r} holds record {e[2]} twice, at offsets {where[e[2]]} and {e[0]}, "
                    f"after {run.step(run.bad)}.",
                    run.bad,
                    r,
                )
    read: dict[int, tuple[int, int]] = {}
    for i, _b, o, rec, _hw in _reads(run):
        first = read.setdefault(rec, (o, i))
        if first[0] != o:
            return Explanation(
                f"Record {rec} was read at offset {first[0]} at step {first[1]} and at offset {o} at step {i}.",
                run.bad,
                None,
                first[1],
            )
    return None


WITNESSES: dict[str, Callable[[_Run, object], Explanation | None]] = {
    "LeaderInIsr": _leader_in_isr,
    "WeakIsr": _isr_gap(own_view=True),
    "StrongIsr": _isr_gap(own_view=False),
    "LogMatching": _log_matching,
    "HighWatermarkBound": _hw_bound,
    "ReplicationQuorumSuperset": _quorum_superset,
    "ElrCompleteness": _elr_completeness,
    "NoLostAckedWrite": _lost_acked_write,
    "LeaderCompleteness": _leader_completeness,
    "NoDivergentRead": _divergent_read,
    "MonotonicHighWatermark": _monotonic_hw,
    "NoUncommittedRead": _uncommitted_read,
    "NoDuplicateOffsets": _duplicate_offsets,
}


# -- divergences ------------------------------------------------------------------------------------

_REFUSED = re.compile(r": refused by the (model|implementation) \((.*)\) but taken by the (?:model|implementation)$")
_RAISED = re.compile(r": the implementation raised (.*)$")
_REPLICA_FIELD = re.compile(r"^replicas\[(\d+)\]\.(\w+)")
_FIELD = re.compile(r"^(\w+)(?:\.(\w+)|\[(\d+)\])?")
_LABELS = {
    "hw": "HW",
    "log": "log",
    "isr": "ISR",
    "leader_epoch": "leader epoch",
    "hw_checkpoint": "HW checkpoint",
    "durable": "fsynced prefix",
    "elr": "ELR",
    "pending_isr": "pending ISR",
}
_QUEUES = {
    "fetch_requests": "Fetch",
    "fetch_responses": "FetchResponse",
    "leader_and_isr": "LeaderAndIsr",
    "alter_partition": "AlterPartition",
    "alter_partition_responses": "AlterPartitionResponse",
}


def _divergence(run: _Run) -> Explanation | None:
    v, i = run.trace.verdict, run.bad
    head = f"At {run.step(i)}, "
    first = (v.diff or "").splitlines()[0] if v.diff else ""
    if (m := _REFUSED.search(first)) is not None:
        other = "implementation" if m.group(1) == "model" else "model"
        return Explanation(f"{head}the {m.group(1)} refused the step ({m.group(2)}) but the {other} took it.", i)
    if (m := _RAISED.search(first)) is not None:
        return Explanation(f"{head}the implementation raised {m.group(1)} where the model took the step.", i)
    if run.trace.impl_outputs is not None:
        return Explanation(
            f"{head}the implementation answered {_answers(run.trace.impl_outputs)} while the model "
            f"answered {_answers(run.frames[i].outputs)}.",
            i,
        )
    if run.trace.impl_state is not None:
        return _state_divergence(run, head)
    return None


def _answers(outputs) -> str:
    if not outputs:
        return "nothing"
    return "; ".join(_answer(out) for out in outputs)


def _answer(out: dict) -> str:
    if out.get("type") == "produce":
        acks = "all" if out["acks"] == -1 else out["acks"]
        n = out["records"]
        records = f"record {out['record']}" if n == 1 else f"records {out['record']}..{out['record'] + n - 1}"
        at = f" at offset {out['offset']}" if out["error"] == NONE else ""
        return f"the acks={acks} produce of {records} with {out['error']}{at}"
    if out.get("type") == "consume":
        if out["error"] != NONE:
            return f"a consume from broker {out['replica']} with {out['error']}"
        return f"a consume from broker {out['replica']} with HW {out['hw']} and {len(out['records'])} record(s)"
    return repr(out)


def _state_divergence(run: _Run, head: str) -> Explanation | None:
    i = run.bad
    model, impl = wire_view(run.after(i), run.trace.schedule.protocol), run.trace.impl_state
    found = list(differences(model, impl))
    if not found:
        return None
    path = found[0][0]
    more = f" ({len(found) - 1} more field(s) differ)" if len(found) > 1 else ""
    m = _REPLICA_FIELD.match(path)
    if m is not None:
        r, name = int(m.group(1)), m.group(2)
        old, mv, iv = (getattr(s.replicas[r], name) for s in (run.before(i), model, impl))
        if name == "log":
            whose = f"broker {r}'s log"
            text = f"the implementation {_log_change(old, iv, whose)} while the model {_log_change(old, mv, 'it')}"
        else:
            text = _value_change(f"broker {r}'s {_LABELS.get(name, name.replace('_', ' '))}", old, mv, iv)
        return Explanation(f"{head}{text}{more}.", i, r)
    m = _FIELD.match(path)
    if m is None:
        return None
    name = m.group(1)
    if name == "controller" and m.group(2):
        field = m.group(2)
        old, mv, iv = (getattr(s.controller, field) for s in (run.before(i), model, impl))
        text = _value_change(f"the controller's {_LABELS.get(field, field.replace('_', ' '))}", old, mv, iv)
        return Explanation(f"{head}{text}{more}.", i)
    if name in _QUEUES and m.group(3) is not None:
        r = int(m.group(3))
        mq, iq = getattr(model, name)[r], getattr(impl, name)[r]
        label = _QUEUES[name]
        if len(mq) != len(iq):
            text = (
                f"the implementation has {len(iq)} {label} message(s) in flight to broker {r} while the model "
                f"has {len(mq)}"
            )
        else:
            text = f"the implementation's {label} messages in flight to broker {r} differ from the model's"
        return Explanation(f"{head}{text}{more}.", i, r)
    return Explanation(
        f"{head}{path} is {found[0][2]!r} in the implementation and {found[0][1]!r} in the model{more}.", i
    )


def _log_change(old: tuple, new: tuple, whose: str) -> str:
    """What a step did to a log, ``old`` before it: kept, truncated, appended or rewrote."""
    if new == old:
        size = "empty" if not new else f"at {len(new)} entr{'y' if len(new) == 1 else 'ies'}"
        return f"left {whose} {size}"
    if new == old[: len(new)]:
        return f"truncated {whose} to offset {len(new)}"
    if new[: len(old)] == old:
        span = f"offset {len(old)}" if len(new) == len(old) + 1 else f"offsets {len(old)}..{len(new) - 1}"
        return f"appended {span} to {whose}"
    return f"rewrote {whose} from offset {common_prefix(old, new)} on (LEO {len(new)})"


def _value_change(what: str, old, model, impl) -> str:
    """``the implementation set broker 1's HW to 1 while the model left it at 2``."""

    def shown(value) -> str:
        return str(list(value)) if isinstance(value, tuple) else str(value)

    def did(value) -> str:
        return f"left it at {shown(value)}" if value == old else f"set it to {shown(value)}"

    first = f"left {what} at {shown(impl)}" if impl == old else f"set {what} to {shown(impl)}"
    return f"the implementation {first} while the model {did(model)}"
