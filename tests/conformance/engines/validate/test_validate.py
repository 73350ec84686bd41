"""isrcheck validate: the self-driven simulation's event logs are explained by the model, edited
ones are refused at the event that was edited, and bad input is named by file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from timer_bug import eager_isr_check

from isrcheck.conformance import random_walk
from isrcheck.conformance.engines.validate.validation import validate_path
from isrcheck.conformance.vocabulary import UsageError
from isrcheck.impl.replication.replica_manager import ReplicaManager
from isrcheck.impl.sim.workload import run_simulation
from isrcheck.model import PROTOCOLS


def _run(tmp_path: Path, protocol: str, seed: int, steps: int = 150) -> Path:
    out = tmp_path / f"{protocol}-{seed}"
    run_simulation(protocol, 3, seed, steps, events_dir=str(out))
    return out


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _write(path: Path, lines: list[dict]) -> None:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_self_driven_runs_of_every_variant_are_explained(tmp_path, protocol):
    """Timers, seeded network faults and crashes of every kind: the model explains every event."""
    for seed in (1, 5):
        verdict, events, _ = validate_path(str(_run(tmp_path, protocol, seed)))
        assert verdict.explained, verdict.to_json()
        assert events > 100 and len(verdict.steps) >= events // 2
        names = {st["step"] for st in verdict.steps}
        assert {"tick", "send_fetch", "handle_fetch", "handle_fetch_response", "produce"} <= names


def test_logging_leaves_the_run_as_it_was(tmp_path):
    """The event log is a side channel: the same seed gives the same trace hash with and without it."""
    with_log = run_simulation("kip-966", 3, 7, 120, events_dir=str(tmp_path / "log"))
    without = run_simulation("kip-966", 3, 7, 120)
    assert with_log == without


def test_every_event_names_its_node_sequence_and_state(tmp_path):
    log = _run(tmp_path, "kip-320", 1)
    files = sorted(p.name for p in log.iterdir())
    assert files == ["broker-0.jsonl", "broker-1.jsonl", "broker-2.jsonl", "controller.jsonl"]
    for name in files:
        header, *events = _lines(log / name)
        assert header["format"] == "isrcheck-events" and header["protocol"] == "kip-320"
        assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
        assert all(e["lc"] < f["lc"] for e, f in zip(events, events[1:]))
    receives = [e for e in _lines(log / "broker-0.jsonl")[1:] if e["step"] == "handle_fetch"]
    assert receives and all(len(e["msg"]) == 2 for e in receives)
    assert set(receives[0]["state"]) >= {"leo", "hw", "leader", "epoch", "isr", "pe", "pending"}


def _first(log: Path, node_file: str, step: str, after: int = 0) -> int:
    """The line index (header = 0) of the first ``step`` event after line ``after``."""
    lines = _lines(log / node_file)
    return next(i for i, e in enumerate(lines) if i > after and e.get("step") == step)


def test_a_removed_append_is_refused_at_the_leaders_next_event(tmp_path):
    log = _run(tmp_path, "kip-320", 1)
    lines = _lines(log / "broker-0.jsonl")
    i = _first(log, "broker-0.jsonl", "produce")
    removed = lines.pop(i)
    _write(log / "broker-0.jsonl", lines)
    verdict, _, _ = validate_path(str(log))
    assert not verdict.explained
    assert verdict.event.node == 0 and verdict.event.seq == removed["seq"] + 1
    assert any("leo is" in why for r in verdict.refusals for why in r.reasons)


def test_a_changed_high_watermark_is_refused_at_that_event(tmp_path):
    log = _run(tmp_path, "kip-320", 1)
    lines = _lines(log / "broker-1.jsonl")
    i = next(i for i, e in enumerate(lines) if e.get("step") == "handle_fetch_response" and e["state"]["hw"] > 0)
    lines[i]["state"]["hw"] += 1
    _write(log / "broker-1.jsonl", lines)
    verdict, _, _ = validate_path(str(log))
    assert not verdict.explained and (verdict.event.node, verdict.event.seq) == (1, lines[i]["seq"])
    assert any(
        why.endswith(f"hw is {lines[i]['state']['hw'] - 1} in the model, {lines[i]['state']['hw']} in the log")
        for r in verdict.refusals
        for why in r.reasons
    )


def test_a_receive_ordered_before_its_send_is_refused_at_the_receive(tmp_path):
    """Swap the times and clocks of a follower's Fetch and the leader's handling of it: the merged
    order has the leader handle a request nobody sent yet."""
    log = _run(tmp_path, "kip-320", 1)
    files = {b: _lines(log / f"broker-{b}.jsonl") for b in range(3)}
    handled = next(e for b in range(3) for e in files[b][1:] if e["step"] == "handle_fetch")
    leader, f = handled["node"], handled["replica"]
    sent = next(e for e in files[f][1:] if e["step"] == "send_fetch" and e["corr"] == handled["msg"][1])
    for key in ("t", "lc"):
        sent[key], handled[key] = handled[key], sent[key]
    for b in (leader, f):
        _write(log / f"broker-{b}.jsonl", files[b])
    verdict, _, _ = validate_path(str(log))
    assert not verdict.explained and (verdict.event.node, verdict.event.seq) == (leader, handled["seq"])
    assert any(
        f"handle_fetch refused: no fetch request of replica {f} in flight" in why
        for r in verdict.refusals
        for why in r.reasons
    )


def test_a_bug_only_timers_reach_is_caught_by_validate_and_missed_by_lockstep(tmp_path, monkeypatch):
    """A planted bug in the timer that shrinks the ISR (Kafka's isr-expiration task): lockstep
    drives shrink_isr itself and never runs the timer, so its walks pass; the self-driven
    simulation runs it, and validate refuses the first shrink the model would not make."""
    monkeypatch.setattr(ReplicaManager, "_isr_check", eager_isr_check(ReplicaManager._isr_check))
    for seed in range(3):
        assert random_walk(seed, "kip-320", 80, "default")[1].kind == "pass"
    caught = []
    for seed in range(1, 6):
        verdict, _, _ = validate_path(str(_run(tmp_path, "kip-320", seed)))
        if not verdict.explained:
            caught.append(verdict)
    assert caught
    assert all(v.event.step == "shrink_isr" for v in caught)
    assert any(
        "shrink_isr refused: no ISR follower" in why or "pending is" in why
        for v in caught
        for r in v.refusals
        for why in r.reasons
    )


def test_bad_lines_are_named_by_file_and_line(tmp_path, isrcheck_cli):
    log = _run(tmp_path, "kip-320", 1, steps=30)
    path = log / "broker-2.jsonl"
    text = path.read_text().splitlines()
    text[3] = text[3][:-5]
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(UsageError, match=r"broker-2\.jsonl:4: not a JSON line"):
        validate_path(str(log))
    done = isrcheck_cli("validate", str(log))
    assert done.returncode == 2 and "broker-2.jsonl:4: not a JSON line" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda e: e.pop("state"), "event lacks 'state'"),
        (lambda e: e.update(step="teleport"), 'unknown step "teleport"'),
        (lambda e: e.update(replica=9), "replica 9 is not a broker of this 3-broker run"),
    ],
)
def test_malformed_events_are_named(tmp_path, edit, message):
    log = _run(tmp_path, "kip-320", 1, steps=30)
    lines = _lines(log / "broker-1.jsonl")
    edit(lines[2])
    _write(log / "broker-1.jsonl", lines)
    with pytest.raises(UsageError, match=f"broker-1.jsonl:3: .*{message}"):
        validate_path(str(log))


def test_a_disk_failure_is_explained_as_the_crash_it_amounts_to(tmp_path):
    """A machine that made a broker's disk fail logs ``fail_disk`` with its io (docs/steps.md, "Runs
    nobody drove"): a failed write or read is the halt of a process crash, a failed fsync the halt
    of a power loss. kip-966, seed 6: broker 0 loses power, later its process crashes; logged as
    the disk failures they amount to, the log is explained by the same steps; the power loss logged
    as a failed write (the page cache kept) is refused where the restarted broker first acts: its
    recovery shows the loss the model does not see; an io the contract lacks is bad input."""
    log = _run(tmp_path, "kip-966", 6)
    before, _, _ = validate_path(str(log))
    path = log / "broker-0.jsonl"
    lines = _lines(path)
    halts = [i for i, e in enumerate(lines) if e.get("step") == "crash"]
    assert [lines[i]["kind"] for i in halts] == ["power", "process"]
    for i, io in zip(halts, ("fsync:EIO", "write:EIO")):
        lines[i] = {**{k: v for k, v in lines[i].items() if k != "kind"}, "step": "fail_disk", "io": io}
    _write(path, lines)
    after, _, _ = validate_path(str(log))
    assert before.explained and after.explained and after.steps == before.steps
    lines[halts[0]]["io"] = "write:EIO"
    _write(path, lines)
    refused, _, _ = validate_path(str(log))
    assert not refused.explained and (refused.event.step, refused.event.fields["replica"]) == ("send_fetch", 0)
    lines[halts[0]]["io"] = "write:EBADF"
    _write(path, lines)
    with pytest.raises(UsageError, match=rf"broker-0\.jsonl:{halts[0] + 1}: fail_disk: io \"write:EBADF\""):
        validate_path(str(log))


def test_the_command_exits_0_explained_and_1_refused(tmp_path, isrcheck_cli):
    log = _run(tmp_path, "kip-903", 2, steps=60)
    done = isrcheck_cli("validate", str(log), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    out = json.loads(done.stdout)
    assert out["verdict"] == "explained" and out["model_steps"] == len(out["steps"])
    lines = _lines(log / "controller.jsonl")
    lines[1]["state"]["leader"] = 2
    _write(log / "controller.jsonl", lines)
    done = isrcheck_cli("validate", str(log))
    assert done.returncode == 1
    assert done.stdout.startswith("not explained: event") and "candidate 1:" in done.stdout
    assert isrcheck_cli("validate", str(tmp_path / "nothing")).returncode == 2


def test_a_log_validated_as_another_variant_is_refused_where_they_differ(tmp_path):
    """kip-320's brokers apply a LeaderAndIsr that names no leader; before 0.11 they ignored it."""
    log = _run(tmp_path, "kip-320", 3)
    assert validate_path(str(log))[0].explained
    verdict, _, _ = validate_path(str(log), protocol="hw-truncation")
    assert not verdict.explained and verdict.event.step == "deliver_leader_and_isr"
    assert verdict.event.fields["message"]["leader"] == -1
    with pytest.raises(UsageError, match="--protocol: unknown variant 'nope'"):
        validate_path(str(log), protocol="nope")


def test_sim_validates_its_own_log_at_the_end_unless_told_not_to(tmp_path, isrcheck_cli):
    done = isrcheck_cli(
        "sim", "--protocol", "kip-903", "--seed", "2", "--steps", "80", "--events", str(tmp_path / "ev")
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].lstrip().startswith("explained: ")
    assert validate_path(str(tmp_path / "ev"))[0].explained
    again = isrcheck_cli("sim", "--seed", "2", "--steps", "80", "--events", str(tmp_path / "ev"))
    assert again.returncode == 2 and "holds an event log already" in again.stderr
    off = isrcheck_cli("sim", "--protocol", "kip-903", "--seed", "2", "--steps", "80", "--no-validate", "--json")
    on = isrcheck_cli("sim", "--protocol", "kip-903", "--seed", "2", "--steps", "80", "--json")
    assert "validation" not in json.loads(off.stdout)
    assert json.loads(on.stdout)["validation"]["verdict"] == "explained"
    assert json.loads(on.stdout)["trace_hash"] == json.loads(off.stdout)["trace_hash"]


@pytest.mark.parametrize("seed", [48, 58, 159])
def test_kip966_runs_where_validation_found_the_implementation_wrong_are_explained(tmp_path, seed):
    """Seed 48: a registration retried after its answer was lost was taken for an unclean shutdown
    (the controller compared the first try's previous broker epoch with the one it had just given).
    Seed 58: the simulation's power loss wrote back the never-fsynced broker epoch file, so the
    broker came back as if it had shut down cleanly. Seed 159: a clean shutdown of a broker that
    never registered after a power loss is still unclean to the controller."""
    verdict, _, _ = validate_path(str(_run(tmp_path, "kip-966", seed, steps=200)))
    assert verdict.explained, verdict.to_json()


def test_a_broker_crashed_twice_before_it_registered_is_explained(tmp_path):
    """kip-966, 4,000 steps: broker 0 is killed, restarts, is killed again before it registers,
    and registers; the epoch its clean state left stays in the page cache until then, so the
    controller does not take two process crashes for an unclean shutdown (it dropped the broker from
    the ELR); on the way, the started broker flushes and fetches before its registration (the
    model's restart at its logged start, register at the controller's)."""
    verdict, _, _ = validate_path(str(_run(tmp_path, "kip-966", 3, steps=4000)))
    assert verdict.explained, verdict.to_json()
    names = [st["step"] for st in verdict.steps]
    starts = [i for i, n in enumerate(names) if n == "restart"]
    between = [names[i + 1 : names.index("register", i)] for i in starts if "register" in names[i:]]
    assert any("flush" in steps and "send_fetch" in steps for steps in between)


def test_the_quick_check_of_a_line_reads_it_as_the_full_checks_do(tmp_path):
    """Every line of a run is the same event either way, and a line the quick check lets through
    to the full checks is named as before (a boolean where an integer goes, a malformed msg)."""
    from isrcheck.conformance.engines.validate.events import _checked, _event

    log = _run(tmp_path, "kip-966", 4, steps=200)
    lines = [line for f in sorted(log.glob("*.jsonl")) for line in _lines(f)[1:]]
    assert all(_event(line, "f:1", 3) == _checked(line, "f:1", 3) for line in lines)
    for edit, message in (
        (dict(seq=True), "'seq' must be an integer"),
        (dict(msg=[1]), "'msg' must be"),
        (dict(tp=3), "'tp' must be"),
        (dict(state=[]), "'state' must be an object"),
    ):
        with pytest.raises(UsageError, match=message):
            _event({**lines[5], **edit}, "f:1", 3)


def _killed_before_its_line(tmp_path, step: str, chosen, seed: int = 11) -> None:
    """A simulated kip-966 run whose first ``step`` that grows the log of a node that ``chosen(node,
    leo, work, leos, before)`` accepts (``before``: the node's LEO at its previous event) is not
    logged, nor anything the node does after it, and the node is crashed at the end of that
    workload step (killed as it was about to log the append); the log is explained."""
    from isrcheck.impl.eventlog import EventLog
    from isrcheck.impl.sim.workload import Workload, sim_config

    leos: dict[int, int] = {}
    cut: list[int] = []
    emit = EventLog.emit

    def watch(self, node, step_, state, fields=None, msg=None, corr=None):
        if cut and node == cut[0]:
            return  # the node is being killed: nothing more reaches its file
        leo = json.loads(state).get("leo")
        before = leos.get(node, leo)
        grew = step_ == step and leo is not None and leo > before
        if leo is not None:
            leos[node] = leo
        if grew and not cut and chosen(node, leo, work, leos, before):
            cut.append(node)
            EventLog.emit = emit
            work.cluster.crash(node, "process")
            return
        emit(self, node, step_, state, fields, msg, corr)

    EventLog.emit = watch
    try:
        work = Workload(sim_config("kip-966", 3), seed, events_dir=str(tmp_path / "log"))
        for _ in range(300):
            work.step()
        work.events.close()
    finally:
        EventLog.emit = emit
    assert cut
    verdict, _, _ = validate_path(str(tmp_path / "log"))
    assert verdict.explained, verdict.event and verdict.event.describe()


def test_a_follower_killed_between_an_append_and_its_line_is_explained(tmp_path):
    """A process writes an event after the step it records: killed in between (a soak's SIGKILL), its
    log holds a fetch response's records that no line records. Made here: the first fetch response a
    simulated follower appends records from; the validator takes the delivery unlogged before the
    crash (without that, the recovered log is one batch longer than the model's)."""
    _killed_before_its_line(
        tmp_path,
        "handle_fetch_response",
        lambda node, leo, work, leos, before: node != work.cluster.controller.leader and len(leos) == 3,
    )


def test_a_leader_killed_between_a_produce_and_its_line_is_explained(tmp_path):
    """The same for a leader (a soak of kip-966, seed 20: broker 2 killed 11 ms after its last logged
    produce came back with one record more, "leo is 7712 in the model, 7713 in the log"): the
    validator takes a produce unlogged before the crash, a batch as the leader's last one logged."""
    _killed_before_its_line(tmp_path, "produce", lambda node, leo, work, leos, before: leo > 3)


def test_a_follower_killed_in_the_middle_of_an_append_is_explained(tmp_path):
    """A 10-minute soak of seed 2: a follower catching up an empty disk was SIGKILLed while it
    appended a response of 13,660 batches and recovered 2,814 of them ("leo is 41032 in the model,
    43846 in the log", and 54692 had it appended all): one write per batch, so a process crash keeps
    a prefix. Made here: the first response of two batches or more a follower is about to log is cut
    back to its first batch, and the follower crashed; the validator delivers that prefix, read off
    the recovery, before the crash."""

    def chosen(node, leo, work, leos, before):
        log = work.cluster.world.brokers[node].partition.log
        if node == work.cluster.controller.leader or leo - before < 2:
            return False
        first = log.read(before, max_batches=1).batches[0].last_offset + 1
        if first >= leo:
            return False
        log.truncate_to(first)  # the rest of the response never reached the page cache
        return True

    _killed_before_its_line(tmp_path, "handle_fetch_response", chosen)


def test_an_election_folded_into_a_registration_replaces_the_leaderless_state_in_flight():
    """KRaft's registration after an unclean shutdown of the leader elects its successor in the same
    partition change: the fold (``unlogged.elect_with_registration``) sends every broker the elected
    state in place of the leaderless one, the registering broker's still marked as its registration's."""
    from isrcheck.conformance.engines.validate import unlogged
    from isrcheck.model import ModelConfig, Step, apply, initial_state

    cfg = ModelConfig(protocol="kip-966")
    s = initial_state(cfg)
    for st in (Step("crash", 0, arg="process"), Step("restart", 0), Step("register", 0)):
        s, _ = apply(cfg, s, st)
    assert s.controller.leader == -1 and all(q[-1].leader == -1 for q in s.leader_and_isr)
    s = unlogged.elect_with_registration(cfg)(s, [])
    c = s.controller
    assert (c.leader, c.leader_epoch, c.partition_epoch) == (1, 1, 1)
    assert [q[-1][:4] for q in s.leader_and_isr] == [(1, 1, (1, 2), 1)] * 3
    assert [q[-1].registration for q in s.leader_and_isr] == [True, False, False]


def test_the_fencing_of_a_leader_folded_with_its_election_is_marked_for_a_broker_not_yet_serving():
    """The kill soak of 4.4.0 at 596.5 s: broker 2 restarted and registered; the controller fenced leader 0
    and elected its successor in one change before broker 2 caught up. Sent while broker 2 does not serve
    yet, the fold's LeaderAndIsr to it is marked as its registration's (applying it, broker 2 serves); else
    broker 2 stayed unregistered and refused, as leader 40 s later, its follower's fetch."""
    from isrcheck.conformance.engines.validate import unlogged
    from isrcheck.model import ModelConfig, Step, apply, initial_state

    cfg = ModelConfig(protocol="kip-966")
    s = initial_state(cfg)
    for st in (Step("crash", 2, arg="process"), Step("restart", 2), Step("register", 2)):
        s, _ = apply(cfg, s, st)
    s = unlogged.fence_and_elect(cfg, 0)(s, [])
    assert s.controller.leader == 1
    assert [(q[-1].leader, q[-1].registration) for q in s.leader_and_isr[1:]] == [(1, False), (1, True)]
    s, _ = apply(cfg, s, Step("deliver_leader_and_isr", 2, index=len(s.leader_and_isr[2]) - 1))
    assert not s.replicas[2].unregistered


def test_a_refusal_kafkas_controller_wrote_no_record_of_is_the_models_own_refusal():
    """Kafka's controller logs no record when it refuses an AlterPartition; the leader's logged answer
    then takes the model's handling first, which must refuse it too (``refused_alter_partition``)."""
    from isrcheck.conformance.engines.validate import unlogged
    from isrcheck.model import ModelConfig, Step, apply, initial_state

    cfg = ModelConfig(protocol="kip-966")
    s = initial_state(cfg)
    steps = [Step("tick")] * 3 + [Step("send_fetch", 1), Step("handle_fetch", 1), Step("handle_fetch_response", 1)]
    for st in steps + [Step("shrink_isr", 0)]:
        s, _ = apply(cfg, s, st)
    with pytest.raises(unlogged.Mismatch, match="commits broker 0's AlterPartition"):
        unlogged.refused_alter_partition(cfg, 0)(s, [])
    s, _ = apply(cfg, s, Step("crash", 2, arg="process"))
    s, _ = apply(cfg, s, Step("fence", 2))  # the partition epoch moves on: the proposal is stale
    taken: list = []
    s = unlogged.refused_alter_partition(cfg, 0)(s, taken)
    assert s.alter_partition_responses[0][-1].error == "INVALID_UPDATE_VERSION"
    assert taken == [{"step": "handle_alter_partition", "replica": 0}]


def test_an_election_folded_into_the_registration_of_a_broker_that_did_not_lead_moves_the_epochs_once():
    """Kafka's one change (the registration's unclean shutdown handling and the election) moves the
    leader epoch and the partition epoch by one each; the fold takes back only what both model
    changes moved: the partition epoch, not the leader epoch of a registration that deposed no one."""
    from isrcheck.conformance.engines.validate import unlogged
    from isrcheck.model import ModelConfig, Step, apply, initial_state

    cfg = ModelConfig(protocol="kip-966")
    s = initial_state(cfg)
    for st in (Step("crash", 0, arg="process"), Step("fence", 0), Step("crash", 1, arg="power"), Step("fence", 1)):
        s, _ = apply(cfg, s, st)
    s, _ = apply(cfg, s, Step("restart", 1))
    before = s.controller
    assert (before.leader, before.elr) == (-1, (1,))
    steps: list = []
    c = unlogged.elect_with_registration(cfg, 1)(s, steps).controller
    assert (c.leader, c.leader_epoch, c.partition_epoch) == (2, before.leader_epoch + 1, before.partition_epoch + 1)
    assert [x["step"] for x in steps] == ["register", "elect"]


def test_a_response_cut_by_bytes_at_an_offset_is_a_read_of_the_batches_that_end_there():
    """An answer cut by replica.fetch.max.bytes whose event names the offset its batches end at (``upto``, as the
    translation of Apache Kafka's recordings writes it): the request asks for the leader's batches from its
    fetch offset up to there; an offset no batch ends at leaves the request alone (the delivery refuses)."""
    from isrcheck.conformance.engines.validate import unlogged
    from isrcheck.model import ModelConfig, Step, apply, initial_state

    cfg = ModelConfig()
    s = initial_state(cfg)
    for step in (Step("produce", 0, 1, records=2), Step("produce", 0, 1), Step("send_fetch", 1)):
        s, _ = apply(cfg, s, step)
    steps: list = []
    assert unlogged.byte_limit(1, None, 2)(s, steps).fetch_requests[1][0].max_batches == 1
    assert unlogged.byte_limit(1, None, 3)(s, steps).fetch_requests[1][0].max_batches == 2
    assert unlogged.byte_limit(1, None, 1)(s, []) is s  # inside the first batch
    assert [step["max_batches"] for step in steps] == [1, 2]
