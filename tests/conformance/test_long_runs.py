"""A long schedule costs what each step changes: the runner, the abstraction and the simulation keep
per-place state instead of per-step records, and every such shortcut gives what the plain
computation gives (the same trace-hash bytes, the same abstract logs, the same snapshot logs)."""

from isrcheck.conformance import random_walk
from isrcheck.conformance.core.lockstep import Lockstep, _StateText
from isrcheck.impl.sim.snapshot import LogView


def _plain_delta(old, new) -> bytes:
    """The trace-hash text of a state change written with ``repr`` alone (the definition)."""
    out = []
    for name, a, b in zip(new._fields, old, new):
        if a is b:
            continue
        if type(b) is tuple and type(a) is tuple and len(a) == len(b):
            out.extend(f"{name}[{k}]={y!r};" for k, (x, y) in enumerate(zip(a, b)) if x is not y)
        else:
            out.append(f"{name}={b!r};")
    return "".join(out).encode()


def _walks():
    """Walks with truncations, restarts, lost disks and divergent logs (violations included)."""
    for protocol, faults in (("kip-320", "default"), ("hw-truncation", "heavy"), ("kip-101", "heavy")):
        for seed in range(4):
            yield random_walk(seed, protocol, 400, faults=faults)[0]


def test_kept_texts_logs_and_views_equal_what_they_stand_for():
    for schedule in _walks():
        run = Lockstep(schedule.protocol, schedule.config)
        text = _StateText()
        for step in schedule.steps:
            before = run.state
            failed = run.step(step)
            cluster = run.impl.cluster  # the system under test is reset by the first step
            if run.state is not before:
                assert text.delta(before, run.state) == _plain_delta(before, run.state)
                fresh = [LogView().update(b.partition.log, 0) if b.alive else None for b in cluster.brokers]
                for broker, snap, log in zip(cluster.brokers, cluster.snapshot().brokers, fresh):
                    if log is not None:
                        assert snap.log == log, (schedule.name, step)
                        assert run.impl.system_state()[0][broker.broker_id].log == tuple(
                            (e.offset, e.epoch, int(e.value), e.base_offset) for e in log
                        )
            if failed is not None:
                break


def test_what_the_abstraction_keeps_is_what_is_in_flight():
    schedule, _ = random_walk(3, "kip-320", 3000, faults="default")
    run = Lockstep(schedule.protocol, schedule.config)
    for step in schedule.steps:
        run.step(step)
    report, network = run.impl.driver.report, run.impl.cluster.network
    in_flight = sum(len(network.queue(key)) for key in list(network.queues))
    assert report.kept() <= in_flight
