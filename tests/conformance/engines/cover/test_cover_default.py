"""The default scope of ``isrcheck cover`` on kip-320, as a user runs it: everything covered, no
failure (slow: minutes on two cores; ``python benchmarks/cover.py`` prints its figures)."""

import json

import pytest

from isrcheck.conformance.cli.main import main


@pytest.mark.slow
def test_default_scope_on_kip320_covers_every_state_edge_and_refusal(tmp_path, capsys):
    code = main(["cover", "--protocol", "kip-320", "--master", "local[2]", "--out", str(tmp_path / "c"), "--json"])
    s = json.loads(capsys.readouterr().out)
    assert code == 0 and s["by_verdict"] == {"pass": s["schedules"]}
    assert (s["states_covered"], s["edges_covered"], s["refusals_covered"]) == (s["states"], s["edges"], s["refusals"])
    assert s["states"] > 10_000 and s["edges"] > 60_000
