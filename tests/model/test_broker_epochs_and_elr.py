"""kip-903 (broker epochs) and kip-966 (strict min ISR, ELR, unclean shutdown detection) in the
model, step by step against docs/steps.md."""

from isrcheck.model import ModelConfig, Step, apply, replay, why_disabled
from isrcheck.model.state import LeaderAndIsr

KIP903 = ModelConfig(protocol="kip-903")
KIP966 = ModelConfig(protocol="kip-966")
KIP320 = ModelConfig(protocol="kip-320")


def run(config, steps):
    r = replay(config, steps)
    return r.states[-1], [o for outs in r.outputs for o in outs]


def why(config, steps, last):
    return why_disabled(config, run(config, steps)[0], Step.from_json(last))


def step(name, replica=None, **fields):
    return {"step": name, **({} if replica is None else {"replica": replica}), **fields}


def fetch_round(r):
    return [step("send_fetch", r), step("handle_fetch", r), step("handle_fetch_response", r)]


LAG_OUT_2 = (
    [step("tick")] * 3
    + fetch_round(1)
    + [step("shrink_isr", 0), step("handle_alter_partition", 0), step("handle_alter_partition_response", 0)]
)


def test_registration_gives_a_new_broker_epoch_and_fetches_carry_it():
    s, _ = run(
        KIP903,
        [step("crash", 1, kind="process"), step("fence", 1), step("restart", 1), step("register", 1)] + fetch_round(1),
    )
    assert s.controller.broker_epochs == (0, 1, 0)
    assert s.replicas[1].broker_epoch == 1
    assert s.replicas[0].remote_broker_epoch == (-1, 1, -1)  # only a fetch that read records tells it


def test_older_variants_keep_broker_epochs_out_of_the_state():
    s, _ = run(
        ModelConfig(protocol="kip-320"),
        [step("crash", 1, kind="process"), step("restart", 1), step("deliver_leader_and_isr", 1)] + fetch_round(1),
    )
    assert s.controller.broker_epochs == (0, 0, 0) and s.replicas[0].remote_broker_epoch == (-1, -1, -1)


def test_an_expansion_proposed_from_a_previous_incarnation_is_ineligible():
    steps = (
        LAG_OUT_2
        + fetch_round(2)
        + [
            step("expand_isr", 0),
            step("crash", 2, kind="process"),
            step("lose_disk", 2),
            step("restart", 2),
            step("fence", 2),
            step("register", 2),
            step("handle_alter_partition", 0),
        ]
    )
    s, _ = run(KIP903, steps)
    assert s.alter_partition_responses[0][0].error == "INELIGIBLE_REPLICA"
    assert s.controller.isr == (0, 1)
    older = [st for st in steps if st["step"] not in ("fence", "register")]  # restart registers at once
    s, _ = run(ModelConfig(protocol="kip-320"), older)  # KAFKA-14139: accepted before broker epochs
    assert s.controller.isr == (0, 1, 2)
    # before the old session ended the controller holds the old broker epoch: accepted (the known
    # loss restart-within-session-after-loss)
    s, _ = run(KIP903, [st for st in steps if st["step"] not in ("fence", "register")])
    assert s.controller.isr == (0, 1, 2) and s.replicas[2].unregistered


def test_strict_min_isr_blocks_the_hw_and_hides_acks1_records():
    steps = (
        LAG_OUT_2
        + [step("tick")] * 3
        + [
            step("shrink_isr", 0),
            step("handle_alter_partition", 0),
            step("handle_alter_partition_response", 0),
            step("produce", 0, acks=1),
            step("consume", 0),
        ]
    )
    s, out = run(KIP966, steps)
    assert s.replicas[0].isr == (0,) and len(s.replicas[0].log) == 1
    assert s.replicas[0].hw == 0 and out[-1]["records"] == []
    s, out = run(ModelConfig(protocol="kip-903"), steps)
    assert s.replicas[0].hw == 1 and out[-1]["records"] == [[0, 1]]


