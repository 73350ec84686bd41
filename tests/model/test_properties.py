"""The property catalog: each predicate on small hand-built states, and the catalog's contract."""

from types import SimpleNamespace

from isrcheck.model import Entry, ModelConfig, initial_state, replay
from isrcheck.specs import BY_ID, FAULT_BUDGET, PROPERTIES

CFG = ModelConfig(protocol="kip-320")
DESIGN_IDS = [
    "LeaderInIsr",
    "WeakIsr",
    "StrongIsr",
    "LogMatching",
    "HighWatermarkBound",
    "ReplicationQuorumSuperset",
    "ElrCompleteness",
    "NoLostAckedWrite",
    "LeaderCompleteness",
    "NoDivergentRead",
    "MonotonicHighWatermark",
    "NoUncommittedRead",
    "NoDuplicateOffsets",
]


def with_logs(*logs, hws=None):
    """The initial state with the given replica logs (lists of (epoch, record)) and HWs."""
    s = initial_state(CFG)
    reps = []
    for i, (rep, log) in enumerate(zip(s.replicas, logs)):
        entries = tuple(Entry(o, e, r, o) for o, (e, r) in enumerate(log))
        reps.append(rep._replace(log=entries, hw=hws[i] if hws else 0))
    return s._replace(replicas=tuple(reps))


def holds(pid, state):
    return BY_ID[pid].check(state)


def test_catalog_has_every_design_property_with_statement_source_and_kind():
    assert [p.id for p in PROPERTIES] == DESIGN_IDS
    for p in PROPERTIES:
        assert p.statement and p.source and p.kind in ("invariant", "history")
    assert {p.id for p in PROPERTIES if p.kind == "history"} == set(DESIGN_IDS[7:])
    assert "KIP-966" in BY_ID["NoLostAckedWrite"].source and BY_ID["NoLostAckedWrite"].budget.statement == FAULT_BUDGET
    for p in PROPERTIES:  # every property says within which faults Kafka promises it, and where
        assert p.budget.statement and p.budget.source, p.id


def test_every_property_holds_initially_and_after_a_healthy_replication():
    steps = (
        [{"step": "produce", "replica": 0, "acks": -1}]
        + [
            {"step": name, "replica": r}
            for r in (1, 2, 1, 2)
            for name in ("send_fetch", "handle_fetch", "handle_fetch_response")
        ]
        + [{"step": "consume", "replica": 0}]
    )
    for s in replay(CFG, steps).states:
        assert [p.id for p in PROPERTIES if not p.check(s)] == []


def test_log_matching_fails_only_when_equal_epochs_sit_on_different_prefixes():
    assert holds("LogMatching", with_logs([(0, 1), (0, 2)], [(0, 1)], []))
    assert holds("LogMatching", with_logs([(0, 1), (0, 2)], [(0, 1), (2, 3)], []))  # diverged, other epochs
    assert not holds("LogMatching", with_logs([(0, 1), (2, 3)], [(0, 9), (2, 3)], []))
    assert not holds("LogMatching", with_logs([(0, 1)], [(0, 2)], []))  # same offset and epoch, other record


def test_strong_isr_compares_the_leader_below_its_hw_with_the_controllers_isr():
    assert holds("StrongIsr", with_logs([(0, 1), (0, 2)], [(0, 1)], [(0, 1)], hws=[1, 0, 0]))
    assert not holds("StrongIsr", with_logs([(0, 1), (0, 2)], [(0, 1)], [(0, 1)], hws=[2, 0, 0]))
    s = with_logs([(0, 1), (0, 2)], [(0, 1)], [(0, 1), (0, 2)], hws=[2, 0, 0])
    s = s._replace(controller=s.controller._replace(isr=(0, 2)))
    assert holds("StrongIsr", s)
    # WeakIsr reads the leader's own view, which still lists replica 1
    assert not holds("WeakIsr", s)


