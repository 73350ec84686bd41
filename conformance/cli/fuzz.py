"""``isrcheck fuzz``: a fuzzing campaign of seeded random crash schedules, distributed on Spark.

Exit codes for CI: 0 no failure, 1 failures found (violations, divergences, invalid schedules,
harness errors), 2 bad arguments, a foreign --out directory, or Spark unavailable.
"""

from __future__ import annotations

import json
import shlex
import sys

from rich.console import Console
from rich.table import Table

from isrcheck.conformance.core import sut_spec
from isrcheck.conformance.core.schedule import PROTOCOLS
from isrcheck.conformance.engines.campaign.harness import HarnessUnavailable
from isrcheck.conformance.engines.campaign.plan import PARTITIONS, SCHEDULES, STEPS
from isrcheck.conformance.generators.profiles import FAULT_PROFILES
from isrcheck.conformance.generators.refusals import DEFAULT_REFUSALS, REFUSALS
from isrcheck.conformance.vocabulary import SECONDS, SEED, Number, UsageError, output_path

ROUNDS = Number(int, 1, 1000)


def add_arguments(parser) -> None:
    parser.add_argument("--protocol", required=True, help=f"protocol variant: {', '.join(PROTOCOLS)}")
    parser.add_argument(
        "--schedules",
        type=SCHEDULES,
        required=True,
        metavar="N",
        help=f"number of schedules: seeds S .. S+N-1 ({SCHEDULES.describe()})",
    )
    parser.add_argument(
        "--seed", type=SEED, default=0, metavar="S", help=f"first seed (default 0); every seed is {SEED.describe()}"
    )
    parser.add_argument(
        "--steps", type=STEPS, default=100, metavar="K", help=f"steps per random walk (default 100; {STEPS.describe()})"
    )
    parser.add_argument(
        "--faults",
        default="default",
        help=f"fault profile of the random walk: {', '.join(FAULT_PROFILES)} (default: default; "
        "all: every fault class with no guard, each property judged by its own fault budget)",
    )
    parser.add_argument(
        "--master",
        default=None,
        metavar="URL",
        help="Spark master, e.g. local[2] or spark://host:7077 (default local[*], or whatever spark-submit set)",
    )
    parser.add_argument(
        "--partitions",
        type=PARTITIONS,
        default=None,
        metavar="M",
        help="Spark tasks to split the seeds into (default: ~200 seeds per task, a multiple of the parallelism)",
    )
    parser.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help="campaign directory (default campaigns/<protocol>); rerunning the same "
        "command resumes, other options need another directory",
    )
    parser.add_argument(
        "--shrink-budget",
        type=SECONDS,
        default=10.0,
        metavar="SECONDS",
        help=f"time budget for shrinking each failure (default 10; {SECONDS.describe()})",
    )
    parser.add_argument(
        "--refusals",
        type=REFUSALS,
        default=DEFAULT_REFUSALS,
        metavar="SHARE",
        help="share of each walk's steps drawn among those the model refuses, which the "
        f"implementation must refuse too (default {DEFAULT_REFUSALS}; {REFUSALS.describe()})",
    )
    parser.add_argument(
        "--no-swarm",
        dest="swarm",
        action="store_false",
        help="uniform random walks: every step and fault kind of the profile at its weight "
        "(default: swarm testing, each seed keeps its own subset of them with weights "
        "of its own, recorded in its row)",
    )
    parser.add_argument(
        "--guided",
        action="store_true",
        help="coverage-guided: run in --rounds rounds, schedules that reached new coverage "
        "become the parents of the next round's mutants",
    )
    parser.add_argument(
        "--rounds",
        type=ROUNDS,
        default=5,
        metavar="R",
        help=f"rounds of a --guided campaign (default 5; {ROUNDS.describe()})",
    )
    parser.add_argument(
        "--mode",
        choices=("steps", "auto"),
        default="steps",
        help="steps (default): random walks run in lockstep with the model; auto: each seed a "
        "self-driven simulation (timers, network faults, crashes) of --steps workload steps, "
        "its event log validated against the model (isrcheck validate)",
    )
    parser.add_argument("--json", action="store_true", help="print summary.json instead of text")
    sut_spec.add_arguments(parser)  # each Spark worker process starts its own