def test_isr_below_min_isr_moves_members_into_the_elr_and_fencing_may_empty_the_isr():
    s, _ = run(KIP966, LAG_OUT_2)
    assert s.controller.isr == (0, 1) and s.controller.elr == ()  # still at min ISR
    s, _ = run(KIP966, LAG_OUT_2 + [step("crash", 1, kind="process"), step("fence", 1)])
    assert s.controller.isr == (0,) and s.controller.elr == (1,)
    s, _ = run(
        KIP966,
        LAG_OUT_2
        + [step("crash", 1, kind="process"), step("fence", 1), step("crash", 0, kind="process"), step("fence", 0)],
    )
    c = s.controller
    assert c.isr == () and c.elr == (0, 1) and c.leader == -1 and c.last_known_leader == 0


def test_election_takes_an_unfenced_elr_member_and_unclean_restart_leaves_the_elr():
    down = LAG_OUT_2 + [
        step("crash", 1, kind="clean"),
        step("fence", 1),
        step("crash", 0, kind="power"),
        step("fence", 0),
    ]
    back0 = [step("restart", 0), step("register", 0)]
    back1 = [step("restart", 1), step("register", 1)]
    s, _ = run(KIP966, down + [step("restart", 0)])  # started: the controller knows nothing yet
    assert s.controller.elr == (0, 1) and 0 in s.controller.fenced and s.replicas[0].unregistered
    s, _ = run(KIP966, down + back0)  # unclean: out of the ELR, unfenced
    assert s.controller.elr == (1,) and 0 not in s.controller.fenced
    s, _ = run(KIP966, down + back0 + back1 + [step("elect")])
    assert s.controller.leader == 1 and s.controller.isr == (1,) and s.controller.elr == ()
    # a process crash keeps the page cache: 1 stays in the ELR and is elected
    s, _ = run(
        KIP966,
        down[:-4] + [step("crash", 1, kind="process"), step("fence", 1)] + down[-2:] + back0 + back1 + [step("elect")],
    )
    assert s.controller.leader == 1
    # with both back from power losses (beyond the budget), the last known leader
    s, _ = run(
        KIP966,
        down[:-4] + [step("crash", 1, kind="power"), step("fence", 1)] + down[-2:] + back0 + back1 + [step("elect")],
    )
    assert s.controller.leader == 0 and s.controller.isr == (0,)
    assert "no eligible replica" in why(KIP966, down + back0, step("elect"))  # 1 is fenced


def test_a_fast_bounce_loses_isr_membership_and_leadership_from_kip903_on():
    # KRaft refuses the new process's registration while the old session lives: it registers once the
    # session expired, fenced by then or not (its registration's records then take it out first: a
    # clean shutdown as a fence would, an unclean one by KIP-966's handling), whatever the shutdown was
    for protocol in (KIP966, KIP903):
        for kind in ("power", "clean", "process"):
            bounced = [step("crash", 0, kind=kind), step("restart", 0)]
            for fenced in ([], [step("fence", 0)]):
                s, _ = run(protocol, bounced + fenced + [step("register", 0)])
                c = s.controller
                assert c.leader == -1 and c.isr == (1, 2) and c.leader_epoch == 1, (protocol, kind, c)
                assert c.partition_epoch == 1 and c.elr == ()
                assert c.last_known_leader == (0 if protocol is KIP966 else -1) and 0 not in c.fenced
                assert s.replicas[0].unregistered and s.replicas[0].leader_epoch == 0  # not caught up yet
                s, _ = run(protocol, bounced + fenced + [step("register", 0), step("deliver_leader_and_isr", 0)])
                assert s.replicas[0].leader == -1 and s.replicas[0].leader_epoch == 1 and not s.replicas[0].unregistered
    s, _ = run(KIP320, [step("crash", 0, kind="power"), step("restart", 0)])
    assert s.controller.leader == 0 and s.controller.leader_epoch == 0  # before KIP-380 it leads on


