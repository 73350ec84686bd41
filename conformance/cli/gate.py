"""``isrcheck gate``: replay the regression corpus, then run the configured engines within their
budget, as configured in ``[tool.isrcheck.gate]`` of pyproject.toml.

Exit 0: every corpus schedule gave its expected verdict and no engine found a failure; 1: a
violation, divergence or unexpected verdict; 2: bad config or input (a corpus folder that does not
exist, nothing to replay or run, a corpus file that is not a schedule, an engine that is not
installed, Spark unavailable, a file in ``--out`` the gate did not write). New failures are saved,
shrunk, into the first corpus folder with their verdict, so the next run replays them first.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from isrcheck.conformance.vocabulary import UsageError, output_path


def add_arguments(parser) -> None:
    parser.add_argument(
        "--config",
        default="pyproject.toml",
        metavar="FILE",
        help="TOML file with a [tool.isrcheck.gate] table (default pyproject.toml)",
    )
    parser.add_argument("--junit-xml", metavar="PATH", default=None, help="write JUnit XML here")
    parser.add_argument("--html", metavar="DIR", default=None, help="write DIR/index.html and a timeline per failure")
    parser.add_argument(
        "--out",
        metavar="DIR",
        default=".isrcheck-gate",
        help="the engines' own results, e.g. fuzz campaigns (default .isrcheck-gate); each run "
        "deletes only what the gate wrote there",
    )
    parser.add_argument(
        "--save-to", metavar="DIR", default=None, help="save new failures here instead of the first corpus folder"
    )
    parser.add_argument("--no-save", action="store_true", help="do not save new failures")


def run(args) -> int:
    # loaded when the command runs, not for --help
    from isrcheck.conformance.core.schedule import ScheduleError
    from isrcheck.conformance.engines.gate.config import ConfigError, load_gate_config
    from isrcheck.conformance.engines.gate.engines import NAMES
    from isrcheck.conformance.engines.gate.run import run_gate

    junit = output_path(args.junit_xml, "--junit-xml", directory=False) if args.junit_xml else None
    html = output_path(args.html, "--html", directory=True) if args.html else None
    out = output_path(args.out, "--out", directory=True)
    console = Console(stderr=True)
    try:
        config = load_gate_config(args.config, NAMES)
        save = (
            None
            if args.no_save
            else (output_path(args.save_to, "--save-to", directory=True) if args.save_to else config.save_to)
        )
        result = run_gate(config, out, console, save)
    except (ConfigError, ScheduleError) as exc:
        raise UsageError(str(exc)) from None
    _print(result)
    if junit is not None:
        from isrcheck.conformance.engines.gate.junit import write_junit

        write_junit(result, junit)
    if html is not None:
        # only when a page is written
        from isrcheck.conformance.reports.gate_page import write_gate_html

        write_gate_html(result, html)
    where = [f"engine results in {out}"] if result.runs else []
    where += [f"JUnit XML {junit}"] if junit else []
    where += [f"HTML report {Path(html) / 'index.html'}"] if html else []
    where += [f"{len(result.new)} new failure(s) saved in {save}"] if result.new else []
    print("results: " + ("; ".join(where) if where else "printed above"))
    return result.exit_code


def _print(result) -> None:
    bad = [r for r in result.cases if not r.ok]
    print(
        f"isrcheck gate: corpus {len(result.cases) - len(bad)}/{len(result.cases)} as expected"
        + (f" ({len(result.unused)} file(s) expect nothing on these protocols)" if result.unused else "")
    )
    for r in bad:
        c = r.case
        want = c.expected.summary()
        print(f"  NOT as expected: {c.path} [{c.protocol}]: expected {want}, got {r.verdict.summary()}")
        print(f"    replay: isrcheck check {c.path} --protocol {c.protocol} --expected")
    for run in result.runs:
        print(f"{run.engine} {run.protocol}: {run.summary}; {len(run.findings)} failure(s), {run.seconds:.1f} s")
        for f in run.findings:
            saved = result.saved.get(id(f))
            print(
                f"  {f.verdict.summary()} ({f.label})"
                + (
                    ""
                    if saved is None
                    else f": saved as {saved}"
                    if saved in result.new
                    else f": already in the corpus as {saved}"
                )
            )
    print(f"gate: {'PASS' if result.exit_code == 0 else 'FAIL'} in {result.seconds:.1f} s")
