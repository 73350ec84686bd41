"""JUnit XML of a gate run, the format CI systems show as test results: one testcase per corpus
schedule and protocol, one per engine run; a failure carries the verdict, the first bad step,
the diff, the (shrunk) schedule and the command that replays it."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from isrcheck.conformance.engines.gate.run import GateResult


def _step_line(schedule, verdict) -> str:
    if verdict.step is None or schedule is None or verdict.step >= len(schedule.steps):
        return ""
    return f"first bad step {verdict.step}: {schedule.steps[verdict.step]}\n"


def _suite(root: ET.Element, name: str, cases: list[ET.Element], seconds: float) -> None:
    suite = ET.SubElement(
        root,
        "testsuite",
        name=name,
        tests=str(len(cases)),
        failures=str(sum(1 for c in cases if c.find("failure") is not None)),
        errors="0",
        skipped=str(sum(1 for c in cases if c.find("skipped") is not None)),
        time=f"{seconds:.3f}",
    )
    suite.extend(cases)


def junit_xml(result: GateResult) -> bytes:
    root = ET.Element("testsuites", name="isrcheck gate")
    corpus = []
    for r in result.cases:
        c = r.case
        tc = ET.Element(
            "testcase", classname=f"corpus.{c.folder.name}", name=c.name, file=str(c.path), time=f"{r.seconds:.3f}"
        )
        if not r.ok:
            want = c.expected.summary()
            failure = ET.SubElement(
                tc, "failure", type=r.verdict.kind, message=f"expected {want}, got {r.verdict.summary()}"
            )
            failure.text = (
                _step_line(c.schedule, r.verdict)
                + (r.verdict.diff or "")
                + f"\nreplay: isrcheck check {c.path} --protocol {c.protocol} --expected\n"
            )
        corpus.append(tc)
    for path in result.unused:
        tc = ET.Element("testcase", classname=f"corpus.{path.parent.name}", name=path.stem, file=str(path), time="0")
        ET.SubElement(tc, "skipped", message="expects nothing on the gate's protocols")
        corpus.append(tc)
    _suite(root, "isrcheck gate: corpus", corpus, sum(r.seconds for r in result.cases))
    engines = []
    for run in result.runs:
        tc = ET.Element("testcase", classname=f"engine.{run.engine}", name=run.protocol, time=f"{run.seconds:.3f}")
        ET.SubElement(tc, "system-out").text = run.summary + (f"\nresults: {run.results}" if run.results else "")
        if run.findings:
            parts = []
            for f in run.findings:
                saved = result.saved.get(id(f))
                text = [f"{f.verdict.summary()} ({f.label})"]
                if f.error:
                    text.append(f.error)
                if f.schedule is not None:
                    text.append(_step_line(f.schedule, f.verdict).rstrip())
                    if f.verdict.diff:
                        text.append(f.verdict.diff)
                    text.append(
                        f"shrunk schedule ({len(f.schedule.steps)} steps"
                        + (f", from {f.original_steps}" if f.original_steps else "")
                        + "):\n"
                        + f.schedule.dumps()
                    )
                    if saved:
                        text.append(
                            f"{'saved to' if saved in result.new else 'already in'} the corpus: {saved}\n"
                            f"replay: isrcheck check {saved}"
                        )
                parts.append("\n".join(t for t in text if t))
            failure = ET.SubElement(
                tc,
                "failure",
                type=run.findings[0].verdict.kind,
                message="; ".join(f"{f.verdict.summary()} ({f.label})" for f in run.findings),
            )
            failure.text = "\n\n".join(parts)
        engines.append(tc)
    _suite(root, "isrcheck gate: engines", engines, sum(r.seconds for r in result.runs))
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)


def write_junit(result: GateResult, path: Path) -> None:
    path.write_bytes(junit_xml(result))
