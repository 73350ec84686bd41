"""The sentence a counterexample opens with, on real schedules: which broker, which offset, what a
client was told and what removed it, found in the trace; for a divergence, what each side did
at the step where they part; and the property's statement when the state is beyond the finders."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from isrcheck.conformance.core.lockstep import Lockstep
from isrcheck.conformance.core.schedule import Schedule, load_schedule
from isrcheck.conformance.reports.explain import explain, first_bad
from isrcheck.specs import BY_ID

LRS = (
    " This is outside NoLostAckedWrite's fault budget (the run entered last-replica-standing, a loss this "
    "variant suffers by design): Kafka does not promise it there, so it is no violation."
)


def outside(prop: str, why: str) -> str:
    """The sentence's end for a property broken only outside its fault budget."""
    return f" This is outside {prop}'s fault budget ({why}): Kafka does not promise it there, so it is no violation."


def explained(path: str, protocol: str | None = None, steps=None):
    schedule = load_schedule(path)
    if protocol is not None:
        schedule = schedule.with_protocol(protocol)
    if steps is not None:
        schedule = schedule.with_steps(steps)
    trace = Lockstep.run(schedule, record=True)
    return trace, explain(trace)


def test_lost_acked_write_names_the_leader_the_producers_answer_and_the_truncation(scenario):
    trace, why = explained(scenario("kip101-scenario1"), "hw-truncation")
    assert trace.verdict.property == "NoLostAckedWrite"
    assert why.sentence == (
        "Broker 1, elected leader in epoch 2 at step 11, does not hold offset 0 (record 1), which a producer "
        "was told was written with acks=all at step 5; it was lost when broker 1 truncated its log to offset 0 "
        "(its HW) at step 9 deliver_leader_and_isr(replica=1, index=0)."
    )
    assert (why.step, why.replica, why.promised, why.cause) == (13, 1, 5, 9)
    # the steps it names are the trace's: the acks=all answer, and the truncation of broker 1's log
    assert trace.frames[5].outputs[0] == {
        "type": "produce",
        "replica": 0,
        "record": 1,
        "records": 1,
        "acks": -1,
        "error": "NONE",
        "offset": 0,
    }
    assert len(trace.frames[8].state.replicas[1].log) == 1 and trace.frames[9].state.replicas[1].log == ()


def test_the_sentence_docs_ci_quotes_is_the_one_given(scenario):
    _trace, why = explained(scenario("kip101-scenario1"), "hw-truncation")
    doc = " ".join((Path(__file__).resolve().parents[3] / "docs" / "ci.md").read_text(encoding="utf-8").split())
    assert re.search(r'on hw-truncation: "(.*?)"', doc).group(1) == why.sentence


def test_lost_acked_write_in_a_power_loss_before_fsync(scenario):
    trace, why = explained(scenario("last-replica-standing"), "kip-320")
    assert why.sentence == (
        "Broker 0, elected leader in epoch 2 at step 17, holds record 2 at offset 0, not record 1, which a "
        "producer was told was written with acks=all at step 5; it was lost when broker 0 lost power at step 13 "
        "before it fsynced it." + LRS
    )
    assert trace.frames[13].step == {"step": "crash", "replica": 0, "kind": "power"}


def test_lost_acked_write_on_a_leader_elected_uncleanly_that_never_held_it(scenario):
    _trace, why = explained(scenario("unclean-election-loss"), "kip-320")
    assert why.sentence == (
        "Broker 1, elected leader in epoch 2 at step 9 by an unclean election (the ISR was [0]), holds record 2 "
        "at offset 0, not record 1, which a producer was told was written with acks=all at step 6; broker 1 never "
        "held it, and it is only on broker 0 (down)."
        + outside("NoLostAckedWrite", "unclean leader election is enabled")
    )
    assert why.cause is None


def test_strong_isr_names_the_leader_the_member_and_how_the_logs_parted(scenario):
    trace, why = explained(scenario("kip101-scenario2"), "hw-truncation")
    assert trace.verdict.property == "StrongIsr"
    assert why.sentence == (
        "Broker 1, elected leader in epoch 2 at step 18, has offset 1 (epoch 2, record 3) below its HW 2, but "
        "broker 0, in the controller's ISR [0, 1] since step 34 handle_alter_partition(replica=1), holds epoch 0, "
        "record 2 there; broker 1 had held record 2 there too, until it lost power at step 12 before it fsynced it."
    )
    assert (why.replica, why.cause) == (0, 12)


