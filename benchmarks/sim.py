"""Throughput of the replication implementation on the deterministic simulation (one core).

Prints, for the auto mode (``isrcheck sim``'s workload with faults): message deliveries per second
of wall time and the ratio of simulated to real time; for the step mode (what conformance runs
drive): facade steps per second, with and without a snapshot after each step.

    python benchmarks/sim.py [--steps 2000] [--seeds 3]
"""

from __future__ import annotations

import argparse
import random
import time

from isrcheck.impl.sim import CRASH_KINDS, Cluster, ClusterConfig, ClusterError
from isrcheck.impl.sim.workload import Workload, sim_config


def auto_mode(protocol: str, steps: int, seeds: int) -> None:
    delivered = sim_ms = 0
    wall = 0.0
    for seed in range(seeds):
        work = Workload(sim_config(protocol, 3), seed)
        start = time.perf_counter()
        for _ in range(steps):
            work.step()
        work.finish()
        wall += time.perf_counter() - start
        delivered += work.cluster.network.delivered
        sim_ms += work.cluster.clock.now_ms()
    print(
        f"auto  {protocol:14s} {delivered:8d} deliveries in {wall:6.2f} s: {delivered / wall:9.0f} deliveries/s; "
        f"simulated/real time {sim_ms / 1000 / wall:6.2f}x"
    )


def step_mode(protocol: str, steps: int, with_snapshot: bool) -> None:
    rng = random.Random(1)
    c = Cluster(ClusterConfig(protocol=protocol, replicas=3, min_insync_replicas=2))
    record = 0
    done = refused = 0
    start = time.perf_counter()
    while done < steps:
        r = rng.randrange(3)
        choice = rng.random()
        try:
            if choice < 0.2:
                record += 1
                c.produce(r, str(record).encode(), rng.choice((-1, 1, 0)))
            elif choice < 0.4:
                c.send_fetch(r)
            elif choice < 0.6:
                c.handle_fetch(r)
            elif choice < 0.8:
                c.handle_fetch_response(r)
            elif choice < 0.85:
                c.consume(r)
            elif choice < 0.9:
                c.advance(1)
            elif choice < 0.95:
                c.deliver_leader_and_isr(r)
            elif len(c.snapshot().brokers[r].log) > 50 and rng.random() < 0.2:
                c.crash(r, rng.choice(CRASH_KINDS))
                c.fence(r)
                c.restart(r)
                if c.controller.leader == -1:
                    c.elect()
            else:
                c.shrink_isr(r) if rng.random() < 0.5 else c.expand_isr(r)
        except ClusterError:
            refused += 1
        c.take_client_responses()
        if with_snapshot:
            c.snapshot()
            c.in_flight()
        done += 1
    wall = time.perf_counter() - start
    label = "with snapshot" if with_snapshot else "no snapshot"
    print(
        f"steps {protocol:14s} {steps:8d} steps in {wall:6.2f} s: {steps / wall:9.0f} steps/s ({label}, "
        f"{refused} refused)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    for protocol in ("hw-truncation", "kip-320"):
        auto_mode(protocol, args.steps, args.seeds)
    for protocol in ("kip-101", "kip-320"):
        step_mode(protocol, args.steps * 5, with_snapshot=False)
        step_mode(protocol, args.steps * 5, with_snapshot=True)


if __name__ == "__main__":
    main()
