"""Schedule files: validation names the step and field; JSON round-trips."""

import json
import re
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from isrcheck.conformance import Schedule, ScheduleError, load_schedule

GOOD = {
    "version": 1,
    "protocol": "kip-320",
    "config": {"replicas": 2, "min_insync_replicas": 1},
    "steps": [
        {"step": "produce", "replica": 0, "acks": -1},
        {"step": "send_fetch", "replica": 1},
        {"step": "drop", "message": "fetch_request", "replica": 1},
        {"step": "tick"},
    ],
}


def with_step(i, step):
    doc = json.loads(json.dumps(GOOD))
    doc["steps"][i] = step
    return doc


@pytest.mark.parametrize(
    "doc, message",
    [
        (with_step(0, {"step": "produce", "replica": 0, "acks": 2}), "steps[0].acks"),
        (with_step(1, {"step": "send_fetch", "replica": 2}), "steps[1].replica: expected a replica id 0..1"),
        (with_step(2, {"step": "drop", "message": "ping", "replica": 1}), "steps[2].message"),
        (with_step(3, {"step": "tick", "replica": 0}), "steps[3].replica: not a field of step 'tick'"),
        (with_step(1, {"step": "explode"}), "steps[1].step: unknown step 'explode'"),
        (with_step(0, {"step": "crash", "replica": 0}), "steps[0].kind: missing"),
        (with_step(0, {"step": "deliver_leader_and_isr", "replica": 0, "index": -1}), "steps[0].index"),
        (with_step(0, {"step": "produce", "replica": True, "acks": 1}), "steps[0].replica"),
        ({**GOOD, "protocol": "kip-999"}, "protocol: expected one of"),
        ({**GOOD, "version": 7}, "version: this build reads version 1"),
        ({**GOOD, "config": {"replicas": 2, "min_insync_replicas": 3}}, "config.min_insync_replicas"),
        ({**GOOD, "config": {"replica": 2}}, "config.replica: unknown config field"),
        ({**GOOD, "expected": {"kip-320": {"verdict": "fine"}}}, "expected.kip-320.verdict"),
        ({**GOOD, "steps": {"step": "tick"}}, "steps: expected a list"),
    ],
)
def test_invalid_schedules_name_the_field(doc, message):
    with pytest.raises(ScheduleError) as err:
        Schedule.from_json(doc)
    assert message in str(err.value)


def test_round_trip_fills_the_default_index_and_keeps_everything():
    s = Schedule.from_json({**GOOD, "expected": {"kip-320": "pass"}, "name": "n"})
    assert s.steps[2] == {"step": "drop", "message": "fetch_request", "replica": 1, "index": 0}
    again = Schedule.from_json(json.loads(s.dumps()))
    assert again == s and again.expected["kip-320"].verdict == "pass"


def test_an_unknown_protocol_is_refused_and_the_newest_variants_load():
    with pytest.raises(ScheduleError, match="protocol: expected one of"):
        Schedule.from_json({**GOOD, "protocol": "kip-1000"})
    assert Schedule.from_json({**GOOD, "protocol": "kip-966"}).protocol == "kip-966"


# -- bad input: every class of it is a ScheduleError naming the place, never another exception --


def _load(tmp_path, data: bytes):
    path = tmp_path / "s.json"
    path.write_bytes(data)
    return load_schedule(path)


@pytest.mark.parametrize(
    "data, message",
    [
        (b'{"version": 1, "protocol": "kip\xff-320", "steps": []}', "not a text (UTF-8) file: byte 31 (0xff)"),
        (b"[" * 100_000 + b"]" * 100_000, "nested more than 100 deep at line 1 column 101"),
        (
            b'{"version": 1, "protocol": "kip-320", "steps": [{"step": "tick"}], "config": {"replicas": '
            + b"9" * 5000
            + b"}}",
            "config.replicas: expected an integer 1..5, got 99999999... (5000 digits)",
        ),
        (b'{"version": 1, "protocol": "kip-320", "steps": [], "name": "\\ud800"}', "name: not Unicode text"),
        (b'{"version": 1, "protocol": "kip-320", "steps": [{"step": "tick"}', "not valid JSON: line 1 column"),
    ],
)
def test_unreadable_files_name_the_byte_line_or_field(tmp_path, data, message):
    with pytest.raises(ScheduleError) as err:
        _load(tmp_path, data)
    assert message in str(err.value) and str(err.value).startswith(str(tmp_path / "s.json"))


def test_a_file_past_the_size_bound_is_refused_unread(tmp_path, isrcheck_cli):
    huge = tmp_path / "huge.json"
    with open(huge, "wb") as f:  # sparse: 65 MiB that take no disk
        f.truncate(65 << 20)
    proc = isrcheck_cli("check", huge)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == (
        f"isrcheck check: error: {huge}: 68,157,440 bytes, larger than a schedule file may be (64 MiB)"
    )


