"""``--metadata-cache`` of explore (prove and cover share the flags): each broker caches the brokers'
registrations (docs/steps.md, ``update_metadata_cache``), which the explorer's states show once a zombie's
fence or rejoin changes them: brokers whose cache has not seen it yet."""

import json

from isrcheck.conformance.cli.main import main

SMALL = [
    *("--protocol", "kip-903", "--replicas", "2", "--min-isr", "1", "--max-records", "1"),
    *("--max-epoch", "1", "--max-crashes", "0", "--zombies", "1", "--hw-waits-for-caught-up"),
]


def test_explore_with_the_switch_reaches_other_states(capsys):
    assert main(["explore", *SMALL, "--json"]) == 0
    off = json.loads(capsys.readouterr().out)
    assert main(["explore", *SMALL, "--metadata-cache", "--json"]) == 0
    on = json.loads(capsys.readouterr().out)
    assert "metadata_cache" not in off["config"] and on["config"]["metadata_cache"] is True
    assert on["complete"] and off["complete"] and not on["violations"] and not off["violations"]
    assert (off["states"], on["states"]) == (204, 1425)
