"""The soak's faults (Jepsen's nemesis): what is done to the cluster while the workload runs.

Fault kinds (``FAULT_KINDS``), each a begin and an end action:

    kill       SIGKILL the broker, then restart it
    stop       clean shutdown (SIGTERM, waited for), then restart
    pause      SIGSTOP, then SIGCONT: a node that stops answering and wakes up later (a zombie leader)
    power      power loss (SIGKILL, then what was not fsynced is gone), then restart
    disk       the disk lost (SIGKILL, data directory removed), then restart on an empty one
    partition  a random split of the nodes (brokers and controllers) in two, then heal
    ioerror    the broker's disk fails one write, fsync or read (EIO, ENOSPC): its log directory
               goes offline and it halts (docs/steps.md, "Disk faults"), then restart; asked for
               by name only, ``all`` leaves it out

``parse_fault_kinds("kill,pause" | "all" | "none")`` reads a command line's choice.

``FaultPlan(kinds, duration_s, seed, brokers, controllers, max_down)`` is the schedule, all drawn
up front from ``random.Random(seed)``, so one seed gives one plan: as Jepsen's Bufstream suite
does, fault phases (``fault_s``, a few seconds) alternate with quiet phases (``quiet_s``) in which
everything is healed, starting with a quiet one. Each fault phase takes a random non-empty subset
of the kinds, each kind one fault starting in the phase's first third and ending (restart,
resume, heal) in its second half, before the phase ends. At no moment are more than ``max_down``
brokers down (killed, stopped, paused, powered off or without a disk; a kind that would exceed it
is left out of the phase); a partition takes no broker down, and there is at most one at a time.
Every fault ends by ``duration_s``.

``await plan.run(executor, started_ns)`` plays it on the wall clock (``time.monotonic_ns``, from
``started_ns``, the run's start) and fills ``plan.records``, one per fault in start order::

    {"start": ns, "end": ns, "kind": "pause", "nodes": [1]}

``start`` is when its begin action was invoked, ``end`` when its end action returned (the broker
restarted, resumed, the network healed), both in ns since ``started_ns``; ``end`` is None while it
lasts or if it could not be ended. A partition's ``nodes`` is the group cut off from the rest, and
its record also has ``groups`` (every group). Actions run one at a time in a worker thread, in
time order; a late action delays the ones after it. If an action fails (``HookError``) or the run
is cancelled, every fault still active is ended, once the action under way returned (errors of
those attempts are kept in the record as ``"error"``), and the exception goes on.

Executors (``begin(fault)``, ``end(fault)``, ``brokers``, ``controllers``, ``kinds`` the kinds they
can play, ``require(kinds)``):

* ``ProcessClusterFaults(cluster)``: isrcheck's own ``ProcessCluster`` (``power`` needs its
  brokers' journal: Kafka setting ``"journal": true``).
* ``HooksExecutor.load(path, nodes)``: any cluster, through shell commands in a JSON file::

    {
      "nodes": ["1", "2", "3"],
      "controllers": [],
      "timeout_s": 60,
      "kill": "ssh kafka{node} sudo pkill -9 -f kafka.Kafka",
      "stop": "ssh kafka{node} sudo systemctl stop kafka",
      "restart": "ssh kafka{node} sudo systemctl start kafka",
      "pause": "ssh kafka{node} sudo pkill -STOP -f kafka.Kafka",
      "resume": "ssh kafka{node} sudo pkill -CONT -f kafka.Kafka",
      "power": "ssh kafka{node} 'echo b | sudo tee /proc/sysrq-trigger'",
      "disk": "ssh kafka{node} 'sudo pkill -9 -f kafka.Kafka; sudo rm -rf /var/lib/kafka/data'",
      "partition": "for a in {nodes}; do for b in {others}; do ssh kafka$a sudo iptables -A INPUT -s kafka$b -j DROP; ssh kafka$b sudo iptables -A INPUT -s kafka$a -j DROP; done; done",
      "heal": "for n in {all}; do ssh kafka$n sudo iptables -F INPUT; done"
    }

  ``nodes`` are the brokers' names as the commands use them (default: the ``nodes`` given to
  ``load``), ``controllers`` further nodes that only partitions involve (KRaft controllers on
  machines of their own), ``timeout_s`` each command's limit (default 60). Actions are the fault
  kinds' names plus ``restart`` (ends kill, stop, power and disk), ``resume`` (ends pause) and
  ``heal`` (ends partition); a kind is playable when its begin and end actions are given.
  Placeholders: ``{node}`` the node (a process fault runs its command once per node), ``{nodes}``
  the nodes cut off by a partition, ``{others}`` the rest (``heal`` gets those of the partition it
  ends), ``{all}`` every node (lists are space-separated, each name shell-quoted); other braces
  are left alone. Commands run with
  ``sh -c`` in their own process group; a non-zero exit or a timeout (the group is killed) raises
  ``HookError`` naming the action, the command and its stderr: a usage error (exit 2).
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import json
import os
import random
import re
import shlex
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Iterable, Protocol, Sequence

from isrcheck.conformance.vocabulary import UsageError, read_text

MAX_HOOKS_BYTES = 1 << 20  # a hooks file: a few shell commands

FAULT_KINDS = ("kill", "stop", "pause", "power", "disk", "partition")  # what ``all`` rotates
EXTRA_KINDS = ("ioerror",)  # kinds a run names itself
KINDS = FAULT_KINDS + EXTRA_KINDS
DOWN_KINDS = ("kill", "stop", "pause", "power", "disk", "ioerror")  # each takes its brokers down
END_ACTION = {
    "kill": "restart",
    "stop": "restart",
    "power": "restart",
    "disk": "restart",
    "pause": "resume",
    "partition": "heal",
    "ioerror": "restart",
}
HOOK_ACTIONS = ("kill", "stop", "pause", "resume", "power", "disk", "restart", "partition", "heal", "ioerror")
# the disk failures ``ioerror`` plays on isrcheck's brokers (impl.real.processes.DISK_IO), by the fault's start
IO_ERRORS = ("write:EIO", "write:ENOSPC", "fsync:EIO", "fsync:ENOSPC", "read:EIO")
DEFAULT_FAULT_S = (2.0, 6.0)
DEFAULT_QUIET_S = (2.0, 6.0)
DEFAULT_HOOK_TIMEOUT_S = 60.0


class UnknownFaultKind(argparse.ArgumentTypeError, ValueError):
    """A fault kind that does not exist (also an argparse type error: usable as ``type=``)."""


def parse_fault_kinds(text: str) -> tuple[str, ...]:
    """``"kill,pause"`` -> ("kill", "pause") in KINDS order, duplicates dropped; ``"all"``
    every kind of FAULT_KINDS; ``"none"`` or ``""`` none. UnknownFaultKind names a kind that does
    not exist."""
    names = [n.strip().lower() for n in text.split(",") if n.strip()]
    if names in ([], ["none"]):
        return ()
    if names == ["all"]:
        return FAULT_KINDS
    unknown = [n for n in names if n not in KINDS]
    if unknown:
        raise UnknownFaultKind(
            f"unknown fault kind{'s' * (len(unknown) > 1)} {', '.join(map(repr, unknown))}: "
            f"expected a comma-separated list of {', '.join(KINDS)}, or all, or none"
        )
    return tuple(k for k in KINDS if k in names)


@dataclass(frozen=True)
class Fault:
    """One planned fault: ``nodes`` are the brokers a process fault acts on, or the group a
    partition cuts off; ``groups`` every group of a partition (``nodes`` first)."""

    kind: str
    nodes: tuple
    start_s: float  # planned, seconds since the run started
    end_s: float
    groups: tuple = ()


class FaultExecutor(Protocol):
    brokers: list
    controllers: list
    kinds: tuple[str, ...]

    def require(self, kinds: Iterable[str]) -> None: ...

    def begin(self, fault: Fault) -> None: ...

    def end(self, fault: Fault) -> None: ...


class FaultPlan:
    """The seeded schedule of faults over a run of ``duration_s`` seconds (see the module docstring)."""

    def __init__(
        self,
        kinds: Iterable[str],
        duration_s: float,
        seed: int,
        brokers: Sequence,
        controllers: Sequence = (),
        max_down: int = 1,
        fault_s: tuple[float, float] = DEFAULT_FAULT_S,
        quiet_s: tuple[float, float] = DEFAULT_QUIET_S,
    ) -> None:
        self.kinds = tuple(kinds)
        unknown = [k for k in self.kinds if k not in KINDS]
        if unknown:
            raise ValueError(f"unknown fault kinds {unknown}; known: {', '.join(KINDS)}")
        for name, (low, high) in (("fault_s", fault_s), ("quiet_s", quiet_s)):
            if not 0 < low <= high:
                raise ValueError(f"{name}: expected 0 < low <= high, got ({low}, {high})")
        if max_down < 0:
            raise ValueError(f"max_down: expected >= 0, got {max_down}")
        self.duration_s, self.seed = duration_s, seed
        self.brokers, self.controllers = list(brokers), list(controllers)
        self.max_down, self.fault_s, self.quiet_s = max_down, fault_s, quiet_s
        self.phases: list[tuple[float, float]] = []  # (start, end) of each fault phase, seconds
        self.faults: list[Fault] = self._draw(random.Random(seed))
        self.records: list[dict] = []

    @classmethod
    def for_executor(
        cls, executor: FaultExecutor, kinds: Iterable[str], duration_s: float, seed: int, max_down: int = 1, **timing
    ) -> "FaultPlan":
        """The plan over the executor's nodes, after checking it can play ``kinds`` (UsageError)."""
        kinds = tuple(kinds)
        executor.require(kinds)
        return cls(kinds, duration_s, seed, executor.brokers, executor.controllers, max_down, **timing)

    @classmethod
    def scripted(cls, executor: FaultExecutor, faults: Sequence[Fault], duration_s: float) -> "FaultPlan":
        """A plan of the given faults instead of drawn ones: a scenario played on purpose (the
        executor must be able to play their kinds: UsageError)."""
        kinds = tuple(k for k in KINDS if any(f.kind == k for f in faults))
        executor.require(kinds)
        plan = cls((), duration_s, 0, executor.brokers, executor.controllers)
        plan.kinds, plan.faults = kinds, sorted(faults, key=lambda f: f.start_s)
        return plan

    def _draw(self, rng: random.Random) -> list[Fault]:
        faults: list[Fault] = []
        if not self.kinds or not self.brokers:
            return faults
        t = rng.uniform(*self.quiet_s)  # the workload gets going first
        while True:
            length = rng.uniform(*self.fault_s)
            if t + length > self.duration_s:
                break
            end = t + length
            chosen = rng.sample(self.kinds, rng.randint(1, len(self.kinds)))
            down: set = set()
            drawn = []
            for kind in chosen:
                start = rng.uniform(t, t + length / 3)
                stop = rng.uniform(start + (end - start) / 2, end)
                if kind == "partition":
                    nodes = self.brokers + self.controllers
                    if len(nodes) < 2:
                        continue
                    shuffled = rng.sample(nodes, len(nodes))
                    cut = rng.randint(1, len(nodes) // 2)  # the side cut off: at most half
                    side = tuple(sorted(shuffled[:cut], key=nodes.index))
                    rest = tuple(n for n in nodes if n not in side)
                    drawn.append(Fault(kind, side, start, stop, (side, rest)))
                    continue
                budget = min(self.max_down - len(down), len(self.brokers) - len(down))
                if budget <= 0:
                    continue
                up = [b for b in self.brokers if b not in down]
                targets = rng.sample(up, rng.randint(1, budget))
                down.update(targets)
                drawn.append(Fault(kind, tuple(sorted(targets, key=self.brokers.index)), start, stop))
            if drawn:
                self.phases.append((t, end))
                faults += sorted(drawn, key=lambda f: f.start_s)
            t = end + rng.uniform(*self.quiet_s)
        return faults

    def down_at(self, t: float) -> set:
        """The brokers the plan has down at ``t`` seconds."""
        return {n for f in self.faults if f.kind in DOWN_KINDS and f.start_s <= t < f.end_s for n in f.nodes}

    async def run(self, executor: FaultExecutor, started_ns: int | None = None) -> list[dict]:
        """Play the plan with ``executor`` from ``started_ns`` (time.monotonic_ns of the run's
        start; default now); returns ``records`` (filled as it goes)."""
        loop = asyncio.get_running_loop()
        started_ns = time.monotonic_ns() if started_ns is None else started_ns
        events = sorted(
            [(f.start_s, 1, i) for i, f in enumerate(self.faults)]
            + [(f.end_s, 0, i) for i, f in enumerate(self.faults)]
        )
        active: dict[int, dict] = {}
        # one worker thread: actions never overlap, and the ends after a cancellation wait for the
        # action still running
        worker = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="isrcheck-faults")
        try:
            for t, begins, i in events:
                delay = (started_ns + int(t * 1e9) - time.monotonic_ns()) / 1e9
                if delay > 0:
                    await asyncio.sleep(delay)
                fault = self.faults[i]
                if begins:
                    record = {
                        "start": time.monotonic_ns() - started_ns,
                        "end": None,
                        "kind": fault.kind,
                        "nodes": list(fault.nodes),
                    }
                    if fault.groups:
                        record["groups"] = [list(g) for g in fault.groups]
                    self.records.append(record)
                    active[i] = record
                    await loop.run_in_executor(worker, executor.begin, fault)
                else:
                    await loop.run_in_executor(worker, executor.end, fault)
                    active.pop(i)["end"] = time.monotonic_ns() - started_ns
        finally:
            for i, record in sorted(active.items(), key=lambda item: -self.faults[item[0]].start_s):
                try:
                    await loop.run_in_executor(worker, executor.end, self.faults[i])
                    record["end"] = time.monotonic_ns() - started_ns
                except Exception as exc:  # the first error goes on; this one is kept
                    record["error"] = str(exc)
            worker.shutdown(wait=False)
        return self.records


