"""``isrcheck experiment``: the model's predictions checked on a real cluster.

    isrcheck experiment last-replica-standing --cluster kafka:4.0.2 --elr off --repeat 5
    isrcheck experiment --all --cluster isrcheck:kip-966 --repeat 1

Each experiment (``specs/experiments/NAME.json``, or a file's path) pairs a schedule the model
checks with a plan for a real cluster; the cluster is isrcheck's own (``isrcheck[:PROTOCOL]``,
default kip-966) or Apache Kafka (``kafka:VERSION``; ``--elr`` on or off, default the release's).
Prints a row per experiment: the model's prediction for the variant the cluster implements, what
the cluster did in each repetition, how many reached the aimed state and gave the predicted
outcome, agree or disagree. Exit 0 every experiment agrees (or was not reached), 1 a disagreement,
2 bad input (a bad experiment file names the file and the field).
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from isrcheck.conformance.vocabulary import Number, UsageError, output_path

REPEAT = Number(int, 1, 100)


def catalogue_folder() -> Path:
    # loaded when the command runs, not for --help
    import isrcheck.specs

    return Path(isrcheck.specs.__file__).parent / "experiments"


def add_arguments(parser) -> None:
    parser.add_argument("name", nargs="?", help="an experiment of the catalogue, or an experiment file's path")
    parser.add_argument("--all", action="store_true", help="every experiment of the catalogue")
    parser.add_argument(
        "--cluster",
        default="isrcheck",
        metavar="isrcheck[:PROTOCOL]|kafka:VERSION",
        help="the cluster: isrcheck's own (default, protocol kip-966) or Apache Kafka",
    )
    parser.add_argument(
        "--elr",
        choices=("on", "off"),
        default=None,
        help="Apache Kafka: Eligible Leader Replicas on or off (default: the release's)",
    )
    parser.add_argument("--repeat", type=REPEAT, default=5, help="repetitions of each experiment (default 5)")
    parser.add_argument(
        "--dir",
        default="experiments",
        metavar="DIR",
        help="the run folder: each repetition's history and cluster (default ./experiments)",
    )
    parser.add_argument(
        "--experiments", default=None, metavar="DIR", help="the catalogue (default: isrcheck's specs/experiments)"
    )
    parser.add_argument("--kafka-home", default=None, metavar="DIR", help="a Kafka distribution already here")
    parser.add_argument("--json", action="store_true", help="print results.json instead of the table")
    parser.add_argument("--html", default=None, metavar="DIR", help="write the page DIR/index.html")


def selected(args) -> list:
    # loaded when the command runs, not for --help
    from isrcheck.conformance.engines.experiment.spec import catalogue, load_experiment

    folder = Path(args.experiments) if args.experiments else catalogue_folder()
    if args.all == bool(args.name):
        raise UsageError("give one experiment's NAME or --all")
    if args.all:
        paths = catalogue(folder)
        if not paths:
            raise UsageError(f"no experiment files in {folder}")
    else:
        path = Path(args.name)
        if not (path.suffix == ".json" and path.is_file()):
            path = folder / f"{args.name}.json"
            if not path.is_file():
                names = ", ".join(p.stem for p in catalogue(folder))
                raise UsageError(f"no experiment {args.name!r} (experiments: {names})")
        paths = [path]
    return [load_experiment(p) for p in paths]


def run(args) -> int:
    # kafka-python: loaded when the command runs, not for --help
    from isrcheck.conformance.engines.experiment.drivers import parse_cluster
    from isrcheck.conformance.engines.experiment.engine import DISAGREE, run_experiment, write_results

    experiments = selected(args)
    choice = parse_cluster(args.cluster, args.elr, args.kafka_home)
    output_path(args.dir, "--dir", directory=True)
    if args.html:
        output_path(args.html, "--html", directory=True)
    Path(args.dir).mkdir(parents=True, exist_ok=True)

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    results = [run_experiment(e, choice, args.repeat, Path(args.dir), say) for e in experiments]
    command = shlex.join(["isrcheck", "experiment", *sys.argv[2:]])
    path = write_results(results, Path(args.dir), command)
    doc = json.loads(path.read_text())
    if args.html:
        # only when a page is written
        from isrcheck.conformance.reports.experiment_page import render_experiment_page

        Path(args.html).mkdir(parents=True, exist_ok=True)
        (Path(args.html) / "index.html").write_text(render_experiment_page(doc), encoding="utf-8")
    if args.json:
        print(json.dumps(doc, indent=2))
    else:
        print_table(results)
    return 1 if any(r.verdict == DISAGREE for r in results) else 0


def print_table(results) -> None:
    rows = [
        ("experiment", "cluster", "model predicts", "cluster did (per repetition)", "reached", "predicted", "verdict")
    ]
    for r in results:
        p = r.prediction
        did = " | ".join(", ".join(x.outcomes) or "nothing" for x in r.repetitions)
        rows.append(
            (
                r.experiment.name,
                r.cluster,
                f"{p.variant}: {', '.join(p.outcomes) or 'nothing'}",
                did,
                f"{r.reached}/{len(r.repetitions)}",
                f"{r.predicted}/{len(r.repetitions)}",
                r.verdict,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    for r in results:
        for rep in r.repetitions:
            if rep.missed:
                print(f"{r.experiment.name} repetition {rep.index + 1}: not reached at {rep.missed}")
            for name, instances in rep.anomalies.items():
                for i in instances:
                    print(
                        f"{r.experiment.name} repetition {rep.index + 1}: {name} (operations "
                        f"{' '.join(map(str, i['ops']))}): {i['explanation']}"
                    )
