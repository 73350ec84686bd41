"""The plan runner: an experiment's steps played on a cluster driver, each wait a state of the
cluster read from Metadata (``states``), never a bare sleep.

``PlanRunner(driver, workload, say).run(plan)`` plays the steps in order and keeps, per step, what
was done to which brokers and how long it took (``log``) and, per produce step, its sends' counts
and errors (``produced``). A wait that times out, a hold whose state breaks, or a role that names
nobody (no leader to kill) ends the plan there: the repetition did not reach the state the
experiment aims at (``reached`` False, ``missed`` says where). ``settle()`` then brings every broker
back (heal, resume, restart) and waits until the partition has a leader, for the final read.
"""

from __future__ import annotations

import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from isrcheck.conformance.engines.apache.admin import PartitionView
from isrcheck.conformance.engines.experiment.drivers import TOPIC
from isrcheck.conformance.engines.experiment.spec import REQUESTS

POLL_S = 0.2
DEFAULT_SEND_TIMEOUT_S = 10.0
SETTLE_TIMEOUT_S = 90.0
# steps done to each broker they name, by the driver's method of the same name
PROCESS_FAULTS = ("kill", "stop", "pause", "resume", "power", "lose-disk", "restart")


class Missed(Exception):
    """The steering did not reach a state the plan needs: the message says which."""


def state_holds(
    state: str, nodes: list[int], view, hw_passed=lambda: False, requests=lambda state, nodes: False
) -> bool:
    """Whether the cluster, as ``view`` (a ClusterView, or None when no broker answers) shows it,
    is in ``state`` (spec.STATES) for the partition ``p`` (the experiment topic's only one);
    ``requests(state, nodes)`` answers the held-request states, which the driver knows."""
    if state in ("held", "delivered"):
        return requests(state, nodes)
    if view is None:
        return state == "no-leader"
    p: PartitionView | None = view.partitions.get((TOPIC, 0))
    leader = p.leader if p is not None else -1
    isr = set(p.isr) if p is not None else set()
    checks = {
        "isr-full": lambda: leader >= 0 and p is not None and isr == set(p.replicas),
        "isr-is-leader": lambda: leader >= 0 and isr == {leader},
        "leader": lambda: leader >= 0,
        "no-leader": lambda: leader < 0,
        "leader-is": lambda: leader in nodes,
        "leader-not": lambda: leader >= 0 and leader not in nodes,
        "fenced": lambda: all(n not in view.brokers for n in nodes),
        "registered": lambda: all(n in view.brokers for n in nodes),
        "in-isr": lambda: all(n in isr for n in nodes),
        "not-in-isr": lambda: all(n not in isr for n in nodes),
        "hw-passed": lambda: leader >= 0 and hw_passed(),
    }
    return checks[state]()


