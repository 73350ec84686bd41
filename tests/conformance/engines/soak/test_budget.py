"""The soak's durability budget: which played faults put a run outside what Kafka promises."""

from __future__ import annotations

from isrcheck.conformance.engines.soak.budget import (
    DURABILITY_ANOMALIES,
    budgets,
    duplicate_budget,
    durability_budget,
    judge,
    loses_data,
)

S = 1_000_000_000


def fault(kind, nodes, start, end, **extra):
    return {
        "kind": kind,
        "nodes": list(nodes),
        "start": int(start * S),
        "end": None if end is None else int(end * S),
        **extra,
    }


def test_faults_that_lose_no_data_stay_within_the_budget():
    records = [
        fault("kill", [0], 1, 2),
        fault("stop", [1], 3, 4),
        fault("pause", [2], 5, 6),
        fault("partition", [0], 7, 8),
        fault("ioerror", [1], 9, 10, io="write:EIO"),
    ]
    assert durability_budget(records, min_isr=2, unclean=False, kip966=False) is None
    assert not any(loses_data(r) for r in records)


def test_unclean_election_is_outside_whatever_was_played():
    reason = durability_budget([], min_isr=2, unclean=True, kip966=True)
    assert "unclean.leader.election.enable" in reason


def test_one_power_loss_at_a_time_is_within_on_kip_966_only():
    records = [fault("power", [0], 1, 4), fault("disk", [1], 5, 9), fault("ioerror", [2], 10, 12, io="fsync:EIO")]
    assert durability_budget(records, min_isr=2, unclean=False, kip966=True) is None
    reason = durability_budget(records, min_isr=2, unclean=False, kip966=False)
    assert "3 faults lost unsynced data" in reason and "without KIP-966" in reason


def test_more_than_min_isr_minus_one_brokers_losing_data_at_once_is_outside():
    records = [fault("power", [0], 1, 6), fault("power", [1, 2], 3, None)]  # the second never ended
    reason = durability_budget(records, min_isr=2, unclean=False, kip966=True, run_end_ns=20 * S)
    assert "brokers 0, 1, 2 had lost unsynced data at once (at 3.0 s)" in reason
    assert durability_budget(records, min_isr=3, unclean=False, kip966=True, run_end_ns=20 * S) is not None
    apart = [fault("power", [0], 1, 2), fault("power", [1], 3, 4)]
    assert durability_budget(apart, min_isr=2, unclean=False, kip966=True) is None


def test_outside_the_durability_budget_only_its_anomalies_are_excused():
    found = ["lost-write", "duplicate", "inconsistent-offsets", "G1a", "incomplete-final-read"]
    assert judge(found, {}) == (found, [])
    reasons = budgets([], 2, True, True, None, {}, [])
    findings, excused = judge(found, reasons)
    assert findings == ["duplicate", "G1a", "incomplete-final-read"]
    assert excused == ["lost-write", "inconsistent-offsets"] and set(excused) <= DURABILITY_ANOMALIES


def send(value, type_, time, process=0, error=None):
    return {
        "f": "send",
        "type": type_,
        "value": value,
        "time": time,
        "process": process,
        **({"error": error} if error else {}),
    }


def test_a_duplicate_is_outside_the_idempotent_producers_budget_once_a_send_of_its_producer_timed_out():
    """librdkafka bumps the epoch when a message times out and cannot deduplicate the retries of what
    was in flight then (confluentinc/librdkafka issue 4953); a duplicate of a producer none of whose
    sends had timed out is a finding."""
    events = [
        send(1, "invoke", 0, process=1),
        send(1, "ok", 1, process=1),  # producer 1: all fine
        send(2, "invoke", 2, process=1),
        send(2, "info", 3, process=1, error="_TRANSPORT"),
        send(7, "invoke", 4),
        send(7, "info", 5, error="_MSG_TIMED_OUT"),  # producer 0 times out
        send(8, "invoke", 6),
        send(8, "ok", 7),  # ... and goes on
        send(9, "invoke", 8, process=2),
        send(9, "info", 9, process=2, error="no delivery report"),
        send(10, "invoke", 10, process=2),  # never answered
        send(11, "invoke", 8 + 61 * 10**9, process=2),
    ]  # a minute later
    assert "librdkafka issue 4953" in duplicate_budget([{"value": 7}], events)
    assert "librdkafka issue 4953" in duplicate_budget([{"value": 8}, {"value": 10}], events)
    assert duplicate_budget([{"value": 11}], events) is None  # long after the timeout
    assert duplicate_budget([{"value": 8}, {"value": 1}], events) is None  # producer 1 never timed out
    assert duplicate_budget([{"value": 2}], events) is None  # a transport error is no timeout
    assert duplicate_budget([], events) is None
    reasons = budgets([], 2, False, True, None, {"duplicate": [{"value": 7}]}, events)
    assert judge(["duplicate", "lost-write"], reasons) == (["lost-write"], ["duplicate"])


