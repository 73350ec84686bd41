"""Experiments: every one of the catalogue on isrcheck's own cluster (default run, one repetition
each; KAFKA-14139 also before KIP-903, where it loses the writes), the Last Replica Standing pair on
Apache Kafka (4.0.2 without ELR: the write is lost; 4.4.0 with ELR: nothing lost), every other
experiment on Apache Kafka as a slow test; bad experiment files exit 2 naming the file and the
field."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from isrcheck.conformance.cli.experiment import catalogue_folder
from isrcheck.conformance.cli.main import main
from isrcheck.conformance.engines.experiment.drivers import parse_cluster
from isrcheck.conformance.engines.experiment.engine import AGREE, run_experiment
from isrcheck.conformance.engines.experiment.outcome import judged, outcomes
from isrcheck.conformance.engines.experiment.prediction import predict
from isrcheck.conformance.engines.experiment.spec import catalogue, load_experiment
from isrcheck.impl.controller import CONTROLLER_ID

CATALOGUE = {p.stem: p for p in catalogue(catalogue_folder())}
REQUIRED = (
    "last-replica-standing",
    "unclean-election-on",
    "unclean-election-off",
    "power-loss-all",
    "power-loss-all-flushed",
    "not-enough-replicas",
    "fast-leader-change",
    "fast-leader-change-latency",
    "kafka-14139-replaced-disk",
)

needs_kafka = pytest.mark.skipif(
    shutil.which("java") is None or not os.path.exists("/dev/fuse") or shutil.which("fusermount3") is None,
    reason="Apache Kafka experiments need java and FUSE (/dev/fuse, fusermount3)",
)


def test_the_catalogue_holds_the_issues_experiments_and_each_loads():
    assert set(REQUIRED) <= set(CATALOGUE)
    for path in CATALOGUE.values():
        assert load_experiment(path).name == path.stem


@pytest.mark.parametrize(
    "name, variant, outcome",
    [
        ("last-replica-standing", "kip-903", ("lost-write",)),
        ("last-replica-standing", "kip-966", ()),
        ("unclean-election-on", "kip-966", ("lost-write",)),
        ("unclean-election-off", "kip-903", ("unavailable",)),
        ("power-loss-all", "kip-966", ("lost-write",)),
        ("power-loss-all-flushed", "kip-903", ()),
        ("not-enough-replicas", "kip-320", ("not-enough-replicas",)),
        ("fast-leader-change", "kip-320", ()),
        ("fast-leader-change-latency", "kip-320", ()),
        ("fast-leader-change-latency", "kip-101", ()),  # WeakIsr breaks, which no client sees
        ("fast-leader-change-latency", "hw-truncation", ()),
        ("kafka-14139-replaced-disk", "kip-320", ("lost-write",)),
        ("kafka-14139-replaced-disk", "kip-903", ()),
        ("kafka-14139-replaced-disk", "kip-966", ()),
    ],
)
def test_the_models_prediction_per_variant(name, variant, outcome):
    assert predict(load_experiment(CATALOGUE[name]), variant).outcomes == outcome


@pytest.mark.parametrize(
    "detection, variant, outcome",
    [
        ("page-cache", "kip-966", ()),
        ("clean-shutdown-file", "kip-966", ("lost-write",)),
        ("page-cache", "kip-903", ("lost-write",)),
        ("clean-shutdown-file", "kip-903", ("lost-write",)),
    ],
)
def test_a_killed_follower_leaves_the_elr_only_where_a_crash_is_unclean(detection, variant, outcome):
    """Apache Kafka calls a killed process's shutdown unclean (no clean shutdown file): with its
    detection the model predicts the Last Replica Standing loss on kip-966 too; with isrcheck's, not."""
    experiment = load_experiment(CATALOGUE["last-replica-standing-killed"])
    assert predict(experiment, variant, detection).outcomes == outcome
    assert parse_cluster("kafka:4.4.0").unclean_shutdown_detection == "clean-shutdown-file"
    assert parse_cluster("isrcheck").unclean_shutdown_detection == "page-cache"


