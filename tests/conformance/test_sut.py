"""The system-under-test interface and the driver protocol, proved by use: the implementation run
as another process (``python -m isrcheck.impl.sut``, on stdio and on TCP) gives the verdicts the
in-process adapter gives, step for step (same trace hashes), on the scenario corpus and on random
walks; a process that crashes, hangs or answers out of protocol is a sut-failure, never a
divergence; the server answers bad requests with the protocol's errors."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from isrcheck.conformance import SutSpec, load_schedule, random_walk, run_schedule, shrink
from isrcheck.conformance.core.adapter import ImplSide
from isrcheck.conformance.core.lockstep import Lockstep
from isrcheck.conformance.core.schedule import PROTOCOLS
from isrcheck.conformance.core.sut_driver import DriverSut, wire_step
from isrcheck.conformance.core.sut_state import SCHEMA, TYPES
from isrcheck.conformance.generators.strategies import lockstep_machine
from isrcheck.model import Step

SERVER = f"{sys.executable} -m isrcheck.impl.sut"


def _run(schedule, system):
    run = Lockstep(schedule.protocol, schedule.config, sut=system)
    for st in schedule.steps:
        if run.step(st) is not None:
            break
    return run.verdict(), run.refused


@pytest.fixture(scope="module")
def stdio():
    system = DriverSut(SERVER)
    yield system
    system.close()


def test_the_corpus_gives_the_same_verdicts_through_stdio(stdio, scenario_files):
    kinds = set()
    for path in scenario_files:
        for protocol in PROTOCOLS:
            schedule = load_schedule(path).with_protocol(protocol)
            here, there = _run(schedule, ImplSide()), _run(schedule, stdio)
            assert here == there, (path.name, protocol, there[0].diff)
            kinds.add(here[0].kind)
    assert {"pass", "violation"} <= kinds  # the corpus exercises both


def test_random_walks_and_shrinking_give_the_same_results_through_stdio():
    # heavy faults break properties outside their budgets; hw-truncation loses a write with no
    # fault at all (seed 10; 12 before the refused steps left out a registration made by its restart)
    walks = [
        (seed, protocol, faults, 60)
        for seed in range(6)
        for protocol, faults in (("kip-320", "default"), ("hw-truncation", "heavy"), ("kip-101", "heavy"))
    ]
    walks.append((10, "hw-truncation", "none", 150))
    local = [random_walk(seed, p, n, faults=f) for seed, p, f, n in walks]
    server = SutSpec(SERVER)
    try:
        remote = [random_walk(seed, p, n, faults=f, sut=server) for seed, p, f, n in walks]
        failing = next((s, v) for s, v in local if v.failed)
        shrunk_remote = shrink(*failing, time_budget_s=3.0, sut=server)
    finally:
        server.close()
    assert [(s.dumps(), v) for s, v in remote] == [(s.dumps(), v) for s, v in local]
    assert {v.kind for _s, v in local} >= {"pass", "violation"}
    assert any(v.beyond_budget for _s, v in local)
    small, verdict = shrunk_remote
    assert verdict.same_failure(failing[1]) and len(small.steps) <= len(failing[0].steps)
    assert run_schedule(small) == verdict  # the schedule shrunk through stdio replays in process


def test_the_same_over_tcp(scenario):
    server = subprocess.Popen(
        [sys.executable, "-m", "isrcheck.impl.sut", "--listen", "127.0.0.1:0"], stdout=subprocess.PIPE, text=True
    )
    try:
        address = server.stdout.readline().split()[1]
        system = DriverSut(f"tcp://{address}")
        for name in ("kip101-scenario1", "torn-power-loss", "zombie-leader-acks1"):
            for protocol in ("hw-truncation", "kip-320"):
                schedule = load_schedule(scenario(name)).with_protocol(protocol)
                assert _run(schedule, system) == _run(schedule, ImplSide()), (name, protocol)
        system.close()
    finally:
        server.kill()
        server.wait()


@pytest.mark.parametrize(
    "mode, kind, text",
    [
        ("crash", "crash", "exited without answering (exit code 3); its stderr ends with:\ncrashing on purpose"),
        ("hang", "hang", "no answer within 2 s"),
        ("garbage", "malformed", "the answer is not JSON"),
        ("bad-state", "malformed", "state.replicas[1].hw: expected an integer, got 'high'"),
    ],
)
def test_a_failing_process_is_a_sut_failure_at_its_step_never_a_divergence(
    mode, kind, text, scenario, tmp_path, faulty_sut
):
    schedule = load_schedule(scenario("healthy-acks-all"))
    system = DriverSut(f"{faulty_sut} {mode} 3 {tmp_path / 'once'}", timeout_s=2.0)
    verdict, _ = _run(schedule, system)
    assert verdict.kind == "sut-failure" and verdict.failed and verdict.step == 2
    assert f"{kind}: step: " in verdict.diff and text in verdict.diff, verdict.diff
    again, _ = _run(schedule, system)  # the next run starts a new process, which behaves
    assert again == run_schedule(schedule)
    system.close()


def test_an_internal_error_is_the_implementation_failing_as_in_process(scenario, faulty_sut):
    schedule = load_schedule(scenario("healthy-acks-all"))
    verdict, _ = _run(schedule, DriverSut(f"{faulty_sut} internal 2"))
    assert verdict.kind == "divergence" and verdict.step == 1 and "the implementation raised boom" in verdict.diff


def test_check_and_shrink_take_sut_and_report_its_failure_with_the_schedule(
    isrcheck_cli, scenario, tmp_path, faulty_sut
):
    path = scenario("kip101-scenario1")
    ok = isrcheck_cli("check", path, "--protocol", "hw-truncation", "--sut", SERVER, "--json")
    assert ok.returncode == 1 and json.loads(ok.stdout)["verdict"] == "violation"
    for trace in ((), ("--trace",)):
        crashed = isrcheck_cli("check", path, "--sut", f"{faulty_sut} crash 4", *trace)
        assert crashed.returncode == 1
        assert "kip101-scenario1 [kip-320]: sut-failure at step 3" in crashed.stdout
        assert "crash: step: the system under test exited without answering" in crashed.stdout
    out = tmp_path / "small.json"
    shrunk = isrcheck_cli(
        "shrink", path, "--protocol", "hw-truncation", "--sut", SERVER, "-o", out, "--time-budget", "2"
    )
    assert shrunk.returncode == 1 and load_schedule(out).steps
    # healthy-acks-all passes in process: nothing to shrink there, but every process of this
    # system crashes at its third step, and the shrinker keeps that failure in fewer steps
    healthy = scenario("healthy-acks-all")
    assert isrcheck_cli("shrink", healthy, "-o", out).returncode == 0
    shrunk = isrcheck_cli("shrink", healthy, "--sut", f"{faulty_sut} crash 3", "-o", out, "--time-budget", "5")
    assert shrunk.returncode == 1 and "sut-failure at step 2" in shrunk.stdout, shrunk.stdout + shrunk.stderr
    assert len(load_schedule(out).steps) < len(load_schedule(healthy).steps)
    bad = isrcheck_cli("check", path, "--sut", "no-such-program-here")
    assert bad.returncode == 2 and "--sut no-such-program-here: crash: cannot start" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_the_generators_run_on_the_system_they_are_given(faulty_sut):
    """A random walk, its shrinking and the Hypothesis machine drive the system of their ``sut``:
    one that crashes gives sut-failures where the in-process simulation passes."""
    _, here = random_walk(0, "kip-320", 20)
    crashing = SutSpec(f"{faulty_sut} crash 3")  # each process of it crashes at its third step
    try:
        walked, there = random_walk(0, "kip-320", 20, sut=crashing)
        # in process every shorter candidate passes; on this system a later one crashes sooner
        small, verdict = shrink(walked, there, time_budget_s=3.0, sut=crashing)
    finally:
        crashing.close()  # its process (kept for the next run of the spec) has taken steps
    assert here.kind == "pass" and (there.kind, there.step, len(walked.steps)) == ("sut-failure", 2, 3)
    assert verdict.kind == "sut-failure" and len(small.steps) < 3
    at_once = SutSpec(f"{faulty_sut} crash 1")  # every run fails at its first step, as Hypothesis replays it
    try:
        with pytest.raises(AssertionError, match="sut-failure"):
            run_state_machine_as_test(
                lockstep_machine("kip-320", sut=at_once),
                settings=settings(
                    max_examples=5,
                    stateful_step_count=10,
                    deadline=None,
                    database=None,
                    suppress_health_check=list(HealthCheck),
                    derandomize=True,
                    phases=[Phase.generate],
                ),
            )
    finally:
        at_once.close()


def _talk(*requests) -> list[dict]:
    lines = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in requests)
    proc = subprocess.run(
        [sys.executable, "-m", "isrcheck.impl.sut"], input=lines, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_the_server_answers_every_bad_request_with_the_protocols_error():
    hello = {"op": "hello", "versions": [1]}
    answers = _talk(
        {"op": "reset"},
        {"op": "hello", "versions": [7]},
        hello,
        "{not json",
        '"x"',
        {"op": "dance"},
        {"op": "step", "step": {"step": "tick"}},
        {"op": "reset", "protocol": "kip-999"},
        {"op": "reset", "protocol": "kip-320", "config": {"replicas": 9}},
        {"op": "reset", "protocol": "kip-320", "config": {"colour": 1}},
        {"op": "reset", "protocol": "kip-320", "config": {"replicas": 2}},
        {"op": "step", "step": {"step": "jump"}},
        {"op": "step", "step": {"step": "produce", "replica": 0}},
        {"op": "step", "step": {"step": "produce", "replica": 5, "acks": 1}},
        {"op": "step", "step": {"step": "crash", "replica": 1, "kind": "power", "torn": 1}},
        {"op": "restore", "snapshot": 3},
        {"op": "bye"},
        hello,
    )
    codes = [a.get("error") for a in answers]
    assert codes == [
        "no_hello",
        "unsupported_version",
        None,
        "bad_request",
        "bad_request",
        "bad_request",
        "no_reset",
        "unsupported_protocol",
        "bad_config",
        "bad_config",
        None,
        "bad_step",
        "bad_step",
        "bad_step",
        "bad_step",
        "bad_request",
        None,
    ]  # nothing after bye
    assert answers[2]["version"] == 1 and "kip-320" in answers[2]["protocols"]
    assert "replicas" in answers[8]["message"] and "config.colour" in answers[9]["message"]
    assert answers[12]["message"] == "produce.acks: missing"
    assert answers[13]["message"] == "produce.replica: 5 is not a broker id 0..1"


def test_snapshots_restore_the_state_they_took(stdio, scenario):
    schedule = load_schedule(scenario("healthy-failover"))
    steps = [Step.from_json(s) for s in schedule.steps]
    ends = []
    for system in (stdio, ImplSide()):
        system.reset(schedule.protocol, schedule.config)
        for st in steps[:5]:
            system.step(st)
        token, middle = system.snapshot(), system.system_state()
        for st in steps[5:]:
            system.step(st)
        end = system.system_state()
        assert end != middle
        system.restore(token)
        assert system.system_state() == middle
        for st in steps[5:]:
            system.step(st)
        assert system.system_state() == end
        ends.append(end)
    assert ends[0] == ends[1]


def test_the_state_schema_names_every_field_of_the_model_state():
    for kind, fields in SCHEMA.items():  # the controller also names every broker epoch it gave
        assert tuple(f for f in fields if f != "registrations") == TYPES[kind]._fields, kind
    assert wire_step(Step.from_json({"step": "crash", "replica": 1, "kind": "clean"})) == {
        "step": "crash",
        "replica": 1,
        "kind": "clean",
        "survive": 0,
        "torn": False,
        "tail": "cut",
    }


def _corpus_through_processes(scenario_files, protocols):
    system = DriverSut(f"{SERVER} --processes", timeout_s=120)
    try:
        for path in scenario_files:
            for protocol in protocols:
                schedule = load_schedule(path).with_protocol(protocol)
                assert _run(schedule, system) == _run(schedule, ImplSide()), (path.name, protocol)
    finally:
        system.close()


def test_brokers_and_controller_as_processes_give_the_simulations_verdicts(scenario):
    """Each node its own OS process, logs in real directories; crashes are signals, a power loss
    cuts the files back to what was fsynced (torn-power-loss), a lost disk empties the directory."""
    names = ("torn-power-loss", "kafka-14139-replaced-disk", "kip101-scenario1")
    _corpus_through_processes([Path(scenario(n)) for n in names], ("hw-truncation", "kip-320"))


@pytest.mark.slow
def test_the_whole_corpus_through_brokers_as_processes(scenario_files):
    _corpus_through_processes(scenario_files, PROTOCOLS)