def test_a_bounced_leader_leads_on_its_replayed_metadata_until_it_registers():
    """kip-966 fast bounce after a power loss: the restarted leader applies the controller's state,
    in which it still leads (makeLeader in leader epoch 0), unregistered, broker epoch -1, serving
    nothing; the controller notices only when the session ends (fence, or the registration after it
    expired), and the registration takes it out of the ISR for its unclean shutdown (docs/steps.md,
    restart and register)."""
    steps = [step("produce", 0, acks=1), step("crash", 0, kind="power"), step("restart", 0)]
    s, _ = run(KIP966, steps)
    rep = s.replicas[0]
    assert (rep.leader, rep.leader_epoch, rep.isr, rep.unregistered) == (0, 0, (0, 1, 2), True)
    assert rep.broker_epoch == -1 and rep.log == () and rep.unclean_shutdown
    assert s.controller.leader == 0 and s.controller.isr == (0, 1, 2) and s.controller.fenced == ()
    for refused in (step("produce", 0, acks=1), step("consume", 0)):
        assert why(KIP966, steps, refused) is not None
    # a follower's fetch to it waits (a drop may take it)
    assert why(KIP966, steps + [step("send_fetch", 1)], step("handle_fetch", 1)) == "broker 0 is not registered yet"
    s, _ = run(KIP966, steps + [step("fence", 0)])
    assert s.controller.leader == -1 and s.controller.leader_epoch == 1 and s.replicas[0].leader == 0
    s, _ = run(KIP966, steps + [step("fence", 0), step("register", 0), step("deliver_leader_and_isr", 0)])
    assert not s.replicas[0].unregistered and s.replicas[0].broker_epoch == 1
    assert s.replicas[0].leader_epoch == 1 and s.controller.elr == () and 0 not in s.controller.isr
    # its followers fetch with broker epoch -1 while it is unregistered
    s, _ = run(KIP966, [step("crash", 1, kind="process"), step("restart", 1)] + fetch_round(1))
    assert s.replicas[0].remote_broker_epoch == (-1, -1, -1) and s.replicas[0].remote_leo[1] == 0


# a proposal in flight when the controller fences a member of the ISR: a partition change in the leader's epoch
FORGOTTEN = (
    LAG_OUT_2
    + fetch_round(2)
    + [step("expand_isr", 0, follower=2), step("crash", 1, kind="process"), step("fence", 1)]
    + [step("deliver_leader_and_isr", 0, index=0)]
)


def test_a_partition_change_in_the_leaders_epoch_forgets_its_proposal_from_kip_903_on():
    """KRaft's partition state (docs/steps.md): makeLeader's CommittedPartitionState forgets the
    proposal in flight; before, the leader keeps it pending through the change."""
    for config, pending in ((KIP903, None), (KIP966, None), (KIP320, (0, 1, 2))):
        leader = run(config, FORGOTTEN)[0].replicas[0]
        assert (leader.isr, leader.partition_epoch, leader.pending_isr) == ((0,), 2, pending), config.protocol


def test_one_alter_partition_awaits_its_answer_and_the_answer_to_a_forgotten_proposal_changes_nothing():
    """DefaultAlterPartitionManager holds the forgotten proposal's request until it is answered: no
    new proposal before that; the answer (INVALID_UPDATE_VERSION, the fence moved the partition
    epoch on) is ignored, and then the leader may propose again."""
    expand = step("expand_isr", 0, follower=2)
    assert why(KIP966, FORGOTTEN, expand) == "an AlterPartition of broker 0 awaits its answer"
    answered = FORGOTTEN + [step("handle_alter_partition", 0)]
    assert why(KIP966, answered, expand) == "an AlterPartition of broker 0 awaits its answer"
    s, _ = run(KIP966, answered)
    assert s.alter_partition_responses[0][0].error == "INVALID_UPDATE_VERSION"
    assert why(KIP966, answered + [step("handle_alter_partition_response", 0)], expand) is None
    # a lost request of a forgotten proposal is not sent again (docs/steps.md, drop), and frees the manager
    lost = FORGOTTEN + [step("drop", 0, message="alter_partition", index=0)]
    s, _ = run(KIP966, lost)
    assert s.alter_partition[0] == () and why(KIP966, lost, expand) is None


def test_a_change_of_the_partition_epoch_the_leader_already_adopted_is_applied_from_kip_903_on():
    """makeLeader skips only an older partition epoch: the metadata record of the leader's own
    commit, applied after the answer it adopted, still forgets a proposal made in between."""
    steps = LAG_OUT_2 + fetch_round(2) + [step("expand_isr", 0, follower=2)]
    for config, pending in ((KIP966, None), (KIP320, (0, 1, 2))):
        s, _ = run(config, steps)
        own = s.replicas[0]
        again = LeaderAndIsr(0, own.leader_epoch, own.isr, own.partition_epoch)  # as KRaft's metadata log sends it
        s = s._replace(leader_and_isr=(((again,),) + s.leader_and_isr[1:]))
        after, _ = apply(config, s, Step.from_json(step("deliver_leader_and_isr", 0, index=0)))
        assert after.replicas[0].pending_isr == pending, config.protocol
