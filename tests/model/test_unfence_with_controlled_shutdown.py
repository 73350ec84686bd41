"""``unfence_at_heartbeat`` and ``kraft_controlled_shutdown`` together (docs/steps.md): a broker awaiting
unfence cannot start a controlled shutdown (it is not active), one in controlled shutdown is not unfenced
(its registration is not fenced) but may be fenced, and a registration ends a controlled shutdown and
awaits unfence."""

from __future__ import annotations

import pytest
from split_switches import last, step
from unfence import KILL_SOAK, PROTOCOLS
from unfence_with_shutdown import BOTH, FENCED, REGISTERED, REJOINED, SHUT_DOWN

from isrcheck.model import ModelConfig
from isrcheck.model.actions import ACTIONS
from isrcheck.model.alphabet import Step
from isrcheck.model.state import active, alive_broker_epochs, initial_state


def refusal(config, s, name, replica):
    return ACTIONS[name].guard(config, s, Step(name, replica))


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_broker_awaiting_unfence_starts_no_controlled_shutdown(protocol):
    config = ModelConfig(protocol=protocol, **BOTH)
    s = last(KILL_SOAK, config)
    assert s.controller.awaiting_unfence == (1,) and not active(s.controller, 1)
    assert "awaits unfence" in refusal(config, s, "controlled_shutdown", 1)
    assert refusal(config, s, "controlled_shutdown", 2) is None


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_broker_in_controlled_shutdown_is_fenced_not_unfenced(protocol):
    config = ModelConfig(protocol=protocol, **BOTH)
    s = last(SHUT_DOWN, config)
    c = s.controller
    assert c.in_controlled_shutdown == (1,) and c.awaiting_unfence == () and c.fenced == ()
    assert not active(c, 1) and alive_broker_epochs(c, s.replicas)[1] == -1
    assert "neither fenced nor awaiting unfence" in refusal(config, s, "unfence", 1)
    assert refusal(config, s, "fence", 1) is None
    c = last(FENCED, config).controller
    assert c.fenced == (1,) and c.in_controlled_shutdown == ()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_registration_ends_a_controlled_shutdown_and_awaits_unfence(protocol):
    config = ModelConfig(protocol=protocol, **BOTH)
    for steps in (REJOINED, REGISTERED):
        s = last(steps, config)
        c = s.controller
        assert (c.fenced, c.awaiting_unfence, c.in_controlled_shutdown) == ((), (1,), ()), steps
        assert not active(c, 1) and alive_broker_epochs(c, s.replicas)[1] == -1
    s = last(REJOINED + [step("deliver_leader_and_isr", 1), step("unfence", 1)], config)
    assert active(s.controller, 1)


def test_the_controller_text_leaves_out_each_empty_field():
    config = ModelConfig(protocol="kip-966", **BOTH)
    assert "awaiting_unfence" not in repr(initial_state(config).controller) and "in_controlled" not in repr(
        initial_state(config).controller
    )
    text = repr(last(SHUT_DOWN, config).controller)
    assert "in_controlled_shutdown=(1,)" in text and "awaiting_unfence" not in text
    text = repr(last(REJOINED, config).controller)
    assert "awaiting_unfence=(1,)" in text and "in_controlled_shutdown" not in text