# -- isrcheck's own cluster ------------------------------------------------------------------------
class ProcessClusterFaults:
    """Faults on an ``isrcheck.impl.real.processes.ProcessCluster``: brokers by id, the controller
    as CONTROLLER_ID (partitions only)."""

    def __init__(self, cluster) -> None:
        from isrcheck.impl.controller import CONTROLLER_ID  # loads impl: not for `isrcheck soak --help`

        self.cluster = cluster
        self.brokers = list(range(cluster.config.replicas))
        self.controllers = [CONTROLLER_ID]
        self.kinds = tuple(k for k in KINDS if k != "power" or cluster.journaled)

    def require(self, kinds: Iterable[str]) -> None:
        if "power" in kinds and "power" not in self.kinds:
            raise UsageError(
                "fault kind power: the brokers keep no journal to play a power loss with "
                '(Kafka setting "journal": true)'
            )

    def begin(self, fault: Fault) -> None:
        c = self.cluster
        if fault.kind == "partition":
            c.partition(fault.groups or [fault.nodes])  # the nodes no group names: one more group
            return
        for b in fault.nodes:
            if fault.kind == "disk":
                c.lose_disk(b)
            elif not c.alive(b):
                continue
            elif fault.kind == "ioerror":
                c.fail_disk(b, io_error(fault, c.journaled))
            elif not c.alive(b):
                continue  # died by itself: nothing to do to it (``end`` restarts it)
            elif fault.kind == "pause":
                c.pause(b)
            else:
                c.crash(b, {"kill": "process", "stop": "clean", "power": "power"}[fault.kind])

    def end(self, fault: Fault) -> None:
        end_on_processes(self.cluster, fault)


