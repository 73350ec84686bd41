"""``isrcheck serve`` refuses, before any process starts, settings that would break the cluster:
each named with its valid range, or with the setting it conflicts with; exit 2, one line. Once it
serves, a node that exits by itself is named."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from isrcheck.conformance.cli.main import main
from isrcheck.impl.real.processes import free_ports


@pytest.mark.parametrize(
    "args, said",
    [
        (["--socket-request-max-bytes", "0"], "--socket-request-max-bytes: expected 65,536..2,147,483,647, got 0"),
        (["--broker-heartbeat-interval-ms", "0"], "--broker-heartbeat-interval-ms: expected 1..2,147,483,647, got 0"),
        (["--broker-session-timeout-ms", "0"], "--broker-session-timeout-ms: expected 1..2,147,483,647, got 0"),
        (
            ["--broker-session-timeout-ms", "999"],
            "--broker-session-timeout-ms 999: shorter than two heartbeat intervals "
            "(--broker-heartbeat-interval-ms 500)",
        ),
        (["--request-timeout-ms", "0"], "--request-timeout-ms: expected 1..2,147,483,647, got 0"),
        (["--replica-lag-time-max-ms", "99999999999"], "--replica-lag-time-max-ms: expected 1..2,147,483,647"),
        (
            ["--replica-fetch-wait-max-ms", "10000"],
            "--replica-fetch-wait-max-ms 10000: not shorter than --replica-lag-time-max-ms 10000",
        ),
        (["--topic", "a:100000000"], "--topic 'a:100000000': partitions must be 1..10000"),
        (["--topic", "a:0"], "--topic 'a:0': partitions must be 1..10000"),
        (["--topic", "a:1", "--topic", "a:2"], "--topic 'a:2': topic a is given twice"),
        (["--topic", "a", "--topic", "a"], "--topic 'a': topic a is given twice"),
        (["--flush-messages", "0"], "--flush-messages: expected 1..2,147,483,647, got 0"),
    ],
)
def test_settings_that_break_the_cluster_are_refused(tmp_path, capsys, monkeypatch, args, said):
    import isrcheck.conformance.cli.serve as serve

    def started(*_, **__):
        raise AssertionError("a cluster started")

    monkeypatch.setattr(serve, "ProcessCluster", started)
    port = str(free_ports(1)[0])
    assert main(["serve", "--replicas", "1", "--port", port, "--dir", str(tmp_path / "d"), *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err and "Traceback" not in err, err
    assert not (tmp_path / "d").exists()


def test_a_directory_with_broker_data_but_no_cluster_metadata_is_refused_untouched(tmp_path, capsys, monkeypatch):
    """A broker's logs without the controller's metadata would be served as a new cluster's,
    whose leaders truncate them: refused before anything starts, every byte kept."""
    import isrcheck.conformance.cli.serve as serve

    monkeypatch.setattr(serve, "ProcessCluster", None)
    partition = tmp_path / "d" / "broker-0" / "orders-0"
    partition.mkdir(parents=True)
    (partition / "00000000000000000000.log").write_bytes(b"\x01" * 5000)
    (partition / "00000000000000000000.index").write_bytes(b"\x02" * 80)
    port = str(free_ports(1)[0])
    assert main(["serve", "--replicas", "1", "--port", port, "--dir", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert (
        f"--dir {tmp_path / 'd'}: holds broker data ({tmp_path / 'd' / 'broker-0'}) but no cluster metadata "
        f"({tmp_path / 'd' / 'controller' / 'metadata.json'})"
    ) in err
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == ["broker-0"]
    assert (partition / "00000000000000000000.log").stat().st_size == 5000
    assert (partition / "00000000000000000000.index").stat().st_size == 80


def test_serve_says_when_a_node_exits_by_itself(tmp_path, isrcheck_serve):
    """A broker killed under a running ``serve`` is named once on its output, and the stop after it
    says the shutdown was not clean (exit 1)."""
    directory = tmp_path / "d"
    proc, banner = isrcheck_serve("--replicas", "1", "--port", free_ports(1)[0], "--dir", directory)
    try:
        assert "bootstrap servers" in banner, banner
        broker = _node_pid(str(directory / "broker-0"))
        os.kill(broker, signal.SIGKILL)
        line = proc.stdout.readline()
        assert line.startswith("isrcheck serve: node 0 exited with code -9 (see "), line
    finally:
        proc.terminate()
        rest, _ = proc.communicate(timeout=60)
    assert proc.returncode == 1, rest
    assert "not cleanly: {0: -9}" in rest


def _node_pid(data_dir: str) -> int:
    """The pid of the node process serving ``data_dir`` (its command line names it)."""
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError):
            continue
        if b"isrcheck.impl.real.node" in argv and data_dir.encode() in argv:
            return int(entry.name)
    raise AssertionError(f"no node process for {data_dir}")