class PlanRunner:
    def __init__(self, driver, workload, say=lambda line: None) -> None:
        self.driver, self.workload, self.say = driver, workload, say
        self.names: dict[str, list[int]] = {}
        self.log: list[dict] = []
        self.produced: list[dict] = []
        self.reached = True
        self.missed: str | None = None
        self._value = 0
        self._started = time.monotonic()

    # -- the plan -------------------------------------------------------------------------------------
    def run(self, plan) -> None:
        for i, step in enumerate(plan):
            began = time.monotonic()
            entry = {"index": i, "step": step.describe(), "at_s": round(began - self._started, 2)}
            self.log.append(entry)
            try:
                if step.do in PROCESS_FAULTS:
                    entry.update(self._fault(step, getattr(self.driver, step.do.replace("-", "_"))))
                else:
                    entry.update(getattr(self, "_" + step.do.replace("-", "_"))(step) or {})
            except Missed as exc:
                entry["missed"] = str(exc)
                self.reached, self.missed = False, f"step {i} ({step.describe()}): {exc}"
                self.say(f"  not reached: {self.missed}")
                return
            finally:
                entry["seconds"] = round(time.monotonic() - began, 2)
            self.say(f"  {i}: {step.describe()} -> {entry.get('nodes', '')} ({entry['seconds']} s)")

    def settle(self) -> None:
        """Every broker back and the partition led, whatever the plan left (for the final read)."""
        d = self.driver
        d.heal()
        for b in d.brokers:
            d.restart(b)
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        while time.monotonic() < deadline and not state_holds("leader", [], d.view()):
            time.sleep(POLL_S)

    # -- nodes ------------------------------------------------------------------------------------------
    def nodes(self, ref) -> list[int]:
        """The brokers ``ref`` names now (spec: roles, ids, bound names); Missed if none."""
        if isinstance(ref, int):
            return [ref]
        if ref in self.names:
            return list(self.names[ref])
        if ref == "all":
            return list(self.driver.brokers)
        if ref == "controller":
            return [self.driver.controller]
        view = self.driver.view()
        p = view.partitions.get((TOPIC, 0)) if view is not None else None
        if p is None or p.leader < 0:
            raise Missed(f"no {ref}: the partition has no leader")
        if ref == "leader":
            return [p.leader]
        others = [r for r in p.replicas if r != p.leader]
        if ref == "followers":
            return others
        in_sync = [r for r in others if r in p.isr]
        if not (in_sync or others):
            raise Missed("no follower: the leader is the only replica")
        return [(in_sync or others)[0]]

    # -- steps -----------------------------------------------------------------------------------------
    def _fault(self, step, action) -> dict:
        nodes = self.nodes(step.get("node"))
        for n in nodes:
            action(n)
        if step.get("as"):
            self.names[step.get("as")] = nodes
        return {"nodes": nodes}

    def _partition(self, step):
        nodes = self.nodes(step.get("node"))
        self.driver.partition([nodes])
        if step.get("as"):
            self.names[step.get("as")] = nodes
        return {"nodes": nodes}

    def _heal(self, step):
        self.driver.heal()

    def _cut(self, step):
        nodes, others = self.nodes(step.get("node")), self.nodes(step.get("from"))
        for a in nodes:
            for b in others:
                self.driver.cut(a, b)
        if step.get("as"):
            self.names[step.get("as")] = nodes
        return {"nodes": nodes, "from": others}

    def _delay(self, step):
        """Every link of each node (to the other brokers and the controller, or to ``from``)."""
        nodes = self.nodes(step.get("node"))
        if step.get("from") is not None:
            others = self.nodes(step.get("from"))
        else:
            others = [*self.driver.brokers, self.driver.controller]
        for a in nodes:
            for b in others:
                if b != a:
                    self.driver.delay(a, b, step.get("ms"))
        if step.get("as"):
            self.names[step.get("as")] = nodes
        return {"nodes": nodes, "from": [b for b in others if b not in nodes], "ms": step.get("ms")}

    def _undelay(self, step):
        nodes = self.nodes(step.get("node"))
        others = self.nodes(step.get("from")) if step.get("from") is not None else [None]
        for a in nodes:
            for b in others:
                if b != a:
                    self.driver.undelay(a, b)
        return {"nodes": nodes}

    def _hold_requests(self, step):
        return self._fault(step, lambda n: self.driver.hold_requests(n, REQUESTS[step.get("request")]))

    def _release_requests(self, step):
        return self._fault(step, lambda n: self.driver.release_requests(n, REQUESTS[step.get("request")]))

    def _wait(self, step):
        nodes = self.nodes(step.get("node")) if step.get("node") is not None else []
        deadline = time.monotonic() + step.get("timeout_s")
        while True:
            if state_holds(
                step.get("until"), nodes, self._view(step.get("until")), self._hw_passed, self.driver.requests_state
            ):
                return {"nodes": nodes} if nodes else {}
            if time.monotonic() > deadline:
                raise Missed(f"not {step.get('until')} within {step.get('timeout_s')} s")
            time.sleep(POLL_S)

    def _hold(self, step):
        nodes = self.nodes(step.get("node")) if step.get("node") is not None else []
        began = time.monotonic()
        while time.monotonic() - began < step.get("for_s"):
            if not state_holds(
                step.get("state"), nodes, self._view(step.get("state")), self._hw_passed, self.driver.requests_state
            ):
                raise Missed(f"{step.get('state')} broke after {time.monotonic() - began:.1f} s")
            time.sleep(POLL_S)

    def _view(self, state: str):
        """Metadata, unless the state is the driver's alone (a held request)."""
        return None if state in ("held", "delivered") else self.driver.view()

    def _produce(self, step):
        retries = step.get("retries", 5)
        timeout_ms = int(step.get("timeout_s", DEFAULT_SEND_TIMEOUT_S) * 1000)
        producer = Producer(
            {
                "bootstrap.servers": self.driver.bootstrap,
                "logger": self.workload.client_log,
                "acks": "all",
                "enable.idempotence": retries > 0,
                "retries": retries,
                "linger.ms": 0,
                "message.timeout.ms": timeout_ms,
                "request.timeout.ms": min(timeout_ms, 5000),
                "retry.backoff.ms": 100,
            }
        )
        process = f"producer-{len(self.produced)}"
        first = len(self.workload.history.events)
        for _ in range(step.get("records")):
            self._value += 1
            self.workload.send(producer, process, 0, self._value)
        producer.flush(5)
        done = [e for e in self.workload.history.events[first:] if e["process"] == process and e["type"] != "invoke"]
        counts = {t: sum(e["type"] == t for e in done) for t in ("ok", "fail", "info")}
        errors = sorted({e.get("error") for e in done if e.get("error")})
        self.produced.append({"step": self.log[-1]["index"], **counts, "errors": errors})
        return {"sends": counts, **({"errors": errors} if errors else {})}

    def _read(self, step):
        """A fresh consumer reads the partition from the beginning to its high watermark."""
        process = f"reader-{sum(1 for e in self.log if e['step'].startswith('read'))}"
        consumer = self.workload.new_consumer(process)
        deadline = time.monotonic() + step.get("timeout_s", 10.0)
        reached = -1
        try:
            _low, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=5)
            while reached < high - 1 and time.monotonic() < deadline:
                for recs in self.workload.poll(consumer, process).values():
                    reached = max([reached, *(o for o, _ in recs)])
        except KafkaException as exc:
            return {"error": str(exc)}
        finally:
            consumer.close()
        return {"read_to": reached}

    def _hw_passed(self) -> bool:
        """The partition's high watermark (ListOffsets latest) is past every acknowledged offset."""
        acked = [e["offset"] for e in self.workload.history.events if e["type"] == "ok" and e["f"] == "send"]
        consumer = Consumer(
            {
                "bootstrap.servers": self.driver.bootstrap,
                "group.id": "isrcheck-experiment-hw",
                "logger": self.workload.client_log,
            }
        )
        try:
            _low, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=2)
        except KafkaException:
            return False
        finally:
            consumer.close()
        return high > max(acked, default=-1)


__all__ = ["Missed", "PlanRunner", "state_holds"]
