"""The validator's own path is the model's: a SharedLog is the tuple it stands for under every
operation the model applies to a log, and validating with SharedLogs, without the ghost acks and
reads, and with consume by its guard gives the same behaviour, candidate by candidate, as the
model's own steps on plain tuples."""

from __future__ import annotations

import json
import random
from bisect import bisect_right
from dataclasses import replace

import pytest

from isrcheck.conformance.engines.validate import search, unlogged
from isrcheck.conformance.engines.validate.events import partition_traces, read_trace
from isrcheck.conformance.engines.validate.sharedlog import SharedLog, shared
from isrcheck.impl.sim.workload import run_simulation
from isrcheck.model import ModelConfig, Step
from isrcheck.model.state import Entry, batch_ends, end_offset_for, initial_state, latest_epoch


def _batch(log, epoch: int, size: int, record: int) -> tuple:
    base = len(log)
    return tuple(Entry(base + i, epoch, record + i, base) for i in range(size))


def _same_sequence(view, plain: tuple) -> None:
    assert view == plain and plain == view and not view != plain
    assert len(view) == len(plain) and tuple(view) == plain and list(iter(view)) == list(plain)
    assert hash(view) == hash(plain) and repr(view) == repr(plain)
    assert latest_epoch(view) == latest_epoch(plain)
    for i in (0, len(plain) // 2, len(plain) - 1, -1):
        if plain:
            assert view[i] == plain[i]
    for epoch in range(-1, 6):
        assert end_offset_for(view, epoch) == end_offset_for(plain, epoch)
        assert bisect_right(view, epoch, key=lambda e: e[1]) == bisect_right(plain, epoch, key=lambda e: e[1])
    if plain:
        start = plain[len(plain) // 2].base
        assert batch_ends(view, start) == batch_ends(plain, start)
        assert view[start : len(plain) - 1] == plain[start : len(plain) - 1]
    with pytest.raises(IndexError):
        view[len(plain)]


@pytest.mark.parametrize("seed", range(5))
def test_a_shared_log_is_the_tuple_it_stands_for_under_appends_truncations_and_siblings(seed):
    """Candidates that branch (one appends, a sibling truncates and appends something else, a
    third appends the same batch) each keep their own value, however they share storage."""
    rng = random.Random(seed)
    logs = [(shared(()), ())]
    record = 1
    for _ in range(400):
        view, plain = logs[rng.randrange(len(logs))]
        op = rng.random()
        if op < 0.55:
            batch = _batch(plain, rng.randrange(5), rng.randint(1, 3), record)
            record += len(batch)
            at_end = len(view._buf) == len(view)
            new = (view + batch, plain + batch)
            if rng.random() < 0.3:  # a sibling takes the same step: the same entries, shared
                twin = view + batch
                assert twin == new[0] and (twin._buf is new[0]._buf or not at_end)
        elif op < 0.7 and plain:
            cut = rng.randrange(len(plain) + 1)
            new = (view[:cut], plain[:cut])
        elif op < 0.8:  # a follower appends a leader's answer from its LEO (from 0: a prefix of the leader's log)
            other_view, other_plain = logs[rng.randrange(len(logs))]
            start = len(plain)
            new = (view + other_view[start : start + 4], plain + other_plain[start : start + 4])
        else:
            new = (() + view, () + plain)
        logs.append(new)
        if len(logs) > 12:
            logs.pop(rng.randrange(len(logs) - 1))
    for view, plain in logs:
        _same_sequence(view, plain)


def test_an_append_costs_what_it_appends_and_a_truncation_shares():
    log = shared(())
    grown = log
    for i in range(1000):
        grown = grown + _batch(grown, 1, 1, i)
    assert grown._buf is log._buf  # one list for the whole run: no copy per append
    cut = grown[:10]
    assert cut._buf is grown._buf and cut == tuple(grown)[:10]
    diverged = cut + _batch(cut, 2, 1, 5000)  # a truncated log appending anew copies what it keeps, once
    assert diverged._buf is not grown._buf and grown == tuple(grown) and len(grown) == 1000
    assert [e.epoch for e in diverged] == [1] * 10 + [2]


def test_the_validators_state_has_shared_logs_and_no_ghost_acks():
    s = initial_state(ModelConfig(protocol="kip-320"))
    lost_disk = s._replace(replicas=(s.replicas[0]._replace(log=()),) + s.replicas[1:], acked=((0, 1),))
    k = search.kept(lost_disk)
    assert all(type(r.log) is SharedLog for r in k.replicas) and k.acked == () and k.replicas == lost_disk.replicas


def _behaviour(trace) -> tuple[list, dict]:
    """Every successor of every event (its system state, the fault counters and the steps it
    took), and the verdict."""
    taken: list = []
    successors = search.Search.successors

    def recorded(self, s, ev, reasons, judged=None):
        for s2, steps, judged2 in successors(self, s, ev, reasons, judged):
            taken.append((s2[:9] + s2[13:], list(steps)))
            yield s2, steps, judged2

    search.Search.successors = recorded
    try:
        verdict = search.validate(trace)
    finally:
        search.Search.successors = successors
    return taken, verdict.to_json()


@pytest.mark.parametrize("protocol, seed", [("kip-966", 3), ("kip-320", 5), ("hw-truncation", 7), ("kip-101", 2)])
def test_validation_takes_the_models_steps_candidate_by_candidate(tmp_path, monkeypatch, protocol, seed):
    """Runs with crashes of every kind (truncations, power losses, restarts), consumes and several
    candidates; and the same run with a HW edited, refused alike."""
    run_simulation(protocol, 3, seed, 1500, events_dir=str(tmp_path))
    [(_, trace)] = partition_traces(read_trace(str(tmp_path)))
    events = list(trace.events)
    k = max(i for i, e in enumerate(events) if e.step == "handle_fetch_response")
    events[k] = replace(events[k], state={**events[k].state, "hw": 10**6})
    edited = replace(trace, events=events)
    fast = [_behaviour(trace), _behaviour(edited)]
    with monkeypatch.context() as plain:  # the model's own steps on tuples, every ghost kept
        plain.setattr(search, "kept", lambda s, acked=False: s)
        plain.setattr(unlogged, "consume", lambda cfg, r: Step("consume", r))
        reference = [_behaviour(trace), _behaviour(edited)]
    assert fast[0][1]["verdict"] == "explained" and fast[1][1]["verdict"] == "not explained"
    assert any(st["step"] == "consume" for _, steps in fast[0][0] for st in steps)
    for (taken, verdict), (taken_ref, verdict_ref) in zip(fast, reference):
        assert verdict == verdict_ref
        assert len(taken) == len(taken_ref)
        for (s, steps), (s_ref, steps_ref) in zip(taken, taken_ref):
            assert steps == steps_ref and s == s_ref


def test_validating_leaves_no_cycles_behind_for_the_collector_it_turns_off(tmp_path):
    """``isrcheck validate`` runs with Python's cycle collector off: what it builds is freed by
    reference counting alone, explained or refused, so a campaign validating seed after seed holds
    no garbage; and the collector is back on afterwards."""
    import gc

    from isrcheck.conformance.engines.validate.validation import validate_path

    run_simulation("kip-966", 3, 1, 600, events_dir=str(tmp_path / "ok"))
    lines = (tmp_path / "ok" / "broker-0.jsonl").read_text().splitlines()
    (tmp_path / "edited").mkdir()
    for f in (tmp_path / "ok").iterdir():
        (tmp_path / "edited" / f.name).write_text(f.read_text())
    edited = json.loads(lines[40])
    edited["state"]["leo"] += 100  # a log end no step reaches
    (tmp_path / "edited" / "broker-0.jsonl").write_text(
        "\n".join([*lines[:40], json.dumps(edited), *lines[41:]]) + "\n"
    )
    gc.collect()
    verdicts = [validate_path(str(tmp_path / name))[0].explained for name in ("ok", "edited")]
    assert verdicts == [True, False] and gc.isenabled()
    assert gc.collect() == 0