def test_high_watermark_bound_and_leader_in_isr():
    assert not holds("HighWatermarkBound", with_logs([(0, 1)], [], [], hws=[1, 1, 0]))
    s = initial_state(CFG)
    assert not holds("LeaderInIsr", s._replace(controller=s.controller._replace(isr=(1, 2))))


def test_replication_quorum_superset_counts_a_pending_expansion():
    s = initial_state(CFG)
    lead = s.replicas[0]._replace(isr=(0, 1))
    shrunk_view = s._replace(replicas=(lead,) + s.replicas[1:])
    assert not holds("ReplicationQuorumSuperset", shrunk_view)
    pending = s._replace(replicas=(lead._replace(pending_isr=(0, 1, 2)),) + s.replicas[1:])
    assert holds("ReplicationQuorumSuperset", pending)


def test_history_properties_read_the_ghost_variables():
    s = with_logs([(0, 1), (0, 2)], [(0, 1), (0, 2)], [(0, 1), (0, 2)])
    assert holds("NoLostAckedWrite", s._replace(acked=((0, 1), (1, 2))))
    assert not holds("NoLostAckedWrite", s._replace(acked=((1, 7),)))
    assert not holds("NoLostAckedWrite", s._replace(acked=((2, 3),)))
    assert not holds("NoDivergentRead", s._replace(consumed=((0, 1), (0, 2))))
    assert not holds("NoDuplicateOffsets", s._replace(consumed=((0, 1), (1, 1))))
    assert not holds("NoDuplicateOffsets", with_logs([(0, 1), (0, 1)], [], []))
    assert not holds("MonotonicHighWatermark", s._replace(consumer_hw_regressed=True))
    assert not holds("NoUncommittedRead", s._replace(consumed=((1, 9),)))
    # no established leader (the controller's leader has not taken over): nothing to compare
    s2 = s._replace(controller=s.controller._replace(leader_epoch=3))
    assert holds("NoLostAckedWrite", s2._replace(acked=((2, 3),)))


def test_predicates_read_any_object_with_the_documented_attributes():
    fields = dict(leader=0, leader_epoch=0, isr=(0, 1), pending_isr=None, unregistered=False)
    rep = SimpleNamespace(alive=True, log=[(0, 0, 1)], hw=1, **fields)
    follower = SimpleNamespace(alive=True, log=[(0, 0, 1)], hw=1, **fields)
    state = SimpleNamespace(
        replicas=[rep, follower],
        controller=SimpleNamespace(leader=0, leader_epoch=0, isr=(0, 1), partition_epoch=0, elr=()),
        acked=((0, 1),),
        consumed=((0, 1),),
        consumer_hw_regressed=False,
    )
    assert [p.id for p in PROPERTIES if not p.check(state)] == []
    follower.log = [(0, 0, 2)]
    assert {p.id for p in PROPERTIES if not p.check(state)} == {"WeakIsr", "StrongIsr", "LogMatching"}


def test_elr_completeness_needs_every_live_elr_member_to_hold_what_clients_were_told():
    s = with_logs([(0, 1)], [], [(0, 1)])
    s = s._replace(controller=s.controller._replace(isr=(0,), elr=(2,)), acked=((0, 1),))
    assert holds("ElrCompleteness", s)
    s = s._replace(controller=s.controller._replace(elr=(1, 2)))
    assert not holds("ElrCompleteness", s)  # member 1 lacks the acknowledged write
    down = s.replicas[1]._replace(alive=False)
    assert holds("ElrCompleteness", s._replace(replicas=(s.replicas[0], down, s.replicas[2])))


def test_leader_completeness_reads_the_controllers_leader_even_before_it_knows():
    s = with_logs([], [(0, 1)], [(0, 1)])._replace(consumed=((0, 1),))
    assert not holds("LeaderCompleteness", s)  # leader 0 (alive) lacks a record a consumer read
    s = s._replace(controller=s.controller._replace(leader=1))
    assert holds("LeaderCompleteness", s)
