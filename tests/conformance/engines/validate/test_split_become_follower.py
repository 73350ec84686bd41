"""Validating a log whose header sets split_become_follower: a follower that applies a newer leader
epoch (``deliver_leader_and_isr``, Partition.makeFollower) and only later replaces its fetcher
(``remove_fetcher``), appending between the two the answer its old leader sent, and fetching from
that old leader again under its old tag, which its ``send_fetch`` names (Kafka 4.x's
ReplicaManager.applyLocalFollowersDelta, AbstractFetcherThread.maybeFetch; docs/steps.md,
``split_become_follower``)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from split_switches import log_header, made_follower_with_an_answer_on_its_way

from isrcheck.conformance.engines.validate.validation import validate_path
from isrcheck.conformance.engines.validate.views import broker_view, controller_view
from isrcheck.impl.controller import CONTROLLER_ID
from isrcheck.impl.eventlog import EventLog, run_header
from isrcheck.impl.replication import CRASH_KINDS, ClusterConfig
from isrcheck.impl.sim import Cluster
from isrcheck.impl.sim.workload import Workload, sim_config
from isrcheck.model import ModelConfig, Step, apply, initial_state

PRODUCER, CONTROLLER = 4000, 1000
# (model step, the node that logs it, msg: (sender, the follower's send) of a receive)
HEAD = [
    (Step("produce", 0, 1), 0, (PRODUCER, 1)),
    (Step("send_fetch", 1), 1, None),
    (Step("handle_fetch", 1), 0, (1, 1)),  # leader 0 answers follower 1 with record 1
    (Step("elect", 2), CONTROLLER, None),  # leader 2 in leader epoch 1
    (Step("deliver_leader_and_isr", 1, index=0), 1, None),  # follower 1 applies it: makeFollower
]
APPEND = (Step("handle_fetch_response", 1), 1, (0, 1))  # the old leader's answer appended
REMOVE = (Step("remove_fetcher", 1), 1, None)
# leader 0, in leader epoch 0 still, appends record 2; the stale fetcher fetches it and appends it
REFETCH = [
    (Step("produce", 0, 1), 0, (PRODUCER, 2)),
    (Step("send_fetch", 1), 1, None),  # to leader 0, under (0, 0)
    (Step("handle_fetch", 1), 0, (1, 2)),
    (Step("handle_fetch_response", 1), 1, (0, 2)),
]


def _log(path: Path, run: list, split: bool = True) -> list[dict]:
    """The events of ``run`` as the model takes them (each node's state after its step), in one file;
    a step the model refuses logs the state before it."""
    cfg = ModelConfig(protocol="kip-966", split_become_follower=True)
    lines: list[dict] = [log_header("split_become_follower", split)]
    s, seq = initial_state(cfg), {}
    for lc, (st, node, msg) in enumerate(run, start=1):
        if st.name == "deliver_leader_and_isr":
            m = s.leader_and_isr[st.replica][st.index]
            fields = {"replica": st.replica, "message": {"leader": m.leader, "leader_epoch": m.leader_epoch}}
            fields["message"].update(isr=list(m.isr), partition_epoch=m.partition_epoch)
        else:
            fields = dict(zip(st.kind.fields, st.field_values()))
        s = apply(cfg, s, st)[0]
        seq[node] = seq.get(node, 0) + 1
        event = {"node": node, "seq": seq[node], "lc": lc, "t": 0, "step": st.name, **fields}
        if st.name == "send_fetch":
            event["corr"] = sum(x.name == "send_fetch" and n == node for x, n, _ in run[:lc])  # 1, 2, ...
            if s.replicas[node].stale_fetcher:
                event["stale_fetcher"] = list(s.replicas[node].stale_fetcher)
        if msg is not None:
            event["msg"] = list(msg)
        view = controller_view(s) if node == CONTROLLER else broker_view(s, node)
        lines.append({**event, "state": view})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return lines


def test_the_old_leaders_answer_appended_before_remove_fetcher_is_explained(tmp_path):
    log = tmp_path / "split.jsonl"
    lines = _log(log, HEAD + [APPEND, REMOVE])
    append = lines[-2]
    assert append["state"]["leo"] == 1 and append["state"]["epoch"] == 1  # record 1, in leader epoch 1
    verdict, events, _ = validate_path(str(log))
    assert verdict.explained, verdict.to_json()
    assert events == len(HEAD) + 2
    taken = [st["step"] for st in verdict.steps]
    assert taken.index("deliver_leader_and_isr") < taken.index("handle_fetch_response") < taken.index("remove_fetcher")


def test_the_append_after_remove_fetcher_is_refused_at_it(tmp_path):
    log = tmp_path / "late.jsonl"
    lines = _log(log, HEAD + [APPEND, REMOVE])
    lines[-2], lines[-1] = lines[-1], lines[-2]  # the fetcher replaced first (nothing appended yet) ...
    lines[-2]["state"] = {**lines[-2]["state"], "leo": 0, "hw": 0, "last_epoch": -1}  # ... then the same append
    lines[-2]["lc"], lines[-1]["lc"] = lines[-1]["lc"], lines[-2]["lc"]
    lines[-2]["seq"], lines[-1]["seq"] = lines[-1]["seq"], lines[-2]["seq"]
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    verdict, _, _ = validate_path(str(log))
    assert not verdict.explained
    assert verdict.event.step == "handle_fetch_response", verdict.event.describe()
    assert "handle_fetch_response" in verdict.event.describe()
    assert any("leo is 0 in the model, 1 in the log" in why for r in verdict.refusals for why in r.reasons)


def test_the_same_log_without_the_switch_is_refused(tmp_path):
    log = tmp_path / "whole.jsonl"
    _log(log, HEAD + [APPEND, REMOVE], split=False)
    verdict, _, _ = validate_path(str(log))
    assert not verdict.explained and verdict.event.step == "handle_fetch_response"


def test_a_stale_fetchers_fetch_from_its_old_leader_is_explained(tmp_path):
    log = tmp_path / "refetch.jsonl"
    lines = _log(log, HEAD + [APPEND] + REFETCH + [REMOVE])
    send = lines[-4]
    assert send["stale_fetcher"] == [0, 0] and send["state"]["epoch"] == 1 and send["corr"] == 2
    assert lines[-2]["state"]["leo"] == 2  # record 2 appended in leader epoch 1
    verdict, events, _ = validate_path(str(log))
    assert verdict.explained, verdict.to_json()
    assert events == len(HEAD) + len(REFETCH) + 2


def test_a_send_fetch_that_names_another_tag_than_the_models_is_refused(tmp_path):
    log = tmp_path / "untagged.jsonl"
    lines = _log(log, HEAD + [APPEND] + REFETCH + [REMOVE])
    del lines[-4]["stale_fetcher"]  # the stale fetcher's send, as if the partition's tag
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    verdict, _, _ = validate_path(str(log))
    assert not verdict.explained and verdict.event.step == "send_fetch"
    assert any(
        "stale_fetcher is [0, 0] in the model, none in the log" in why for r in verdict.refusals for why in r.reasons
    )
    lines[-4]["stale_fetcher"] = [2, 1]
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    verdict, _, _ = validate_path(str(log))
    assert not verdict.explained and verdict.event.step == "send_fetch"


def test_a_self_driven_run_with_the_switch_is_explained(tmp_path):
    """Auto mode replaces a new follower's fetcher in a task of its own, logged as remove_fetcher."""
    config = dataclasses.replace(sim_config("kip-966", 3), split_become_follower=True)
    work = Workload(config, 1, True, CRASH_KINDS, str(tmp_path))
    for _ in range(150):
        work.step()
    work.finish()
    work.events.close()
    header = json.loads((tmp_path / "controller.jsonl").read_text().splitlines()[0])
    assert header["config"]["split_become_follower"] is True
    verdict, events, _ = validate_path(str(tmp_path))
    assert verdict.explained, verdict.to_json()
    assert sum(st["step"] == "remove_fetcher" for st in verdict.steps) >= 3


def test_the_implementations_log_of_a_stale_fetch_names_its_tag_and_is_explained(tmp_path):
    """The simulation in step mode, logging: follower 1's stale fetcher fetches from leader 0 again."""
    config = ClusterConfig(protocol="kip-966", replicas=3, min_insync_replicas=2, split_become_follower=True)
    log = EventLog(str(tmp_path), run_header(config), CONTROLLER_ID)
    c = made_follower_with_an_answer_on_its_way(Cluster(config, events=log))
    c.send_fetch(1)
    c.handle_fetch(1)
    c.handle_fetch_response(1)
    c.remove_fetcher(1)
    log.close()
    sends = [json.loads(x) for x in (tmp_path / "broker-1.jsonl").read_text().splitlines()[1:]]
    sends = [e for e in sends if e["step"] == "send_fetch"]
    assert "stale_fetcher" not in sends[0] and sends[1]["stale_fetcher"] == [0, 0] and sends[1]["state"]["epoch"] == 1
    verdict, _, _ = validate_path(str(tmp_path))
    assert verdict.explained, verdict.to_json()
    assert [st["step"] for st in verdict.steps].count("handle_fetch_response") == 2
