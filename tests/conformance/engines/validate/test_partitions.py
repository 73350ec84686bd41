"""A Kafka cluster's event log: one trace per partition, brokers renamed by replica order, the
events of no partition (a broker's crash) in every trace; a partition whose replicas no header
names is bad input."""

from __future__ import annotations

import json

import pytest

from isrcheck.conformance.engines.validate.events import partition_traces, read_trace
from isrcheck.conformance.vocabulary import UsageError
from isrcheck.impl.controller import CONTROLLER_ID
from isrcheck.impl.eventlog import DOWN, EventLog, run_header
from isrcheck.impl.replication import ClusterConfig


def _log(tmp_path, partitions: dict | None) -> None:
    now = [0]
    header = run_header(ClusterConfig(protocol="kip-320", replicas=3))
    controller = EventLog(str(tmp_path), header, CONTROLLER_ID, lambda: now[0])
    if partitions is not None:
        controller.describe_partitions(partitions)
    brokers = EventLog(str(tmp_path), header, CONTROLLER_ID, lambda: now[0])
    now[0] = 5
    state = '{"leo":0,"hw":0,"leader":1,"epoch":0,"isr":[0,1,2],"pe":0,"last_epoch":-1,"pending":null}'
    brokers.emit(
        2,
        "deliver_leader_and_isr",
        state,
        {
            "tp": "orders-1",
            "replica": 2,
            "message": {"leader": 1, "leader_epoch": 0, "isr": [0, 1, 2], "partition_epoch": 0},
        },
        (CONTROLLER_ID, 7),
    )
    now[0] = 6
    brokers.emit(0, "crash", DOWN, {"replica": 0, "kind": "process"})  # of every partition
    controller.close()
    brokers.close()


def test_each_partition_is_its_own_trace_with_brokers_renamed_by_replica_order(tmp_path):
    _log(tmp_path, {"orders-0": (0, 1, 2), "orders-1": (1, 2, 0)})
    trace = read_trace(str(tmp_path))
    [(tp, one)] = partition_traces(trace)  # only orders-1 has events of its own
    assert tp == "orders-1" and one.renamed == {1: 0, 2: 1, 0: 2}
    delivered, crash = one.events
    assert (delivered.node, delivered.fields["replica"], delivered.msg) == (1, 1, (CONTROLLER_ID, 7))
    assert delivered.fields["message"]["leader"] == 0 and delivered.state["leader"] == 0
    assert (crash.step, crash.node, crash.fields["replica"]) == ("crash", 2, 2)
    header = json.loads((tmp_path / "controller.jsonl").read_text().splitlines()[0])
    assert header["partitions"] == {"orders-0": [0, 1, 2], "orders-1": [1, 2, 0]}


def test_a_single_partition_log_is_one_trace_as_it_is(tmp_path):
    log = EventLog(str(tmp_path), run_header(ClusterConfig(protocol="kip-320", replicas=3)), CONTROLLER_ID, lambda: 0)
    log.emit(1, "crash", DOWN, {"replica": 1, "kind": "clean"})
    log.close()
    trace = read_trace(str(tmp_path))
    assert partition_traces(trace) == [(None, trace)]


def test_a_partition_no_header_names_is_bad_input(tmp_path):
    _log(tmp_path, None)
    with pytest.raises(UsageError, match=r"broker-2.jsonl:2: partition orders-1: no header names its 3 replicas"):
        partition_traces(read_trace(str(tmp_path)))
