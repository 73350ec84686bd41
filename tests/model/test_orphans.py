"""A crash keeps what the broker had sent (docs/steps.md, ``crash``): its requests become orphans,
handled by their destination and never answered, and no longer its own; and the loss that follows
where a restarted leader leads on in the same leader epoch (the known loss bounced-leader-proposal)."""

from __future__ import annotations

import pytest
from explorer_scopes import KIP101_SCENARIO1

from isrcheck.model import ModelConfig, Step, explore, replay, why_disabled
from isrcheck.specs import BY_ID

KIP320 = ModelConfig(protocol="kip-320")


def step(name, replica=None, **fields):
    return {"step": name, **({} if replica is None else {"replica": replica}), **fields}


def fetch_round(r):
    return [step("send_fetch", r), step("handle_fetch", r), step("handle_fetch_response", r)]


# broker 1 falls out of the ISR while down; the leader proposes it back on the LEO it fetched before
PROPOSED = [
    *fetch_round(1),
    step("produce", 0, acks=-1),
    *fetch_round(2),
    step("crash", 1, kind="process"),
    step("fence", 1),
    step("deliver_leader_and_isr", 0, index=0),
    step("expand_isr", 0),
]


def test_a_crashed_leaders_alter_partition_is_handled_and_never_answered():
    run = replay(KIP320, PROPOSED + [step("crash", 0, kind="process")])
    (orphan,) = run.states[-1].alter_partition[0]
    assert orphan.orphan and orphan.isr == (0, 1, 2)
    handled = [step("crash", 0, kind="process"), step("restart", 1), step("handle_alter_partition", 0)]
    run = replay(KIP320, PROPOSED + handled)  # 1 registered again: no longer a fenced member
    s = run.states[-1]
    assert s.controller.isr == (0, 1, 2) and s.alter_partition_responses[0] == ()
    # its loss resends nothing: the change was its previous process's
    run = replay(KIP320, PROPOSED + [step("crash", 0, kind="process"), step("drop", 0, message="alter_partition")])
    assert run.states[-1].alter_partition[0] == ()


def test_a_crashed_followers_fetch_moves_the_leader_and_is_not_its_outstanding_request():
    steps = [step("send_fetch", 1), step("crash", 1, kind="process")]
    run = replay(KIP320, steps)
    assert run.states[-1].fetch_requests[1][0].orphan
    run = replay(KIP320, steps + [step("handle_fetch", 1)])
    s = run.states[-1]
    assert s.replicas[0].remote_leo[1] == 0 and s.fetch_responses[1] == ()  # handled, the answer lost
    run = replay(KIP320, steps + [step("restart", 1), step("deliver_leader_and_isr", 1, index=0)])
    assert why_disabled(KIP320, run.states[-1], Step("send_fetch", 1)) is None  # the orphan is not its own


def test_a_crashed_leaders_fetch_response_still_reaches_its_follower():
    run = replay(
        KIP320,
        [step("produce", 0, acks=1), step("send_fetch", 1), step("handle_fetch", 1), step("crash", 0, kind="power")]
        + [step("handle_fetch_response", 1)],
    )
    assert len(run.states[-1].replicas[1].log) == 1


def test_a_bounced_leaders_orphan_expansion_is_a_known_loss_until_kip903():
    props = [BY_ID["StrongIsr"], BY_ID["ReplicationQuorumSuperset"]]
    found = explore(KIP320, KIP101_SCENARIO1, props, budgets=False, stop_at_first=True)
    (violation,) = found.violations
    taken = [(s["step"], s.get("replica")) for s in violation.trace]
    leader = taken[taken.index(("expand_isr", 0)) :]  # the proposal, the leader's bounce, the commit
    assert leader.index(("crash", 0)) < leader.index(("restart", 0)) < leader.index(("handle_alter_partition", 0))
    assert explore(KIP320, KIP101_SCENARIO1, props).violations == []  # inside: the known loss


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["kip-903", "kip-966"])
def test_no_bounced_leaders_orphan_expansion_since_kip903(protocol):
    """From kip-903 on the bounced leader registers only after its old session ended (a new leader
    epoch), and applies the controller's state, the committed orphan's ISR too, before it serves:
    no such loss. kip-966 keeps kip-903's rule; both explorations run with the slow tests."""
    props = [BY_ID["StrongIsr"], BY_ID["ReplicationQuorumSuperset"]]
    assert explore(ModelConfig(protocol=protocol), KIP101_SCENARIO1, props, budgets=False).violations == []
