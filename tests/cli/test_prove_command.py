"""``isrcheck prove``: exit codes, progress per depth, JSON, saved counterexamples that
``isrcheck check`` replays to the same property, and bad input named (exit 2)."""

from __future__ import annotations

import json

from isrcheck.conformance.cli.main import main

TINY = [
    "--replicas",
    "1",
    "--min-isr",
    "1",
    "--max-records",
    "1",
    "--max-epoch",
    "1",
    "--max-crashes",
    "1",
    "--max-power-losses",
    "1",
    "--crash-kinds",
    "",
    "--bounces",
    "1",
]


def test_violation_exits_1_and_its_schedule_replays_with_check(tmp_path, capsys):
    code = main(
        [
            "prove",
            "--protocol",
            "hw-truncation",
            *TINY,
            "--depth",
            "5",
            "--property",
            "NoLostAckedWrite",
            "--json",
            "--save",
            str(tmp_path),
        ]
    )
    out, err = capsys.readouterr()
    # the only replica loses power with min ISR 1: outside the budget, so no violation; but the
    # search stopped there, so nothing past it is proved (exit 1)
    assert code == 1
    doc = json.loads(out)
    assert doc["violations"] == []
    (v,) = doc["beyond_budget"]
    assert (v["property"], v["transitions"]) == ("NoLostAckedWrite", 4) and "broker 0 lost data" in v["reason"]
    assert [line.split(":")[0] for line in err.splitlines()] == [f"depth {k}" for k in range(5)]
    assert "conflicts" in err
    saved = tmp_path / "hw-truncation-NoLostAckedWrite.json"
    assert main(["check", str(saved)]) == 0
    assert "NoLostAckedWrite fails at step 3 outside its fault budget" in capsys.readouterr().out
    assert main(["check", str(saved), "--expected"]) == 0  # the file names what it expects
    assert "expected: pass (NoLostAckedWrite broken outside its fault budget) -> as expected" in capsys.readouterr().out
    # with two replicas and min ISR 2 one power loss is within the budget: nothing is lost there
    assert (
        main(
            [
                "prove",
                "--protocol",
                "kip-966",
                *TINY,
                "--replicas",
                "2",
                "--min-isr",
                "2",
                "--depth",
                "4",
                "--property",
                "NoLostAckedWrite",
            ]
        )
        == 0
    )
    assert "no violation up to depth 4" in capsys.readouterr().out


def test_no_violation_to_the_depth_exits_0(capsys):
    assert main(["prove", "--protocol", "kip-320", *TINY, "--depth", "3", "--property", "LogMatching"]) == 0
    assert "no violation up to depth 3" in capsys.readouterr().out


def test_induction_proved_exits_0(capsys):
    code = main(
        [
            "prove",
            "--protocol",
            "kip-320",
            *TINY,
            "--depth",
            "2",
            "--property",
            "HighWatermarkBound",
            "--induction",
            "--json",
        ]
    )
    assert code == 0
    (r,) = json.loads(capsys.readouterr().out)["results"]
    assert (r["verdict"], r["k"]) == ("proved", 1)


def test_bad_input_exits_2_naming_it(capsys):
    assert main(["prove", "--protocol", "kip-999", "--depth", "1"]) == 2
    assert "unknown protocol 'kip-999'" in capsys.readouterr().err
    assert main(["prove", "--protocol", "kip-320", "--depth", "-1"]) == 2
    assert main(["prove", "--protocol", "kip-320", "--property", "Nope", "--depth", "1"]) == 2
    assert "unknown property Nope" in capsys.readouterr().err


def test_broker_epoch_variants_are_encoded(capsys):
    # from kip-903 on the restarted broker registers once its old session expired (its registration
    # takes it out, no fence needed), is elected again (kip-966: as the last known leader) and applies
    # it: six transitions on both
    for protocol, depth in (("kip-903", 6), ("kip-966", 6)):
        code = main(
            [
                "prove",
                "--protocol",
                protocol,
                *TINY,
                "--max-epoch",
                "2",
                "--depth",
                str(depth),
                "--property",
                "NoLostAckedWrite",
                "--json",
            ]
        )
        assert code == 1
        (v,) = json.loads(capsys.readouterr().out)["beyond_budget"]  # min ISR 1: no loss is within it
        assert v["transitions"] == depth, protocol


def test_partial_fetches_and_write_back_are_encoded_and_a_step_without_encoding_is_refused(capsys, monkeypatch):
    scope = ["--replicas", "2", "--min-isr", "1", "--max-records", "1", "--max-crashes", "1", "--max-power-losses", "1"]
    assert (
        main(
            [
                "prove",
                "--protocol",
                "kip-320",
                *scope,
                "--partial-fetches",
                "--torn-writes",
                "--depth",
                "1",
                "--property",
                "LogMatching",
            ]
        )
        == 0
    )
    assert "no violation up to depth 1" in capsys.readouterr().out
    from isrcheck.model.smt.actions import ENCODED

    monkeypatch.delitem(ENCODED, "lose_disk")
    assert main(["prove", "--protocol", "kip-320", *scope, "--disk-losses", "1", "--depth", "1"]) == 2
    err = capsys.readouterr().err
    assert "step 'lose_disk' has no SMT encoding" in err and "Traceback" not in err
