"""The soak history's index, built in one pass and shared: what the run's counts, its page's plots
and its anomaly tables need of the history (per function and outcome the completion times and
latencies, completions counted, operations never completed, and the events the checker's anomalies
name, with the invokes of the named completions). The driver builds it once after the checker;
the page and ``results.json``'s operation counts read it."""

from __future__ import annotations

from array import array

FUNCTIONS = ("send", "poll")
OUTCOMES = ("ok", "info", "fail")  # drawing order: the rarer outcomes on top
INSTANCES_SHOWN = 20  # instances per anomaly whose events are kept (the page shows them); the rest are counted


class HistoryIndex:
    """What the run's counts and page need of the history, read in one pass: per (function, outcome) the
    completion times and latencies (ns), the other completions counted, the operations still open
    at the end, and the events the anomalies name (with the invokes of the named completions)."""

    def __init__(self, history: list[dict], wanted: set = frozenset()) -> None:
        self.times = {(f, t): array("q") for f in FUNCTIONS for t in OUTCOMES}
        self.latencies = {(f, t): array("q") for f in FUNCTIONS for t in OUTCOMES}
        self.counts: dict = {}  # (f, type) -> completions, every f
        self.unfinished: dict = {}  # f -> invokes never completed
        self.events: dict = {}  # index -> event, for the indexes in ``wanted``
        self.invoke_of: dict = {}  # index of a wanted completion -> its invoke
        self.end = 0  # the last event's time (ns)
        self.lat_min = self.lat_max = None
        open_: dict = {}
        for op in history:
            type_, f, time_ = op.get("type"), op.get("f"), op.get("time", 0)
            if type(time_) is not int:
                time_ = 0
            if time_ > self.end:
                self.end = time_
            index = op.get("index")
            if hashable_in(index, wanted):
                self.events[index] = op
            try:
                process = op.get("process")
                hash(process)
            except TypeError:
                continue
            if type_ == "invoke":
                open_[process] = op
                continue
            invoke = open_.pop(process, None)
            key = (f, type_)
            self.counts[key] = self.counts.get(key, 0) + 1
            if invoke is not None and hashable_in(index, wanted):
                self.invoke_of[index] = invoke
            if invoke is None or key not in self.times:
                continue
            start = invoke.get("time", 0)
            latency = time_ - start if type(start) is int and time_ >= start else 0
            self.times[key].append(time_)
            self.latencies[key].append(latency)
            if self.lat_min is None or latency < self.lat_min:
                self.lat_min = latency
            if self.lat_max is None or latency > self.lat_max:
                self.lat_max = latency
        for op in open_.values():
            self.unfinished[op.get("f")] = self.unfinished.get(op.get("f"), 0) + 1

    def count(self, f: str, type_: str) -> int:
        return self.counts.get((f, type_), 0)

    @classmethod
    def of(cls, history: list[dict], check) -> HistoryIndex:
        """The index of ``history`` keeping the events that ``check`` (a ``CheckResult``) names."""
        return cls(history, named_events(check.anomalies))

    def by_function(self) -> dict[str, dict[str, int]]:
        """Completions per function and outcome: ``{"send": {"ok": n, ...}, ...}``."""
        out: dict = {}
        for (f, type_), n in self.counts.items():
            out.setdefault(f, {})[type_] = n
        return out


def named_events(anomalies: dict) -> set:
    """The indexes of the events the first ``INSTANCES_SHOWN`` instances of each anomaly name."""
    wanted = set()
    for instances in anomalies.values():
        for instance in instances[:INSTANCES_SHOWN]:
            if isinstance(instance, dict):
                for index in instance.get("ops") or []:
                    try:
                        wanted.add(index)
                    except TypeError:
                        pass
    return wanted


def hashable_in(value, values: set) -> bool:
    try:
        return value in values
    except TypeError:
        return False
