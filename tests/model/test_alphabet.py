"""The step alphabet is defined once: docs/steps.md, the registry and everything derived from it
name the same steps, fields, message kinds and config fields, so a step added in one place only
fails here."""

import re
from pathlib import Path

import pytest
from hypothesis import given, settings

from isrcheck.conformance import FAULT_PROFILES
from isrcheck.conformance.core.adapter import ImplSide
from isrcheck.conformance.generators.strategies import step_dicts
from isrcheck.impl import replication as impl_replication
from isrcheck.impl import sim as impl_sim
from isrcheck.impl.sim import disk as impl_sim_disk
from isrcheck.impl.sut.steps import FIELDS as IMPL_FIELDS
from isrcheck.impl.sut.steps import STEPS as IMPL_STEPS
from isrcheck.model import (
    CRASH_KINDS,
    MAX_REPLICAS,
    MESSAGE_KINDS,
    STEPS,
    ConfigError,
    ModelConfig,
    ScheduleConfig,
    Scope,
    State,
    Step,
    apply,
    initial_state,
)
from isrcheck.model.actions import ACTIONS
from isrcheck.model.alphabet import DISK_IO, FAULT_WHEN, FAULTS, FIELDS, TORN_TAILS, step_kinds, steps_of
from isrcheck.model.history import History

STEPS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "steps.md"


def _section(title: str) -> str:
    text = STEPS_PAGE.read_text(encoding="utf-8")
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else None]


def test_the_steps_page_and_the_registry_name_the_same_steps_and_fields():
    documented = {
        name: tuple(f.strip() for f in fields.split(",") if f.strip())
        for name, fields in re.findall(r"^- `(\w+) \{([^}]*)\}`", _section("Steps"), re.M)
    }
    assert documented == {name: kind.fields for name, kind in STEPS.items()}
    assert {f for kind in STEPS.values() for f in kind.fields} == set(FIELDS)


def test_the_steps_page_and_the_registry_name_the_same_message_kinds_and_config_fields():
    assert re.findall(r"^\| `(\w+)` \|", _section("Messages in flight"), re.M) == list(MESSAGE_KINDS)
    documented = re.findall(r"^\| `(\w+)` \|", _section("Config"), re.M)
    assert documented == list(ScheduleConfig.__dataclass_fields__)


def test_every_step_kind_has_one_action_a_walk_weight_a_strategy_and_an_implementation_call():
    assert list(ACTIONS) == list(STEPS)
    for profile in FAULT_PROFILES.values():
        assert set(profile.weights) == set(STEPS), profile.name
    # the implementation parses steps itself (docs/sut-protocol.md), with the same fields in the same order
    assert IMPL_STEPS == {name: kind.fields for name, kind in STEPS.items()}
    cluster = ImplSide("kip-320", ScheduleConfig()).cluster
    assert all(callable(getattr(cluster, name, None)) for name in STEPS if name not in ("produce", "tick"))


def test_the_implementation_keeps_the_same_crash_kinds_message_kinds_replica_bound_and_disk_faults():
    # impl keeps its own copy (it runs without the model): the same words in the same order, since
    # the order of crash kinds is also the shrinker's "less destructive first"
    assert impl_replication.CRASH_KINDS == impl_sim.CRASH_KINDS == CRASH_KINDS
    assert impl_sim.MESSAGE_KINDS == tuple(MESSAGE_KINDS)
    assert impl_replication.MAX_REPLICAS == MAX_REPLICAS
    assert impl_replication.DISK_IO == DISK_IO
    assert impl_sim_disk.TAILS == TORN_TAILS


def test_the_implementation_reads_a_left_out_field_as_the_model_does():
    """impl/sut/steps.py keeps its own field defaults (a torn batch's tail: impl/sim/disk.CUT)."""
    defaults = {name: default for name, (_, default) in IMPL_FIELDS.items() if type(default) in (int, bool, str)}
    assert defaults == {name: FIELDS[name].default for name in defaults}
    assert set(defaults) == {"records", "max_batches", "index", "survive", "torn", "tail"}
    assert defaults["tail"] == impl_sim_disk.CUT == TORN_TAILS[0]


