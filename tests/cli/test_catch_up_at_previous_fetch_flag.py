"""``--catch-up-at-previous-fetch`` of explore (prove and cover share the flags): a follower whose Fetch
reaches the LEO its previous Fetch found is caught up as of that Fetch (docs/steps.md, ``handle_fetch``),
which the explorer's states show once the clock moves: each leader keeps its followers' last Fetch."""

import json

from isrcheck.conformance.cli.main import main

SMALL = ["--protocol", "kip-320", "--max-records", "2", "--max-epoch", "1", "--max-crashes", "0", "--max-clock", "2"]


def test_explore_with_the_switch_reaches_other_states(capsys):
    assert main(["explore", *SMALL, "--json"]) == 0
    off = json.loads(capsys.readouterr().out)
    assert main(["explore", *SMALL, "--catch-up-at-previous-fetch", "--json"]) == 0
    on = json.loads(capsys.readouterr().out)
    assert "catch_up_at_previous_fetch" not in off["config"] and on["config"]["catch_up_at_previous_fetch"] is True
    assert on["complete"] and off["complete"] and not on["violations"] and not off["violations"]
    assert on["states"] > off["states"]  # the last Fetch's LEO and time are state
