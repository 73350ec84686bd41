"""``--split-become-follower`` of explore (prove and cover share the flags): becoming a follower as
two steps (docs/steps.md, ``remove_fetcher``), so the explorer reaches more states."""

import json

from isrcheck.conformance.cli.main import main

SMALL = ["--protocol", "kip-320", "--replicas", "2", "--min-isr", "1", "--max-records", "1", "--max-epoch", "1"]
SMALL += ["--max-crashes", "0", "--leader-moves", "1", "--no-fetch-rounds"]


def test_explore_with_the_switch_explores_the_stale_fetcher(capsys):
    assert main(["explore", *SMALL, "--json"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert main(["explore", *SMALL, "--split-become-follower", "--json"]) == 0
    split = json.loads(capsys.readouterr().out)
    assert "split_become_follower" not in whole["config"] and split["config"]["split_become_follower"] is True
    assert split["complete"] and not split["violations"] and split["states"] > whole["states"]
