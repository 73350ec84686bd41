"""``isrcheck soak``'s input is checked before the run: a malformed --bootstrap at once, an
unreachable one before the workload starts (naming the address and the connection error), never
as an anomaly of a history that recorded nothing but failures; settings that conflict, at once."""

from __future__ import annotations

import socket
import time

import pytest

from isrcheck.conformance.cli.main import main


@pytest.mark.parametrize(
    "bootstrap, said",
    [
        ("not an address", "'not an address' is not HOST:PORT"),
        ("127.0.0.1:99999", "127.0.0.1:99999: port 99999 is not in 1..65535"),
        ("127.0.0.1:0", "127.0.0.1:0: port 0 is not in 1..65535"),
        ("127.0.0.1", "'127.0.0.1' is not HOST:PORT"),
        (":9092", "':9092' is not HOST:PORT"),
        ("kafka1:9092,,kafka2:9092", "'' is not HOST:PORT"),
        ("kafka1:ninety", "'kafka1:ninety' is not HOST:PORT"),
        ("[::1:9092", "'[::1:9092' is not HOST:PORT"),
    ],
)
def test_a_malformed_bootstrap_is_refused_at_once(tmp_path, capsys, bootstrap, said):
    started = time.monotonic()
    assert main(["soak", "--duration", "5", "--bootstrap", bootstrap, "--dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--bootstrap: {said}" in err, err
    assert time.monotonic() - started < 2 and not (tmp_path / "run").exists()


def test_an_unreachable_cluster_is_refused_before_the_workload(tmp_path, capsys):
    with socket.socket() as s:  # a port nothing listens on: bound, never listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        started = time.monotonic()
        assert (
            main(["soak", "--duration", "60", "--bootstrap", f"127.0.0.1:{port}", "--dir", str(tmp_path / "run")]) == 2
        )
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"127.0.0.1:{port} (Connection refused)" in err, err
    assert "cannot connect" in err and "anomal" not in err
    assert time.monotonic() - started < 10 and not (tmp_path / "run").exists()


def test_the_bootstrap_check_accepts_addresses_and_finds_one_that_listens():
    from isrcheck.conformance.engines.soak.driver import bootstrap_addresses, check_reachable

    assert bootstrap_addresses("kafka1:9092, 10.0.0.2:19092,[::1]:9093") == [
        ("kafka1", 9092),
        ("10.0.0.2", 19092),
        ("::1", 9093),
    ]
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        with socket.socket() as closed:
            closed.bind(("127.0.0.1", 0))
            check_reachable([("127.0.0.1", closed.getsockname()[1]), ("127.0.0.1", listening.getsockname()[1])])


def test_more_brokers_down_at_once_than_the_cluster_has_is_refused(tmp_path, capsys):
    assert main(["soak", "--duration", "5", "--max-down", "5", "--dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--max-down 5: more brokers than the cluster's 3 (--replicas)" in err, err
    assert not (tmp_path / "run").exists()
