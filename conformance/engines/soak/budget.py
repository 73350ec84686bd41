"""The soak's fault budgets: whether the faults a run played stayed within what Kafka promises.

Kafka promises that an acknowledged acks=all write survives, and that consumers read a log that
only grows, while unclean election is off and at most ``min.insync.replicas - 1`` brokers lose data
(docs/model.md, "Fault budgets": the durability budget; KIP-966's "MinISR-1 tolerance"). The soak
judges the history's anomalies the way every engine judges a property: an anomaly of those
promises in a run outside that budget is Kafka's own behaviour, reported as *broken outside its
fault budget* with the reason, never as a finding and never in silence.

``durability_budget(records, min_isr, unclean, kip966) -> str | None`` reads the played faults (the
fault plan's records): None within the budget, else why not:

* unclean election on: an out-of-sync replica may be elected (Kafka's documentation of
  ``unclean.leader.election.enable``);
* more than ``min_isr - 1`` brokers losing data at once: a fault that loses data (``power``,
  ``disk``, an ``ioerror`` of an fsync: Kafka does not fsync each write by default, so what the
  OS had not written back is gone) counts from its start to its end, which on Apache Kafka is the
  broker back in every ISR (``engines/apache/faults``);
* on a cluster without KIP-966 (Eligible Leader Replicas and unclean shutdown detection) any fault
  that loses data: a broker that lost its tail can rejoin the ISR by a fast restart the controller
  never fenced, or be the last replica standing, and be elected with less than was acknowledged:
  the model's known losses of every variant before KIP-966 (``model/losses.py``).

``duplicate_budget(instances, events)`` is the idempotent producer's: librdkafka's exactly-once
per partition holds while no message times out. When one does (``message.timeout.ms``), librdkafka
bumps the producer's epoch and can no longer deduplicate the retries of what was in flight and may
have been written, on any partition (its maintainers, confluentinc/librdkafka issue 4953: "it can
have duplications in case messages time out because the epoch needs to be bumped"). A value at two
offsets is outside that budget if its send was in flight when the epoch may have been bumped: a
send of the same producer ended with its delivery unknown by a timeout (``_MSG_TIMED_OUT``, or no
delivery report within the workload's wait: librdkafka still holds that message, and times it out
when its request does) between the first's invoke and ``BUMP_WINDOW_NS`` after its end, while the
duplicated value's send was under way. Any other duplicate of an idempotent producer is a finding.

A producer that fails for good with OUT_OF_ORDER_SEQUENCE_NUMBER (librdkafka's fatal sequence
desynchronization: the partition's new leader lacks the producer's earlier writes) in a run outside
the durability budget is that loss seen by the client (``client-error``), outside the budget too.

``budgets(...)`` maps each anomaly outside its budget to the reason; ``judge`` splits a run's
anomalies by it.

What the durability budget covers (``DURABILITY_ANOMALIES``): the lost write, and what a log that lost its tail
shows: an offset that held another record (inconsistent offsets), consumers that skip or go back,
a producer's later send acknowledged below an earlier one (the log's end moved back), a committed
record where OffsetForLeaderEpoch's answer says it cannot be (``answers``). A duplicate,
an aborted read or an unexpected record are promised under every fault and stay findings.
"""

from __future__ import annotations

from isrcheck.conformance.engines.soak import answers

DURABILITY_ANOMALIES = (
    frozenset(
        {
            "lost-write",
            "inconsistent-offsets",
            "poll-skip",
            "nonmonotonic-poll",
            "int-poll-skip",
            "int-nonmonotonic-poll",
            "nonmonotonic-send",
        }
    )
    | answers.DURABILITY
)


def loses_data(record: dict) -> bool:
    """Whether a played fault loses data its brokers had written."""
    return record["kind"] in ("power", "disk") or (
        record["kind"] == "ioerror" and str(record.get("io", "")).startswith("fsync")
    )


