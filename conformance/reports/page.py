"""The shell every HTML report shares: one self-contained file (inline CSS and script, nothing
from the network), escaped text, small tables."""

from __future__ import annotations

import re
from html import escape
from typing import Iterable

CSS = """
:root { --fg:#1d2330; --muted:#5d6678; --line:#d5d9e2; --bad:#c62828; --badbg:#fdecea;
        --ok:#2e7d32; --okbg:#e8f5e9; --lead:#1565c0; --down:#8d8d8d; --refused:#f6f0d8; }
* { box-sizing: border-box; }
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg);
       margin: 1.5rem; background: #fff; }
h1 { font-size: 1.35rem; margin: 0 0 .3rem; } h2 { font-size: 1.1rem; margin: 1.4rem 0 .5rem; }
code, pre, .mono { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, monospace; font-size: 12px; }
pre { background: #f6f7f9; border: 1px solid var(--line); padding: .6rem; white-space: pre-wrap; }
.muted { color: var(--muted); }
.verdict { border-left: 5px solid var(--ok); background: var(--okbg); padding: .6rem .9rem; margin: .8rem 0; }
.verdict.failed { border-color: var(--bad); background: var(--badbg); }
.explanation { position: sticky; top: 0; z-index: 3; margin: .6rem 0; padding: .5rem .9rem; font-size: 15px;
               background: var(--badbg); border-left: 5px solid var(--bad); box-shadow: 0 2px 4px #0002; }
table.data { border-collapse: collapse; margin: .4rem 0; }
table.data th, table.data td { border: 1px solid var(--line); padding: .25rem .55rem; text-align: left;
                               vertical-align: top; }
table.data th { background: #f1f3f7; }
td.bad, span.bad { color: var(--bad); font-weight: 600; } td.ok, span.ok { color: var(--ok); }
.timeline { display: grid; overflow-x: auto; border: 1px solid var(--line); padding-bottom: .3rem; }
.lane { display: contents; }
.lane > .cell { border-bottom: 1px solid var(--line); border-right: 1px solid #eef0f4; padding: .3rem .4rem;
                min-width: 9.5rem; }
.lane > .label { position: sticky; left: 0; background: #f7f8fb; font-weight: 600; z-index: 1;
                 border-right: 2px solid var(--line); min-width: 7.5rem; }
.step-head { background: #f1f3f7; font-size: 12px; }
.step-head .n { font-weight: 700; }
.step-head code { white-space: normal; overflow-wrap: anywhere; }
.cell.refused { background: var(--refused); }
.cell.first-bad { background: var(--badbg); box-shadow: inset 0 0 0 2px var(--bad); }
.cell.changed { background: #f3f8ff; }
.cell.changed.first-bad { background: var(--badbg); }
.step-head .tag { display: inline-block; font-size: 11px; border-radius: 3px; padding: 0 .3rem; color: #fff;
                  background: var(--muted); }
.step-head .tag.promised { background: var(--ok); } .step-head .tag.cause { background: var(--bad); }
.role { display: inline-block; border-radius: 3px; padding: 0 .3rem; font-size: 11px; color: #fff;
        background: var(--muted); }
.role.leader { background: var(--lead); } .role.down { background: var(--down); }
.kv { font-size: 12px; } .kv b { font-weight: 600; }
.log { display: flex; flex-wrap: wrap; gap: 2px; margin-top: .2rem; }
.entry { font: 11px ui-monospace, monospace; border: 1px solid #9aa3b5; border-radius: 2px; padding: 0 2px; }
.entry.committed { border-bottom: 3px solid var(--ok); }
.entry.e0 { background: #e3f2fd; } .entry.e1 { background: #fff3e0; } .entry.e2 { background: #f3e5f5; }
.entry.e3 { background: #e8f5e9; } .entry.e4 { background: #fffde7; } .entry.e5 { background: #fce4ec; }
.msg { font-size: 11px; }
svg.chart { border: 1px solid var(--line); background: #fff; }
"""


def h(value) -> str:
    """Text as HTML (quotes too: it also goes into attributes)."""
    return escape(str(value), quote=True)


def document(title: str, body: str, script: str = "") -> str:
    """The page; ``script`` (inline, run once the body is parsed) may be empty."""
    tail = f"\n<script>{script}</script>" if script else ""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{h(title)}</title><style>{CSS}</style></head>\n<body>\n{body}{tail}\n</body></html>\n"
    )


def table(headers: Iterable[str], rows: Iterable[Iterable[str]], css: str = "data") -> str:
    """A table of already escaped cells (a cell may be ``(html, class)``)."""
    head = "".join(f"<th>{h(x)}</th>" for x in headers)
    body = []
    for row in rows:
        cells = []
        for cell in row:
            text, cls = cell if isinstance(cell, tuple) else (cell, "")
            cells.append(f'<td class="{cls}">{text}</td>' if cls else f"<td>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def slug(text: str) -> str:
    """A file-name stem for ``text``."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "report"
