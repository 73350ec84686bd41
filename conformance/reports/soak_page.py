"""The page of a soak run, as Jepsen's Kafka workload draws its results: one self-contained HTML
file (inline SVG and CSS, no script, nothing from the network).

From the top: the headline (anomaly-free, or each anomaly with its count and a link to it; the
throughput in ok sends and polls per second; the command that ran), the run's figures, then three
plots on one time axis, each with the fault intervals shaded and labelled by kind:

- ``latency-plot``: every completed operation (invoke to completion) at its completion time, its
  latency in ms on a log scale; colour by outcome (ok, fail, info), shape by function (a send is a
  dot, a poll a square), as Jepsen's ``latency-raw``;
- ``throughput-plot``: ok / fail / info completions per second, a panel for sends and one for
  polls, as Jepsen's ``rate``;
- ``unseen-plot``: the acknowledged values no poll has returned yet (the checker's
  ``series["unseen"]``), as Jepsen's ``unseen``.

Then a section per anomaly: what it is (the checker's definition), and for each instance (the
first ``INSTANCES_SHOWN``) its explanation and the events of the operations that prove it, a row
each.

A page stays a few MB for a history of millions of events. The scatter is sampled
deterministically: of each function's ok completions an evenly strided sample of at most
``OK_POINTS`` (every k-th in completion order, the first included), of its fail and info
completions every one up to ``OTHER_POINTS`` each (strided the same way beyond), and points that
fall on the same pixel of their series are drawn once; the caption says how many are drawn of how
many. Throughput is counted from every completion, in at most ``BUCKETS`` buckets; the unseen
line keeps, per pixel column, the first, lowest, highest and last values. A poll's records are
shown around the offsets and values the anomaly names. The same inputs give the same bytes.
"""

from __future__ import annotations

import bisect
import json
import math
import shlex

from isrcheck.conformance.engines.soak.checker import DETECTORS, INFORMATIONAL, CheckResult
from isrcheck.conformance.engines.soak.history_index import (
    FUNCTIONS,
    INSTANCES_SHOWN,
    OUTCOMES,
    HistoryIndex,
    hashable_in,
)
from isrcheck.conformance.reports.page import document, h, table

OK_POINTS = 20_000  # ok completions drawn per function (send, poll), at most
OTHER_POINTS = 10_000  # fail or info completions drawn per function, at most, each
BUCKETS = 300  # throughput buckets, at most
RECORDS_SHOWN = 16  # records shown per partition of a poll

COLORS = {"ok": "#1565c0", "info": "#ef6c00", "fail": "#c62828"}
SHAPES = {"send": "round", "poll": "square"}  # the stroke caps of a zero-length path: dot, square
FAULT_COLORS = ("#f9a825", "#8e24aa", "#00897b", "#d81b60", "#6d4c41", "#3949ab", "#7cb342", "#546e7a")
_EVENT_KEYS = {"index", "time", "process", "type", "f", "partition", "partitions", "value", "offset", "records"}
_META_FIRST = ("protocol", "seconds", "bootstrap", "seed", "faults", "fault_kinds", "command")

# Plot geometry (px): the plot area is WIDTH - LEFT - RIGHT wide.
WIDTH, LEFT, RIGHT = 1100, 70, 20

_CSS = """
svg.soak-plot { display: block; max-width: 100%; height: auto; margin: .3rem 0; }
svg.soak-plot text { font: 11px system-ui, sans-serif; fill: #1d2330; }
svg.soak-plot .grid { stroke: #eceff4; } svg.soak-plot .axis { stroke: #888; }
svg.soak-plot text.fault-label { font-size: 10px; fill: #333; }
.caption { color: var(--muted); font-size: 12px; margin: 0 0 1rem; }
.legend span { display: inline-block; margin-right: 1rem; }
.swatch { display: inline-block; width: 10px; height: 10px; margin-right: .3rem; vertical-align: -1px; }
.swatch.dot { border-radius: 50%; }
section.anomaly { border-top: 1px solid var(--line); margin-top: 1rem; }
section.anomaly:target { background: #fffbe6; }
.instance { margin: .6rem 0 1rem; }
table.ops td { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, monospace; font-size: 12px; }
table.ops tr.completion td { border-bottom-width: 2px; }
.run td { white-space: nowrap; } .run td + td { white-space: normal; overflow-wrap: anywhere; }
mark { background: #ffe082; } .absent { color: var(--bad); }
"""


# ---------------------------------------------------------------------------------------------
# Plot pieces


