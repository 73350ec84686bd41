"""The campaign page: counts, coverage over the campaign's schedules (an inline SVG chart, from
summary.json's coverage growth) and the failure table linking a timeline per failure."""

from __future__ import annotations

import json
from pathlib import Path

from isrcheck.conformance.core.schedule import load_schedule
from isrcheck.conformance.engines.campaign.aggregate import COVERAGE_KINDS
from isrcheck.conformance.reports.page import document, h, slug, table
from isrcheck.conformance.reports.timeline import write_timeline
from isrcheck.conformance.vocabulary import read_text

_COLORS = {
    "distinct": "#1d2330",
    "abstract_states": "#1565c0",
    "action_pairs": "#ef6c00",
    "divergence_rungs": "#c62828",
    "outputs": "#2e7d32",
}


def coverage_chart(growth: list[dict], width: int = 640, height: int = 260) -> str:
    """Lines of distinct coverage items (total and per kind) against schedules run."""
    if not growth:
        return '<p class="muted">no coverage recorded</p>'
    kinds = [k for k in ("distinct",) + COVERAGE_KINDS if k in growth[-1]]  # a kind added later has no line
    labels = {k: f"{k.replace('_', ' ')} ({growth[-1][k]})" for k in kinds}
    # the legend beside the plot: its longest label at about 6.5 px a character of 11 px text, with room
    right = 40 + max(110, round(6.5 * max(map(len, labels.values()))))
    left, bottom, top = 56, 34, 12
    xmax = max(p["schedules"] for p in growth) or 1
    ymax = max(p["distinct"] for p in growth) or 1
    pw, ph = width - left - right, height - top - bottom

    def xy(p, key):
        return f"{left + pw * p['schedules'] / xmax:.1f},{top + ph * (1 - p[key] / ymax):.1f}"

    parts = [
        f'<svg class="chart" id="coverage-chart" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="coverage over schedules">',
        f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#888"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="#888"/>',
    ]
    for frac in (0, 0.5, 1):
        y = top + ph * (1 - frac)
        parts.append(
            f'<text x="{left - 6}" y="{y + 4:.1f}" font-size="11" text-anchor="end">{round(ymax * frac)}</text>'
        )
        x = left + pw * frac
        parts.append(
            f'<text x="{x:.1f}" y="{top + ph + 16}" font-size="11" text-anchor="middle">{round(xmax * frac)}</text>'
        )
    parts.append(f'<text x="{left + pw / 2:.1f}" y="{height - 3}" font-size="11" text-anchor="middle">schedules</text>')
    for i, key in enumerate(kinds):
        points = " ".join(["%d,%d" % (left, top + ph)] + [xy(p, key) for p in growth])
        parts.append(
            f'<polyline class="series" data-kind="{key}" fill="none" stroke="{_COLORS[key]}" '
            f'stroke-width="2" points="{points}"/>'
        )
        ly = top + 14 + 18 * i
        parts.append(
            f'<line x1="{left + pw + 12}" y1="{ly - 4}" x2="{left + pw + 30}" y2="{ly - 4}" '
            f'stroke="{_COLORS[key]}" stroke-width="2"/><text x="{left + pw + 34}" y="{ly}" '
            f'font-size="11">{labels[key]}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


# What the page reads of summary.json, and of each of its failures, with their types.
_SUMMARY = {
    "protocol": str,
    "seed": int,
    "schedules": int,
    "steps": int,
    "faults": str,
    "by_verdict": dict,
    "failing_schedules": int,
    "distinct_failures": int,
    "failures": list,
}
_FAILURE = {"id": str, "verdict": str, "seed": int, "seeds": int, "steps": int, "file": str}


def _lacks(doc, fields: dict) -> str | None:
    if not isinstance(doc, dict):
        return "not a JSON object"
    for key, kind in fields.items():
        if not isinstance(doc.get(key), kind) or isinstance(doc.get(key), bool):
            return f'"{key}" {"missing" if key not in doc else "is not " + _KIND_NAMES[kind]}'
    return None


_KIND_NAMES = {str: "a string", int: "an integer", dict: "an object", list: "an array"}


def load_summary(campaign: Path) -> dict:
    """The campaign's summary.json, with every field the page reads; ValueError naming the folder
    and what is wrong."""

    def wrong(why: str) -> ValueError:
        return ValueError(f"{campaign}: not a finished campaign folder (summary.json: {why})")

    path = campaign / "summary.json"
    if not path.exists():
        raise wrong("missing")
    try:
        summary = json.loads(read_text(path, "a campaign summary", error=ValueError))
    except ValueError as exc:
        raise wrong(str(exc).removeprefix(f"{path}: ")) from None
    except RecursionError:
        raise wrong("nested too deep") from None
    problem = _lacks(summary, _SUMMARY)
    if problem is None:
        problem = next(
            (
                f"failures[{i}]: {p}"
                for i, failure in enumerate(summary["failures"])
                if (p := _lacks(failure, _FAILURE))
            ),
            None,
        )
    if problem:
        raise wrong(problem)
    return summary


def _budgets(summary: dict) -> str:
    """Per property, what the terminal prints: in how many schedules it was checked within its
    fault budget to the end, in how many it broke outside it, and in how many it was violated."""
    budgets = summary.get("budgets") if isinstance(summary.get("budgets"), dict) else {}
    violated = summary.get("violated") if isinstance(summary.get("violated"), dict) else {}
    if not budgets and not violated:
        return '<p class="muted" id="budgets">every property checked within its budget to the end of every schedule</p>'
    rows = []
    for prop in sorted(set(budgets) | set(violated)):
        b = budgets.get(prop) if isinstance(budgets.get(prop), dict) else {}
        within = b.get("checked_within", summary["schedules"])
        rows.append(
            (
                h(prop),
                h(f"{within:,} of {summary['schedules']:,}" if isinstance(within, int) else within),
                h(f"{b.get('broken_outside', 0):,}" if isinstance(b.get("broken_outside", 0), int) else "-"),
                h(f"{violated.get(prop, 0):,}" if isinstance(violated.get(prop, 0), int) else "-"),
            )
        )
    return (
        '<div id="budgets">'
        + table(("property", "checked within its budget to the end", "broken outside its budget", "violated"), rows)
        + "</div>"
    )


def write_campaign_html(campaign: Path, out: Path) -> Path:
    """``out``/index.html for the campaign folder ``campaign``, and ``out``/failures/*.html."""
    summary = load_summary(campaign)
    out.mkdir(parents=True, exist_ok=True)
    (out / "failures").mkdir(exist_ok=True)
    rows = []
    for f in summary.get("failures", []):
        file = campaign / f["file"]
        link = h(f["file"])
        if f.get("original_file"):
            name = f"failures/{slug(f['id'])}.html"
            write_timeline(load_schedule(file), out / name, str(file))
            link = f'<a href="{h(name)}">{h(f["id"])}</a>'
        rows.append(
            (
                link,
                h(f["verdict"]),
                h(f["property"] or "-"),
                h(f["seed"]),
                h(f["seeds"]),
                h(f["steps"]),
                h(f["shrunk_steps"] if f["shrunk_steps"] is not None else "-"),
            )
        )
    run = summary.get("run", {})
    counts = table(
        ("schedules", "verdicts", "coverage items", "schedules/s", "wall time", "master"),
        [
            (
                h(summary["schedules"]),
                h(", ".join(f"{k} {v}" for k, v in summary["by_verdict"].items())),
                h(summary.get("distinct_coverage", 0)),
                h(run.get("schedules_per_s") or "-"),
                h(f"{run.get('wall_time_s', 0):.1f} s"),
                h(run.get("master", "-")),
            )
        ],
    )
    failed = bool(summary.get("failures"))
    title = f"isrcheck fuzz {summary['protocol']}: {summary['schedules']} schedules"
    body = [
        f"<h1>{h(title)}</h1>",
        f'<p class="muted">seeds {summary["seed"]}..{summary["seed"] + summary["schedules"] - 1}, '
        f"{summary['steps']} steps, faults {h(summary['faults'])}; folder {h(campaign)}</p>",
        f'<div class="verdict{" failed" if failed else ""}">{summary["distinct_failures"]} distinct '
        f"failure(s) in {summary['failing_schedules']} failing schedule(s)</div>",
        "<h2>counts</h2>",
        counts,
        "<h2>coverage over time</h2>",
        coverage_chart(summary.get("coverage_growth", [])),
        "<h2>fault budgets</h2>",
        _budgets(summary),
        "<h2>failures</h2>",
        table(("failure", "verdict", "property", "seed", "seeds", "steps", "shrunk"), rows)
        if rows
        else '<p class="ok">no failure</p>',
    ]
    index = out / "index.html"
    index.write_text(document(title, "\n".join(body)), encoding="utf-8")
    return index