def end_on_processes(cluster, fault: Fault) -> None:
    """End ``fault`` on a cluster of processes (``heal``, ``paused``/``resume``, ``alive``/``restart``):
    the network healed, a paused node resumed, a node that is down restarted."""
    if fault.kind == "partition":
        cluster.heal()
        return
    for b in fault.nodes:
        if fault.kind == "pause":
            if b in cluster.paused:
                cluster.resume(b)
        elif not cluster.alive(b):
            cluster.restart(b)


def io_error(fault: Fault, journaled: bool) -> str:
    """The disk failure an ``ioerror`` fault plays, drawn by its planned start (a failed fsync
    only where the journal can play the dirty pages it loses)."""
    choices = IO_ERRORS if journaled else tuple(io for io in IO_ERRORS if not io.startswith("fsync"))
    return choices[int(fault.start_s * 1000) % len(choices)]


# -- any cluster, through the user's commands ------------------------------------------------------
class HookError(UsageError):
    """A fault hook failed: non-zero exit, or no exit within its timeout."""

    def __init__(
        self, action: str, command: str, message: str, stderr: str = "", returncode: int | None = None
    ) -> None:
        self.action, self.command, self.stderr, self.returncode = action, command, stderr, returncode
        stderr = stderr.strip()
        if len(stderr) > 2000:
            stderr = "..." + stderr[-2000:]
        super().__init__(f"fault hook {action!r} {message}: {command}" + (f"\nstderr: {stderr}" if stderr else ""))


