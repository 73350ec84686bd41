"""Step semantics of the reference model against Kafka's documented behaviour (docs/steps.md)."""

import pytest

from isrcheck.model import (
    PROTOCOLS,
    Entry,
    FetchRequest,
    InvalidStep,
    ModelConfig,
    State,
    Step,
    StepRefused,
    apply,
    enabled,
    initial_state,
    replay,
    why_disabled,
)

CFG = ModelConfig(protocol="kip-320")


def run(steps, config=CFG):
    """Replay steps; return the final state and the outputs of every step, flattened."""
    r = replay(config, steps)
    return r.states[-1], [o for outs in r.outputs for o in outs]


def produce(r=0, acks=-1):
    return {"step": "produce", "replica": r, "acks": acks}


def fetch_round(r):
    return [
        {"step": "send_fetch", "replica": r},
        {"step": "handle_fetch", "replica": r},
        {"step": "handle_fetch_response", "replica": r},
    ]


def test_hw_stays_zero_after_first_fetch_round_and_becomes_one_after_second():
    s, _ = run([produce(acks=1)] + fetch_round(1) + fetch_round(2))
    assert [len(r.log) for r in s.replicas] == [1, 1, 1]
    assert [r.hw for r in s.replicas] == [0, 0, 0]  # the leader learns follower LEOs one round late
    two = [produce(acks=1)] + fetch_round(1) + fetch_round(2) + fetch_round(1) + fetch_round(2)
    s, _ = run(two)
    assert s.replicas[0].hw == 1  # follower 2's second fetch moved it
    # ... but that fetch's answer carries the HW read before it moved (Partition.fetchRecords)
    assert [s.replicas[1].hw, s.replicas[2].hw] == [0, 0]
    s, _ = run(two + fetch_round(1))
    assert [s.replicas[1].hw, s.replicas[2].hw] == [1, 0]  # the next fetch brings it


def test_acks_all_completes_only_once_hw_passes_the_record():
    steps = [produce(acks=-1)] + fetch_round(1) + fetch_round(2) + fetch_round(1)
    s, outs = run(steps)
    assert outs == []  # parked in DelayedProduce: follower 2 has not confirmed offset 0 yet
    assert s.replicas[0].pending_produces == ((1, 0, 1000, 1),)  # (first record, base, deadline, records)
    s, outs = run(steps + fetch_round(2))
    assert outs == [
        {"type": "produce", "replica": 0, "record": 1, "records": 1, "acks": -1, "error": "NONE", "offset": 0}
    ]
    assert s.acked == ((0, 1),)
    assert s.replicas[0].pending_produces == ()


def test_acks_one_answers_at_once_and_acks_zero_not_at_all():
    _, outs = run([produce(acks=1), produce(acks=0)])
    assert outs == [
        {"type": "produce", "replica": 0, "record": 1, "records": 1, "acks": 1, "error": "NONE", "offset": 0}
    ]


def test_not_enough_replicas_when_isr_below_min_isr_before_append():
    cfg = ModelConfig(protocol="kip-320", replicas=3, min_insync_replicas=3)
    # broker 2 dies and its session expires: the controller shrinks the ISR to {0, 1}
    steps = [
        {"step": "crash", "replica": 2, "kind": "process"},
        {"step": "fence", "replica": 2},
        {"step": "deliver_leader_and_isr", "replica": 0},
    ]
    s, outs = run(steps + [produce(acks=-1)], cfg)
    assert s.replicas[0].isr == (0, 1)
    assert outs[-1]["error"] == "NOT_ENOUGH_REPLICAS" and outs[-1]["offset"] == -1
    assert s.replicas[0].log == ()  # nothing appended
    s, outs = run(steps + [produce(acks=1)], cfg)  # acks=1 does not care about min ISR
    assert outs[-1]["error"] == "NONE" and len(s.replicas[0].log) == 1


def test_produce_to_a_follower_is_not_leader_or_follower_and_still_takes_a_record_id():
    s, outs = run([produce(r=1, acks=1), produce(r=0, acks=1)])
    assert outs[0]["error"] == "NOT_LEADER_OR_FOLLOWER"
    assert outs[1]["record"] == 2 and s.replicas[0].log == (Entry(0, 0, 2, 0),)