def _nice(span: float, target: int) -> float:
    """A step of 1, 2 or 5 times a power of ten giving about ``target`` steps over ``span``."""
    raw = span / max(target, 1)
    power = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * power >= raw * 0.999:
            return m * power
    return 10 * power


def _decimals(step: float) -> int:
    return max(0, -math.floor(math.log10(step) + 1e-9))


def _num(value: float) -> str:
    """A count or rate for an axis: no trailing zeros."""
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return text if text != "-0" else "0"


class _Frame:
    """A plot area of ``height`` px (plus margins) whose x axis is the run's time in seconds."""

    def __init__(self, end_s: float, top: int, height: int) -> None:
        self.end_s, self.top, self.height = end_s, top, height
        self.width = WIDTH - LEFT - RIGHT
        self.bottom = top + height

    def x(self, seconds: float) -> float:
        return LEFT + self.width * min(max(seconds / self.end_s, 0.0), 1.0)

    def time_axis(self, label: bool = True) -> str:
        step = _nice(self.end_s, 10)
        digits = _decimals(step)
        parts = [f'<line class="axis" x1="{LEFT}" y1="{self.bottom}" x2="{LEFT + self.width}" y2="{self.bottom}"/>']
        k = 0
        while k * step <= self.end_s * 1.0001:
            x = self.x(k * step)
            parts.append(
                f'<line class="grid" x1="{x:.1f}" y1="{self.top}" x2="{x:.1f}" y2="{self.bottom}"/>'
                f'<text x="{x:.1f}" y="{self.bottom + 14}" text-anchor="middle">'
                f"{k * step:.{digits}f}</text>"
            )
            k += 1
        if label:
            parts.append(
                f'<text x="{LEFT + self.width / 2:.0f}" y="{self.bottom + 30}" text-anchor="middle">'
                "time since the run started (s)</text>"
            )
        return "".join(parts)

    def value_axis(self, top_value: float, label: str) -> str:
        """A linear y axis from 0 to ``top_value`` (ticks and grid), titled ``label``."""
        step = _nice(top_value, 4)
        parts = [f'<line class="axis" x1="{LEFT}" y1="{self.top}" x2="{LEFT}" y2="{self.bottom}"/>']
        k = 0
        while k * step <= top_value * 1.0001:
            y = self.y_linear(k * step, top_value)
            parts.append(
                f'<line class="grid" x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + self.width}" '
                f'y2="{y:.1f}"/><text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
                f"{_num(k * step)}</text>"
            )
            k += 1
        parts.append(_y_title(self, label))
        return "".join(parts)

    def y_linear(self, value: float, top_value: float) -> float:
        return self.bottom - self.height * (value / top_value if top_value else 0.0)


def _y_title(frame: _Frame, label: str) -> str:
    y = frame.top + frame.height / 2
    return f'<text x="14" y="{y:.0f}" text-anchor="middle" transform="rotate(-90 14 {y:.0f})">{h(label)}</text>'


def _fault_colors(faults: list[dict]) -> dict:
    kinds = sorted({str(f.get("kind")) for f in faults})
    return {kind: FAULT_COLORS[i % len(FAULT_COLORS)] for i, kind in enumerate(kinds)}


def _fault_text(fault: dict) -> str:
    nodes = fault.get("nodes") or []
    on = f" {','.join(str(n) for n in nodes)}" if isinstance(nodes, list) and nodes else ""
    return f"{fault.get('kind')}{on}"


def _fault_extra(fault: dict) -> str:
    """A fault record's fields beyond start, end, kind and nodes (a partition's groups, an error)."""
    return "; ".join(f"{k} {_short(v)}" for k, v in fault.items() if k not in ("start", "end", "kind", "nodes"))


def _seconds(ns) -> float:
    return ns / 1e9 if isinstance(ns, (int, float)) and not isinstance(ns, bool) else 0.0


