"""Getting Apache Kafka: releases from the cache (fetched once with Maven), a user's distribution
without Maven, and every refusal named in one line before anything starts."""

from __future__ import annotations

import os
import shutil

import pytest

from isrcheck.conformance.engines.apache import distribution as dist_module
from isrcheck.conformance.engines.apache.cluster import KafkaCluster, KafkaClusterError, KafkaSettings
from isrcheck.conformance.engines.apache.distribution import (
    DEFAULT_VERSION,
    Distribution,
    KafkaDistributionError,
    _maven_failure,
    check_version,
    distribution,
)


@pytest.fixture(scope="module")
def release():
    """The default release's jars (fetched from Maven Central the first time, as CI's set-up does)."""
    return distribution(DEFAULT_VERSION)


def test_a_release_resolves_to_every_jar_a_node_needs_with_the_logging_binding(release):
    jars = {p.name for p in release.libs.iterdir()}
    assert f"kafka_2.13-{release.version}.jar" in jars
    assert any(j.startswith("log4j-slf4j-impl-") for j in jars) and any(j.startswith("log4j-core-") for j in jars)
    assert any(j.startswith("kafka-raft-") for j in jars) and any(j.startswith("kafka-metadata-") for j in jars)


def test_a_users_distribution_is_used_without_maven(release, tmp_path, monkeypatch):
    home = tmp_path / "kafka_2.13"
    (home / "libs").mkdir(parents=True)
    for jar in release.libs.glob("*.jar"):
        (home / "libs" / jar.name).symlink_to(jar)
    java_dir = os.path.dirname(shutil.which("java"))
    monkeypatch.setenv("PATH", java_dir)  # no mvn here
    monkeypatch.setattr(dist_module, "_fetch", lambda *a: pytest.fail("Maven was asked for"))
    got = distribution(home=str(home))
    assert got == Distribution(release.version, home / "libs")
    with pytest.raises(KafkaDistributionError, match="holds Kafka .*, not 4.0.0"):
        distribution("4.0.0", home=str(home))


def test_refusals_name_what_is_wrong(tmp_path):
    with pytest.raises(KafkaDistributionError, match="isrcheck runs Apache Kafka 4.x in KRaft mode"):
        check_version("3.9.0")
    with pytest.raises(KafkaDistributionError, match="no libs/kafka_2.13-VERSION.jar there"):
        distribution(home=str(tmp_path))


def test_maven_failures_read_as_one_line():
    unserved = (
        "[ERROR] Failed to execute goal on project apache-kafka-node: Could not resolve dependencies: "
        "Could not find artifact org.apache.kafka:kafka_2.13:jar:4.0.99 in central"
    )
    assert "4.0.99 is not served by Maven Central" in _maven_failure("4.0.99", unserved)
    offline = (
        "[ERROR] Failed to execute goal: Could not transfer artifact org.apache.kafka:kafka_2.13:pom:4.4.0 "
        "from/to central: Unknown host repo.maven.apache.org"
    )
    assert "could not reach its registry" in _maven_failure("4.4.0", offline)


def test_a_directory_of_another_cluster_or_of_other_files_is_refused_untouched(release, tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("mine")
    with pytest.raises(KafkaClusterError, match="is not empty and holds no cluster isrcheck started"):
        KafkaCluster(KafkaSettings(), theirs, release).start()
    assert [p.name for p in theirs.iterdir()] == ["notes.txt"] and (theirs / "notes.txt").read_text() == "mine"
    other = tmp_path / "other"
    other.mkdir()
    (other / "cluster.json").write_text(
        '{"cluster_id": "x", "version": "4.0.2", "elr": false, '
        '"settings": {"brokers": 5, "network": "loopback", "lazyfs": false}}'
    )
    with pytest.raises(KafkaClusterError, match="holds another cluster"):
        KafkaCluster(KafkaSettings(brokers=3), other, release).start()
    assert [p.name for p in other.iterdir()] == ["cluster.json"]


def test_a_port_in_use_is_refused_before_anything_is_written(release, tmp_path):
    import socket

    from isrcheck.conformance.engines.apache.cluster import free_port_base

    base = free_port_base(4)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", base + 3))  # the controller's
        taken.listen()
        with pytest.raises(KafkaClusterError, match=f"port {base + 3} of controller .* is in use"):
            KafkaCluster(KafkaSettings(brokers=3, port=base), tmp_path / "d", release).start()
    assert not any((tmp_path / "d").iterdir())


def test_the_command_refuses_bad_settings_with_exit_2(isrcheck_cli, tmp_path):
    cases = [
        (["--kafka-version", "3.9.0"], "isrcheck runs Apache Kafka 4.x"),
        (["--min-insync-replicas", "4"], "--min-insync-replicas 4 > the 3 brokers"),
        (["--broker-session-timeout-ms", "1000", "--broker-heartbeat-interval-ms", "600"], "two heartbeat intervals"),
        (["--topic", "a:1", "--topic", "a:2"], "--topic a is given twice"),
        (["--topic", "bad/name"], "a topic name is"),
        (["--set", "nokey"], "expected KEY=VALUE"),
    ]
    for args, message in cases:
        proc = isrcheck_cli("kafka", "--dir", tmp_path / "never", *args, timeout=60)
        assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, (args, proc.stderr)
        assert not (tmp_path / "never").exists()


def test_a_jvm_that_cannot_start_is_named_with_its_log(isrcheck_cli, tmp_path):
    proc = isrcheck_cli(
        "kafka", "--dir", tmp_path / "d", "--port", "25092", "--set", "num.io.threads=many", timeout=120
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "num.io.threads" in proc.stderr, proc.stderr
    assert "removed the unformatted cluster's files" in proc.stderr and not any((tmp_path / "d").iterdir())
