"""``--unfence-at-heartbeat`` of explore (prove and cover share the flags): the controller holds a
registration fenced until the step unfence (docs/steps.md), which the explorer's states show after a crash
and a registration, or a zombie's fence; refused with a variant that has no registration of its own."""

import json

from isrcheck.conformance.cli.main import main

SMALL = [
    *("--protocol", "kip-903", "--replicas", "2", "--min-isr", "1", "--max-records", "1"),
    *("--max-epoch", "1", "--max-crashes", "1", "--zombies", "1"),
]


def test_explore_with_the_switch_reaches_other_states(capsys):
    assert main(["explore", *SMALL, "--json"]) == 0
    off = json.loads(capsys.readouterr().out)
    assert main(["explore", *SMALL, "--unfence-at-heartbeat", "--json"]) == 0
    on = json.loads(capsys.readouterr().out)
    assert "unfence_at_heartbeat" not in off["config"] and on["config"]["unfence_at_heartbeat"] is True
    assert on["complete"] and off["complete"] and not on["violations"] and not off["violations"]
    assert (off["states"], on["states"]) == (6607, 6774)


def test_the_switch_with_another_variant_is_a_usage_error(capsys):
    assert main(["explore", "--protocol", "kip-320", "--unfence-at-heartbeat"]) == 2
    err = capsys.readouterr().err
    assert "--unfence-at-heartbeat (unfence_at_heartbeat): valid only with kip-903 and kip-966" in err
