"""Becoming a follower in two steps (docs/steps.md, ``split_become_follower``) in lockstep: the
implementation decides on its own whether ``remove_fetcher`` is enabled and reports its stale fetcher,
so random walks with the switch on pass, and a split whose stale fetcher drops its old leader's
answer, replaces itself at once, sends nothing or fetches from the new leader is a divergence."""

from __future__ import annotations

import functools

import pytest
from split_switches import driver_carries, walk_counts

from isrcheck.conformance import Lockstep, Schedule, random_walk, run_schedule
from isrcheck.conformance.core.schedule import ScheduleConfig
from isrcheck.impl.replication.fetcher import ReplicaFetcher

PROTOCOLS = ("hw-truncation", "kip-101", "kip-279", "kip-320", "kip-903", "kip-966")
SPLIT = {"split_become_follower": True}
# follower 1's Fetch answered by leader 0, then leader 2 elected: follower 1 applies leader epoch 1,
# appends leader 0's answer with its stale fetcher, then replaces the fetcher and fetches from 2
STALE_APPEND = [
    {"step": "produce", "replica": 0, "acks": 1},
    {"step": "send_fetch", "replica": 1},
    {"step": "handle_fetch", "replica": 1},
    {"step": "elect", "replica": 2},
    {"step": "deliver_leader_and_isr", "replica": 1, "index": 0},
    {"step": "send_fetch", "replica": 1},  # refused: its fetch is outstanding (the answer on its way)
    {"step": "handle_fetch_response", "replica": 1},  # the old leader's answer appended
    {"step": "remove_fetcher", "replica": 1},
    {"step": "deliver_leader_and_isr", "replica": 2, "index": 0},
    {"step": "remove_fetcher", "replica": 2},  # refused: it became the leader
    {"step": "send_fetch", "replica": 1},
    {"step": "handle_fetch", "replica": 1},
    {"step": "handle_fetch_response", "replica": 1},
]


# the same split; after the old answer, leader 0 (in epoch 0 still) appends record 2, which the stale
# fetcher fetches under its old tag and appends; it sends again, and remove_fetcher forgets that one
STALE_FETCH = STALE_APPEND[:7] + [
    {"step": "produce", "replica": 0, "acks": 1},
    {"step": "send_fetch", "replica": 1},  # to leader 0, in leader epoch 0
    {"step": "handle_fetch", "replica": 1},
    {"step": "handle_fetch_response", "replica": 1},  # record 2 appended
    {"step": "send_fetch", "replica": 1},
    {"step": "remove_fetcher", "replica": 1},
    {"step": "send_fetch", "replica": 1},  # to leader 2, in leader epoch 1
    {"step": "deliver_leader_and_isr", "replica": 0, "index": 0},  # leader 0 steps down
    {"step": "handle_fetch", "replica": 1},  # the stale request: NOT_LEADER_OR_FOLLOWER
    {"step": "handle_fetch_response", "replica": 1},  # discarded
    {"step": "deliver_leader_and_isr", "replica": 2, "index": 0},
    {"step": "handle_fetch", "replica": 1},
    {"step": "handle_fetch_response", "replica": 1},
]


def _schedule(protocol: str, steps=STALE_APPEND) -> Schedule:
    return Schedule(protocol, ScheduleConfig(**SPLIT), tuple(steps), name="stale-append")


def _between(schedule: Schedule, kinds=("handle_fetch_response",)) -> int:
    """How many steps of ``kinds`` a stale fetcher took (answers handled, by default): between a
    broker's deliver_leader_and_isr and its remove_fetcher."""
    stale, count = set(), 0
    for st in schedule.steps:
        if st["step"] == "deliver_leader_and_isr":
            stale.add(st["replica"])
        elif st["step"] in ("remove_fetcher", "crash"):
            stale.discard(st["replica"])
        elif st["step"] in kinds:
            count += st["replica"] in stale
    return count


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_random_walks_with_the_switch_on_pass_in_lockstep(protocol):
    sends = functools.partial(_between, kinds=("send_fetch",))
    removals, answers, requests = walk_counts(protocol, SPLIT, "remove_fetcher", _between, sends)
    # the walks replace fetchers, and before that the stale fetchers handle answers and fetch again
    assert removals >= 6 and answers >= 1 and requests >= 1, (removals, answers, requests)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_an_old_leaders_answer_appended_before_remove_fetcher_agrees(protocol):
    verdict = run_schedule(_schedule(protocol))
    assert verdict.kind == "pass", verdict.diff
    run = Lockstep(protocol, ScheduleConfig(**SPLIT))
    for st in STALE_APPEND:
        run.step(st)
    assert [(st.name, st.replica) for _i, st, _why in run.refused] == [("send_fetch", 1), ("remove_fetcher", 2)]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_stale_fetcher_fetching_from_its_old_leader_agrees(protocol):
    verdict = run_schedule(_schedule(protocol, STALE_FETCH))
    assert verdict.kind == "pass", verdict.diff
    run = Lockstep(protocol, ScheduleConfig(**SPLIT))
    for i, st in enumerate(STALE_FETCH):
        assert run.step(st) is None
        if i == 10:  # both sides appended record 2 under the old tag
            follower = run.state.replicas[1]
            assert [e.record for e in follower.log] == [1, 2] and follower.stale_fetcher == (0, 0)
    assert [(st.name, st.replica) for _i, st, _why in run.refused] == [("send_fetch", 1)]


