"""A follower's stale fetcher (docs/steps.md, ``split_become_follower``) on the step-mode Cluster:
after makeFollower applied a newer leader epoch and before remove_fetcher, the old fetcher goes on
fetching from its old leader under its old (leader, leader epoch) and appends the answer, as Kafka's
fetcher thread builds its requests from its own partitionStates (AbstractFetcherThread.maybeFetch)."""

import pytest
from split_switches import made_follower_with_an_answer_on_its_way

from isrcheck.impl.sim import Cluster, ClusterConfig, ClusterError


def _moved(protocol="kip-320") -> Cluster:
    config = ClusterConfig(protocol=protocol, replicas=3, min_insync_replicas=2, split_become_follower=True)
    return made_follower_with_an_answer_on_its_way(Cluster(config))


def _requests(c: Cluster) -> list[tuple[int, int, int]]:
    """(destination, current leader epoch, fetch offset) of follower 1's fetch requests in flight."""
    envelopes = c.world.network.queue(("fetch_request", 1))
    requests = [m[3] for m in c.in_flight() if m[:2] == ("fetch_request", 1)]
    return [(env.dst, req.current_leader_epoch, req.fetch_offset) for env, req in zip(envelopes, requests)]


@pytest.mark.parametrize("protocol", ["hw-truncation", "kip-101", "kip-320", "kip-966"])
def test_a_stale_fetcher_fetches_from_its_old_leader_and_appends_the_answer(protocol):
    c = _moved(protocol)
    follower = c.snapshot().brokers[1]
    assert (follower.leader, follower.leader_epoch, follower.stale_fetcher) == (2, 1, (0, 0))
    c.send_fetch(1)
    epoch = 0 if protocol in ("kip-320", "kip-966") else -1  # a Fetch carries no leader epoch before KIP-320
    assert _requests(c) == [(0, epoch, 1)]  # to leader 0, in its leader epoch 0, from offset 1
    c.handle_fetch(1)  # leader 0 handles it in its leader epoch 0
    assert c.snapshot().brokers[0].remote_leo[1] == 1
    c.handle_fetch_response(1)
    follower = c.snapshot().brokers[1]
    assert [e.value for e in follower.log] == [b"a", b"b"] and follower.stale_fetcher == (0, 0)


def test_the_request_goes_to_the_old_leader_and_remove_fetcher_forgets_it():
    c = _moved()
    c.send_fetch(1)
    with pytest.raises(ClusterError, match="has a fetch outstanding"):
        c.send_fetch(1)
    c.remove_fetcher(1)
    c.send_fetch(1)  # the new fetcher, to leader 2 in epoch 1
    assert _requests(c) == [(0, 0, 1), (2, 1, 1)]
    c.handle_fetch(1)  # leader 0's answer to the old fetcher is discarded
    c.handle_fetch_response(1)
    assert len(c.snapshot().brokers[1].log) == 1


def test_a_former_leaders_stale_fetcher_sends_nothing():
    c = _moved()
    c.deliver_leader_and_isr(0, 0)  # leader 0 becomes a follower of 2
    assert c.snapshot().brokers[0].stale_fetcher == (0, 0)
    with pytest.raises(ClusterError, match="no fetcher until remove_fetcher"):
        c.send_fetch(0)
    c.remove_fetcher(0)
    c.send_fetch(0)