def durability_budget(
    records: list[dict], min_isr: int, unclean: bool, kip966: bool, run_end_ns: int | None = None
) -> str | None:
    """None if the run stayed within the durability budget, else the reason (module docstring)."""
    if unclean:
        return (
            "unclean.leader.election.enable=true: an out-of-sync replica may be elected, losing what it "
            "lacked (Kafka's documentation)"
        )
    losing = [r for r in records if loses_data(r)]
    if not losing:
        return None
    if not kip966:
        shown = ", ".join(
            f"{r['kind']} of broker{'s' * (len(r['nodes']) > 1)} "
            f"{', '.join(map(str, r['nodes']))} at {r['start'] / 1e9:.1f} s"
            for r in losing[:3]
        )
        return (
            f"{len(losing)} fault{'s' * (len(losing) > 1)} lost unsynced data ({shown}"
            f"{', ...' if len(losing) > 3 else ''}) on a cluster without KIP-966: a broker that lost its tail "
            f"can come back into the ISR or be the last replica standing and be elected (the known losses "
            f"KIP-966 closed)"
        )
    worst, when = _most_at_once(losing, run_end_ns)
    if len(worst) > min_isr - 1:
        return (
            f"brokers {', '.join(map(str, sorted(worst)))} had lost unsynced data at once (at {when / 1e9:.1f} s): "
            f"more than min.insync.replicas - 1 = {min_isr - 1}; Kafka does not fsync each write by default "
            f"(log.flush.interval.messages), so an acknowledged write may be on no surviving copy"
        )
    return None


def _most_at_once(records: list[dict], run_end_ns: int | None) -> tuple[set, int]:
    """The largest set of brokers whose data-losing faults overlap, and a moment when they do."""
    end_of = {
        id(r): r["end"] if r["end"] is not None else (run_end_ns or max(x["start"] for x in records) + 1)
        for r in records
    }
    best: tuple[set, int] = (set(), 0)
    for r in records:  # the overlap is largest at some fault's start
        t = r["start"]
        down = {b for x in records if x["start"] <= t <= end_of[id(x)] for b in x["nodes"]}
        if len(down) > len(best[0]):
            best = (down, t)
    return best


TIMEOUTS = ("TIMED_OUT", "no delivery report")
# librdkafka times out a message held in a request when that request times out (socket.timeout.ms,
# 60 s by default): the epoch bump may come that long after the workload stopped waiting for it
BUMP_WINDOW_NS = 60_000_000_000


def duplicate_budget(instances: list[dict], events: list[dict]) -> str | None:
    """None if some duplicate is a finding (or there is none), else why all are outside the
    idempotent producer's budget: each was in flight around a timeout of its producer (module docstring)."""
    if not instances:
        return None
    sends: dict = {}  # value -> [producer, invoked, ended (None: never)]
    timeouts: dict = {}  # producer -> [(invoked, ended)] of its sends that timed out
    for e in events:
        if e.get("f") != "send":
            continue
        if e.get("type") == "invoke":
            sends[e["value"]] = [e["process"], e["time"], None]
            continue
        send = sends.setdefault(e["value"], [e["process"], e["time"], None])
        send[2] = e["time"]
        if e.get("type") == "info" and any(t in str(e.get("error", "")) for t in TIMEOUTS):
            timeouts.setdefault(e["process"], []).append((send[1], e["time"]))

    def excused(value) -> bool:
        producer, invoked, ended = sends.get(value, (None, 0, None))
        return any(
            (ended is None or t_invoked <= ended) and invoked <= t_ended + BUMP_WINDOW_NS
            for t_invoked, t_ended in timeouts.get(producer, ())
        )

    if not all(excused(i.get("value")) for i in instances):
        return None
    return (
        "each duplicated value was in flight around a timed-out send of its producer: librdkafka bumps the "
        "idempotent producer's epoch and no longer deduplicates the retries of what was in flight "
        "(confluentinc/librdkafka issue 4953)"
    )


def budgets(
    records: list[dict],
    min_isr: int,
    unclean: bool,
    kip966: bool,
    run_end_ns: int | None,
    anomalies: dict,
    events: list[dict],
    client_errors: list[str] = (),
) -> dict[str, str]:
    """Each anomaly name outside its budget -> why (``anomalies``: the checker's instances by name;
    ``client_errors``: the clients' fatal errors)."""
    out = {}
    durability = durability_budget(records, min_isr, unclean, kip966, run_end_ns)
    if durability is not None:
        out.update({name: durability for name in DURABILITY_ANOMALIES})
        if client_errors and all("OUT_OF_ORDER_SEQUENCE_NUMBER" in e for e in client_errors):
            out["client-error"] = durability
    duplicates = duplicate_budget(anomalies.get("duplicate", []), events)
    if duplicates is not None:
        out["duplicate"] = duplicates
    return out


def judge(anomalies: list[str], reasons: dict[str, str]) -> tuple[list[str], list[str]]:
    """(findings, broken outside their budget): ``anomalies`` split by ``reasons``."""
    return [a for a in anomalies if a not in reasons], [a for a in anomalies if a in reasons]


__all__ = ["DURABILITY_ANOMALIES", "budgets", "duplicate_budget", "durability_budget", "judge", "loses_data"]
