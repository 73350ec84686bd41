"""The gate's HTML page: the corpus replay, the engine runs and a timeline per failure."""

from __future__ import annotations

from pathlib import Path

from isrcheck.conformance.reports.page import document, h, slug, table
from isrcheck.conformance.reports.timeline import write_timeline


def write_gate_html(result, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    (out / "timelines").mkdir(exist_ok=True)
    corpus_rows = []
    for r in result.cases:
        c = r.case
        link = h(c.path.name)
        if not r.ok:
            name = f"timelines/corpus-{slug(c.name)}.html"
            write_timeline(c.schedule, out / name, str(c.path))
            link = f'<a href="{h(name)}">{link}</a>'
        want = c.expected.summary()
        corpus_rows.append(
            (
                link,
                h(c.protocol),
                h(want),
                h(r.verdict.summary()),
                ("as expected", "ok") if r.ok else ("NOT as expected", "bad"),
            )
        )
    engine_rows, finding_rows = [], []
    for run in result.runs:
        engine_rows.append(
            (
                h(run.engine),
                h(run.protocol),
                h(run.summary),
                (str(len(run.findings)), "bad" if run.findings else "ok"),
                f"{run.seconds:.1f}",
            )
        )
        for i, f in enumerate(run.findings):
            link = h(f.label)
            if f.schedule is not None:
                name = f"timelines/{slug(f'{run.engine}-{run.protocol}-{i}')}.html"
                write_timeline(f.schedule, out / name, str(result.saved.get(id(f), "")))
                link = f'<a href="{h(name)}">{link}</a>'
            saved = result.saved.get(id(f))
            where = "-" if saved is None else h(saved) if saved in result.new else f"already there: {h(saved)}"
            finding_rows.append((h(run.engine), h(run.protocol), h(f.verdict.summary()), link, where))
    ok = result.exit_code == 0
    body = [
        f"<h1>isrcheck gate: {'PASS' if ok else 'FAIL'}</h1>",
        f'<div class="verdict{"" if ok else " failed"}">{sum(r.ok for r in result.cases)}/{len(result.cases)} '
        f"corpus schedules as expected; {len(result.findings)} new failure(s) from "
        f"{len(result.runs)} engine run(s); {result.seconds:.1f} s</div>",
        "<h2>corpus</h2>",
        table(("schedule", "protocol", "expected", "verdict", ""), corpus_rows),
        "<h2>engines</h2>",
        table(("engine", "protocol", "what ran", "failures", "seconds"), engine_rows),
    ]
    if finding_rows:
        body += [
            "<h2>failures found</h2>",
            table(("engine", "protocol", "verdict", "timeline", "corpus file"), finding_rows),
        ]
    index = out / "index.html"
    index.write_text(document("isrcheck gate", "\n".join(body)), encoding="utf-8")
    return index