def test_strong_isr_with_a_replaced_disk(scenario):
    _trace, why = explained(scenario("kafka-14139-replaced-disk"), "kip-320")
    assert why.sentence == (
        "Broker 0, leader in epoch 0, has offset 0 (epoch 0, record 1) below its HW 1, which a producer was told "
        "was written with acks=all at step 17, but broker 2, in the controller's ISR [0, 1, 2] since step 27 "
        "handle_alter_partition(replica=0), does not hold it (its LEO is 0); it was lost when broker 2's log "
        "directory was replaced by an empty one at step 24."
        + outside("StrongIsr", "the run entered stale-isr-expansion, a loss this variant suffers by design")
    )
    assert (why.replica, why.promised, why.cause) == (2, 17, 24)


def test_weak_isr_reads_the_leaders_own_isr_view(scenario):
    trace, why = explained(scenario("kip320-stale-fetch"), "kip-279")
    assert trace.verdict.property == "WeakIsr"
    assert why.sentence == (
        "Broker 0, elected leader in epoch 4 at step 48, has offset 1 (epoch 2, record 3) below its HW 2, but "
        "broker 2, in broker 0's own ISR view [0, 2] since step 30 deliver_leader_and_isr(replica=0, index=0), "
        "holds epoch 0, record 2 there; broker 0 had held record 2 there too, until it truncated its log to "
        "offset 1 at step 33 handle_fetch_response(replica=0)."
    )


def test_log_matching_names_the_two_brokers_the_epoch_and_the_append(scenario):
    trace, why = explained(scenario("kip279-fast-leader-change"), "kip-101")
    assert trace.verdict.property == "LogMatching"
    assert why.sentence == (
        "Brokers 1 and 2 both hold offset 2 in leader epoch 4, yet their logs differ below it: at offset 1 "
        "broker 1 has epoch 2, record 3, broker 2 epoch 0, record 2; broker 1 got offset 2 at step 42 "
        "handle_fetch_response(replica=1), on top of its own offset 1."
    )
    assert (why.replica, why.cause) == (1, 42)


def _read_then_unclean_election(scenario):
    """unclean-election-loss with the first write at acks=1 and read back before its leader fails."""
    steps = list(load_schedule(scenario("unclean-election-loss")).steps)
    steps[6] = {"step": "produce", "replica": 0, "acks": 1}
    steps.insert(7, {"step": "consume", "replica": 0})
    return steps


def test_reads_a_new_leader_lacks_and_reads_that_disagree(scenario):
    steps = _read_then_unclean_election(scenario)
    trace, why = explained(scenario("unclean-election-loss"), steps=steps)
    assert first_bad(trace.verdict)[0] == "LeaderCompleteness" and trace.verdict.kind == "pass"
    assert why.sentence == (
        "Broker 1, elected leader in epoch 2 at step 10 by an unclean election (the ISR was [0]), holds record 2 "
        "at offset 0, not record 1, which a consumer read from broker 0 at step 7; broker 1 never held it, and it "
        "is only on broker 0 (down)." + outside("LeaderCompleteness", "unclean leader election is enabled")
    )
    # with the new leader down too, what is left is the two reads of offset 0
    trace, why = explained(
        scenario("unclean-election-loss"), steps=steps + [{"step": "crash", "replica": 1, "kind": "process"}]
    )
    assert first_bad(trace.verdict)[0] == "NoDivergentRead"
    assert why.sentence == (
        "Offset 0 was read as record 1 from broker 0 at step 7 and as record 2 from broker 1 at "
        "step 14." + outside("NoDivergentRead", "unclean leader election is enabled")
    )


def test_a_consumer_shown_a_lower_hw(tmp_path):
    """The explorer's shortest MonotonicHighWatermark counterexample on kip-101: the leader restarts
    with the HW of its checkpoint."""
    doc = {
        "format": "isrcheck-schedule",
        "version": 1,
        "protocol": "kip-101",
        "config": {"replicas": 2, "min_insync_replicas": 1},
        "steps": [{"step": "produce", "replica": 0, "acks": 1}]
        + [{"step": s, "replica": 1} for s in ("send_fetch", "handle_fetch", "handle_fetch_response") * 2]
        + [
            {"step": "consume", "replica": 0},
            {"step": "crash", "replica": 0, "kind": "process"},
            {"step": "restart", "replica": 0},
            {"step": "deliver_leader_and_isr", "replica": 0, "index": 0},
            {"step": "consume", "replica": 0},
        ],
    }
    trace = Lockstep.run(Schedule.from_json(doc), record=True)
    assert trace.verdict.property == "MonotonicHighWatermark"
    assert (
        explain(trace).sentence == "A consumer was shown HW 1 by broker 0 at step 7, then HW 0 by broker 0 at step 11."
    )


def test_every_violation_of_the_scenarios_has_a_witness(scenario_files):
    """No shipped scenario falls back to the property's statement on a protocol it violates."""
    seen = set()
    for path in scenario_files:
        schedule = load_schedule(path)
        for protocol, expected in schedule.expected.items():
            if expected.verdict != "violation":
                continue
            trace = Lockstep.run(schedule.with_protocol(protocol), record=True)
            why = explain(trace)
            assert why.replica is not None and BY_ID[expected.property].statement not in why.sentence, (
                path.name,
                protocol,
                why.sentence,
            )
            seen.add(expected.property)
    assert {"NoLostAckedWrite", "StrongIsr", "WeakIsr", "LogMatching"} <= seen


