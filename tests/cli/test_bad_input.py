"""What every sub-command does with bad input and with a reader or user that goes away: one line,
exit 2 (130 on Ctrl-C, 141 when the output pipe closes), never a traceback, nothing deleted."""

import argparse
import os
import signal
import subprocess
import sys
import time

import pytest

from isrcheck.conformance import random_walk
from isrcheck.conformance.cli.main import COMMANDS, build_parser, main
from isrcheck.conformance.vocabulary import Number

BAD_NUMBERS = ["nan", "inf", "-1", "1e400", "9" * 40, "ten"]


def _options(command: str) -> list[argparse.Action]:
    parser = build_parser(command)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[command]._actions


NUMERIC = [
    (command, action.option_strings[-1])
    for command in COMMANDS
    for action in _options(command)
    if isinstance(action.type, Number)
]


def test_every_numeric_option_of_every_command_is_bounded():
    for command in COMMANDS:
        assert not [a.dest for a in _options(command) if a.type in (int, float)], command
    for expected in [
        ("explore", "--max-states"),
        ("explore", "--replicas"),
        ("shrink", "--time-budget"),
        ("fuzz", "--schedules"),
        ("fuzz", "--seed"),
        ("fuzz", "--steps"),
        ("fuzz", "--partitions"),
        ("fuzz", "--shrink-budget"),
        ("sim", "--seed"),
        ("sim", "--steps"),
    ]:
        assert expected in NUMERIC


@pytest.mark.parametrize("command, option", NUMERIC, ids=[f"{c}{o}" for c, o in NUMERIC])
def test_nan_inf_negative_huge_and_words_exit_2_naming_the_option(command, option, capsys):
    for bad in BAD_NUMBERS:
        assert main([command, option, bad]) == 2, (option, bad)
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"argument {option}: expected" in err, err
        assert len(err) < 200 and "Traceback" not in err


def test_bad_numbers_as_a_program_give_one_line_and_no_traceback(tmp_path, isrcheck_cli):
    for args in (
        ["sim", "--steps", "nan"],
        ["fuzz", "--protocol", "kip-320", "--schedules", "1e400"],
        ["shrink", "x.json", "-o", str(tmp_path / "y.json"), "--time-budget", "-1"],
        ["fuzz", "--protocol", "kip-320", "--schedules", "5", "--seed", str(2**63)],
    ):
        proc = isrcheck_cli(*args)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert "Traceback" not in proc.stderr


def test_output_paths_are_refused_before_the_work_starts(tmp_path, capsys, scenario):
    a_file = tmp_path / "a-file"
    a_file.write_text("mine")
    started = time.monotonic()
    assert main(["explore", "--protocol", "kip-279", "--save", str(a_file)]) == 2
    assert f"--save {a_file}: is a file, not a directory" in capsys.readouterr().err
    assert main(["explore", "--protocol", "kip-279", "--save", str(a_file / "cex")]) == 2
    assert f"{a_file} is a file, not a directory" in capsys.readouterr().err
    assert (
        main(
            [
                "shrink",
                scenario("kip101-scenario1"),
                "--protocol",
                "hw-truncation",
                "-o",
                str(tmp_path / "missing" / "small.json"),
            ]
        )
        == 2
    )
    assert f"{tmp_path / 'missing'} does not exist" in capsys.readouterr().err
    assert main(["shrink", scenario("kip101-scenario1"), "-o", str(tmp_path)]) == 2
    assert "is a directory, not a file" in capsys.readouterr().err
    assert time.monotonic() - started < 20  # no exploration and no shrinking ran
    assert a_file.read_text() == "mine"