def test_without_the_switch_both_sides_refuse_remove_fetcher():
    run = Lockstep("kip-966", ScheduleConfig())
    for st in STALE_APPEND[:5] + [{"step": "remove_fetcher", "replica": 1}]:
        assert run.step(st) is None
    assert [st.name for _i, st, _why in run.refused] == ["remove_fetcher"]  # refused by both: no divergence


def test_a_stale_fetcher_that_drops_its_old_leaders_answer_is_caught(monkeypatch):
    """Planted: the stale fetcher judges an answer by the partition's leader epoch, as before the split."""

    def current(self):
        p = self.partition
        self.outstanding = None
        return self.sent_under == (p.leader, p.leader_epoch) and not p.is_leader

    monkeypatch.setattr(ReplicaFetcher, "_current", current)
    verdict = run_schedule(_schedule("kip-320"))
    assert verdict.kind == "divergence" and verdict.step == 6, verdict.diff  # the append the model makes
    caught = [
        seed for seed in range(12) if random_walk(seed, "kip-320", 150, "default", config=SPLIT)[1].kind == "divergence"
    ]
    assert caught  # and random walks with the switch on find it


def test_a_split_that_replaces_the_fetcher_at_once_is_caught(monkeypatch):
    """Planted: makeFollower's fetcher is marked stale and replaced in the same step."""

    def keep_stale(self, tag):
        self.reset()

    monkeypatch.setattr(ReplicaFetcher, "keep_stale", keep_stale)
    verdict = run_schedule(_schedule("kip-320"))
    assert verdict.kind == "divergence" and verdict.step == 4, verdict.diff  # no stale fetcher reported


def test_a_stale_fetcher_that_sends_nothing_is_caught(monkeypatch):
    """Planted: the stale fetcher waits for remove_fetcher, as before the contract let it fetch."""
    can_send = ReplicaFetcher.can_send.fget
    monkeypatch.setattr(ReplicaFetcher, "can_send", property(lambda self: self.stale is None and can_send(self)))
    verdict = run_schedule(_schedule("kip-320", STALE_FETCH))
    assert verdict.kind == "divergence" and verdict.step == 8, verdict.diff  # refused by the implementation


def test_a_stale_fetcher_that_fetches_from_the_new_leader_is_caught(monkeypatch):
    """Planted: the stale fetcher sends to the partition's leader, under its leader epoch."""
    tag = ReplicaFetcher.tag.fget

    def send_tag(self):  # the partition's (leader, epoch) while sending, the fetcher's tag otherwise
        return (self.partition.leader, self.partition.leader_epoch) if self._sending else tag(self)

    send = ReplicaFetcher.send

    def sending(self, max_batches=0):
        self._sending = True
        try:
            return send(self, max_batches)
        finally:
            self._sending = False

    monkeypatch.setattr(ReplicaFetcher, "_sending", False, raising=False)
    monkeypatch.setattr(ReplicaFetcher, "tag", property(send_tag))
    monkeypatch.setattr(ReplicaFetcher, "send", sending)
    verdict = run_schedule(_schedule("kip-320", STALE_FETCH))
    assert verdict.kind == "divergence" and verdict.step == 8, verdict.diff  # its request goes to leader 2


def test_the_driver_protocol_carries_the_switch_and_the_stale_fetcher():
    driver_carries(SPLIT, STALE_APPEND)
