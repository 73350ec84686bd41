"""``isrcheck soak --bootstrap`` against a cluster it did not start (here a separately started
``isrcheck serve``, whose auto-created topics have one partition): the soak makes its topic with
CreateTopics of the partitions, replicas and min.insync.replicas it judges by, or refuses at once a
topic that exists with other settings, never running a workload that would end in an anomaly."""

from __future__ import annotations

import json
import signal

import pytest

from isrcheck.conformance.cli.main import main
from isrcheck.conformance.engines.apache.admin import cluster_view, create_topics, topic_configs
from isrcheck.conformance.engines.apache.cluster import free_port_base


@pytest.fixture(scope="module")
def serve(tmp_path_factory, isrcheck_serve):
    """``isrcheck serve`` with 3 brokers (min.insync.replicas 2) and a topic ``orders`` of one
    partition, as a user starts it; its bootstrap servers."""
    directory, base = tmp_path_factory.mktemp("serve"), free_port_base(3)  # broker b listens on --port + b
    proc, banner = isrcheck_serve(
        "--replicas", "3", "--dir", directory / "cluster", "--port", base, "--topic", "orders:1"
    )
    try:
        assert proc.poll() is None, banner
        yield ",".join(f"127.0.0.1:{base + b}" for b in range(3))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=120)


def test_the_soak_makes_its_topic_on_another_cluster(serve, tmp_path, capsys):
    """A short soak creates topic ``made`` (3 partitions, 3 replicas, min.insync.replicas 2) and
    every partition takes writes: no anomaly, the final read complete."""
    run = tmp_path / "run"
    code = main(["soak", "--duration", "5", "--bootstrap", serve, "--topic", "made", "--dir", str(run)])
    err = capsys.readouterr().err
    results = json.loads((run / "results.json").read_text())
    assert code == 0 and results["anomalies"] == [] and results["final_read"], (err[-3000:], results["anomalies"])
    assert f"creating topic made on {serve}: 3 partitions, 3 replicas, min.insync.replicas 2" in err, err[-3000:]
    view = cluster_view(serve.split(","), ["made"])
    assert sorted(view.topic("made")) == [0, 1, 2] and all(len(p.replicas) == 3 for p in view.topic("made").values())
    assert topic_configs(serve, "made")["min.insync.replicas"] == "2"
    events = [json.loads(line) for line in (run / "history.jsonl").read_text().splitlines()]
    written = {e["partition"] for e in events if e["f"] == "send" and e["type"] == "ok"}
    assert written == {"made-0", "made-1", "made-2"}
    assert not [e for e in events if e["f"] == "send" and e["type"] != "invoke" and "UNKNOWN" in e.get("error", "")]


@pytest.mark.parametrize(
    "topic, args, said",
    [
        (
            "orders",
            [],
            "--topic orders: the cluster's topic has partitions 1, the soak needs 3 (the soak's "
            "--partitions 3 --replicas 3 --min-insync-replicas 2; give the topic's, or another --topic)",
        ),
        ("strict", [], "--topic strict: the cluster's topic has min.insync.replicas 3, the soak needs 2"),
        ("strict", ["--min-insync-replicas", "3"], None),
        ("wide", ["--replicas", "5"], "--replicas 5: the cluster at {serve} lists 3 broker(s), too few for topic wide"),
    ],
)
def test_a_topic_the_soak_cannot_use_is_refused_before_the_run(serve, tmp_path, capsys, topic, args, said):
    """A topic of other partitions or min.insync.replicas, or a cluster of fewer brokers than the
    soak's replicas: exit 2, one line naming the topic (or the setting) and what differs, nothing
    run. The same topic with the soak's settings matching it is used as it is."""
    create_topics(serve, [("strict", 3)], 3, {"min.insync.replicas": "3"})  # exists already after the first
    run = tmp_path / "run"
    code = main(["soak", "--duration", "1", "--bootstrap", serve, "--topic", topic, "--dir", str(run), *args])
    err = capsys.readouterr().err
    if said is None:
        assert code == 0 and "creating topic" not in err, err[-3000:]
        return
    assert code == 2 and err.count("\n") == 1 and said.format(serve=serve) in err, err
    assert "anomal" not in err and not (run / "history.jsonl").exists()
    assert cluster_view(serve.split(","), ["wide"]).topic("wide") == {}  # nothing created
