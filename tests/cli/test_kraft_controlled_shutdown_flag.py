"""``--kraft-controlled-shutdown`` of explore (prove and cover share the flags): a broker's controlled
shutdown is a step (docs/steps.md, ``controlled_shutdown``), which moves leadership on a scope where
nothing else does; refused with a variant before kip-903."""

import json

import pytest

from isrcheck.conformance.cli.main import main

SMALL = [*("--replicas", "2", "--min-isr", "1", "--max-records", "1", "--max-epoch", "1", "--max-crashes", "0")]


@pytest.mark.parametrize("protocol, off_states, on_states", [("kip-903", 7, 629), ("kip-966", 7, 458)])
def test_explore_with_the_switch_reaches_other_states(capsys, protocol, off_states, on_states):
    assert main(["explore", "--protocol", protocol, *SMALL, "--json"]) == 0
    off = json.loads(capsys.readouterr().out)
    assert main(["explore", "--protocol", protocol, *SMALL, "--kraft-controlled-shutdown", "--json"]) == 0
    on = json.loads(capsys.readouterr().out)
    assert "kraft_controlled_shutdown" not in off["config"] and on["config"]["kraft_controlled_shutdown"] is True
    assert on["complete"] and off["complete"] and not on["violations"] and not off["violations"]
    assert (off["states"], on["states"]) == (off_states, on_states)


def test_the_switch_is_a_usage_error_before_kip_903(capsys):
    assert main(["explore", "--protocol", "kip-320", *SMALL, "--kraft-controlled-shutdown"]) == 2
    assert "--kraft-controlled-shutdown (kraft_controlled_shutdown): valid only with kip-903" in capsys.readouterr().err
