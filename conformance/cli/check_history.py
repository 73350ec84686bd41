"""``isrcheck check-history FILE``: the soak's checker on a client history recorded elsewhere.

    isrcheck check-history soak/history.jsonl
    isrcheck check-history store/latest/history.edn --html history.html

FILE is isrcheck's own ``history.jsonl`` (a soak's; ``engines/soak/checker.py`` has the format,
for any harness to write) or the ``history.edn`` of a Jepsen Kafka test (``engines/soak/jepsen.py``
says how its operations are read); ``--format`` names which, by default told from the file. Every
anomaly of Jepsen's Kafka workload (without transactions) is printed with the operations that
prove it; ``--html`` writes the soak's page for it. Exit 0 no anomaly, 1 an anomaly, 2 bad input
(a file that is not a history, a transaction, a history with no operation).
"""

from __future__ import annotations

import json
import shlex
import sys

from isrcheck.conformance.vocabulary import UsageError, output_path

FORMATS = ("auto", "isrcheck", "jepsen")


def add_arguments(parser) -> None:
    parser.add_argument("history", metavar="FILE", help="history.jsonl (isrcheck's) or history.edn (Jepsen's)")
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="auto",
        help="the history's format (default: jepsen for *.edn or EDN maps, else isrcheck)",
    )
    parser.add_argument("--html", metavar="OUT", default=None, help="write the history's page here")
    parser.add_argument("--json", action="store_true", help="print the checker's result as JSON")


def run(args) -> int:
    # loaded when the command runs, not for --help
    from isrcheck.conformance.engines.soak.checker import INFORMATIONAL, HistoryError, check, load_history
    from isrcheck.conformance.engines.soak.jepsen import is_jepsen, load_jepsen_history

    html = output_path(args.html, "--html", directory=False) if args.html else None
    try:
        jepsen = args.format == "jepsen" or (args.format == "auto" and is_jepsen(args.history))
        events = load_jepsen_history(args.history) if jepsen else load_history(args.history)
        if not events:
            raise HistoryError(f"{args.history}: no operation: nothing to check")
        result = check(events)
    except HistoryError as exc:
        raise UsageError(str(exc)) from None
    found = {name: instances for name, instances in result.anomalies.items() if instances}
    if args.json:
        print(json.dumps(result.to_json(), indent=2, default=str))
    else:
        _print(args.history, "Jepsen" if jepsen else "isrcheck", events, result, found, INFORMATIONAL)
    if html is not None:
        # only when a page is written
        from isrcheck.conformance.engines.soak.history_index import HistoryIndex
        from isrcheck.conformance.reports.soak_page import render_soak_page

        meta = {
            "history": args.history,
            "format": "Jepsen history.edn" if jepsen else "isrcheck history.jsonl",
            "command": shlex.join(["isrcheck", "check-history", *sys.argv[2:]]),
        }
        page = render_soak_page(HistoryIndex.of(events, result), result, [], meta, tool="isrcheck check-history")
        html.write_text(page, encoding="utf-8")
        print(f"page: {html}")
    return 0 if result.ok else 1


def _print(path, kind: str, events: list[dict], result, found: dict, informational) -> None:
    by_index = {e["index"]: e for e in events}

    def shown(index) -> str:
        event = by_index.get(index, {})
        jepsen = event.get("jepsen_index")
        return f"{index} (Jepsen :index {jepsen})" if jepsen is not None else str(index)

    errors = [n for n in found if n not in informational]
    print(
        f"{path} ({kind}): {len(events):,} events; "
        + (f"anomalies: {', '.join(f'{n} ({len(found[n])})' for n in errors)}" if errors else "no anomaly")
    )
    for note in result.notes:
        print(f"  note: {note}")
    for name, instances in found.items():
        label = f"{name} (informational)" if name in informational else name
        for instance in instances[:10]:
            print(f"  {label}: {instance['explanation']}; ops {', '.join(shown(i) for i in instance['ops'])}")
        if len(instances) > 10:
            print(f"  {label}: and {len(instances) - 10} more (--json has every one)")


__all__ = ["add_arguments", "run"]