def run(args) -> int:
    # pyarrow and rich: loaded only when a campaign runs, not for --help
    from isrcheck.conformance.engines.campaign.driver import CampaignError, CampaignParams, run_campaign

    sut = sut_spec.from_arguments(args)  # started here first: a command that cannot start is bad input, before Spark
    if sut is not None:
        sut.close()  # the executors' workers run the schedules, each with its own
    params = CampaignParams(
        protocol=args.protocol,
        schedules=args.schedules,
        seed=args.seed,
        steps=args.steps,
        faults=args.faults,
        shrink_budget_s=args.shrink_budget,
        sut=sut,
        refusals=args.refusals,
        swarm=args.swarm and args.mode == "steps",
        mode=args.mode,
    )
    out = _out(args)
    output_path(out, "--out", directory=True)
    console = Console(stderr=True)
    if args.guided:
        if args.mode != "steps":
            raise UsageError("--guided steers random walks: it takes no --mode auto")
        return _run_guided(params, out, args, console)
    try:
        result = run_campaign(
            params, out, master=args.master, partitions=args.partitions, progress=True, console=console
        )
    except (CampaignError, HarnessUnavailable) as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        print(json.dumps(result.summary, indent=2, sort_keys=True))
    else:
        stdout = Console(file=sys.stdout)
        if not stdout.is_terminal:  # CI logs: do not wrap at 80 columns
            stdout = Console(file=sys.stdout, width=160)
        print_summary(result.summary, out, stdout)
    return result.exit_code


def _run_guided(params, out: str, args, console: Console) -> int:
    # pyarrow and rich: loaded only when a campaign runs, not for --help
    from isrcheck.conformance.engines.campaign.driver import CampaignError
    from isrcheck.conformance.engines.campaign.guided import run_guided

    try:
        summary = run_guided(
            params,
            out,
            args.rounds,
            master=args.master,
            say=lambda text: console.print(f"isrcheck fuzz --guided: {text}", markup=False),
        )
    except CampaignError as exc:
        raise UsageError(str(exc)) from None
    if args.json:
        print(json.dumps(summary, indent=2, sort_keys=True))
    else:
        print(
            f"isrcheck fuzz --guided {summary['protocol']}: {summary['schedules']} schedules in "
            f"{summary['rounds']} rounds; verdicts " + ", ".join(f"{k} {v}" for k, v in summary["by_verdict"].items())
        )
        for g in summary["coverage_growth"]:
            print(
                f"  round {g['round']}: {g['schedules']} schedules so far, {g['distinct_coverage']} coverage items "
                f"({g['abstract_states']} abstract states), {g['new_parents']} new parents, {g['failing']} failing"
            )
        print_violated(summary, print)
        print_budgets(summary, print)
        for f in summary["failures"]:
            print(f"  {f['verdict']} {f['property'] or ''}: {out}/{f['file']} ({f['shrunk_steps']} steps)")
    return 1 if summary["failing_schedules"] else 0


def _out(args) -> str:
    return args.out or f"campaigns/{args.protocol}"


def kept_when_interrupted(args) -> str:
    """Ctrl-C keeps every seed range already written: the same command resumes after them."""
    return f"the completed seed ranges stay in {_out(args)}"


def print_violated(summary: dict, say) -> None:
    """Every property violated, with the schedules that broke it: a verdict names one property,
    and the others that failed at the same step count too (WeakIsr and StrongIsr often do)."""
    if summary.get("violated"):
        say(
            "  properties violated (named by the verdict or failing at the same step): "
            + ", ".join(f"{p} in {n:,}" for p, n in summary["violated"].items())
        )


