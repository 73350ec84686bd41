"""The event recorder for Apache Kafka: the Java agent builds, hooks methods every tested release has,
and its recordings are read back checked (bad output named by file and line, exit 2)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from isrcheck.conformance.engines.apache.agent import agent_jar, agent_source, source_hash
from isrcheck.conformance.engines.apache.distribution import TESTED_VERSIONS, cache_root
from isrcheck.conformance.engines.apache.recording import AGENT, EVENTS, FORMAT, RUN_FILE, read_recording, summary
from isrcheck.conformance.vocabulary import UsageError


def test_agent_builds_once_into_the_cache():
    jar = agent_jar()  # built once per source hash (about a minute the first time), then found
    assert jar.parent.name == source_hash() and jar.is_file()
    with zipfile.ZipFile(jar) as z:
        names = set(z.namelist())
        manifest = z.read("META-INF/MANIFEST.MF").decode()
    assert "Premain-Class: isrcheck.agent.Agent" in manifest
    assert "isrcheck/agent/Hook.class" in names
    assert any(n.startswith("isrcheck/agent/shaded/bytebuddy/") for n in names)
    assert not any(n.startswith("net/bytebuddy/") for n in names)  # relocated: meets no other copy
    assert agent_jar() == jar


def _hooks() -> dict[str, list[str]]:
    """Agent.HOOKS, read off the Java source: class name -> methods."""
    text = (agent_source() / "src/main/java/isrcheck/agent/Agent.java").read_text()
    arrays = {
        m.group(1): re.findall(r'"([\w$]+)"', m.group(2))
        for m in re.finditer(r"String\[\] (\w+) = \{(.*?)\};", text, re.S)
    }
    hooks = {}
    for m in re.finditer(r'HOOKS\.put\("([\w.]+)", (?:new String\[\] \{(.*?)\}|(\w+))\);', text, re.S):
        hooks[m.group(1)] = re.findall(r'"([\w$]+)"', m.group(2)) if m.group(2) else arrays[m.group(3)]
    return hooks


def _event_name(cls: str, method: str) -> str:
    """The event a hook records: the class's simple name and the method's (a Scala-mangled name's last part)."""
    return f"{cls.rsplit('.', 1)[1]}.{method.split('$$')[-1]}"


def test_the_reader_knows_every_hook():
    for cls, methods in _hooks().items():
        for method in methods:
            assert _event_name(cls, method) in EVENTS


@pytest.mark.parametrize("version", TESTED_VERSIONS)
def test_every_hooked_method_is_in_the_release(version):
    """Each hook names a method of the release's class (its name in the class's constant pool), under
    one of the class's names (4.0 and 4.4 name some classes differently): a renamed method would
    silently record nothing."""
    libs = cache_root() / version / "libs"
    if not (libs / ".complete").is_file():
        pytest.skip(f"Apache Kafka {version} is not in the cache (isrcheck kafka --fetch --kafka-version {version})")
    classes = {}
    for jar in libs.glob("kafka*.jar"):
        with zipfile.ZipFile(jar) as z:
            for cls in _hooks():
                path = cls.replace(".", "/") + ".class"
                if path in z.namelist():
                    classes[cls] = z.read(path)
    found = set()
    for cls, methods in _hooks().items():
        for method in methods:
            if cls in classes and re.search(
                rb"\x01" + len(method).to_bytes(2, "big") + re.escape(method.encode()) + rb"(?![\w$])", classes[cls]
            ):
                found.add(_event_name(cls, method))
    wanted = {_event_name(c, m) for c, ms in _hooks().items() for m in ms}
    assert wanted - found == set()


def _recording(tmp_path: Path, lines: dict[str, list[str]]) -> Path:
    run = {
        "format": FORMAT,
        "version": 1,
        "kafka": "4.4.0",
        "elr": True,
        "origin_ns": 0,
        "controller": 100,
        "brokers": 3,
        "min_insync_replicas": 2,
        "unclean_election": False,
        "replica_lag_time_max_ms": 30000,
        "flush_messages": None,
    }
    (tmp_path / RUN_FILE).write_text(json.dumps(run))
    for name, body in lines.items():
        (tmp_path / name).write_text("".join(body))
    return tmp_path


def _header(node: int) -> str:
    return json.dumps({"agent": AGENT, "version": 1, "node": node, "pid": 1, "us": 0}) + "\n"


def _event(seq: int, ev: str = "Partition.makeLeader", us: int = 10, **extra) -> str:
    line = {
        "seq": seq,
        "us": us,
        "ev": ev,
        "at": "exit",
        "thread": "t",
        "p": {"tp": "t-0", "leader": 0, "epoch": 0, "pe": 0, "isr": [0, 1, 2], "leo": 0, "hw": 0},
        **extra,
    }
    return json.dumps(line) + "\n"


def test_a_cut_last_line_ends_the_log(tmp_path):
    path = _recording(
        tmp_path, {"broker-0.jsonl": [_header(0), _event(1), _event(2, us=20)[:40]], "controller.jsonl": [_header(100)]}
    )
    run, events = read_recording(path)
    assert [e.line["seq"] for e in events] == [1]
    assert "recorded 1 events" in summary(path)


@pytest.mark.parametrize(
    "body, said",
    [
        ([_header(0), _event(1)[:30] + "\n", _event(2)], r"broker-0\.jsonl:2: not a JSON line"),
        ([_header(0), _event(1, ev="Partition.makeSoup")], r"broker-0\.jsonl:2: unknown event \"Partition\.makeSoup\""),
        ([_event(1)], r"broker-0\.jsonl:1: an event before the agent's header line"),
        ([_header(0), _event(1, us="soon")], r"broker-0\.jsonl:2: 'us' must be an integer"),
        ([_header(0), _event(1, us=10, **{"in": 11})], r"broker-0\.jsonl:2: 'in' must be the method's entry"),
        (
            [
                _header(0),
                json.dumps({"seq": 0, "us": 5, "ev": "harness.crash", "at": "harness", "kind": "meteor"}) + "\n",
            ],
            r"broker-0\.jsonl:2: harness\.crash: kind \"meteor\"",
        ),
    ],
)
def test_bad_agent_output_is_named_by_file_and_line(tmp_path, body, said):
    path = _recording(tmp_path, {"broker-0.jsonl": body})
    with pytest.raises(UsageError, match=said):
        read_recording(path)
    # and `isrcheck validate` says so, exit 2
    proc = subprocess.run(
        [sys.executable, "-m", "isrcheck.conformance.cli.main", "validate", str(path)], capture_output=True, text=True
    )
    assert proc.returncode == 2 and re.search(said, proc.stderr + proc.stdout)


@pytest.mark.slow
@pytest.mark.parametrize("version", TESTED_VERSIONS)
def test_a_short_kafka_run_is_recorded_well_formed(tmp_path, version):
    """A cluster with the agent in every JVM: produce acks=all, a broker killed and restarted, a clean
    stop: every node's events read back checked, the hooks that such a run reaches all recorded."""
    from confluent_kafka import Producer

    from isrcheck.conformance.engines.apache.cluster import KafkaCluster, KafkaSettings, free_port_base
    from isrcheck.conformance.engines.apache.distribution import distribution

    dist = distribution(version)
    settings = KafkaSettings(brokers=3, port=free_port_base(5), topics=[("t", 1)], heap="384m")
    cluster = KafkaCluster(settings, tmp_path / "cluster", dist, events=tmp_path / "events")
    try:
        cluster.start()
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
        for i in range(5):
            producer.produce("t", value=str(i).encode(), partition=0)
            producer.flush(10)
        cluster.kill(2)
        cluster.restart(2)
        time.sleep(3)
    finally:
        cluster.stop()
    run, events = read_recording(tmp_path / "events")
    kinds = {e.ev for e in events}
    assert not [e for e in events if e.ev == "agent.error"]
    for ev in (
        "Partition.makeLeader",
        "Partition.makeFollower",
        "Partition.updateFollowerFetchState",
        "Partition.appendRecordsToLeader",
        "Partition.maybeIncrementLeaderHW",
        "DelayedProduce.onComplete",
        "ReplicaFetcherThread.processPartitionData",
        "AbstractFetcherThread.processFetchRequest",
        "ReplicationControlManager.replay",
        "ClusterControlManager.replay",
        "harness.crash",
    ):
        assert ev in kinds, ev
    appended = [e for e in events if e.ev == "Partition.appendRecordsToLeader" and e.p["tp"] == "t-0"]
    assert [e.line["ret"]["firstOffset"] for e in appended] == [0, 1, 2, 3, 4]
    exits = [e for e in events if e.at == "exit"]
    assert exits and all(0 <= e.line["in"] <= e.us for e in exits)  # each exit says when its method began
    assert {e.line["kind"] for e in events if e.ev == "harness.crash" and e.node == 2} >= {"process", "clean"}