@settings(max_examples=200, deadline=None)
@given(step_dicts(replicas=3))
def test_strategies_draw_only_valid_steps_that_round_trip(raw):
    step = Step.from_json(raw, 3)
    canonical = step.to_json()
    assert Step.from_json(canonical, 3) == step
    # the canonical form leaves out only optional fields at their defaults, never index
    assert all(raw[k] == FIELDS[k].default and k != "index" for k in set(raw) - set(canonical))


def test_step_enumeration_follows_the_registry_fields():
    state = initial_state(ModelConfig(replicas=2))
    static = dict((kind.name, steps) for kind, steps in step_kinds(2))
    assert static["produce"] == tuple(
        Step("produce", r, a, records=n) for r in range(2) for a in (0, 1, -1) for n in FIELDS["records"].sample
    )
    assert static["elect"] == (Step("elect"), Step("elect", 0), Step("elect", 1)) and static["drop"] is None
    kinds = {(st.arg, st.survive, st.torn) for st in static["crash"]}
    assert ("clean", 0, False) in kinds and ("power", 1, True) in kinds and ("clean", 1, False) not in kinds
    assert steps_of(STEPS["deliver_leader_and_isr"], 2, state) == []  # nothing in flight initially


def test_the_states_ghost_fields_are_the_history():
    assert State._fields[8:] == History._fields


@pytest.mark.parametrize(
    "values, field",
    [
        ({"replicas": 6}, "replicas"),
        ({"replicas": 2, "min_insync_replicas": 3}, "min_insync_replicas"),
        ({"request_timeout_ticks": -1}, "request_timeout_ticks"),
        ({"flush_messages": 0}, "flush_messages"),
        ({"unclean_leader_election_enable": 1}, "unclean_leader_election_enable"),
    ],
)
def test_the_config_checks_its_bounds_once_for_schedules_and_the_model(values, field):
    for build in (
        lambda: ScheduleConfig(**values),
        lambda: ScheduleConfig.from_json(values),
        lambda: ModelConfig(protocol="kip-101", **values),
    ):
        with pytest.raises(ConfigError) as err:
            build()
        assert err.value.field == field
    assert ModelConfig.of("kip-279", ScheduleConfig(replicas=2)).to_schedule() == ScheduleConfig(replicas=2).to_json()


def test_every_fault_class_has_its_counter_and_its_bound():
    """The fault registry is the one place counters and bounds are named: each fault's counter is
    a History field, its bound a Scope field, and every fault counter of History is some fault's."""
    counters = [f.counter for f in FAULTS]
    assert len(set(counters)) == len(counters) == 11
    assert set(counters) == set(History._fields[5:])
    assert all(hasattr(Scope(), f.bound) for f in FAULTS)
    assert all(f.when in FAULT_WHEN for f in FAULTS)
    # the budget tells a data-losing step from the step alone
    assert [f.name for f in FAULTS if f.loses_data] == [
        "power_loss",
        "disk_loss",
        "corruption",
        "fsync_failure",
        "live_corruption",
    ]
    assert all(f.static for f in FAULTS if f.loses_data)


def test_the_history_counts_each_fault_as_its_class_says():
    config = ModelConfig(protocol="kip-320", replicas=2, min_insync_replicas=1)
    state = initial_state(config)
    steps = [
        {"step": "fence", "replica": 1},
        {"step": "crash", "replica": 1, "kind": "power"},
        {"step": "restart", "replica": 1},
        {"step": "crash", "replica": 1, "kind": "process"},
        {"step": "lose_disk", "replica": 1},
        {"step": "restart", "replica": 1},
    ]
    for raw in steps:
        state, _ = apply(config, state, raw)
    # a live broker fenced: a zombie; the first restart was fenced (no bounce), the second not
    assert (state.crashes, state.power_losses, state.zombies, state.bounces, state.disk_losses) == (2, 1, 1, 1, 1)
