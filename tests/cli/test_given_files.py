"""Every file the tool is given is read within a bound and named when it is wrong: one line,
exit 2, never a traceback, never a read without end (``/dev/zero``), never a hang."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from isrcheck.conformance.cli.main import main


def _limited_memory():
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def _isrcheck(*args, cwd) -> subprocess.CompletedProcess:
    """As its own process, in 1 GiB of address space (reading on without a bound ends in a
    MemoryError there, or in the kernel killing it)."""
    return subprocess.run(
        [sys.executable, "-m", "isrcheck.conformance.cli.main", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        preexec_fn=_limited_memory,
        stdin=subprocess.DEVNULL,
    )


def _one_line(err: str) -> str:
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(
    "args, said",
    [
        (["validate", "/dev/zero"], "/dev/zero:1: a line longer than an event log may hold (16 MiB)"),
        (["prove", "--check-invariant", "/dev/zero"], "/dev/zero: larger than an invariant file may be (64 MiB)"),
        (["gate", "--config", "/dev/zero"], "/dev/zero: larger than a gate config file may be (64 MiB)"),
        (
            ["soak", "--duration", "5", "--bootstrap", "127.0.0.1:1", "--hooks", "/dev/zero"],
            "/dev/zero: larger than a hooks file may be (1 MiB)",
        ),
    ],
    ids=["validate", "prove", "gate", "soak-hooks"],
)
def test_an_endless_file_is_refused_at_its_bound(tmp_path, args, said):
    proc = _isrcheck(*args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert said in _one_line(proc.stderr)


def test_an_event_log_that_is_not_utf8_is_named(tmp_path, capsys):
    (tmp_path / "ev").mkdir()
    log = tmp_path / "ev" / "broker-0.jsonl"
    log.write_bytes(b"\xd9\x00" + os.urandom(4998))
    assert main(["validate", str(tmp_path / "ev")]) == 2
    assert f"{log}:1: not a text (UTF-8) line: byte 0 (0xd9)" in _one_line(capsys.readouterr().err)


def test_a_binary_meta_properties_is_named(tmp_path, capsys):
    from isrcheck.impl.real.processes import free_ports

    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "meta.properties").write_bytes(b"\xe1\x00" + os.urandom(298))
    assert main(["serve", "--replicas", "1", "--port", str(free_ports(1)[0]), "--dir", str(tmp_path / "d")]) == 2
    err = _one_line(capsys.readouterr().err)
    assert f"{tmp_path / 'd' / 'meta.properties'}: not a text (UTF-8) file: byte 0 (0xe1)" in err


@pytest.mark.parametrize(
    "summary, said",
    [
        ({"x": 1}, '"protocol" missing'),
        ([], "not a JSON object"),
        (
            {
                "protocol": "kip-320",
                "seed": 0,
                "schedules": "30",
                "steps": 1,
                "faults": "default",
                "by_verdict": {},
                "failing_schedules": 0,
                "distinct_failures": 0,
                "failures": [],
            },
            '"schedules" is not an integer',
        ),
        (
            {
                "protocol": "kip-320",
                "seed": 0,
                "schedules": 30,
                "steps": 1,
                "faults": "default",
                "by_verdict": {},
                "failing_schedules": 0,
                "distinct_failures": 0,
                "failures": [{"id": "x"}],
            },
            'failures[0]: "verdict" missing',
        ),
    ],
)
def test_a_campaign_summary_that_is_not_one_is_named(tmp_path, capsys, summary, said):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "summary.json").write_text(json.dumps(summary))
    assert main(["report", str(tmp_path / "c"), "--html", str(tmp_path / "out")]) == 2
    err = _one_line(capsys.readouterr().err)
    assert f"{tmp_path / 'c'}: not a finished campaign folder (summary.json: {said})" in err
