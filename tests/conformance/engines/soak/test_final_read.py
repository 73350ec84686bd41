"""The soak's final read is bounded by progress, not by a deadline: a cluster that serves slowly is
read to the end, and one that serves nothing says how far the read got."""

import io
import json

import pytest
from confluent_kafka import Producer

from isrcheck.conformance.engines.soak.driver import own_cluster
from isrcheck.conformance.engines.soak.workload import History, Workload


@pytest.mark.slow  # a cluster of processes, paused for seconds
def test_a_paused_cluster_stops_the_final_read_with_how_far_it_got_and_a_resumed_one_is_read_to_the_end(tmp_path):
    cluster, bootstrap = own_cluster("kip-320", 3, 2, False, [("t", 2)], tmp_path / "cluster")
    try:
        history = History(io.StringIO())
        workload = Workload(bootstrap, "t", 2, history, seed=1)
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
        for i in range(20):
            workload.send(producer, 0, i % 2, i)
        assert [e["offset"] for e in history.events if e["type"] == "ok"] == [i // 2 for i in range(20)]
        for broker in range(3):
            cluster.pause(broker)
        complete, why = workload.final_read(stall_s=3)
        assert not complete and why.startswith("the cluster served nothing new for 3 s: t-0 read to -1 of 9 seen")
        for broker in range(3):
            cluster.resume(broker)
        complete, why = workload.final_read(stall_s=30)
        assert complete and why == "t-0 read to 9 of 9 seen (HW 10), t-1 read to 9 of 9 seen (HW 10)", why
        polls = [json.loads(line) for line in history.out.getvalue().splitlines()]
        assert all(p.get("final") for p in polls if p["f"] == "poll")
    finally:
        cluster.stop()


def test_a_client_that_does_not_stop_is_waited_for_said_and_sealed_out_of_the_history():
    """Workload.join waits for every client's last operation; one that outlives the wait is a client
    error, and what it records afterwards no longer changes the history being checked."""
    import threading

    history = History(io.StringIO())
    workload = Workload("127.0.0.1:1", "t", 1, history, seed=1)
    release, recorded = threading.Event(), threading.Event()

    def stuck() -> None:  # a client whose delivery report never comes
        history.record(0, "invoke", "send", partition="t-0", value=1)
        release.wait()
        history.record(0, "ok", "send", partition="t-0", value=1, offset=0)
        recorded.set()

    workload.threads = [threading.Thread(target=stuck, name="client 0", daemon=True)]
    workload.threads[0].start()
    workload.join(timeout_s=0.2)
    # where it waits, so that a stuck client can be told from a slow one
    [error] = workload.errors
    assert error.startswith("client 0: still running 0.2 s after the workload stopped, in threading.py:")
    assert "test_final_read.py:" in error and " stuck" in error
    release.set()
    assert recorded.wait(10)
    history.record("final", "invoke", "poll", partitions=["t-0"])  # the final read, from the sealing thread
    assert [(e["process"], e["type"]) for e in history.events] == [(0, "invoke"), ("final", "invoke")]