def test_a_producer_desynchronized_by_a_loss_is_outside_the_budget_only_with_the_loss():
    fatal = ["client 1: KafkaException: KafkaError{FATAL,code=OUT_OF_ORDER_SEQUENCE_NUMBER,val=45,...}"]
    assert budgets([], 2, True, True, None, {}, [], fatal)["client-error"].startswith("unclean")
    assert "client-error" not in budgets([], 2, False, True, None, {}, [], fatal)
    assert "client-error" not in budgets([], 2, True, True, None, {}, [], fatal + ["client 2: BufferError"])


def test_the_exit_code_comes_with_its_reason_and_the_run_folder():
    """Every soak says why it exits as it does: each anomaly that fails it (a final read that stopped,
    with how far it got), or what it passed; results.json has the folder and that reason."""
    from isrcheck.conformance.engines.soak.checker import CheckResult
    from isrcheck.conformance.engines.soak.driver import SoakOptions, SoakResult
    from isrcheck.conformance.engines.validate.search import Verdict
    from isrcheck.conformance.engines.validate.validation import LogValidation

    stopped = SoakResult(
        SoakOptions(directory="runs/a"),
        final_read=False,
        final_read_note="the cluster served nothing new for 60 s: soak-0 read to 3 of 9 seen (HW 4)",
        check=CheckResult({"lost-write": [{}, {}], "unseen": [{}]}, {"lost-write": 2}, {}, {}, {}),
    )
    assert stopped.exit_code == 1
    assert stopped.exit_reason() == (
        "anomalies within their budget: lost-write (2); the final read did not finish "
        "(the cluster served nothing new for 60 s: soak-0 read to 3 of 9 seen (HW 4))"
    )
    passed = SoakResult(
        SoakOptions(directory="runs/b"),
        final_read=True,
        validation=LogValidation(Verdict(True, 5, []), 5, 0.1),
        check=CheckResult({"unseen": [{}]}, {"unseen": 1}, {}, {}, {}),
    )
    assert passed.exit_code == 0 and passed.to_json()["dir"] == "runs/b"
    assert passed.to_json()["exit"] == {
        "code": 0,
        "reason": "no anomaly within its budget, the final read complete, the event log explained",
    }


def test_a_missed_deadline_in_the_event_log_fails_the_soak_with_its_reason():
    """An explained log whose run missed a deadline Kafka keeps (validate/timeliness.py) is the
    anomaly event-log-late, exit 1, the finding in the reason."""
    from isrcheck.conformance.engines.soak.checker import CheckResult
    from isrcheck.conformance.engines.soak.driver import SoakOptions, SoakResult
    from isrcheck.conformance.engines.validate.events import Event
    from isrcheck.conformance.engines.validate.search import Verdict
    from isrcheck.conformance.engines.validate.timeliness import Late
    from isrcheck.conformance.engines.validate.validation import LogValidation

    event = Event("events/broker-0.jsonl:9", 0, 9, 9, 9000, "handle_fetch", {}, {})
    late = Late("IsrExpiry", event, "broker 2 still in the ISR of leader 0 (epoch 1) at 9000 ms")
    result = SoakResult(
        SoakOptions(directory="runs/c"),
        final_read=True,
        check=CheckResult({}, {}, {}, {}, {}),
        validation=LogValidation(Verdict(True, 9, []), 9, 0.1, (late,)),
    )
    assert result.anomalies == ["event-log-late"] and result.exit_code == 1
    assert result.exit_reason() == (
        "anomalies within their budget: a deadline missed: IsrExpiry at "
        "events/broker-0.jsonl:9: broker 2 still in the ISR of leader 0 (epoch 1) at 9000 ms"
    )
