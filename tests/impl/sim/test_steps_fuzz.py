"""Any sequence of steps, possible or not, on the step-mode Cluster: a step either happens or is
refused with ClusterError and changes nothing; logs below the HW agree with the leader's."""

from hypothesis import given, settings
from hypothesis import strategies as st

from isrcheck.impl.sim import CRASH_KINDS, MESSAGE_KINDS, Cluster, ClusterConfig, ClusterError

STEP = st.one_of(
    st.tuples(st.just("produce"), st.integers(0, 2), st.sampled_from((-1, 0, 1))),
    st.tuples(
        st.sampled_from(
            (
                "consume",
                "send_fetch",
                "handle_fetch",
                "handle_fetch_response",
                "shrink_isr",
                "expand_isr",
                "handle_alter_partition",
                "handle_alter_partition_response",
                "fence",
                "restart",
                "flush",
            )
        ),
        st.integers(0, 2),
    ),
    st.tuples(st.just("deliver_leader_and_isr"), st.integers(0, 2), st.integers(0, 2)),
    st.tuples(st.just("drop"), st.sampled_from(MESSAGE_KINDS), st.integers(0, 2), st.integers(0, 1)),
    st.tuples(st.just("crash"), st.integers(0, 2), st.sampled_from(CRASH_KINDS)),
    st.tuples(st.sampled_from(("elect", "advance"))),
)


def apply(c, step, record):
    name, *args = step
    if name == "produce":
        c.produce(args[0], str(record).encode(), args[1])
    elif name == "drop":
        c.drop(*args)
    elif name == "advance":
        c.advance(1)
    else:
        getattr(c, name)(*args)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    st.sampled_from(("hw-truncation", "kip-101", "kip-279", "kip-320", "kip-903", "kip-966")),
    st.booleans(),
    st.lists(STEP, min_size=1, max_size=60),
)
def test_steps_happen_or_are_refused_without_effect(protocol, unclean, steps):
    c = Cluster(
        ClusterConfig(protocol=protocol, replicas=3, min_insync_replicas=2, unclean_leader_election_enable=unclean)
    )
    for i, step in enumerate(steps):
        before = (c.snapshot(), c.in_flight())
        try:
            apply(c, step, i + 1)
        except ClusterError as exc:
            assert exc.reason
            assert (c.snapshot(), c.in_flight()) == before, step
            continue
        snap = c.snapshot()
        for b in snap.brokers:
            assert b.hw <= len(b.log) and b.durable <= len(b.log)
            assert [e.offset for e in b.log] == list(range(len(b.log)))
        if protocol == "kip-320" and not unclean:
            leader = snap.controller.leader
            if leader >= 0 and snap.brokers[leader].alive and snap.brokers[leader].leader == leader:
                lead = snap.brokers[leader]
                for r in snap.controller.isr:  # StrongIsr: the ISR holds what the leader committed
                    if snap.brokers[r].alive:
                        assert snap.brokers[r].log[: lead.hw] == lead.log[: lead.hw], (step, r)