def test_follower_hw_is_min_of_leader_hw_and_own_leo():
    cfg = ModelConfig(protocol="kip-320", replicas=2, min_insync_replicas=1)
    # leader: 2 records, HW 2 once follower 1 confirmed both; then a third record
    base = [produce(acks=1), produce(acks=1)] + fetch_round(1) + fetch_round(1) + fetch_round(1)
    s, _ = run(base, cfg)
    assert (s.replicas[0].hw, s.replicas[1].hw) == (2, 2)
    s, _ = run(base + [produce(acks=1)] + fetch_round(1), cfg)
    assert (len(s.replicas[1].log), s.replicas[1].hw) == (3, 2)  # leader HW 2 < own LEO 3
    # a follower that truncated below the leader's HW takes its own LEO
    s, _ = run(base + [{"step": "crash", "replica": 1, "kind": "power"}], cfg)
    assert s.replicas[1].hw == 2 and s.replicas[0].hw == 2


def test_isr_shrinks_only_for_followers_not_caught_up_within_lag_time():
    cfg = ModelConfig(protocol="kip-320", replica_lag_time_max_ticks=2)
    tick = {"step": "tick"}
    shrink = {"step": "shrink_isr", "replica": 0}
    # follower 1 keeps fetching (caught up at tick 2); follower 2 never fetches
    s, _ = run([tick, tick] + fetch_round(1), cfg)
    assert why_disabled(cfg, s, shrink) is not None  # now - last caught up = 2, not > 2
    s, _ = run([tick, tick] + fetch_round(1) + [tick, shrink], cfg)
    assert s.replicas[0].pending_isr == (0, 1)
    assert s.alter_partition[0][0].isr == (0, 1)
    s, _ = run(
        [tick, tick]
        + fetch_round(1)
        + [
            tick,
            shrink,
            {"step": "handle_alter_partition", "replica": 0},
            {"step": "handle_alter_partition_response", "replica": 0},
        ],
        cfg,
    )
    assert s.controller.isr == (0, 1) and s.replicas[0].isr == (0, 1) and s.replicas[0].pending_isr is None


@pytest.mark.parametrize("protocol", sorted(PROTOCOLS))
def test_a_follower_that_never_fetched_is_not_added_to_the_isr_until_it_fetches(protocol):
    """Kafka's ReplicaState.Empty: the leader of a new partition knows no follower's LEO or broker
    epoch, so Partition.isFollowerInSync holds for none of them before its first Fetch."""
    cfg = ModelConfig(protocol=protocol)
    assert initial_state(cfg).replicas[0].remote_leo == (-1, -1, -1)
    assert initial_state(cfg).replicas[0].remote_broker_epoch == (-1, -1, -1)
    tick = {"step": "tick"}
    lag_out_2 = (
        [tick] * 3
        + fetch_round(1)
        + [
            {"step": "shrink_isr", "replica": 0},
            {"step": "handle_alter_partition", "replica": 0},
            {"step": "handle_alter_partition_response", "replica": 0},
        ]
    )
    expand = {"step": "expand_isr", "replica": 0}
    s, _ = run(lag_out_2, cfg)
    assert s.replicas[0].isr == (0, 1) and s.replicas[0].remote_leo[2] == -1
    assert why_disabled(cfg, s, expand) == "no follower outside the ISR has caught up to the high watermark"
    s, _ = run(lag_out_2 + fetch_round(2) + [expand], cfg)
    epoch = 0 if protocol in ("kip-903", "kip-966") else -1  # the broker epoch of its Fetch (KIP-903)
    assert s.alter_partition[0][0].isr == (0, 1, 2)
    assert s.alter_partition[0][0].broker_epochs == (epoch, epoch, epoch)


def test_a_follower_behind_the_leo_is_not_caught_up_even_if_it_fetches():
    cfg = ModelConfig(protocol="kip-320", replica_lag_time_max_ticks=1)
    tick = {"step": "tick"}
    s, _ = run(
        [produce(acks=1), tick, tick, {"step": "send_fetch", "replica": 1}, {"step": "handle_fetch", "replica": 1}], cfg
    )
    assert s.replicas[0].remote_leo[1] == 0 and s.replicas[0].last_caught_up[1] == 0
    assert Step("shrink_isr", 0) in enabled(cfg, s)