def test_a_served_clusters_event_log_must_start_with_it(tmp_path, capsys):
    """``isrcheck serve --events DIR``: a file, a directory with files in it, or the --dir of a
    cluster that ran before are refused before any process starts, and nothing is touched."""
    from isrcheck.impl.real.processes import free_ports

    port = str(free_ports(1)[0])
    a_file, full, ran = tmp_path / "a-file", tmp_path / "full", tmp_path / "ran"
    a_file.write_text("mine")
    full.mkdir()
    (full / "broker-0.jsonl").write_text("mine")
    ran.mkdir()
    (ran / "meta.properties").write_text("version=1\ncluster.id=x\n")
    for events, dir_, said in (
        (a_file, [], "not a directory"),
        (full, [], "not empty"),
        (tmp_path / "new", ["--dir", str(ran)], "holds a cluster that ran before"),
    ):
        assert main(["serve", "--replicas", "1", "--port", port, "--events", str(events), *dir_]) == 2
        err = capsys.readouterr().err
        assert "--events" in err and said in err and "Traceback" not in err, err
    assert a_file.read_text() == "mine" and (full / "broker-0.jsonl").read_text() == "mine"
    assert sorted(p.name for p in ran.iterdir()) == ["meta.properties"] and not (tmp_path / "new").exists()


def test_output_piped_into_head_ends_quietly(tmp_path):
    schedule, _ = random_walk(3, "kip-320", 400, faults="none", impl=False)
    path = tmp_path / "long.json"
    path.write_text(schedule.dumps())
    proc = subprocess.Popen(
        [sys.executable, "-m", "isrcheck.conformance.cli.main", "check", str(path), "--trace", "--model-only"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout.readline().startswith(b"initial state")
    proc.stdout.close()  # what `| head -1` does once it has its line
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 128 + signal.SIGPIPE
    assert err == ""


def test_ctrl_c_prints_one_line_and_exits_130(tmp_path):
    # SIGINT's default action, as in a terminal's foreground job: a test run started in the
    # background inherits it ignored, and Python then installs no KeyboardInterrupt handler
    proc = subprocess.Popen(
        [sys.executable, "-m", "isrcheck.conformance.cli.main", "explore", "--protocol", "kip-320", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    seen = b""
    while b"explored" not in seen:  # the progress line: the run is under way
        chunk = os.read(proc.stderr.fileno(), 256)
        assert chunk, "explore ended before it reported progress"
        seen += chunk
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C reaches the terminal's whole process group
    out, rest = proc.communicate(timeout=60)
    err = (seen + rest).decode()
    assert proc.returncode == 130 and out == b""
    assert err.splitlines()[-1] == "isrcheck explore: interrupted" and "Traceback" not in err
    assert err.count("interrupted") == 1


def test_a_binary_or_directory_schedule_is_bad_input(tmp_path, capsys):
    binary = tmp_path / "s.json"
    binary.write_bytes(bytes(range(256)) * 4)
    for args in (
        ["check", str(binary)],
        ["shrink", str(binary), "-o", str(tmp_path / "o.json")],
        ["check", str(tmp_path)],
    ):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err
    assert main(["check", str(binary)]) == 2 and "not a text (UTF-8) file" in capsys.readouterr().err


def test_an_output_path_that_cannot_be_made_is_refused_before_the_work(tmp_path, capsys, scenario):
    """Permission bits say nothing to root, nor about /proc: each output is tried (a directory made
    and removed again, a file's directory written to), so what cannot be written stops the run
    before it starts, and nothing is left behind."""
    started = time.monotonic()
    assert main(["explore", "--protocol", "kip-279", "--save", "/proc/nonexistent/dir"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--save /proc/nonexistent/dir: cannot create" in err, err
    assert main(["shrink", scenario("kip101-scenario1"), "--protocol", "hw-truncation", "-o", "/proc/small.json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "-o /proc/small.json: cannot write in /proc" in err, err
    assert main(["fuzz", "--protocol", "kip-320", "--schedules", "1", "--out", "/proc/self/campaign"]) == 2
    assert "--out /proc/self/campaign: cannot create" in capsys.readouterr().err
    assert time.monotonic() - started < 20


def test_checking_an_output_directory_leaves_nothing_behind(tmp_path):
    from isrcheck.conformance.vocabulary import output_path

    assert output_path(tmp_path / "a" / "b" / "c", "--out", directory=True) == tmp_path / "a" / "b" / "c"
    assert output_path(tmp_path / "f.json", "-o", directory=False) == tmp_path / "f.json"
    assert list(tmp_path.iterdir()) == []