def _faults_layer(frame: _Frame, faults: list[dict], colors: dict) -> str:
    """The fault intervals over the plot area: a shaded band each, labelled by kind (and nodes) at
    the top, staggered on three rows; a fault with no end lasts to the right edge."""
    parts = []
    crowded = len(faults) > 40
    for i, fault in enumerate(faults):
        start = _seconds(fault.get("start"))
        active = fault.get("end") is None
        end = frame.end_s if active else _seconds(fault.get("end"))
        x0, x1 = frame.x(start), frame.x(max(end, start))
        width = max(x1 - x0, 1.0)
        kind = str(fault.get("kind"))
        text = _fault_text(fault)
        when = f"{start:.3f} s to " + ("the end (not ended)" if active else f"{end:.3f} s")
        extra = _fault_extra(fault)
        if extra:
            when += f"; {extra}"
        parts.append(
            f'<rect class="fault" data-kind="{h(kind)}" x="{x0:.1f}" y="{frame.top}" '
            f'width="{width:.1f}" height="{frame.height}" fill="{colors[kind]}" fill-opacity="0.18">'
            f"<title>{h(text)}: {h(when)}</title></rect>"
        )
        if not crowded or width >= 6 * len(text):
            y = frame.top + 11 + 11 * (i % 3)
            parts.append(
                f'<text class="fault-label" x="{x0 + 2:.1f}" y="{y}">{h(text)}{" &#8594;" if active else ""}</text>'
            )
    return "".join(parts)


def _svg(id_: str, height: int, label: str, inner: str) -> str:
    return (
        f'<svg class="chart soak-plot" id="{id_}" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{h(label)}" '
        f'xmlns="http://www.w3.org/2000/svg">{inner}</svg>'
    )


def _fault_legend(colors: dict) -> str:
    if not colors:
        return "no faults"
    return "faults: " + "".join(
        f'<span><i class="swatch" style="background:{c};opacity:.45"></i>{h(k)}</span>' for k, c in colors.items()
    )


# ---------------------------------------------------------------------------------------------
# Plot 1: latency