def _limited_memory():
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


@pytest.mark.parametrize("path", ["/dev/zero", "/dev/stdin"])
def test_an_endless_schedule_is_refused_at_the_size_bound(path):
    """A device or a pipe has no size: the read stops at the bound (in 1 GiB of address space,
    where reading on would end in a MemoryError)."""
    with open("/dev/zero", "rb") as zeros:
        proc = subprocess.run(
            [sys.executable, "-m", "isrcheck.conformance.cli.main", "check", path],
            stdin=zeros,
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=_limited_memory,
        )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip() == f"isrcheck check: error: {path}: larger than a schedule file may be (64 MiB)"


def test_too_many_steps_are_refused_before_parsing(tmp_path, monkeypatch):
    import isrcheck.conformance.core.schedule as schedule

    monkeypatch.setattr(schedule, "MAX_STEPS", 4)
    doc = {**GOOD, "expected": {"kip-320": "pass"}}
    assert len(load_schedule(_write(tmp_path, doc)).steps) == 4  # 4 steps, 7 objects
    many = {**GOOD, "steps": GOOD["steps"] * 3, "description": "{" * 20}  # braces in strings do not count
    with pytest.raises(ScheduleError) as err:
        load_schedule(_write(tmp_path, many))
    assert str(err.value) == (
        f"{tmp_path / 's.json'}: not a schedule: more JSON objects than 4 steps need (a schedule holds at most 4 steps)"
    )
    with pytest.raises(ScheduleError) as err:
        Schedule.from_json(many)
    assert str(err.value) == "steps: 12 steps, more than a schedule holds (4)"


def _write(tmp_path, doc):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc))
    return path


def test_a_utf8_byte_order_mark_is_accepted(tmp_path):
    assert _load(tmp_path, b"\xef\xbb\xbf" + json.dumps(GOOD).encode()) == Schedule.from_json(GOOD)


BIG = 10**100


@pytest.mark.parametrize(
    "doc, message",
    [
        (with_step(0, {"step": ["produce"], "replica": 0, "acks": -1}), "steps[0].step: unknown step ['produce']"),
        (with_step(0, {"step": {"name": "tick"}}), "steps[0].step: unknown step {'name': 'tick'}"),
        (with_step(0, [{"step": "tick"}]), "steps[0]: expected an object"),
        (
            with_step(0, {"step": "deliver_leader_and_isr", "replica": 0, "index": BIG}),
            "steps[0].index: index must be 0..2147483647, got 1000000000",
        ),
        (with_step(0, {"step": "produce", "replica": BIG, "acks": -1}), "steps[0].replica: expected a replica id 0..1"),
        (
            with_step(0, {"step": "produce", "replica": 0, "acks": -1, "records": BIG}),
            "steps[0].records: records must be 1..4",
        ),
        ({**GOOD, "version": BIG}, "version: this build reads version 1, got 1000000000"),
        ({**GOOD, "version": 10**5000}, "version: this build reads version 1, got <int too large to show>"),
        (
            {**GOOD, "config": {"request_timeout_ticks": 2**31}},
            "config.request_timeout_ticks: expected an integer 0..2147483647",
        ),
        (
            {**GOOD, "config": {"replica_lag_time_max_ticks": BIG}},
            "config.replica_lag_time_max_ticks: expected an integer 0..2147483647",
        ),
        ({**GOOD, "config": {"flush_messages": BIG}}, "config.flush_messages: expected an integer 1..2147483647"),
        (
            {**GOOD, "expected": {"kip-320": {"verdict": "violation", "property": "NoLostWrites"}}},
            "expected.kip-320.property: unknown property 'NoLostWrites' (known: LeaderInIsr,",
        ),
        ({**GOOD, "x" * 1000: 1}, "'xxxxxxxxx"),
    ],
)
def test_values_past_every_bound_name_the_field_briefly(doc, message):
    with pytest.raises(ScheduleError) as err:
        Schedule.from_json(doc)
    # brief: a bad value is cut short; an unknown step's message lists the alphabet's 28 names
    assert message in str(err.value) and len(str(err.value)) < 450