def test_an_empty_final_read_makes_every_unseen_acknowledged_record_lost():
    unseen = {"unseen": [{"ops": [1], "explanation": "never returned"}], "lost-write": []}
    assert outcomes(judged(unseen, final_read=True), []) == ("lost-write",)
    assert outcomes(judged(unseen, final_read=False), []) == ()
    refused = [{"step": 4, "ok": 0, "fail": 3, "info": 0, "errors": ["NOT_ENOUGH_REPLICAS"]}]
    assert outcomes({}, refused) == ("not-enough-replicas",)
    assert outcomes({}, [{"step": 9, "ok": 0, "fail": 0, "info": 1, "errors": ["_MSG_TIMED_OUT"]}]) == ("unavailable",)


# the latency experiment's agreement is also the delay test's below (on kip-101): default runs take it once;
# the replaced disk's (27 s) runs with the slow tests, as its scenario's lockstep runs in the default ones
SLOW_ON_ISRCHECK = {"fast-leader-change-latency", "kafka-14139-replaced-disk"}


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_ON_ISRCHECK else n for n in sorted(CATALOGUE)]
)
def test_each_experiment_agrees_on_isrchecks_cluster(name, tmp_path):
    result = run_experiment(load_experiment(CATALOGUE[name]), parse_cluster("isrcheck"), 1, tmp_path)
    rep = result.repetitions[0]
    assert rep.reached, rep.missed
    assert result.verdict == AGREE, (rep.outcomes, result.prediction, rep.anomalies)


@pytest.mark.slow
def test_a_delay_step_slows_every_link_of_the_leader_on_isrchecks_cluster(tmp_path):
    """The latency experiment's delays reach the brokers (their logs say so) on every link of the
    node, the controller's too; the experiment also agrees before KIP-320, as the model predicts.
    Slow (19 s), as the latency experiment itself is."""
    result = run_experiment(
        load_experiment(CATALOGUE["fast-leader-change-latency"]), parse_cluster("isrcheck:kip-101"), 1, tmp_path
    )
    rep = result.repetitions[0]
    assert rep.reached and result.verdict == AGREE, (rep.missed, rep.outcomes)
    delays = [s for s in rep.steps if s["step"].startswith("delay")]
    assert len(delays) == 2 and delays[0]["nodes"] != delays[1]["nodes"]
    for step in delays:
        [leader] = step["nodes"]
        assert sorted(step["from"]) == sorted({0, 1, 2, CONTROLLER_ID} - {leader}) and step["ms"] == 200
        log = (Path(rep.folder) / "cluster" / f"{leader}.log").read_text()
        assert "net delayed " + " ".join(f"{n}:200ms" for n in sorted(step["from"])) in log


def test_last_replica_standing_loses_the_write_before_kip_966_on_isrchecks_cluster(tmp_path):
    result = run_experiment(
        load_experiment(CATALOGUE["last-replica-standing"]), parse_cluster("isrcheck:kip-903"), 1, tmp_path
    )
    assert result.verdict == AGREE and result.repetitions[0].outcomes == ("lost-write",)


@pytest.mark.slow
def test_kafka_14139_loses_the_writes_before_kip_903_on_isrchecks_cluster(tmp_path):
    """The held AlterPartition is accepted without broker epochs: the empty replica is elected. Slow
    (22 s): the default run keeps the same experiment's agreement on the current protocol."""
    result = run_experiment(
        load_experiment(CATALOGUE["kafka-14139-replaced-disk"]), parse_cluster("isrcheck:kip-320"), 1, tmp_path
    )
    rep = result.repetitions[0]
    assert rep.reached and result.verdict == AGREE and rep.outcomes == ("lost-write",), (rep.missed, rep.outcomes)
    [[_leader, request, held, delivered]] = rep.cluster["holds"]
    assert request == "AlterPartition" and held >= 1 and delivered == 1  # later ones (a shrink) stay held


def _on_kafka(name: str, cluster: str, elr: str, tmp_path):
    result = run_experiment(load_experiment(CATALOGUE[name]), parse_cluster(cluster, elr), 1, tmp_path)
    rep = result.repetitions[0]
    assert rep.reached, rep.missed
    assert result.verdict == AGREE, (rep.outcomes, result.prediction, rep.anomalies)
    return result


