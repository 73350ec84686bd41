"""One counterexample as an HTML timeline: a column per step, a lane per replica (its log with
offset, epoch and record, LEO, HW, leader view and ISR after the step), a lane for the
controller, one for messages in flight and one for what clients were told. Steps both sides
refused are shaded; the first bad step is outlined, with the model/implementation diff and the
violated property in words below. What went wrong, in one sentence (``explain``), heads the page
and stays in view; the page opens scrolled to the first bad step, and the steps the sentence
names (where a client was told, what removed the record) are tagged in their column heads."""

from __future__ import annotations

from isrcheck.conformance.core.lockstep import Lockstep
from isrcheck.conformance.core.render import step_text
from isrcheck.conformance.core.run import Run
from isrcheck.conformance.reports.explain import Explanation, explain, first_bad
from isrcheck.conformance.reports.page import document, h
from isrcheck.specs import BY_ID

# Message queues of the state, as (field, label) in the order Kafka sends them.
_QUEUES = (
    ("fetch_requests", "Fetch"),
    ("fetch_responses", "FetchResponse"),
    ("leader_and_isr", "LeaderAndIsr"),
    ("alter_partition", "AlterPartition"),
    ("alter_partition_responses", "AlterPartitionResponse"),
)


# On load (a reload too): the timeline scrolled sideways to the first bad step's column (the last
# one run, as the run stops there) and, when the window does not show its head, the page scrolled
# to put the head just below the sentence, which sticks to the top.
_OPEN_AT_FIRST_BAD = """(function () {
  var bad = document.getElementById("first-bad");
  if (!bad) return;
  if ("scrollRestoration" in history) history.scrollRestoration = "manual";
  var top = document.getElementById("explanation");
  var margin = (top ? top.getBoundingClientRect().height : 0) + 8;
  var r = bad.getBoundingClientRect();
  bad.style.scrollMarginTop = margin + "px";
  bad.scrollIntoView({block: r.top < margin || r.bottom > innerHeight ? "start" : "nearest", inline: "center"});
})();"""


def _replica_cell(i: int, r) -> str:
    if not r.alive:
        role = '<span class="role down">down</span>'
    elif r.leader == i:
        role = '<span class="role leader">leader</span>'
    else:
        role = f'<span class="role">{"follows " + str(r.leader) if r.leader >= 0 else "no leader"}</span>'
    entries = "".join(
        f'<span class="entry e{e[1] % 6}{" committed" if e[0] < r.hw else ""}" '
        f'title="offset {e[0]}, leader epoch {e[1]}, record {e[2]}">{e[0]}:e{e[1]}/r{e[2]}</span>'
        for e in r.log
    )
    return (
        f'{role} <span class="kv"><b>LEO</b> {len(r.log)} <b>HW</b> {r.hw} '
        f"<b>epoch</b> {r.leader_epoch} <b>ISR</b> {list(r.isr)}</span>"
        f'<div class="log">{entries or "<span class=muted>empty log</span>"}</div>'
    )


def _controller_cell(state) -> str:
    c = state.controller
    return (
        f'<span class="kv"><b>leader</b> {c.leader} <b>epoch</b> {c.leader_epoch} '
        f"<b>ISR</b> {list(c.isr)} <b>partition epoch</b> {c.partition_epoch} "
        f"<b>fenced</b> {list(c.fenced)} <b>now</b> {state.now}</span>"
    )


def _flight_cell(state) -> str:
    parts = []
    for name, label in _QUEUES:
        for replica, queue in enumerate(getattr(state, name)):
            for msg in queue:
                fields = ", ".join(f"{k}={v}" for k, v in zip(msg._fields, msg) if k != "records")
                parts.append(f'<div class="msg" title="{h(fields)}">{label} &rarr; {replica}</div>')
    return "".join(parts) or '<span class="muted">none</span>'


def _clients_cell(frame) -> str:
    if frame is None:
        return ""
    if frame.refused is not None:
        return f'<span class="muted">refused: {h(frame.refused)}</span>'
    return (
        "".join(f'<div class="msg">{h(", ".join(f"{k}={v}" for k, v in out.items()))}</div>' for out in frame.outputs)
        or '<span class="muted">-</span>'
    )


def _verdict_box(trace: Run, replay: str) -> str:
    v = trace.verdict
    failed, _step, why = first_bad(v)
    prop = BY_ID.get(failed) if failed else None
    lines = [
        f'<div class="verdict{" failed" if v.failed else ""}" id="verdict">',
        f"<b>{h(v.summary())}</b> on {h(trace.schedule.protocol)}",
    ]
    if prop is not None:
        lines.append(f'<p><b>{h(prop.id)}</b>: {h(prop.statement)} <span class="muted">({h(prop.source)})</span></p>')
        lines.append(
            f'<p>fault budget: {h(prop.budget.statement)} <span class="muted">'
            f"({h(prop.budget.source)})</span>" + (f"; this run was outside it: {h(why)}" if why else "") + "</p>"
        )
    expected = trace.schedule.expected.get(trace.schedule.protocol)
    if expected is not None:
        ok = expected.matches(v)
        lines.append(
            f"<p>expected: {h(expected.summary())}"
            f' &rarr; <span class="{"ok" if ok else "bad"}">{"as expected" if ok else "NOT as expected"}'
            "</span></p>"
        )
    if v.kind == "divergence":
        lines.append(
            f"<p>The lanes show the model's state, which the implementation's matched until step "
            f"{v.step}; there the implementation differs as the diff below the timeline says.</p>"
        )
    lines.append(f"<p>replay: <code>{h(replay)}</code></p></div>")
    return "".join(lines)