def test_the_largest_config_values_run_in_lockstep_without_a_divergence():
    """Each config bound is what the implementation can represent: request.timeout.ms travels as an
    int32 of milliseconds, and a tick is a millisecond (one past it used to diverge at the produce)."""
    from isrcheck.conformance import run_schedule
    from isrcheck.conformance.core.abstraction import MS_PER_TICK
    from isrcheck.model.config import MAX_FLUSH_MESSAGES, MAX_TICKS

    assert MAX_TICKS * MS_PER_TICK <= 2**31 - 1
    steps = [{"step": "produce", "replica": 0, "acks": -1}]
    steps += [{"step": s, "replica": 1} for s in ("send_fetch", "handle_fetch", "handle_fetch_response")] * 2
    steps += [{"step": "tick"}, {"step": "produce", "replica": 0, "acks": -1}, {"step": "tick"}]
    schedule = Schedule.from_json(
        {
            **GOOD,
            "steps": steps,
            "config": {
                "replicas": 2,
                "min_insync_replicas": 1,
                "request_timeout_ticks": MAX_TICKS,
                "replica_lag_time_max_ticks": MAX_TICKS,
                "flush_messages": MAX_FLUSH_MESSAGES,
            },
        }
    )
    assert run_schedule(schedule).kind == "pass"


_KEYS = st.sampled_from(
    [
        "format",
        "version",
        "protocol",
        "config",
        "steps",
        "expected",
        "name",
        "step",
        "replica",
        "acks",
        "index",
        "kind",
        "message",
        "records",
        "replicas",
        "verdict",
        "property",
        "kip-320",
        "request_timeout_ticks",
        "flush_messages",
        "",
    ]
)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([2**31, BIG, -BIG]),
    st.floats(),
    st.text(max_size=4),
    _KEYS,
)


def _documents(scalars):
    """Any JSON value, and schedule-shaped documents whose every part may be any JSON value."""
    values = st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4), st.dictionaries(st.one_of(_KEYS, st.text(max_size=3)), inner, max_size=5)
        ),
        max_leaves=25,
    )
    step = st.fixed_dictionaries(
        {"step": st.one_of(_KEYS, st.sampled_from(["produce", "crash", "drop", "tick"]), values)},
        optional={k: values for k in ("replica", "acks", "index", "kind", "message", "records")},
    )
    expected = st.dictionaries(
        st.just("kip-320"),
        st.one_of(
            values,
            st.fixed_dictionaries({"verdict": st.one_of(st.just("violation"), values)}, optional={"property": values}),
        ),
    )
    docs = st.fixed_dictionaries(
        {"version": st.one_of(st.just(1), values), "protocol": st.one_of(st.just("kip-320"), values)},
        optional={
            "steps": st.one_of(values, st.lists(st.one_of(step, values), max_size=4)),
            "config": values,
            "expected": st.one_of(values, expected),
            "name": values,
            "format": values,
        },
    )
    return st.one_of(docs, values)


def _only_schedule_errors(load) -> None:
    try:
        load()
    except ScheduleError as exc:
        text = str(exc)
        # one bounded line: the longest names the file's path and lists the alphabet's 20 steps
        assert "\n" not in text and len(text) < 500 and "Traceback" not in text
        text.encode("utf-8")  # printable as it is


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(_documents(st.one_of(_SCALARS, st.just(5000).map(lambda digits: 10**digits))))
def test_random_json_values_give_only_schedule_errors(doc):
    _only_schedule_errors(lambda: Schedule.from_json(doc))


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.one_of(
        st.binary(max_size=200),
        _documents(_SCALARS)
        .map(lambda d: json.dumps(d).encode())
        .flatmap(
            lambda b: st.tuples(st.just(b), st.integers(0, len(b)), st.binary(max_size=3)).map(
                lambda t: t[0][: t[1]] + t[2] + t[0][t[1] + len(t[2]) :]
            )
        ),
    )
)
def test_random_bytes_give_only_schedule_errors(tmp_path_factory, data):
    """Random bytes, and schedule documents with a few bytes overwritten somewhere."""
    path = tmp_path_factory.mktemp("bytes") / "s.json"
    path.write_bytes(data)
    _only_schedule_errors(lambda: load_schedule(path))


def test_the_steps_page_lists_the_config_bounds_the_loader_checks():
    from pathlib import Path

    from isrcheck.model.config import MAX_FLUSH_MESSAGES, MAX_TICKS

    page = (Path(__file__).resolve().parents[2] / "docs" / "steps.md").read_text(encoding="utf-8")
    ranges = dict(re.findall(r"^\| `(\w+)` \|.*\| ([^|]+) \|$", page[page.index("## Config") :], re.M))
    assert ranges["replica_lag_time_max_ticks"] == ranges["request_timeout_ticks"] == f"0..{MAX_TICKS}"
    assert ranges["flush_messages"] == f"1..{MAX_FLUSH_MESSAGES}, null"
    for name, high in (("replica_lag_time_max_ticks", MAX_TICKS), ("flush_messages", MAX_FLUSH_MESSAGES)):
        Schedule.from_json({**GOOD, "config": {name: high}})
        with pytest.raises(ScheduleError, match=f"config.{name}: expected an integer"):
            Schedule.from_json({**GOOD, "config": {name: high + 1}})