# -- divergences: a mutant implementation against the model -----------------------------------------


def test_a_divergence_of_outputs_says_what_each_side_answered(scenario, monkeypatch):
    from isrcheck.impl.replication.partition import Partition

    monkeypatch.setattr(Partition, "maybe_increment_leader_hw", lambda self: False)  # the HW never moves
    trace, why = explained(scenario("healthy-acks-all"))
    assert trace.verdict.kind == "divergence"
    assert why.sentence == (
        f"At step {trace.verdict.step} handle_fetch(replica=2), the implementation answered "
        "nothing while the model answered the acks=all produce of record 1 with NONE at offset 0."
    )


def test_a_divergence_of_states_says_what_each_side_did_to_the_log(scenario, monkeypatch):
    from isrcheck.impl.replication.partition import Partition

    truncate_to = Partition.truncate_to
    monkeypatch.setattr(Partition, "truncate_to", lambda self, offset: truncate_to(self, 0))  # always all of it
    trace, why = explained(scenario("kip279-fast-leader-change"), "kip-320")
    assert trace.verdict.kind == "divergence" and trace.verdict.step == 39
    assert why.sentence == (
        "At step 39 handle_fetch_response(replica=1), the implementation truncated broker 1's log "
        "to offset 0 while the model truncated it to offset 1."
    )
    assert why.replica == 1


def test_a_divergence_where_the_implementation_appends_nothing(scenario, monkeypatch):
    from isrcheck.impl.replication.partition import Partition

    monkeypatch.setattr(Partition, "append_as_follower", lambda self, batches, leader_hw: None)
    trace, why = explained(scenario("healthy-acks-all"))
    assert why.sentence == (
        f"At step {trace.verdict.step} handle_fetch_response(replica=1), the implementation left "
        "broker 1's log empty while the model appended offset 0 to it."
    )


def test_a_divergence_of_refusals_or_a_failing_implementation(scenario, monkeypatch):
    from isrcheck.conformance.core.adapter import ImplSide

    step = ImplSide._step

    def refuses_produce(self, st):
        return ("no produce today", []) if st.name == "produce" else step(self, st)

    monkeypatch.setattr(ImplSide, "_step", refuses_produce)
    _trace, why = explained(scenario("healthy-acks-all"))
    assert why.sentence == (
        "At step 0 produce(replica=0, acks=-1), the implementation refused the step "
        "(no produce today) but the model took it."
    )

    from isrcheck.impl.sut import SimDriver

    driver_step = SimDriver.step

    def fails_at_produce(self, name, values):
        if name == "produce":
            raise RuntimeError("disk on fire")
        return driver_step(self, name, values)

    monkeypatch.setattr(ImplSide, "_step", step)
    monkeypatch.setattr(SimDriver, "step", fails_at_produce)
    _trace, why = explained(scenario("healthy-acks-all"))
    assert why.sentence.startswith(
        "At step 0 produce(replica=0, acks=-1), the implementation raised RuntimeError: disk on fire"
    )


# -- what the finders cannot read ------------------------------------------------------------------


def test_a_state_the_finders_do_not_understand_gives_the_statement(scenario):
    trace = Lockstep.run(load_schedule(scenario("kip101-scenario1")).with_protocol("hw-truncation"), record=True)
    trace = dataclasses.replace(
        trace, frames=tuple(dataclasses.replace(f, state=object()) for f in trace.frames), initial=object()
    )
    why = explain(trace)
    assert why.sentence == (
        "After step 13 deliver_leader_and_isr(replica=1, index=0), NoLostAckedWrite fails: "
        + BY_ID["NoLostAckedWrite"].statement
    )
    assert why.step == 13 and why.replica is None


def test_a_divergence_without_the_implementations_side_gives_the_diff(scenario, monkeypatch):
    from isrcheck.impl.replication.partition import Partition

    monkeypatch.setattr(Partition, "append_as_follower", lambda self, batches, leader_hw: None)
    trace = Lockstep.run(load_schedule(scenario("healthy-acks-all")), record=True)
    trace = dataclasses.replace(trace, impl_state=None)
    assert explain(trace).sentence == (
        f"divergence at step {trace.verdict.step}: step {trace.verdict.step} "
        "handle_fetch_response(replica=1): abstract states differ"
    )


@pytest.mark.parametrize("name", ["healthy-acks-all", "torn-power-loss"])
def test_a_pass_has_no_explanation(scenario, name):
    assert explain(Lockstep.run(load_schedule(scenario(name)), record=True)) is None
