"""``isrcheck explore``: exhaustive breadth-first exploration of the reference model in a scope.

Exit 0: the scope was explored completely and every property held; 1: a property was violated
(or the state limit stopped the run first); 2: bad arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from isrcheck.conformance.core.schedule import Expected, Schedule
from isrcheck.conformance.vocabulary import INT64_MAX, Number, UsageError, output_path
from isrcheck.model import PROTOCOLS, ConfigError, ModelConfig, Scope, explore, replay
from isrcheck.model.config import check_scope
from isrcheck.specs import BY_ID, PROPERTIES

_DEFAULT = Scope()
# Sizes and scope bounds; the config and the scope check their own, tighter, ranges.
_COUNT = Number(int, 0, 1_000_000)
# The explorer option that names each config or scope field, for its messages.
_OPTION = {
    "min_insync_replicas": "--min-isr",
    "replica_lag_time_max_ticks": "--lag-ticks",
    "unclean_leader_election_enable": "--unclean-election",
    "split_fetch_handling": "--split-fetch-handling",
    "split_become_follower": "--split-become-follower",
    "hw_waits_for_caught_up": "--hw-waits-for-caught-up",
    "catch_up_at_previous_fetch": "--catch-up-at-previous-fetch",
    "metadata_cache": "--metadata-cache",
    "unfence_at_heartbeat": "--unfence-at-heartbeat",
    "kraft_controlled_shutdown": "--kraft-controlled-shutdown",
}


# One flag per fault class of real clusters: (flag, Scope field, help).
_FAULT_CLASSES = (
    ("bounces", "max_bounces", "fast bounces: restarts before the controller fenced the broker"),
    ("zombies", "max_zombies", "zombies: fences of a live broker (it may rejoin)"),
    ("leader-moves", "max_leader_moves", "elections with a target (preferred election, controlled shutdown)"),
    ("disk-losses", "max_disk_losses", "lost disks of down brokers"),
    ("batches", "max_batch_records", "records in one produce batch"),
    (
        "corruptions",
        "max_corruptions",
        "flushed batches corrupted at rest on down brokers (docs/steps.md, Disk faults)",
    ),
    ("disk-failures", "max_disk_failures", "failed writes, fsyncs and reads of a log directory (fail_disk)"),
    ("fsync-failures", "max_fsync_failures", "failed fsyncs among them (they lose the unflushed data)"),
    (
        "live-corruptions",
        "max_live_corruptions",
        "flushed batches corrupted under live brokers, found by a read (corrupt_live)",
    ),
)
_FAULT_SWITCHES = (
    ("partial-fetches", "partial_fetches", "fetches limited to one batch (replica.fetch.max.bytes)"),
    ("torn-writes", "torn_writes", "power losses that keep unflushed batches or tear the next one"),
    ("hw-checkpoints", "hw_checkpoints", "checkpoint_hw steps (HW checkpoint without a log flush)"),
    ("garbage-tails", "garbage_tails", "torn power losses whose tail holds stale or random bytes"),
)
_OPTION.update({name: f"--{flag}" for flag, name, _help in _FAULT_CLASSES + _FAULT_SWITCHES})


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    parser.add_argument(
        "--max-states", type=Number(int, 1, INT64_MAX), default=None, help="stop after this many states"
    )
    parser.add_argument("--stop-at-first", action="store_true", help="stop at the first violation")
    parser.add_argument(
        "--no-symmetry",
        action="store_true",
        help="no symmetry reduction: every state apart from its broker renamings (docs/model.md)",
    )
    parser.add_argument(
        "--reduction",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="partial-order reduction: expand a state with a persistent set of its steps where "
        "that keeps every verdict; a counterexample may be longer than the shortest. Default "
        "--no-reduction (shortest counterexamples): on the shipped scopes it merges almost "
        "nothing (docs/model.md)",
    )
    parser.add_argument(
        "--no-budget",
        action="store_true",
        help="report every failure as a violation, the properties' fault budgets aside "
        "(what breaks at all, as prove reports it)",
    )
    parser.add_argument(
        "--replay-on-impl",
        action="store_true",
        help="replay each counterexample on the implementation in lockstep "
        "(adds impl_verdict and impl_property to each violation)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--save",
        metavar="DIR",
        default=None,
        help="write each counterexample as a schedule DIR/<protocol>-<property>.json "
        "expecting that violation (replay it with isrcheck check --expected)",
    )


def add_model_arguments(parser: argparse.ArgumentParser, protocol_required: bool = True) -> None:
    """The protocol, cluster config, scope bounds and ``--property``: what every engine over the
    model (explore, prove) takes; ``_build`` reads them."""
    add_scope_arguments(parser, _DEFAULT, protocol_required)
    parser.add_argument(
        "--property",
        action="append",
        default=None,
        metavar="ID",
        help="check only this property (repeatable; default: all)",
    )


def add_scope_arguments(parser: argparse.ArgumentParser, default: Scope, protocol_required: bool = True) -> None:
    """The protocol, cluster config and scope bounds (``default``'s values as defaults); shared
    with ``isrcheck cover``, which explores a smaller scope by default."""
    _DEFAULT = default
    parser.add_argument("--protocol", required=protocol_required, help=f"protocol variant: {', '.join(PROTOCOLS)}")
    parser.add_argument("--replicas", type=_COUNT, default=3, help="replication factor, 1..5 (default 3)")
    parser.add_argument("--min-isr", type=_COUNT, default=2, help="min.insync.replicas (default 2)")
    parser.add_argument("--unclean-election", action="store_true", help="unclean.leader.election.enable=true")
    parser.add_argument("--lag-ticks", type=_COUNT, default=2, help="replica.lag.time.max in ticks (default 2)")
    parser.add_argument("--flush-messages", type=_COUNT, default=None, help="flush.messages (default: never)")
    parser.add_argument(
        "--split-fetch-handling",
        action="store_true",
        help="a leader's fetch handling as two steps, read_fetch then handle_fetch, other steps between "
        "them, the read itself maybe in two (read_fetch_hw; docs/steps.md; needs --no-fetch-rounds)",
    )
    parser.add_argument(
        "--split-become-follower",
        action="store_true",
        help="becoming a follower as two steps, deliver_leader_and_isr then remove_fetcher, the old "
        "fetcher fetching from its old leader and handling its answers between them (docs/steps.md)",
    )
    parser.add_argument(
        "--hw-waits-for-caught-up",
        action="store_true",
        help="a leader's HW also waits for a follower outside the ISR caught up within the lag time, as "
        "Kafka 3.6+ does (KAFKA-15021; docs/steps.md, maybe_increment_leader_hw)",
    )
    parser.add_argument(
        "--catch-up-at-previous-fetch",
        action="store_true",
        help="a follower whose Fetch reaches the LEO its previous Fetch found is caught up as of that "
        "Fetch, as Kafka's Replica.updateFetchStateOrThrow does (docs/steps.md, handle_fetch)",
    )
    parser.add_argument(
        "--metadata-cache",
        action="store_true",
        help="each broker caches the brokers' registrations (KRaftMetadataCache, brought up to the "
        "controller's by update_metadata_cache) and a leader's ISR expansion and HW wait read it, as "
        "Kafka's Partition.isReplicaIsrEligible does (docs/steps.md)",
    )
    parser.add_argument(
        "--unfence-at-heartbeat",
        action="store_true",
        help="the controller holds a registration fenced until the heartbeat that shows the broker caught "
        "up, the step unfence, as KRaft's BrokerHeartbeatManager does: no election or ISR takes it before "
        "(docs/steps.md; kip-903 and kip-966)",
    )
    parser.add_argument(
        "--kraft-controlled-shutdown",
        action="store_true",
        help="a broker's controlled shutdown is the controller's state and a step, controlled_shutdown, as "
        "KRaft's handleBrokerInControlledShutdown (docs/steps.md; kip-903 and kip-966 only)",
    )
    scope = parser.add_argument_group("scope bounds")
    for name, help_text in (
        ("max-records", "produce steps"),
        ("max-epoch", "highest leader epoch"),
        ("max-crashes", "crashes of any kind"),
        ("max-power-losses", "power losses"),
        ("max-clock", "clock ticks"),
        ("max-drops", "lost messages"),
    ):
        default = getattr(_DEFAULT, name.replace("-", "_"))
        scope.add_argument(f"--{name}", type=_COUNT, default=default, help=f"{help_text} (default {default})")
    for flag, name, help_text in _FAULT_CLASSES:
        default = getattr(_DEFAULT, name)
        scope.add_argument(
            f"--{flag}", type=_COUNT, default=default, dest=name, help=f"{help_text} (default {default})"
        )
    for flag, name, help_text in _FAULT_SWITCHES:
        scope.add_argument(
            f"--{flag}",
            action=argparse.BooleanOptionalAction,
            default=getattr(_DEFAULT, name),
            dest=name,
            help=help_text,
        )
    scope.add_argument(
        "--consumes",
        action=argparse.BooleanOptionalAction,
        default=_DEFAULT.consumes,
        help="include consume steps (history properties of reads)",
    )
    scope.add_argument(
        "--flushes", action=argparse.BooleanOptionalAction, default=_DEFAULT.flushes, help="include flush steps"
    )
    scope.add_argument(
        "--fetch-rounds",
        action=argparse.BooleanOptionalAction,
        default=_DEFAULT.fetch_rounds,
        help="take a follower's send/handle/response as one transition",
    )
    scope.add_argument(
        "--acks",
        default=",".join(map(str, _DEFAULT.acks)),
        help=f"acks of produce steps, comma-separated (default {','.join(map(str, _DEFAULT.acks))})",
    )
    scope.add_argument(
        "--crash-kinds",
        default=",".join(_DEFAULT.crash_kinds),
        help=f"crash kinds besides power loss: clean,process (default {','.join(_DEFAULT.crash_kinds)})",
    )


def _build(args) -> tuple[ModelConfig, Scope, list]:
    config, scope = config_and_scope(args)
    props = PROPERTIES
    if args.property:
        unknown = [p for p in args.property if p not in BY_ID]
        if unknown:
            raise UsageError(f"unknown property {', '.join(unknown)}; known: {', '.join(BY_ID)}")
        props = [BY_ID[p] for p in args.property]
    return config, scope, props


def config_and_scope(args) -> tuple[ModelConfig, Scope]:
    """The config and scope of ``add_scope_arguments``' options; UsageError naming a bad one."""
    try:
        acks = tuple(int(a) for a in args.acks.split(","))
    except ValueError:
        raise UsageError(f"--acks must be comma-separated integers, got {args.acks!r}") from None
    kinds = tuple(k for k in args.crash_kinds.split(",") if k)
    try:
        config = ModelConfig(
            protocol=args.protocol,
            replicas=args.replicas,
            min_insync_replicas=args.min_isr,
            unclean_leader_election_enable=args.unclean_election,
            replica_lag_time_max_ticks=args.lag_ticks,
            flush_messages=args.flush_messages,
            split_fetch_handling=args.split_fetch_handling,
            split_become_follower=args.split_become_follower,
            hw_waits_for_caught_up=args.hw_waits_for_caught_up,
            catch_up_at_previous_fetch=args.catch_up_at_previous_fetch,
            metadata_cache=args.metadata_cache,
            unfence_at_heartbeat=args.unfence_at_heartbeat,
            kraft_controlled_shutdown=args.kraft_controlled_shutdown,
        )
        scope = Scope(
            max_records=args.max_records,
            max_epoch=args.max_epoch,
            max_crashes=args.max_crashes,
            max_power_losses=args.max_power_losses,
            max_clock=args.max_clock,
            max_drops=args.max_drops,
            consumes=args.consumes,
            flushes=args.flushes,
            fetch_rounds=args.fetch_rounds,
            acks=acks,
            crash_kinds=kinds,
            **{name: getattr(args, name) for _flag, name, _help in _FAULT_CLASSES + _FAULT_SWITCHES},
        )
        check_scope(config, scope)
    except ConfigError as exc:
        if not exc.field:
            raise UsageError(str(exc)) from None
        option = f"{_OPTION[exc.field]} ({exc.field})" if exc.field in _OPTION else f"--{exc.field.replace('_', '-')}"
        raise UsageError(f"{option}: {exc.detail}") from None
    return config, scope


def run(args) -> int:
    config, scope, props = _build(args)
    if args.save is not None:
        output_path(args.save, "--save", directory=True)
    shown = [False]

    def progress(states: int, depth: int, seconds: float) -> None:
        shown[0] = True
        print(f"\rexplored {states:,} states, depth {depth}, {seconds:.0f} s", end="", file=sys.stderr, flush=True)

    try:
        result = explore(
            config,
            scope,
            props,
            stop_at_first=args.stop_at_first,
            max_states=args.max_states,
            progress=progress,
            budgets=not args.no_budget,
            symmetry=not args.no_symmetry,
            reduction=args.reduction,
        )
    finally:  # end the progress line, also before an interruption's message
        if shown[0]:
            print(file=sys.stderr)
    replays = _replay_on_impl(config, result) if args.replay_on_impl else None
    if args.save is not None:
        _save(args.save, config, result)
    if args.json:
        doc = result.to_json()
        if replays is not None:
            for entry, verdict in zip(doc["violations"], replays):
                entry["impl_verdict"], entry["impl_property"] = verdict.kind, verdict.property
        print(json.dumps(doc))
    else:
        _print_report(config, result, replays)
    return 0 if result.complete and not result.violations else 1


def _schedule(config: ModelConfig, violation, engine: str = "explore", shortest: bool = True):
    """A counterexample as a schedule, the format every other part of isrcheck reads."""
    what = "shortest counterexample" if shortest else "counterexample (partial-order reduction: maybe not the shortest)"
    return Schedule.from_json(
        {
            "version": 1,
            "protocol": config.protocol,
            "config": config.to_schedule(),
            "steps": violation.trace,
            "name": f"{config.protocol}-{violation.property}",
            "description": f"{what} to {violation.property} found by isrcheck {engine}",
        }
    )


def _replay_on_impl(config: ModelConfig, result) -> list:
    """Each counterexample run in lockstep on the model and the implementation, checking the
    property it violates (another property may fail first on the same trace)."""
    from isrcheck.conformance.core.lockstep import run_schedule  # loads impl: only with --replay-on-impl

    return [run_schedule(_schedule(config, v), properties=[v.property]) for v in result.violations]


def _save(directory: str, config: ModelConfig, result, engine: str = "explore") -> None:
    """Write DIR/<protocol>-<property>.json per violation (replayable with ``isrcheck check``),
    expecting the verdict its replay on the model gives: a violation of that property (reported
    as such where others fail at the same step), or what fails first on the trace instead."""
    from isrcheck.conformance.core.lockstep import run_schedule  # loads impl: only with --save

    out = Path(directory)
    try:
        out.mkdir(parents=True, exist_ok=True)
        for v in result.violations:
            found = _schedule(config, v, engine, shortest=not getattr(result, "reduction", False))
            want, note = Expected("violation", v.property), ""
            doc = Schedule(
                found.protocol, found.config, found.steps, {found.protocol: want}, found.name, found.description
            )
            verdict = run_schedule(doc, impl=False)
            if not want.matches(verdict):  # e.g. a property left out by --property fails earlier
                beyond = v.property if any(p == v.property for p, _, _ in verdict.beyond_budget) else None
                want = Expected(
                    verdict.kind,
                    verdict.property if verdict.kind == "violation" else None,
                    beyond if verdict.kind == "pass" else None,
                )
                note = f"; replayed with every property: {verdict.summary()}"
            doc = Schedule(
                found.protocol, found.config, found.steps, {found.protocol: want}, found.name, found.description + note
            )
            (out / f"{config.protocol}-{v.property}.json").write_text(doc.dumps())
    except OSError as exc:
        raise UsageError(f"--save {directory}: {exc.strerror or exc}") from None


def _print_report(config: ModelConfig, result, replays=None) -> None:
    from rich.console import Console  # rich: only when a report is printed

    # a pipe or file gets the whole table unwrapped; a terminal its own width
    console = Console(highlight=False, width=None if sys.stdout.isatty() else 240)
    scope = ", ".join(f"{k}={v}" for k, v in result.scope.to_json().items())
    verdict = "complete" if result.complete else "NOT complete (stopped early)"
    console.print(
        f"[bold]{config.protocol}[/bold]: {config.replicas} replicas, min ISR "
        f"{config.min_insync_replicas}, unclean election "
        f"{'on' if config.unclean_leader_election_enable else 'off'}; scope {scope}"
    )
    console.print(
        f"{result.states:,} distinct states, {result.transitions:,} transitions, depth {result.depth}, "
        f"{result.seconds:.1f} s, {verdict}"
    )
    console.print(_reduction_text(result))
    for b in result.beyond_budget:
        console.print(
            f"[yellow]{b.property} broken only outside its fault budget[/yellow] (shortest after "
            f"{b.depth} steps: {b.reason}); Kafka does not promise it there, so this is no violation"
        )
        console.print(_trace_table(config, b.trace))
    if not result.violations:
        console.print("[green]no property violated within its fault budget[/green]")
        return
    for i, v in enumerate(result.violations):
        console.print(
            f"\n[red bold]{v.property} violated[/red bold] after {v.depth} steps: {BY_ID[v.property].statement}"
        )
        console.print(_trace_table(config, v.trace))
        if replays is not None:
            console.print(f"on the implementation (lockstep): {replays[i].summary()}")


def _reduction_text(result) -> str:
    """What the symmetry and partial-order reductions did and what the fingerprints risk, in one line."""
    share = result.symmetric / max(result.states, 1)
    sym = (
        f"symmetry: {result.states:,} representatives of up to {result.represented:,} states "
        f"(their broker renamings, reachable or not); it applies past the last election without a "
        f"target, {share:.0%} of the states here"
        + (" (too few to pay for itself: --no-symmetry is faster)" if share < 0.5 else "")
        if result.symmetry
        else "no symmetry reduction"
    )
    por = (
        f"partial-order reduction: {result.reduced:,} of {result.states:,} states expanded with a reduced "
        f"set of steps; a counterexample may be longer than the shortest (--no-reduction gives the shortest)"
        if result.reduction
        else "no partial-order reduction: every counterexample is a shortest"
    )
    return f"{sym}; {por}; 64-bit fingerprints: probability of a collision at most {result.collision_probability:.1e}"


def _trace_table(config: ModelConfig, trace: list[dict]):
    # rich: only when a trace is printed
    from rich.markup import escape
    from rich.table import Table

    run_ = replay(config, trace)
    table = Table(
        caption="replica cell: \\[record@epoch ...] LEO/HW, L = leader in its own view; "
        "controller: leader, leader epoch, ISR",
        caption_justify="left",
    )
    table.add_column("#", justify="right")
    table.add_column("step", no_wrap=True)
    for r in range(config.replicas):
        table.add_column(f"replica {r}", no_wrap=True)
    table.add_column("controller", no_wrap=True)
    table.add_column("outputs")
    rows = [("0", "(initial)", run_.states[0], [])]
    rows += [
        (str(i + 1), _step_text(st), s, out) for i, (st, s, out) in enumerate(zip(trace, run_.states[1:], run_.outputs))
    ]
    for num, text, s, out in rows:
        c = s.controller
        ctrl = f"{c.leader} e{c.leader_epoch} {{{','.join(map(str, c.isr))}}}"
        table.add_row(
            num,
            text,
            *[escape(_replica_text(i, rep)) for i, rep in enumerate(s.replicas)],
            ctrl,
            "; ".join(_output_text(o) for o in out),
        )
    return table


def _step_text(step: dict) -> str:
    rest = " ".join(f"{k}={v}" for k, v in step.items() if k != "step")
    return f"{step['step']} {rest}".strip()


def _replica_text(i: int, rep) -> str:
    log = " ".join(f"{e.record}@{e.epoch}" for e in rep.log) or "-"
    role = "down" if not rep.alive else ("L" if rep.leader == i else "")
    return f"[{log}] {len(rep.log)}/{rep.hw}" + (f" {role}" if role else "")


def _output_text(o: dict) -> str:
    if o["type"] == "produce":
        return f"produce r{o['record']} {o['error']}" + (f" @{o['offset']}" if o["offset"] >= 0 else "")
    return f"consume {o['error']} hw={o['hw']}"