def test_refused_step_names_the_reason_and_changes_nothing():
    s = initial_state(CFG)
    step = {"step": "handle_fetch", "replica": 1}
    assert why_disabled(CFG, s, step) == "no fetch request of replica 1 in flight"
    with pytest.raises(StepRefused) as info:
        apply(CFG, s, step)
    assert info.value.reason == "no fetch request of replica 1 in flight"
    assert s == initial_state(CFG)
    with pytest.raises(StepRefused, match="broker 0 is the leader"):
        apply(CFG, s, {"step": "send_fetch", "replica": 0})
    with pytest.raises(StepRefused, match="fetch outstanding"):
        run([{"step": "send_fetch", "replica": 1}] * 2)


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"step": "jump"}, "unknown step"),
        ({"step": "produce", "replica": 0}, "missing field 'acks'"),
        ({"step": "produce", "replica": 0, "acks": 2}, "acks must be"),
        ({"step": "crash", "replica": 0, "kind": "meteor"}, "kind must be"),
        ({"step": "consume", "replica": 7}, "out of range"),
        ({"step": "tick", "replica": 0}, "unexpected field"),
        ({"step": "flush", "replica": "0"}, "must be an integer"),
    ],
)
def test_malformed_steps_are_invalid(bad, message):
    with pytest.raises(InvalidStep, match=message):
        apply(CFG, initial_state(CFG), bad)


def test_steps_round_trip_through_json():
    s, _ = run([produce(acks=1), {"step": "crash", "replica": 0, "kind": "process"}, {"step": "fence", "replica": 0}])
    for st in enabled(CFG, s):
        assert Step.from_json(st.to_json()) == st


def test_state_is_built_from_plain_values_and_compares_by_value():
    s, _ = run([produce(acks=-1)] + fetch_round(1))
    rebuilt = State(*[tuple(x) if isinstance(x, tuple) else x for x in s])
    assert rebuilt == s and hash(rebuilt) == hash(s)
    assert State(**s._asdict()) == s


def test_kip320_fences_a_fetch_from_an_older_leader_epoch():
    cfg = ModelConfig(protocol="kip-320", replicas=3, min_insync_replicas=1)
    s, _ = run(
        [
            {"step": "crash", "replica": 0, "kind": "process"},
            {"step": "fence", "replica": 0},
            {"step": "elect"},
            {"step": "deliver_leader_and_isr", "replica": 1, "index": 1},
        ],
        cfg,
    )
    assert (s.replicas[1].leader, s.replicas[1].leader_epoch) == (1, 2)
    # a Fetch of follower 2 sent while it still knew leader epoch 0 reaches broker 1
    stale = s._replace(fetch_requests=((), (), (FetchRequest(1, 0, 0, -1, -1, 0),)))
    s320, _ = apply(cfg, stale, {"step": "handle_fetch", "replica": 2})
    assert s320.fetch_responses[2][0].error == "FENCED_LEADER_EPOCH"
    assert s320.replicas[1].remote_leo[2] == -1
    cfg279 = ModelConfig(protocol="kip-279", replicas=3, min_insync_replicas=1)
    s279, _ = apply(cfg279, stale, {"step": "handle_fetch", "replica": 2})
    assert s279.fetch_responses[2][0].error == "NONE"  # before KIP-320 a stale fetch is served
    assert s279.replicas[1].remote_leo[2] == 0


