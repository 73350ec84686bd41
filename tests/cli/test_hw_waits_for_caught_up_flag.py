"""``--hw-waits-for-caught-up`` of explore (prove and cover share the flags): the leader's HW also waits
for caught-up followers outside the ISR (docs/steps.md, ``maybe_increment_leader_hw``), which the
explorer's states show: a follower fenced out of the ISR that fetches again holds the HW back."""

import json

from isrcheck.conformance.cli.main import main

SMALL = ["--protocol", "kip-320", "--max-records", "1", "--max-epoch", "2", "--max-crashes", "1"]


def test_explore_with_the_switch_reaches_other_states(capsys):
    assert main(["explore", *SMALL, "--json"]) == 0
    off = json.loads(capsys.readouterr().out)
    assert main(["explore", *SMALL, "--hw-waits-for-caught-up", "--json"]) == 0
    on = json.loads(capsys.readouterr().out)
    assert "hw_waits_for_caught_up" not in off["config"] and on["config"]["hw_waits_for_caught_up"] is True
    assert on["complete"] and off["complete"] and not on["violations"] and not off["violations"]
    # fewer HWs raised past a caught-up follower: fewer states (2,047 against 2,097)
    assert on["states"] < off["states"]