def _diff_block(v) -> str:
    if not v.diff:
        return ""
    title = "model / implementation diff" if v.kind == "divergence" else "state at the failure"
    return f'<h2>{title}</h2><pre id="diff">{h(v.diff)}</pre>'


def _tags(frame, bad: int | None, why: Explanation | None) -> str:
    """The marks of a step's head: refused, the first bad step, the steps the sentence names."""
    if frame.refused is not None:
        return " (refused)"
    tags = " &#9888; first bad step" if frame.index == bad else ""
    if why is not None and frame.index == why.promised:
        tags += ' <span class="tag promised">client told</span>'
    if why is not None and frame.index == why.cause:
        tags += ' <span class="tag cause">cause</span>'
    return tags


def timeline_html(trace: Run, source: str = "") -> str:
    """The whole page for one run; ``source`` is the schedule's file, for the replay command."""
    s = trace.schedule
    v = trace.verdict
    _prop, bad, _outside = first_bad(v)
    why = explain(trace)
    n = len(trace.initial.replicas)
    columns = [(None, trace.initial)] + [(f, f.state) for f in trace.frames]
    grid = f"grid-template-columns: 8rem repeat({len(columns)}, minmax(10rem, 13rem));"

    def cls(frame, changed: bool) -> str:
        out = ["cell"]
        if frame is not None and frame.refused is not None:
            out.append("refused")
        if frame is not None and frame.index == bad:
            out.append("first-bad")
        if changed:
            out.append("changed")
        return " ".join(out)

    head = ['<div class="lane steps"><div class="cell label step-head">step</div>']
    for frame, _state in columns:
        if frame is None:
            head.append('<div class="cell step-head" data-step="initial"><span class="n">initial</span></div>')
            continue
        anchor = ' id="first-bad"' if frame.index == bad else ""
        head.append(
            f'<div class="{cls(frame, False)} step-head"{anchor} data-step="{frame.index}">'
            f'<span class="n">{frame.index}</span>{_tags(frame, bad, why)}<br>'
            f"<code>{h(step_text(frame.step))}</code></div>"
        )
    head.append("</div>")

    lanes = ["".join(head)]

    def lane(css: str, label: str, render, attrs: str = "") -> None:
        cells, previous = [], None
        for frame, state in columns:
            text = render(frame, state)
            cells.append(f'<div class="{cls(frame, previous is not None and text != previous)}">{text}</div>')
            previous = text
        lanes.append(f'<div class="lane {css}"{attrs}><div class="cell label">{label}</div>{"".join(cells)}</div>')

    lane("controller", "controller", lambda f, st: _controller_cell(st))
    for i in range(n):
        lane("replica", f"replica {i}", lambda f, st, i=i: _replica_cell(i, st.replicas[i]), f' data-replica="{i}"')
    lane("inflight", "in flight", lambda f, st: _flight_cell(st))
    lane("clients", "clients", lambda f, st: _clients_cell(f))

    replay = f"isrcheck check {source or (s.name or 'SCHEDULE') + '.json'} --protocol {s.protocol}"
    refused = trace.refused
    title = f"{s.name or source or 'schedule'} [{s.protocol}]: {v.summary()}"
    body = [f"<h1>{h(title)}</h1>"]
    if why is not None:
        go = f' <a href="#first-bad">&rarr; step {bad}</a>' if bad is not None and bad < len(trace.frames) else ""
        body.append(f'<p class="explanation" id="explanation">{h(why.sentence)}{go}</p>')
    if s.description:
        body.append(f'<p class="muted">{h(s.description)}</p>')
    cfg = ", ".join(f"{k}={v}" for k, v in s.config.to_json().items())
    body.append(f'<p class="muted">config: {h(cfg)}; {len(s.steps)} steps in the schedule, {len(trace.frames)} run</p>')
    body.append(_verdict_box(trace, replay))
    body.append(f'<h2>timeline</h2><div class="timeline" style="{grid}">{"".join(lanes)}</div>')
    body.append(
        '<p class="muted">Log entries read offset:e&lt;leader epoch&gt;/r&lt;record&gt;; '
        "underlined entries are below the replica's HW; shaded cells changed at that step.</p>"
    )
    body.append(_diff_block(v))
    if refused:
        body.append(
            "<h2>steps refused by both sides</h2><ul>"
            + "".join(
                f"<li>step {i} <code>{h(step_text(step.to_json()))}</code>: {h(reason)}</li>"
                for i, step, reason in refused
            )
            + "</ul>"
        )
    return document(title, "\n".join(body), _OPEN_AT_FIRST_BAD if bad is not None else "")


def write_timeline(schedule, path, source: str = "") -> object:
    """Replay ``schedule`` and write its timeline page to ``path``; the run's verdict (an invalid
    schedule has no page: nothing was run)."""
    trace = Lockstep.run(schedule, record=True)
    if trace.initial is not None:
        path.write_text(timeline_html(trace, source), encoding="utf-8")
    return trace.verdict
