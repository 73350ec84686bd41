"""Random walks over the model (Hypothesis): the enabled/refused contract holds in every state."""

from hypothesis import given, settings
from hypothesis import strategies as st

from isrcheck.model import (
    PROTOCOLS,
    InvalidStep,
    ModelConfig,
    StepRefused,
    apply,
    enabled,
    initial_state,
    why_disabled,
)
from isrcheck.model.alphabet import STEPS, steps_of
from isrcheck.specs import BY_ID

INVARIANT_FOR_ALL = ("HighWatermarkBound", "LeaderInIsr", "NoDuplicateOffsets")


@settings(max_examples=40, deadline=None)
@given(
    protocol=st.sampled_from(sorted(PROTOCOLS)),
    replicas=st.integers(1, 4),
    unclean=st.booleans(),
    choices=st.lists(st.integers(0, 10_000), min_size=1, max_size=60),
)
def test_enabled_steps_apply_and_the_others_are_refused_without_change(protocol, replicas, unclean, choices):
    config = ModelConfig(
        protocol=protocol,
        replicas=replicas,
        min_insync_replicas=1,
        unclean_leader_election_enable=unclean,
        replica_lag_time_max_ticks=1,
        request_timeout_ticks=3,
        flush_messages=2,
    )
    state = initial_state(config)
    for choice in choices:
        steps = enabled(config, state)
        assert steps == enabled(config, state)  # deterministic order
        every = [st for kind in STEPS.values() for st in steps_of(kind, replicas, state)]
        assert steps == [c for c in every if why_disabled(config, state, c) is None]
        for refused in [c for c in every if c not in steps][:5]:
            try:
                apply(config, state, refused.to_json())
            except StepRefused as exc:
                assert exc.reason == why_disabled(config, state, refused)
            else:
                raise AssertionError(f"{refused} applied although disabled")
        if not steps:
            break
        step = steps[choice % len(steps)]
        nxt, outputs = apply(config, state, step.to_json())
        again, outputs_again = apply(config, state, step)
        assert (nxt, outputs) == (again, outputs_again)  # a step is a function of the state
        assert hash(nxt) == hash(again)
        for pid in INVARIANT_FOR_ALL:
            assert BY_ID[pid].check(nxt), (pid, step)
        state = nxt


def test_out_of_range_replica_is_an_invalid_step_not_a_refusal():
    config = ModelConfig(protocol="kip-320", replicas=2)
    state = initial_state(config)
    for bad in ({"step": "restart", "replica": 2}, {"step": "drop", "message": "fetch_request", "replica": -1}):
        try:
            why_disabled(config, state, bad)
        except InvalidStep as exc:
            assert "out of range" in str(exc)
        else:
            raise AssertionError(bad)
