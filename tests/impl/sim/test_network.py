"""SimNetwork: manual delivery, lost requests reported to their requester, partitions, and the
seeded delays, drops, duplicates and reorders of auto mode."""

import random

from isrcheck.impl.sim.clock import SimClock
from isrcheck.impl.sim.network import INSTANT, NetworkFaults, SimNetwork


class Node:
    def __init__(self):
        self.got, self.lost = [], []

    def receive(self, src, frame):
        self.got.append((src, frame))

    def connection_lost(self, peer, correlation_id):
        self.lost.append((peer, correlation_id))


def request(correlation_id, payload=b""):
    return bytes([0, 0, 1, 0, 0]) + correlation_id.to_bytes(4, "big") + payload


def response(correlation_id, payload=b""):
    return bytes([1, 0, 1, 0, 0]) + correlation_id.to_bytes(4, "big") + payload


def _manual():
    net = SimNetwork(SimClock(), classify=lambda s, d, f: INSTANT if s >= 100 else ("msg", s))
    a, b = Node(), Node()
    net.register(0, a)
    net.register(1, b)
    return net, a, b


def test_manual_network_moves_only_chosen_messages_in_any_order():
    net, a, b = _manual()
    for i in range(3):
        net.send(0, 1, request(i, bytes([i])))
    assert b.got == [] and len(net.queue(("msg", 0))) == 3
    net.deliver(net.queue(("msg", 0))[2])  # reordered: the newest first
    net.deliver(net.queue(("msg", 0))[0])
    assert [f[-1] for _, f in b.got] == [2, 0]
    net.drop(net.queue(("msg", 0))[0])
    assert a.lost == [(1, 1)]  # the requester learns its request is gone
    assert net.in_flight() == []


def test_a_lost_response_is_reported_to_the_requester_and_dead_nodes_lose_their_traffic():
    net, a, b = _manual()
    net.send(1, 0, response(7))
    net.drop(net.queue(("msg", 1))[0])
    assert a.lost == [(1, 7)]  # node 0 asked node 1, the answer was lost
    net.send(0, 1, request(8))
    net.unregister(1)
    assert a.lost == [(1, 7), (1, 8)] and net.in_flight() == []
    net.send(0, 1, request(9))  # to a dead node: discarded at once
    assert a.lost[-1] == (1, 9)


def test_partitions_block_links_until_healed():
    net, a, b = _manual()
    net.partition(0, 1)
    net.send(0, 1, request(1))
    assert net.in_flight() == [] and a.lost == [(1, 1)]
    net.heal()
    net.send(0, 1, request(2))
    net.deliver(net.queue(("msg", 0))[0])
    assert len(b.got) == 1


def _auto_run(seed):
    clock = SimClock()
    faults = NetworkFaults(
        min_delay_ms=1, max_delay_ms=9, drop_rate=0.1, duplicate_rate=0.1, reorder_rate=0.3, disconnect_detect_ms=20
    )
    net = SimNetwork(clock, classify=lambda s, d, f: ("msg", s), rng=random.Random(seed), faults=faults)
    a, b = Node(), Node()
    net.register(0, a)
    net.register(1, b)
    for i in range(200):
        net.send(0, 1, request(i, i.to_bytes(2, "big")))
        clock.advance(1)
    clock.advance(100)
    return [int.from_bytes(f[-2:], "big") for _, f in b.got], a.lost


def test_auto_network_delays_drops_duplicates_and_reorders_from_its_seed():
    got, lost = _auto_run(3)
    assert (got, lost) == _auto_run(3)
    assert got != _auto_run(4)[0]
    assert lost and len(got) != len(set(got))  # some lost, some duplicated
    assert got != sorted(got)  # some reordered
    assert set(got) | {c for _, c in lost} >= set(range(1, 200))
