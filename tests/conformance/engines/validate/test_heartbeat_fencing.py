"""The controller's broker-epoch fencing of heartbeats (KIP-903's reason), reached in self-driven
runs: a heartbeat on the wire when its broker crashed arrives after the broker registered again
and was fenced (``impl/sim/late_heartbeat.py``); the controller must refuse it
(STALE_BROKER_EPOCH). A controller that accepts it unfences a broker that is down, which
``fuzz --mode auto``'s validation refuses."""

from __future__ import annotations

import dataclasses

from isrcheck.conformance.engines.campaign.auto import run_auto_seed
from isrcheck.impl.controller.controller import Controller
from isrcheck.impl.protocol import Errors
from isrcheck.impl.sim.workload import run_simulation


def _answers(monkeypatch) -> list:
    """Every heartbeat answer's error, with whether the request's broker epoch was the registration's."""
    seen = []
    handle = Controller._handle_heartbeat

    def watched(self, src, header, req):
        current = self.broker_epochs[req.broker_id] == req.broker_epoch
        resp = handle(self, src, header, req)
        seen.append((current, resp.error))
        return resp

    monkeypatch.setattr(Controller, "_handle_heartbeat", watched)
    return seen


def test_late_heartbeats_of_an_earlier_registration_arrive_and_are_fenced(monkeypatch):
    seen = _answers(monkeypatch)
    for seed in range(10):
        run_simulation("kip-320", 3, seed, 200)
    stale = [error for current, error in seen if not current]
    assert len(stale) >= 3  # reached: runs deliver heartbeats from old incarnations
    assert set(stale) == {Errors.STALE_BROKER_EPOCH}
    assert all(error == Errors.NONE for current, error in seen if current)


def test_a_controller_that_accepts_a_stale_heartbeat_is_caught_by_fuzz_auto(monkeypatch):
    handle = Controller._handle_heartbeat

    def accepting(self, src, header, req):  # the planted bug: no broker epoch comparison
        if 0 <= req.broker_id < len(self.broker_epochs):
            req = dataclasses.replace(req, broker_epoch=self.broker_epochs[req.broker_id])
        return handle(self, src, header, req)

    rows = [run_auto_seed("kip-320", 200, seed) for seed in range(10)]
    assert all(r["verdict"] == "pass" for r in rows)
    monkeypatch.setattr(Controller, "_handle_heartbeat", accepting)
    caught = [r for seed in range(10) if (r := run_auto_seed("kip-320", 200, seed))["verdict"] == "divergence"]
    assert caught and all(r["failure_id"] == "divergence-at-unfence" for r in caught)