def test_truncation_on_becoming_follower_per_variant():
    """Broker 1 holds an entry of epoch 0 the new leader (broker 2) lacks, with HW 0."""

    def scenario(protocol):
        cfg = ModelConfig(protocol=protocol, replicas=3, min_insync_replicas=1)
        s, _ = run(
            [produce(acks=1)]
            + fetch_round(1)
            + [
                {"step": "crash", "replica": 0, "kind": "process"},
                {"step": "fence", "replica": 0},
                {"step": "crash", "replica": 1, "kind": "process"},
                {"step": "fence", "replica": 1},
                {"step": "elect"},
                {"step": "restart", "replica": 1},
            ]
            + [{"step": "deliver_leader_and_isr", "replica": 2}] * 3
            + [{"step": "deliver_leader_and_isr", "replica": 1}],
            cfg,
        )
        return cfg, s

    cfg, s = scenario("hw-truncation")
    assert s.controller.leader == 2 and s.replicas[2].leader == 2
    assert s.replicas[1].log == ()  # truncated to its HW (0) at once
    for protocol in ("kip-101", "kip-279"):
        cfg, s = scenario(protocol)
        assert s.replicas[1].truncating_epoch == 0 and len(s.replicas[1].log) == 1
        s = replay(cfg, fetch_round(1), s).states[-1]
        assert s.replicas[1].log == () and s.replicas[1].truncating_epoch == -1
    cfg, s = scenario("kip-320")
    assert len(s.replicas[1].log) == 1 and s.replicas[1].truncating_epoch == -1
    s = replay(cfg, fetch_round(1), s).states[-1]
    assert s.replicas[1].log == ()  # diverging epoch: the leader has no epoch <= 0


def test_power_loss_drops_the_unflushed_suffix_at_restart():
    steps = [
        produce(acks=1),
        {"step": "flush", "replica": 0},
        produce(acks=1),
        {"step": "crash", "replica": 0, "kind": "power"},
    ]
    s, _ = run(steps)
    assert len(s.replicas[0].log) == 2 and s.replicas[0].power_lost
    s, _ = run(steps + [{"step": "fence", "replica": 0}, {"step": "restart", "replica": 0}])
    assert len(s.replicas[0].log) == 1 and s.replicas[0].alive
    assert s.leader_and_isr[0][-1].leader_epoch == s.controller.leader_epoch


def test_clean_shutdown_keeps_everything_and_checkpoints_the_hw():
    steps = [produce(acks=1)] + fetch_round(1) + fetch_round(2) + fetch_round(1) + fetch_round(2) + fetch_round(2)
    s, _ = run(
        steps
        + [
            {"step": "crash", "replica": 2, "kind": "clean"},
            {"step": "fence", "replica": 2},
            {"step": "restart", "replica": 2},
        ]
    )
    assert len(s.replicas[2].log) == 1 and s.replicas[2].hw == 1
    s, _ = run(
        steps
        + [
            {"step": "crash", "replica": 2, "kind": "process"},
            {"step": "fence", "replica": 2},
            {"step": "restart", "replica": 2},
        ]
    )
    assert len(s.replicas[2].log) == 1 and s.replicas[2].hw == 0  # checkpoint never written


def test_every_protocol_variant_is_registered_with_docstrings():
    assert list(PROTOCOLS) == ["hw-truncation", "kip-101", "kip-279", "kip-320", "kip-903", "kip-966"]
    for proto in PROTOCOLS.values():
        for name in (
            "new_fetcher",
            "check_fetch",
            "in_sync",
            "consume_error",
            "next_broker_epoch",
            "fetch_broker_epoch",
            "proposal_epoch",
            "hw_blocked",
            "unclean_shutdown",
            "isr_after_fence",
            "elr_after",
            "elect_clean",
            "last_known_leader",
        ):
            assert getattr(type(proto), name).__doc__


def test_kip320_consumer_gets_offset_not_available_below_epoch_start():
    cfg = ModelConfig(protocol="kip-320", replicas=3, min_insync_replicas=1)
    steps = (
        [produce(acks=1)]
        + fetch_round(1)
        + [
            {"step": "crash", "replica": 0, "kind": "process"},
            {"step": "fence", "replica": 0},
            {"step": "elect"},
            {"step": "deliver_leader_and_isr", "replica": 1},
            {"step": "deliver_leader_and_isr", "replica": 1},
            {"step": "consume", "replica": 1},
        ]
    )
    _, outs = run(steps, cfg)
    assert outs[-1]["error"] == "OFFSET_NOT_AVAILABLE"
    _, outs = run(steps, ModelConfig(protocol="kip-279", replicas=3, min_insync_replicas=1))
    assert outs[-1] == {"type": "consume", "replica": 1, "error": "NONE", "hw": 0, "records": []}