def _stride(n: int, cap: int) -> int:
    return max(1, -(-n // cap))


def _latency_plot(scan: HistoryIndex, end_s: float, faults: list[dict], colors: dict) -> str:
    frame = _Frame(end_s, 12, 330)
    parts = [_faults_layer(frame, faults, colors)]
    lo_ms = max((scan.lat_min or 0) / 1e6, 1e-3)  # under a microsecond counts as one
    hi_ms = max((scan.lat_max or 0) / 1e6, lo_ms)
    lo_exp, hi_exp = math.floor(math.log10(lo_ms)), math.ceil(math.log10(hi_ms))
    if hi_exp <= lo_exp:
        hi_exp = lo_exp + 1
    span = hi_exp - lo_exp
    parts.append(f'<line class="axis" x1="{LEFT}" y1="{frame.top}" x2="{LEFT}" y2="{frame.bottom}"/>')
    for e in range(lo_exp, hi_exp + 1):
        y = frame.bottom - frame.height * (e - lo_exp) / span
        parts.append(
            f'<line class="grid" x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + frame.width}" y2="{y:.1f}"/>'
            f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{_num(10.0**e)}</text>'
        )
    parts.append(_y_title(frame, "latency (ms, log scale)"))
    parts.append(frame.time_axis())
    captions = []
    log_lo, scale = lo_exp, frame.height / span
    for f in FUNCTIONS:
        for outcome in OUTCOMES:
            times, lats = scan.times[(f, outcome)], scan.latencies[(f, outcome)]
            n = len(times)
            if not n:
                continue
            stride = _stride(n, OK_POINTS if outcome == "ok" else OTHER_POINTS)
            seen, path = set(), []
            for i in range(0, n, stride):
                x = round(frame.x(times[i] / 1e9))
                y = round(frame.bottom - (math.log10(max(lats[i] / 1e6, 1e-3)) - log_lo) * scale)
                if (x, y) not in seen:
                    seen.add((x, y))
                    path.append(f"M{x} {y}h0")
            sampled = -(-n // stride)
            how = "all" if stride == 1 else f"every {stride}th: {sampled:,}"
            captions.append(f"{f} {outcome}: {how} of {n:,}, {len(path):,} distinct points")
            parts.append(
                f'<path class="points {f} {outcome}" data-f="{f}" data-type="{outcome}" '
                f'data-shown="{sampled}" data-total="{n}" fill="none" stroke="{COLORS[outcome]}" '
                f'stroke-width="{5 if f == "send" else 4.5}" stroke-linecap="{SHAPES[f]}" '
                f'stroke-opacity="{0.55 if outcome == "ok" else 0.9}" d="{"".join(path)}"/>'
            )
    if not captions:
        parts.append(
            f'<text x="{LEFT + frame.width / 2:.0f}" y="{frame.top + frame.height / 2:.0f}" '
            'text-anchor="middle">no completed send or poll</text>'
        )
    svg = _svg("latency-plot", frame.bottom + 40, "latency of every operation over time", "".join(parts))
    total = sum(len(a) for a in scan.times.values())
    shown = sum(
        -(-len(a) // _stride(len(a), OK_POINTS if k[1] == "ok" else OTHER_POINTS))
        for k, a in scan.times.items()
        if len(a)
    )
    legend = (
        '<p class="legend">'
        + "".join(
            f'<span><i class="swatch{" dot" if f == "send" else ""}" style="background:{COLORS[o]}"></i>{f} {o}</span>'
            for f in FUNCTIONS
            for o in ("ok", "fail", "info")
        )
        + f" &nbsp; {_fault_legend(colors)}</p>"
    )
    caption = (
        f'<p class="caption" id="latency-sampling">Showing {shown:,} of {total:,} completed operations '
        f"(each from its invoke to its completion; a dot is a send, a square a poll; latencies under "
        f"1 &micro;s drawn at 1 &micro;s). Sampled deterministically: {h('; '.join(captions) or 'none')}. "
        "Points on the same pixel are drawn once.</p>"
    )
    return legend + svg + caption


# ---------------------------------------------------------------------------------------------
# Plot 2: throughput


def _bucket(end_s: float) -> float:
    """The bucket width (s): a 1-2-5 step giving at most BUCKETS buckets, at least 1 s for runs of
    10 s and more."""
    width = _nice(end_s, BUCKETS)
    while end_s / width > BUCKETS:
        width = _nice(width * 1.5, 1)
    return max(width, 1.0) if end_s >= 10 else width


def _throughput_plot(scan: HistoryIndex, end_s: float, faults: list[dict], colors: dict) -> str:
    width = _bucket(end_s)
    n = max(1, math.ceil(end_s / width - 1e-9))
    rates = {}
    for key, times in scan.times.items():
        counts = [0] * n
        for t in times:
            counts[min(int(t / 1e9 / width), n - 1)] += 1
        rates[key] = [c / width for c in counts]
    parts = []
    panel_h, gap = 150, 34
    for p, f in enumerate(FUNCTIONS):
        frame = _Frame(end_s, 12 + p * (panel_h + gap), panel_h)
        top_value = max([max(rates[(f, o)]) for o in OUTCOMES] + [0.0]) or 1.0
        top_value = math.ceil(top_value / _nice(top_value, 4)) * _nice(top_value, 4)
        parts.append(f'<g class="panel" data-f="{f}">')
        parts.append(_faults_layer(frame, faults, colors))
        parts.append(frame.value_axis(top_value, f"{f}s per second"))
        parts.append(frame.time_axis(label=p == len(FUNCTIONS) - 1))
        for outcome in ("ok", "info", "fail"):
            series = rates[(f, outcome)]
            if not any(series):
                continue
            points = " ".join(
                f"{frame.x(min((i + 0.5) * width, end_s)):.1f},{frame.y_linear(r, top_value):.1f}"
                for i, r in enumerate(series)
            )
            parts.append(
                f'<polyline class="rate {f} {outcome}" data-f="{f}" data-type="{outcome}" fill="none" '
                f'stroke="{COLORS[outcome]}" stroke-width="1.6" points="{points}"/>'
            )
        parts.append(f'<text x="{LEFT + 6}" y="{frame.top + frame.height - 6}">{f}s</text></g>')
    height = 12 + len(FUNCTIONS) * (panel_h + gap) + 20
    legend = (
        '<p class="legend">'
        + "".join(
            f'<span><i class="swatch" style="background:{COLORS[o]}"></i>{o}</span>' for o in ("ok", "fail", "info")
        )
        + f" &nbsp; {_fault_legend(colors)}</p>"
    )
    caption = (
        f'<p class="caption">Completions per second by outcome, counted from every completion in buckets '
        f"of {_num(width)} s ({n} bucket{'s' if n != 1 else ''}), a panel for sends and one for polls.</p>"
    )
    return legend + _svg("throughput-plot", height, "throughput over time", "".join(parts)) + caption


# ---------------------------------------------------------------------------------------------
# Plot 3: unseen


def _unseen_plot(series: list, end_s: float, faults: list[dict], colors: dict) -> str:
    frame = _Frame(end_s, 12, 200)
    points = []
    for p in series:
        try:
            t, v = p[0], p[1]
        except (TypeError, IndexError, KeyError):
            continue
        if isinstance(t, (int, float)) and isinstance(v, (int, float)):
            points.append((t, v))
    top_value = max([v for _t, v in points] + [0]) or 1
    top_value = math.ceil(top_value / _nice(top_value, 4)) * _nice(top_value, 4)
    parts = [_faults_layer(frame, faults, colors), frame.value_axis(top_value, "unseen messages"), frame.time_axis()]
    # Per pixel column the first, lowest, highest and last values, drawn as steps.
    columns: list = []  # [x, first, low, high, last]
    for t, v in points:
        x = round(frame.x(t / 1e9))
        if columns and columns[-1][0] == x:
            c = columns[-1]
            c[2], c[3], c[4] = min(c[2], v), max(c[3], v), v
        else:
            columns.append([x, v, v, v, v])
    coords, level = [f"{LEFT},{frame.bottom}"], 0
    for x, first, low, high, last in columns:
        coords.append(f"{x},{frame.y_linear(level, top_value):.1f}")
        for v in (first, high, low, last) if last <= first else (first, low, high, last):
            coords.append(f"{x},{frame.y_linear(v, top_value):.1f}")
        level = last
    coords.append(f"{LEFT + frame.width},{frame.y_linear(level, top_value):.1f}")
    parts.append(
        f'<polyline class="unseen" fill="none" stroke="#1d2330" stroke-width="1.6" points="{" ".join(coords)}"/>'
    )
    final = points[-1][1] if points else 0
    caption = (
        f'<p class="caption">Acknowledged values no poll had returned yet, at each change ({len(points):,} '
        f"changes, drawn as the first, lowest, highest and last value of each pixel column); "
        f"{final:,} at the end. {_fault_legend(colors)}</p>"
    )
    return _svg("unseen-plot", frame.bottom + 40, "unseen messages over time", "".join(parts)) + caption


# ---------------------------------------------------------------------------------------------
# Anomalies


def _anchor(name: str) -> str:
    return "anomaly-" + "".join(c if c.isalnum() or c in "-_" else "_" for c in str(name))


def _definition(name: str) -> str:
    detector = DETECTORS.get(name)
    if detector is None or not detector.__doc__:
        return ""
    first = detector.__doc__.strip().split("\n\n")[0]
    return " ".join(first.split())


def _short(value, limit: int = 200) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[:limit] + "\u2026"


class _Records:
    """A poll's records of one partition, indexed by offset and by value (built once per poll and
    partition, as a final read may hold millions)."""

    def __init__(self, pairs: list) -> None:
        self.pairs = pairs
        by_offset = []
        self.by_value: dict = {}
        for pos, pair in enumerate(pairs):
            try:
                offset, value = pair[0], pair[1]
            except (TypeError, IndexError, KeyError):
                continue
            if isinstance(offset, int):
                by_offset.append((offset, pos))
            try:
                self.by_value.setdefault(value, []).append(pos)
            except TypeError:
                pass
        by_offset.sort()
        self.offsets = [o for o, _p in by_offset]
        self.positions = [p for _o, p in by_offset]

    def has(self, offset: int) -> bool:
        i = bisect.bisect_left(self.offsets, offset)
        return i < len(self.offsets) and self.offsets[i] == offset

    def around(self, offsets: set, ranges: list, values: set) -> list[int]:
        """The positions of the records at or next to ``offsets``, the first and last few inside
        each of ``ranges`` and those holding one of ``values``."""
        chosen = set()
        for o in offsets:
            i = bisect.bisect_left(self.offsets, o - 1)
            while i < len(self.offsets) and self.offsets[i] <= o + 1:
                chosen.add(self.positions[i])
                i += 1
        for low, high in ranges:
            i, j = bisect.bisect_left(self.offsets, low), bisect.bisect_right(self.offsets, high)
            chosen.update(self.positions[i : min(j, i + 3)])
            chosen.update(self.positions[max(i, j - 3) : j])
        for v in values:
            try:
                chosen.update(self.by_value.get(v, ()))
            except TypeError:
                pass
        return sorted(chosen)


def _focus(instance: dict) -> tuple[set, list, set]:
    """The offsets, offset ranges and values an anomaly instance names."""
    offsets, values = set(), set()
    for key in ("offset", "final_max"):
        if isinstance(instance.get(key), int) and not isinstance(instance.get(key), bool):
            offsets.add(instance[key])
    named = instance.get("offsets")
    ranges = []
    if isinstance(named, list):
        ints = [o for o in named if isinstance(o, int) and not isinstance(o, bool)]
        offsets.update(ints)
        if len(ints) >= 2:
            ranges.append((min(ints), max(ints)))
    for key in ("value",):
        if key in instance and not isinstance(instance[key], (list, dict)):
            values.add(instance[key])
    if isinstance(instance.get("values"), list):
        values.update(v for v in instance["values"] if not isinstance(v, (list, dict)))
    return offsets, ranges, values


class _Rows:
    """The table rows of the events of an anomaly's operations."""

    def __init__(self, scan: HistoryIndex) -> None:
        self.scan = scan
        self.indexes: dict = {}  # (event index, partition) -> _Records

    def records(self, op: dict, instance: dict) -> str:
        records = op.get("records")
        if not isinstance(records, dict):
            return ""
        part = str(instance.get("partition"))
        offsets, ranges, values = _focus(instance)
        out = []
        for key in sorted(records, key=lambda k: (str(k) != part, str(k))):
            pairs = records[key]
            if not isinstance(pairs, list):
                continue
            if str(key) != part:
                out.append(f"<div>{h(key)}: {len(pairs):,} record{'s' if len(pairs) != 1 else ''}</div>")
                continue
            cache = (op.get("index"), part)
            index = self.indexes.get(cache)
            if index is None:
                index = self.indexes[cache] = _Records(pairs)
            if len(pairs) <= RECORDS_SHOWN:
                shown = list(range(len(pairs)))
            else:
                shown = index.around(offsets, ranges, values)[:RECORDS_SHOWN]
            cells, previous = [], -1
            for pos in shown:
                if pos != previous + 1:
                    cells.append("&#8230;")
                pair = pairs[pos]
                text = h(_short(pair, 80))
                hit = (
                    isinstance(pair, (list, tuple))
                    and len(pair) == 2
                    and (hashable_in(pair[0], offsets) or hashable_in(pair[1], values))
                )
                cells.append(f"<mark>{text}</mark>" if hit else text)
                previous = pos
            if previous != len(pairs) - 1:
                cells.append("&#8230;")
            span = ""
            if index.offsets:
                span = f", offsets {index.offsets[0]}..{index.offsets[-1]}"
            named = sorted(o for o in offsets if o != instance.get("final_max"))
            absent = [
                o for o in named if index.offsets and index.offsets[0] < o < index.offsets[-1] and not index.has(o)
            ]
            if absent:
                cells.append(f'<span class="absent">(no record at offset {", ".join(map(str, absent))})</span>')
            out.append(
                f"<div><b>{h(key)}</b>: {len(pairs):,} record{'s' if len(pairs) != 1 else ''}{span}: "
                f"{' '.join(cells)}</div>"
            )
        return "".join(out) or "no records"

    def row(self, op: dict, instance: dict, css: str) -> str:
        f = op.get("f")
        if f == "send":
            partition = h(op.get("partition", ""))
            what = f"value {h(_short(op.get('value')))}"
            if "offset" in op:
                what += f", offset {h(_short(op.get('offset')))}"
        else:
            ps = op.get("partitions")
            if ps is None and isinstance(op.get("records"), dict):
                ps = list(op["records"])
            partition = h(_short(ps)) if ps is not None else ""
            what = self.records(op, instance)
        extra = [f"{h(k)}={h(_short(v))}" for k, v in op.items() if k not in _EVENT_KEYS]
        if extra:
            what = (what + "<br>" if what else "") + f'<span class="muted">{" ".join(extra)}</span>'
        time_ = op.get("time")
        when = f"{_seconds(time_):.6f} s" if isinstance(time_, int) else h(_short(time_))
        cells = (
            h(_short(op.get("index"))),
            when,
            h(_short(op.get("process"))),
            h(_short(op.get("type"))),
            h(_short(f)),
            partition,
            what,
        )
        return (
            f'<tr class="op-row {css}" data-index="{h(_short(op.get("index")))}">'
            + "".join(f"<td>{c}</td>" for c in cells)
            + "</tr>"
        )

    def table(self, instance: dict) -> str:
        rows = []
        for index in instance.get("ops") or []:
            try:
                op = self.scan.events.get(index)
            except TypeError:
                op = None
            if op is None:
                rows.append(
                    f'<tr class="op-row missing"><td>{h(_short(index))}</td>'
                    '<td colspan="6" class="muted">not in the history</td></tr>'
                )
                continue
            invoke = self.scan.invoke_of.get(index)
            if invoke is not None:
                rows.append(self.row(invoke, instance, "invoke"))
            rows.append(self.row(op, instance, "completion" if op.get("type") != "invoke" else "invoke"))
        head = "".join(
            f"<th>{c}</th>" for c in ("index", "time", "process", "type", "f", "partition", "value / offset / records")
        )
        return f'<table class="data ops"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _anomaly_sections(anomalies: dict, scan: HistoryIndex) -> str:
    rows = _Rows(scan)
    out = []
    for name, instances in anomalies.items():
        if not instances:
            continue
        n = len(instances)
        informational = " (informational: not an error by itself)" if name in INFORMATIONAL else ""
        parts = [
            f'<section class="anomaly" id="{_anchor(name)}" data-anomaly="{h(name)}">',
            f"<h3>{h(name)}: {n:,} instance{'s' if n != 1 else ''}{informational}</h3>",
        ]
        definition = _definition(name)
        if definition:
            parts.append(f'<p class="muted definition">{h(definition)}</p>')
        for k, instance in enumerate(instances[:INSTANCES_SHOWN]):
            if not isinstance(instance, dict):
                parts.append(f'<div class="instance"><p>{h(_short(instance))}</p></div>')
                continue
            details = ", ".join(
                f"{h(key)} {h(_short(v))}" for key, v in instance.items() if key not in ("ops", "explanation")
            )
            parts.append(
                f'<div class="instance" id="{_anchor(name)}-{k}"><p><b>{k + 1}.</b> '
                f'{h(instance.get("explanation", ""))} <span class="muted">({details})</span></p>'
                f"{rows.table(instance)}</div>"
            )
        if n > INSTANCES_SHOWN:
            parts.append(f'<p class="muted">and {n - INSTANCES_SHOWN:,} more, in the result JSON</p>')
        parts.append("</section>")
        out.append("".join(parts))
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# The page


# Run figures another part of the page shows: not repeated raw in the run table.
_SHOWN_ELSEWHERE = frozenset({"faults", "counts", "throughput", "check", "command", "anomalies"})


def _value(value, depth: int = 0) -> str:
    """A setting or run figure in a table cell: a list as its items, an object as its fields
    (``key: value``, one a line), a number of seconds rounded to the millisecond."""
    if isinstance(value, float):
        return h(f"{value:,.3f}".rstrip("0").rstrip("."))
    if isinstance(value, (list, tuple)) and all(isinstance(v, (str, int, float)) for v in value):
        return h(", ".join(str(v) for v in value)) or "-"
    if isinstance(value, dict) and depth < 2:
        return "<br>".join(f"{h(k)}: {_value(v, depth + 1)}" for k, v in value.items()) or "-"
    if isinstance(value, (list, tuple, dict)):
        return (
            "<br>".join(_value(v, depth + 1) for v in value)
            if isinstance(value, (list, tuple))
            else h(json.dumps(value, sort_keys=True, default=str))
        )
    return "-" if value is None else h(value)


def _command(meta: dict) -> str:
    command = meta.get("command")
    if isinstance(command, (list, tuple)):
        return shlex.join(str(c) for c in command)
    return "" if command is None else str(command)


def render_soak_page(
    index: HistoryIndex,
    check: CheckResult,
    faults: list[dict],
    meta: dict,
    figures: dict | None = None,
    budget: dict | None = None,
    tool: str = "isrcheck soak",
) -> str:
    """The page of one soak run: ``index`` its history's index (``HistoryIndex.of(history, check)``),
    ``check`` the checker's result, ``faults`` its fault intervals (``{"start": ns, "end": ns or
    None, "kind": str, "nodes": [int, ...]}``), ``meta`` the run's settings (protocol, seconds,
    bootstrap, seed, fault kinds, command, ...), ``figures`` the run's other figures for the run
    table (as ``results.json`` has them) and ``budget`` anomaly name -> why the run was outside its
    fault budget."""
    figures, budget = figures or {}, budget or {}
    anomalies, counts = check.anomalies, check.counts
    faults = [f for f in faults or [] if isinstance(f, dict)]
    unseen_series = check.series.get("unseen") or []
    end_ns = index.end
    for fault in faults:
        for key in ("start", "end"):
            if isinstance(fault.get(key), int):
                end_ns = max(end_ns, fault[key])
    if unseen_series:
        end_ns = max(end_ns, unseen_series[-1][0])
    end_s = end_ns / 1e9 if end_ns > 0 else 1.0
    seconds = meta.get("seconds")
    duration = seconds if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and seconds > 0 else end_s
    colors = _fault_colors(faults)

    errors = [
        (name, counts.get(name, len(v)))
        for name, v in anomalies.items()
        if v and name not in INFORMATIONAL and name not in budget
    ]
    excused = [(name, counts.get(name, len(v))) for name, v in anomalies.items() if v and name in budget]
    informational = [(name, counts.get(name, len(v))) for name, v in anomalies.items() if v and name in INFORMATIONAL]
    protocol = meta.get("protocol", "")
    if errors:
        verdict = f"{len(errors)} anomal{'ies' if len(errors) != 1 else 'y'}"
        found = ", ".join(f'<a href="#{_anchor(n)}">{h(n)}</a> &times;{c:,}' for n, c in errors)
        line = f"<b>{verdict}:</b> {found}"
    else:
        verdict = "anomaly-free"
        line = "<b>anomaly-free</b>: none of Jepsen's Kafka anomalies (lost-write, duplicate, G1a, ...) was found"
    if excused:
        line += (
            "; broken outside their budget (Kafka's or its client's documented behaviour, not a finding): "
            + ", ".join(f'<a href="#{_anchor(n)}">{h(n)}</a> &times;{c:,}' for n, c in excused)
            + "".join(f"<br>why: {h(reason)}" for reason in dict.fromkeys(budget[n] for n, _ in excused))
        )
    for n, c in informational:
        line += (
            f'; <a href="#{_anchor(n)}">{h(n)}</a>: {c:,} acknowledged value{"s" if c != 1 else ""} '
            "no poll returned (informational)"
        )
    sends_ok, polls_ok = index.count("send", "ok"), index.count("poll", "ok")
    throughput = (
        f'<span id="throughput">{sends_ok / duration:,.1f} ok sends/s, {polls_ok / duration:,.1f} ok '
        f"polls/s</span> over {duration:,.1f} s ({sends_ok:,} ok sends, {polls_ok:,} ok polls)"
    )
    command = _command(meta)
    title = f"{tool} {protocol}: {verdict}" if protocol else f"{tool}: {verdict}"
    body = [
        f"<style>{_CSS}</style>",
        f"<h1>{h(title)}</h1>",
        f'<div class="verdict{" failed" if errors else ""}" id="headline"><p>{line}</p>'
        f"<p>throughput: {throughput}</p>"
        f'<p>command: <code id="command">{h(command) or "-"}</code></p></div>',
    ]
    notes = check.notes
    if notes:
        body.append('<ul class="notes">' + "".join(f"<li>{h(n)}</li>" for n in notes) + "</ul>")

    run_rows = []
    keys = [k for k in _META_FIRST if k in meta and k != "command"]
    keys += sorted((k for k in meta if k not in _META_FIRST), key=str)
    run_rows += [(h(k), _value(meta[k])) for k in keys]
    run_rows += [
        (h(k), _value(figures[k])) for k in sorted(figures, key=str) if k not in meta and k not in _SHOWN_ELSEWHERE
    ]
    run_rows += [(f"checker: {h(k)}", _value(v)) for k, v in check.stats.items()]
    body.append('<h2>run</h2><div class="run">' + table(("setting", "value"), run_rows) + "</div>")

    op_rows = []
    for f in ("send", "poll", "assign"):
        cells = [h(f)] + [f"{index.count(f, t):,}" for t in ("ok", "fail", "info")]
        op_rows.append(cells + [f"{index.unfinished.get(f, 0):,}"])
    body.append("<h2>operations</h2>" + table(("f", "ok", "fail", "info", "never completed"), op_rows))

    body.append('<h2 id="latency">latency</h2>' + _latency_plot(index, end_s, faults, colors))
    body.append('<h2 id="rate">throughput</h2>' + _throughput_plot(index, end_s, faults, colors))
    body.append('<h2 id="unseen">unseen</h2>' + _unseen_plot(unseen_series, end_s, faults, colors))

    if faults:
        fault_rows = []
        for fault in faults:
            end = fault.get("end")
            fault_rows.append(
                (
                    h(fault.get("kind")),
                    h(_short(fault.get("nodes"))),
                    f"{_seconds(fault.get('start')):.3f}",
                    "not ended (active at the end)" if end is None else f"{_seconds(end):.3f}",
                    h(_fault_extra(fault)),
                )
            )
        body.append(
            '<h2 id="faults">faults</h2>' + table(("kind", "nodes", "start (s)", "end (s)", "details"), fault_rows)
        )

    body.append('<h2 id="anomalies">anomalies</h2>')
    body.append(
        table(
            ("anomaly", "instances"),
            [
                (
                    (f'<a href="#{_anchor(n)}">{h(n)}</a>' if v else h(n)),
                    (f"{counts.get(n, len(v)):,}", "bad" if v and n not in INFORMATIONAL else ""),
                )
                for n, v in anomalies.items()
            ],
        )
    )
    body.append(_anomaly_sections(anomalies, index) or '<p class="ok">none</p>')
    return document(title, "\n".join(body))
