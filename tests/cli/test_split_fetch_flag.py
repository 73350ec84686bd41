"""``--split-fetch-handling`` of explore, prove and cover: a leader's fetch handling as two steps
(docs/steps.md, ``read_fetch``), refused with fetch rounds, which take a whole fetch as one transition."""

import json

import pytest

from isrcheck.conformance.cli.main import main

SMALL = ["--protocol", "kip-966", "--max-records", "1", "--max-epoch", "1", "--max-crashes", "0"]


@pytest.mark.parametrize("command", ["explore", "prove", "cover"])
def test_the_switch_with_fetch_rounds_exits_2_saying_why(command, capsys, tmp_path):
    extra = ["--out", str(tmp_path / "cover")] if command == "cover" else []
    assert main([command, *SMALL, "--split-fetch-handling", "--fetch-rounds", *extra]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert "--split-fetch-handling (split_fetch_handling)" in err and "--no-fetch-rounds" in err, err
    assert not (tmp_path / "cover").exists()  # refused before any work


def test_explore_with_the_switch_explores_the_reads_apart(capsys):
    assert main(["explore", *SMALL, "--no-fetch-rounds", "--json"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert main(["explore", *SMALL, "--no-fetch-rounds", "--split-fetch-handling", "--json"]) == 0
    split = json.loads(capsys.readouterr().out)
    assert "split_fetch_handling" not in whole["config"] and split["config"]["split_fetch_handling"] is True
    assert split["complete"] and not split["violations"] and split["states"] > whole["states"]