def print_budgets(summary: dict, say) -> None:
    """Which properties some schedules checked only part of the way (their fault budget ran out),
    and which broke outside it: never counted as failures, never left unsaid."""
    budgets = summary.get("budgets") or {}
    if budgets:
        say(
            "  fault budgets (a property is checked while the run stays within its budget): "
            + "; ".join(
                f"{p} within it to the end in {b['checked_within']:,} of {summary['schedules']:,}"
                + (f", broken outside it in {b['broken_outside']:,}" if b["broken_outside"] else "")
                for p, b in budgets.items()
            )
        )


def print_replay(summary: dict, out: str, say) -> None:
    """The command that replays the first failure that has one (a harness error has none), and a
    self-driven run's saved event log."""
    from isrcheck.conformance.engines.campaign.failures import replay_command  # its store loads pyarrow

    for f in summary["failures"]:
        command = replay_command(out, f)
        if command is not None:
            say(f"  replay one with: {command}", markup=False, highlight=False)
            if f["file"].endswith(".events"):
                say(
                    f"  its saved event log: isrcheck validate {shlex.quote(f'{out}/' + f['file'])}",
                    markup=False,
                    highlight=False,
                )
            return


def print_summary(summary: dict, out: str, console: Console) -> None:
    """A few lines a person reads in a CI log: counts, coverage, speed, where failures are."""
    run = summary["run"]
    console.print(
        f"[bold]isrcheck fuzz[/] {summary['protocol']}: {summary['schedules']} schedules "
        f"(seeds {summary['seed']}..{summary['seed'] + summary['schedules'] - 1}, "
        f"{summary['steps']} steps, faults {summary['faults']}, "
        f"refused steps {summary.get('refusals', 0):.0%}, "
        + (
            "self-driven simulations, each event log validated)"
            if summary.get("mode") == "auto"
            else f"{'swarm' if summary['swarm']['enabled'] else 'uniform'} walks)"
        )
    )
    console.print(
        f"  ran {run['executed']} now, {run['skipped_completed']} already done; "
        f"{run['tasks']} tasks on {run['master']} (parallelism {run['parallelism']}); "
        f"{run['schedules_per_s'] or '-'} schedules/s; wall {run['wall_time_s']:.1f} s"
        + (
            f", of which the schedules {run['job_seconds']:.1f} s (the progress' time) and Spark's "
            f"start and the summary the rest"
            if run.get("job_seconds") is not None
            else ""
        )
    )
    verdicts = ", ".join(f"{k} {v}" for k, v in summary["by_verdict"].items())
    kinds = summary["coverage_by_kind"]
    console.print(
        f"  verdicts: {verdicts}; coverage: {kinds.get('abstract_states', 0)} abstract "
        f"states, {kinds.get('action_pairs', 0)} action pairs, "
        f"{kinds.get('outputs', 0)} outcomes, {kinds.get('divergence_rungs', 0)} divergence rungs"
    )
    print_violated(summary, console.print)
    print_budgets(summary, console.print)
    if not summary["failures"]:
        console.print("  [green]no failure[/]")
        console.print(
            f"  results: {out}/summary.json (isrcheck report {out} --html OUT draws its page)",
            markup=False,
            highlight=False,
        )
        return
    table = Table(
        title=f"{summary['distinct_failures']} distinct failures ({summary['failing_schedules']} failing schedules)"
    )
    for col in ("verdict", "property", "seed", "seeds", "steps", "shrunk", "file"):
        table.add_column(col)
    for f in summary["failures"]:
        table.add_row(
            f["verdict"],
            str(f["property"]),
            str(f["seed"]),
            str(f["seeds"]),
            str(f["steps"]),
            str(f["shrunk_steps"]),
            f"{out}/{f['file']}",
        )
    console.print(table)
    print_replay(summary, out, console.print)
    console.print(
        f"  results: {out}/summary.json (isrcheck report {out} --html OUT draws its page)",
        markup=False,
        highlight=False,
    )
