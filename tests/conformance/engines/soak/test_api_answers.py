"""The soak's offsets reader against isrcheck's brokers with a bug of the Kafka API layer planted
(``node_bugs``): what ListOffsets or OffsetForLeaderEpoch answered wrong is an anomaly of the
run, within every budget. The same short run without a bug is in test_soak.py."""

import pytest
from node_bugs import planted

from isrcheck.conformance.engines.soak.driver import SoakOptions, run_soak
from isrcheck.conformance.engines.soak.faults import Fault


@pytest.mark.parametrize(
    "bug, anomaly", [("leo-as-latest", "end-above-hw"), ("current-epoch-answer", "later-epoch-answered")]
)
def test_a_wrong_answer_of_the_kafka_api_layer_is_an_anomaly(tmp_path, monkeypatch, bug, anomaly):
    """Broker 0, which leads every partition at first, is killed 3 s in and restarted 3 s later:
    each partition changes leader, and the reader validates its position in the new epoch."""
    planted(monkeypatch, bug)
    result = run_soak(
        SoakOptions(
            duration_s=12,
            script=(Fault("kill", (0,), 3.0, 6.0),),
            seed=1,
            directory=str(tmp_path / "run"),
            validate=False,
        )
    )
    assert result.anomalies == [anomaly], result.exit_reason()
    instance = result.check.anomalies[anomaly][0]
    ops = result.index.events  # the events the anomalies name, by index
    assert {ops[i]["process"] for i in instance["ops"]} == {"offsets"}
