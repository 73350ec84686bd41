"""``isrcheck report SCHEDULE|CAMPAIGN_DIR --html OUT``: self-contained HTML for a reviewer.

A schedule file gives one page (OUT is the file): its timeline, a lane per replica, the first
bad step outlined with the model/implementation diff and the violated property in words, and
on top one sentence saying what went wrong; the page opens at the first bad step. A
campaign folder gives OUT/index.html (counts, coverage chart, failure table) and a timeline per
failure in OUT/failures/. Exit 0 written (the schedule passed or gave its expected verdict),
1 the schedule fails, 2 bad input.
"""

from __future__ import annotations

from pathlib import Path

from isrcheck.conformance.vocabulary import UsageError, output_path


def add_arguments(parser) -> None:
    parser.add_argument("source", help="a schedule file (JSON) or a campaign folder (with summary.json)")
    parser.add_argument("--html", required=True, metavar="OUT", help="the page to write (a folder for a campaign)")
    parser.add_argument("--protocol", default=None, help="run the schedule under this protocol instead of the file's")


def run(args) -> int:
    source = Path(args.source)
    if source.is_dir():
        out = output_path(args.html, "--html", directory=True)
        # loaded when the command runs, not for --help
        from isrcheck.conformance.core.schedule import ScheduleError
        from isrcheck.conformance.reports.campaign import write_campaign_html

        try:
            index = write_campaign_html(source, out)
        except (ValueError, ScheduleError) as exc:
            raise UsageError(str(exc)) from None
        print(f"campaign page: {index}")
        return 0
    out = output_path(args.html, "--html", directory=False)
    # loaded when the command runs, not for --help
    from isrcheck.conformance.cli.check import load_schedule_arg
    from isrcheck.conformance.reports.timeline import write_timeline

    schedule = load_schedule_arg(args.source, args.protocol)
    verdict = write_timeline(schedule, out, args.source)
    if verdict.kind == "invalid-schedule":
        raise UsageError(f"{args.source}: {verdict.diff}")
    print(f"{args.source} [{schedule.protocol}]: {verdict.summary()}; timeline: {out}")
    expected = schedule.expected.get(schedule.protocol)
    if expected is not None:
        return 0 if expected.matches(verdict) else 1
    return 1 if verdict.failed else 0