_PLACEHOLDER = re.compile(r"\{(node|nodes|others|all)\}")


def _quoted(nodes) -> str:
    return " ".join(shlex.quote(str(n)) for n in nodes)


class HooksExecutor:
    """Faults through shell commands (see the module docstring for the hooks file)."""

    def __init__(
        self,
        hooks: dict[str, str],
        nodes: Sequence,
        controllers: Sequence = (),
        timeout_s: float = DEFAULT_HOOK_TIMEOUT_S,
        source: str = "hooks",
    ) -> None:
        unknown = sorted(set(hooks) - set(HOOK_ACTIONS))
        if unknown:
            raise UsageError(
                f"{source}: unknown hook{'s' * (len(unknown) > 1)} {', '.join(unknown)} "
                f"(hooks: {', '.join(HOOK_ACTIONS)})"
            )
        if not nodes:
            raise UsageError(f'{source}: no nodes to fault (give "nodes")')
        if not timeout_s > 0:
            raise UsageError(f"{source}: timeout_s must be > 0, got {timeout_s}")
        self.hooks, self.source, self.timeout_s = dict(hooks), source, timeout_s
        self.brokers, self.controllers = list(nodes), list(controllers)
        self.kinds = tuple(k for k in KINDS if k in hooks and END_ACTION[k] in hooks)

    @classmethod
    def load(cls, path: str, nodes: Sequence = ()) -> "HooksExecutor":
        """The hooks file at ``path``; ``nodes`` the brokers' names if the file names none.
        UsageError naming the file if it is not a hooks file."""
        text = read_text(path, "a hooks file", limit=MAX_HOOKS_BYTES)
        try:
            spec = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise UsageError(f"hooks file {path}: not JSON ({exc})") from None
        if not isinstance(spec, dict):
            raise UsageError(f"hooks file {path}: expected a JSON object of action -> command")
        spec = dict(spec)
        names = spec.pop("nodes", None)
        controllers = spec.pop("controllers", [])
        timeout_s = spec.pop("timeout_s", DEFAULT_HOOK_TIMEOUT_S)
        for key, value in (("nodes", names if names is not None else []), ("controllers", controllers)):
            if not isinstance(value, list) or not all(
                isinstance(n, (str, int)) and not isinstance(n, bool) for n in value
            ):
                raise UsageError(f"hooks file {path}: {key} must be a list of node names")
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)):
            raise UsageError(f"hooks file {path}: timeout_s must be a number of seconds")
        bad = sorted(k for k, v in spec.items() if not isinstance(v, str) or not v.strip())
        if bad:
            raise UsageError(f"hooks file {path}: the command of {', '.join(bad)} must be a non-empty string")
        return cls(
            spec, names if names is not None else list(nodes), controllers, float(timeout_s), f"hooks file {path}"
        )

    def require(self, kinds: Iterable[str]) -> None:
        """UsageError naming the hooks that ``kinds`` need and the file lacks."""
        missing = sorted({a for k in kinds for a in (k, END_ACTION[k]) if a not in self.hooks}, key=HOOK_ACTIONS.index)
        if missing:
            lacking = [k for k in kinds if k not in self.kinds]
            raise UsageError(
                f"{self.source}: fault kind{'s' * (len(lacking) > 1)} {', '.join(lacking)} "
                f"need{'s' * (len(lacking) == 1)} the hook{'s' * (len(missing) > 1)} "
                f"{', '.join(missing)}"
            )

    def command(self, action: str, node=None, nodes: Sequence = (), others: Sequence = ()) -> str:
        """The action's command with its placeholders filled."""
        values = {
            "node": shlex.quote(str(node)) if node is not None else "",
            "nodes": _quoted(nodes),
            "others": _quoted(others),
            "all": _quoted(self.brokers + self.controllers),
        }
        return _PLACEHOLDER.sub(lambda m: values[m.group(1)], self.hooks[action])

    def run(self, action: str, **values) -> str:
        """Run the action's command; its stdout. HookError if it fails or times out."""
        command = self.command(action, **values)
        proc = subprocess.Popen(
            ["/bin/sh", "-c", command],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(timeout=self.timeout_s)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the shell and whatever it started
            except ProcessLookupError:
                pass
            try:
                out, err = proc.communicate(timeout=5)
            except subprocess.TimeoutExpired:  # a descendant left the group and holds the pipes
                proc.kill()
                err = ""
            raise HookError(action, command, f"timed out after {self.timeout_s:g} s", err or "") from None
        if proc.returncode != 0:
            raise HookError(action, command, f"failed with exit code {proc.returncode}", err, proc.returncode)
        return out

    def _sides(self, fault: Fault) -> dict:
        """A partition's {nodes} (the group cut off) and {others} (everyone else)."""
        return {
            "nodes": list(fault.nodes),
            "others": [n for n in self.brokers + self.controllers if n not in fault.nodes],
        }

    def begin(self, fault: Fault) -> None:
        if fault.kind == "partition":
            self.run("partition", **self._sides(fault))
            return
        for node in fault.nodes:
            self.run(fault.kind, node=node)

    def end(self, fault: Fault) -> None:
        if fault.kind == "partition":
            self.run("heal", **self._sides(fault))
            return
        for node in fault.nodes:
            self.run(END_ACTION[fault.kind], node=node)


__all__ = [
    "FAULT_KINDS",
    "EXTRA_KINDS",
    "KINDS",
    "DOWN_KINDS",
    "Fault",
    "FaultPlan",
    "FaultExecutor",
    "ProcessClusterFaults",
    "end_on_processes",
    "HooksExecutor",
    "HookError",
    "UnknownFaultKind",
    "parse_fault_kinds",
]