@needs_kafka
# 4.0.2's loss (a minute and a half of a real cluster) in the slow run: 4.4.0's keeps it by default
@pytest.mark.parametrize(
    "cluster, elr, lost",
    [pytest.param("kafka:4.0.2", "off", True, marks=pytest.mark.slow), ("kafka:4.4.0", "on", False)],
)
def test_last_replica_standing_on_apache_kafka(cluster, elr, lost, tmp_path):
    """KIP-966's motivating case: lost without ELR, not with it (in CI's default run)."""
    result = _on_kafka("last-replica-standing", cluster, elr, tmp_path)
    assert (result.repetitions[0].outcomes == ("lost-write",)) == lost


@pytest.mark.slow
@needs_kafka
@pytest.mark.parametrize("cluster, elr", [("kafka:4.0.2", "off"), ("kafka:4.4.0", "on")])
@pytest.mark.parametrize("name", sorted(set(CATALOGUE) - {"last-replica-standing"}))
def test_each_experiment_on_apache_kafka(name, cluster, elr, tmp_path):
    result = _on_kafka(name, cluster, elr, tmp_path)
    if name == "kafka-14139-replaced-disk":  # refused by KIP-903's check, not another one
        rejected = result.repetitions[0].cluster.get("alter_partition_rejected", [])
        assert any("broker epoch mismatch" in reason for reason in rejected), rejected


# -- bad experiment files ------------------------------------------------------------------------
GOOD = json.loads(CATALOGUE["not-enough-replicas"].read_text())


@pytest.mark.parametrize(
    "change, field",
    [
        ({"format": "other"}, "format"),
        ({"cluster": {"brokers": 9}}, "cluster.brokers"),
        ({"cluster": {"brokers": 2, "min_insync_replicas": 3}}, "cluster.min_insync_replicas"),
        ({"cluster": {"replicas": 2}}, "cluster.replicas"),
        ({"schedule": "specs/scenarios/none.json"}, "schedule"),
        ({"plan": [{"do": "jump"}]}, "plan[0].do"),
        ({"plan": [{"do": "wait", "until": "isr-full"}]}, "plan[0].timeout_s"),
        ({"plan": [{"do": "wait", "until": "sunny", "timeout_s": 3}]}, "plan[0].until"),
        ({"plan": [{"do": "produce", "records": 1}, {"do": "kill", "node": "X"}]}, "plan[1].node"),
        ({"plan": [{"do": "produce", "records": 0}]}, "plan[0].records"),
        ({"expected": {"*": ["on-fire"]}}, "expected.*"),
        ({"plan": [{"do": "hold-requests", "node": "leader", "request": "Fetch"}]}, "plan[0].request"),
        ({"plan": [{"do": "hold-requests", "node": "leader"}]}, "plan[0].request"),
        ({"plan": [{"do": "cut", "node": "leader"}]}, "plan[0].from"),
        ({"plan": [{"do": "cut", "node": "leader", "from": "Z"}]}, "plan[0].from"),
        ({"plan": [{"do": "wait", "until": "held", "timeout_s": 3}]}, "plan[0].node"),
        ({"plan": [{"do": "delay", "node": "leader"}]}, "plan[0].ms"),
        ({"plan": [{"do": "delay", "node": "leader", "ms": 0}]}, "plan[0].ms"),
        ({"plan": [{"do": "delay", "node": "leader", "ms": 300, "from": "Q"}]}, "plan[0].from"),
        ({"plan": [{"do": "undelay", "node": "leader", "ms": 300}]}, "plan[0].ms"),
        ({"extra": 1}, "extra"),
    ],
)
def test_a_bad_experiment_file_exits_2_naming_the_file_and_the_field(change, field, tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({**GOOD, "schedule": str(Path(__file__).parents[2] / GOOD["schedule"]), **change}))
    assert main(["experiment", str(bad), "--dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and f"{field}:" in err, err
    assert not (tmp_path / "run").exists()


def test_no_name_nor_all_and_an_unknown_name_or_cluster_exit_2(tmp_path, capsys):
    assert main(["experiment", "--dir", str(tmp_path)]) == 2
    assert main(["experiment", "no-such-experiment", "--dir", str(tmp_path)]) == 2
    assert "no experiment 'no-such-experiment'" in capsys.readouterr().err
    assert main(["experiment", "not-enough-replicas", "--cluster", "kafka-ish", "--dir", str(tmp_path)]) == 2
    assert main(["experiment", "not-enough-replicas", "--elr", "on", "--dir", str(tmp_path)]) == 2
