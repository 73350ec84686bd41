"""kip-903 (broker epochs) and kip-966 (strict min ISR, ELR, unclean shutdown detection) in the
model, step by step against docs/steps.md."""

from isrcheck.model import ModelConfig, Step, replay, why_disabled

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
        [step("crash", 1, kind="process"), step("restart", 1), step("deliver_leader_and_isr", 1)] + fetch_round(1),
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
            step("handle_alter_partition", 0),
        ]
    )
    s, _ = run(KIP903, steps)
    assert s.alter_partition_responses[0][0].error == "INELIGIBLE_REPLICA"
    assert s.controller.isr == (0, 1)
    s, _ = run(ModelConfig(protocol="kip-320"), steps)  # KAFKA-14139: accepted before broker epochs
    assert s.controller.isr == (0, 1, 2)


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
    s, _ = run(KIP966, down + [step("restart", 0)])  # unclean: out of the ELR, unfenced
    assert s.controller.elr == (1,) and 0 not in s.controller.fenced
    s, _ = run(KIP966, down + [step("restart", 0), step("restart", 1), step("elect")])
    assert s.controller.leader == 1 and s.controller.isr == (1,) and s.controller.elr == ()
    # a process crash keeps the page cache: 1 stays in the ELR and is elected
    s, _ = run(
        KIP966,
        down[:-4]
        + [step("crash", 1, kind="process"), step("fence", 1)]
        + down[-2:]
        + [step("restart", 0), step("restart", 1), step("elect")],
    )
    assert s.controller.leader == 1
    # with both back from power losses (beyond the budget), the last known leader
    s, _ = run(
        KIP966,
        down[:-4]
        + [step("crash", 1, kind="power"), step("fence", 1)]
        + down[-2:]
        + [step("restart", 0), step("restart", 1), step("elect")],
    )
    assert s.controller.leader == 0 and s.controller.isr == (0,)
    assert "no eligible replica" in why(KIP966, down + [step("restart", 0)], step("elect"))  # 1 is fenced


def test_a_fast_bounce_loses_isr_membership_and_leadership_from_kip903_on():
    # KRaft refuses the new process's registration while the old session lives: the restart ends
    # it first (a fence), whatever the shutdown was
    for protocol in (KIP966, KIP903):
        for kind in ("power", "clean", "process"):
            s, _ = run(protocol, [step("crash", 0, kind=kind), step("restart", 0)])
            c = s.controller
            assert c.leader == -1 and c.isr == (1, 2) and c.leader_epoch == 1, (protocol, kind, c)
            assert c.last_known_leader == (0 if protocol is KIP966 else -1) and 0 not in c.fenced
    s, _ = run(KIP320, [step("crash", 0, kind="power"), step("restart", 0)])
    assert s.controller.leader == 0 and s.controller.leader_epoch == 0  # before KIP-380 it leads on
