"""What the tests of the config switches (those that split a step in two, ``split_fetch_handling`` and
``split_become_follower``, and the others) share: the driver protocol carrying a switch, an event log's
header with one, the model's steps written as a schedule's, renamings of what a switch adds."""

from __future__ import annotations

import json
import sys

from isrcheck.conformance import Lockstep, SutSpec, random_walk
from isrcheck.conformance.core.schedule import ScheduleConfig
from isrcheck.conformance.core.sut_driver import DriverSut
from isrcheck.model import Step, replay
from isrcheck.model.explorer import reachable_states, successors
from isrcheck.model.state import permuted
from isrcheck.model.symmetry import all_permutations, inverse, renamed_step


def driver_carries(switch: dict, steps, walked: str = "kip-320") -> None:
    """The implementation behind the driver protocol takes ``steps`` (kip-966) with ``switch`` on, in
    lockstep with the model, and a random walk of ``walked`` through it diverges nowhere."""
    server = DriverSut(f"{sys.executable} -m isrcheck.impl.sut")
    try:
        run = Lockstep("kip-966", ScheduleConfig(**switch), sut=server)
        for st in steps:
            assert run.step(st) is None, run.verdict().diff
        assert run.verdict().kind == "pass"
    finally:
        server.close()
    spec = SutSpec(f"{sys.executable} -m isrcheck.impl.sut")
    try:
        _schedule, verdict = random_walk(3, walked, 120, "default", config=switch, sut=spec)
    finally:
        spec.close()
    assert verdict.kind != "divergence", verdict.diff


def log_header(switch: str, on: bool) -> dict:
    """A kip-966 event log's header for three brokers, ``switch`` set when ``on``."""
    config = {
        "replicas": 3,
        "min_insync_replicas": 2,
        "unclean_leader_election_enable": False,
        "replica_lag_time_max_ms": 100,
        "request_timeout_ms": 1000,
        "flush_messages": None,
        **({switch: True} if on else {}),
    }
    return {"format": "isrcheck-events", "version": 1, "protocol": "kip-966", "config": config}


def step(name, replica=None, **fields):
    return {"step": name, **({} if replica is None else {"replica": replica}), **fields}


def last(steps, cfg):
    return replay(cfg, steps).states[-1]


def walk_counts(protocol: str, switch: dict, kind: str, *between) -> tuple[int, ...]:
    """Six random walks of ``protocol`` with ``switch`` on, each passing (or finding a violation) in
    lockstep: how many ``kind`` steps they took, and the sum of each of ``between`` over their schedules."""
    taken, counted = 0, [0] * len(between)
    for seed in range(6):
        schedule, verdict = random_walk(seed, protocol, 150, "default", config=switch)
        assert verdict.kind in ("pass", "violation"), (seed, verdict.kind, verdict.diff)
        taken += sum(st["step"] == kind for st in schedule.steps)
        counted = [n + count(schedule) for n, count in zip(counted, between)]
    return (taken, *counted)


def made_follower_with_an_answer_on_its_way(c):
    """Follower 1 fetched record a from leader 0 and applies leader 2's epoch 1 with the answer on its way
    (``split_become_follower``: its fetcher stale); it appends it with its stale fetcher; leader 0, in epoch 0
    still, appends record b. ``c``: a step-mode Cluster of three brokers."""
    c.produce(0, b"a", 1)
    c.send_fetch(1)
    c.handle_fetch(1)
    c.elect(2)
    c.deliver_leader_and_isr(1, 0)
    c.handle_fetch_response(1)
    c.produce(0, b"b", 1)
    return c


def renamings_commute(config, scope, holds) -> int:
    """``state.permuted`` renames what a switch adds: for every fourth reachable state (of the first 3,000)
    where ``holds(state)``, a renamed state's successors are the renamed successors (the election without
    a target, by assignment order, aside). Returns how many states were checked."""
    perms = all_permutations(config.replicas)[1:]
    checked = 0
    for k, s in enumerate(reachable_states(config, scope, max_states=3000)):
        if k % 4 or not holds(s):
            continue
        perm = perms[k % len(perms)]
        u = permuted(s, perm)
        assert permuted(u, inverse(perm)) == s
        by_name = {
            (tuple(renamed_step(st, perm) for st in steps), permuted(t, perm))
            for steps, t, _ in successors(config, scope, s)
            if steps[0] != Step("elect")
        }
        assert by_name == {(steps, t) for steps, t, _ in successors(config, scope, u) if steps[0] != Step("elect")}
        checked += 1
    return checked


def self_driven_log(tmp_path, config, switch: str) -> None:
    """150 steps of a self-driven simulation with ``config`` logged into ``tmp_path``, whose header sets ``switch``."""
    from isrcheck.impl.replication import CRASH_KINDS
    from isrcheck.impl.sim.workload import Workload

    work = Workload(config, 1, True, CRASH_KINDS, str(tmp_path))
    for _ in range(150):
        work.step()
    work.finish()
    work.events.close()
    assert json.loads((tmp_path / "controller.jsonl").read_text().splitlines()[0])["config"][switch] is True


def driver_after(steps, protocol="kip-966", **switches):
    """The step-mode simulation after ``steps`` (step dicts), each accepted, with the config ``switches``."""
    from isrcheck.impl.sut.driver import SimDriver, cluster_config
    from isrcheck.impl.sut.steps import parse_step

    driver = SimDriver(cluster_config(protocol, switches))
    for doc in steps:
        refused, _outputs = driver.step(*parse_step(doc, 3))
        assert refused is None, (doc, refused)
    return driver


def refused(driver, doc) -> str | None:
    """The implementation's reason for refusing step ``doc``, None if it took it."""
    from isrcheck.impl.sut.steps import parse_step

    return driver.step(*parse_step(doc, 3))[0]
