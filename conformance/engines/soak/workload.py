"""The soak's workload through a real Kafka client (librdkafka, by confluent-kafka), as Jepsen's.

Producers send unique integer values to the topic's partitions with acks=all, one send at a time
each, idempotence on or off; consumers are assigned every partition from the start and poll all
the time; the offsets reader (``offsets``) reads as a KIP-320 consumer does, asking the end offset
(ListOffsets) and, after a leader change, where its last record's epoch ends (OffsetForLeaderEpoch),
so that what those APIs answer is in the history; once faults stop, a final read by a fresh
consumer reads every partition from the beginning until it reaches the highest offset any client
saw, or the partition's end, for as long as the cluster makes progress serving it. Every
operation is recorded as an invoke and a completion event in the history format of ``checker``
(ok, fail: it definitely did not happen, info: it may have), written as JSON lines as it happens. The final read
stops at a partition's high watermark where the log no longer reaches the highest offset seen (a
loss): what was above it is then the checker's to report.

Classifying a failed send: only an error the broker returns before it appends anything is a fail
(``DEFINITE_FAILURES``); a timeout, a disconnect, NOT_ENOUGH_REPLICAS_AFTER_APPEND, the client's own
_UNKNOWN_PARTITION (given to retries too) and anything unknown are info, since the write may be in
the log.
"""

from __future__ import annotations

import json
import logging
import random
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import IO

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition

from isrcheck.conformance.engines.soak.offsets import OffsetsReader, value_of

# errors a broker returns before it appends: the write is definitely not in the log. Not the local
# _UNKNOWN_PARTITION: librdkafka fails with it every message queued for a partition that a metadata
# answer stopped listing, a retry of one whose earlier attempt the leader appended included
DEFINITE_FAILURES = frozenset(
    {
        KafkaError.NOT_ENOUGH_REPLICAS,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError.MSG_SIZE_TOO_LARGE,
        KafkaError.INVALID_REQUIRED_ACKS,
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.INVALID_MSG,
        KafkaError.INVALID_RECORD,
    }
)


def send_completion(error: KafkaError | None) -> str:
    """The completion type of a send whose delivery report carried ``error``: ok, fail or info."""
    if error is None:
        return "ok"
    return "fail" if error.code() in DEFINITE_FAILURES else "info"


class History:
    """Events in the order they happen, each written as a JSON line at once (a run that dies
    leaves what it did), kept in memory for the checker and the report."""

    def __init__(self, out: IO[str]) -> None:
        self.out, self.events = out, []
        self.started = time.monotonic_ns()
        self._lock = threading.Lock()
        self._only: threading.Thread | None = None  # once sealed, the one thread that still records

    def now(self) -> int:
        return time.monotonic_ns() - self.started

    def seal(self) -> None:
        """From now on only this thread records: a client given up on (``Workload.join``) no longer
        changes the history the final read and the checker are reading."""
        self._only = threading.current_thread()

    def record(self, process: int | str, type_: str, f: str, **fields) -> dict:
        with self._lock:
            event = {"index": len(self.events), "time": self.now(), "process": process, "type": type_, "f": f, **fields}
            if self._only is not None and threading.current_thread() is not self._only:
                return event  # its operation stays indeterminate: an invoke without completion
            self.events.append(event)
            self.out.write(json.dumps(event, separators=(",", ":")) + "\n")
        return event


class Workload:
    """Producers and consumers on threads against ``bootstrap``'s ``topic`` of ``partitions``."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        partitions: int,
        history: History,
        seed: int,
        producers: int = 4,
        consumers: int = 2,
        idempotence: bool = True,
        send_timeout_ms: int = 5000,
        client_log: logging.Logger | None = None,
        offsets_reader: bool = True,
    ) -> None:
        self.bootstrap, self.topic, self.partitions = bootstrap, topic, partitions
        self.history, self.seed = history, seed
        self.producers, self.consumers = producers, consumers
        self.idempotence, self.send_timeout_ms = idempotence, send_timeout_ms
        self.offsets_reader = offsets_reader
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []
        self.errors: list[str] = []  # a client thread that failed: the run cannot be judged
        # librdkafka's own log lines (connection refused while a broker is down, ...)
        self.client_log = client_log or logging.getLogger("isrcheck.soak.clients")

    def _config(self, **settings) -> dict:
        return {"bootstrap.servers": self.bootstrap, "logger": self.client_log, **settings}

    def key(self, partition: int) -> str:
        return f"{self.topic}-{partition}"

    def start(self) -> None:
        self.threads = [
            threading.Thread(target=self._guard, args=(self._produce, p), daemon=True, name=f"client {p}")
            for p in range(self.producers)
        ]
        self.threads += [
            threading.Thread(
                target=self._guard,
                args=(self._consume, self.producers + c),
                daemon=True,
                name=f"client {self.producers + c}",
            )
            for c in range(self.consumers)
        ]
        if self.offsets_reader:
            reader = OffsetsReader(self.bootstrap, self.topic, self.partitions, self.history, self.key)
            self.threads.append(
                threading.Thread(
                    target=self._guard,
                    args=(lambda _: reader.run(self.stop), reader.process),
                    daemon=True,
                    name=f"client {reader.process}",
                )
            )
        for t in self.threads:
            t.start()

    def join(self, timeout_s: float = 300.0) -> None:
        """Stop the clients and wait for each to finish its operation (a send waits for its delivery
        report, a slow machine may take long); one still running after ``timeout_s`` is a client
        error, said, and the history is sealed against it (``History.seal``)."""
        self.stop.set()
        deadline = time.monotonic() + timeout_s
        for t in self.threads:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        stuck = [t for t in self.threads if t.is_alive()]
        if stuck:
            self.history.seal()
            frames = sys._current_frames()
            self.errors.extend(
                f"{t.name}: still running {timeout_s:g} s after the workload stopped{_where(frames.get(t.ident))}"
                for t in stuck
            )

    def _guard(self, body, process: int) -> None:
        try:
            body(process)
        except Exception as exc:  # the client library failed outright: said at the end, never silent
            self.errors.append(f"client {process}: {type(exc).__name__}: {exc}")

    # -- producers ---------------------------------------------------------------------------------
    def _produce(self, process: int) -> None:
        rng = random.Random(self.seed * 1000 + process)
        producer = Producer(
            self._config(
                acks="all",
                **{
                    "enable.idempotence": self.idempotence,
                    "linger.ms": 0,
                    "message.timeout.ms": self.send_timeout_ms,
                    "request.timeout.ms": 3000,
                    "retry.backoff.ms": 50,
                },
            )
        )
        sent = 0
        while not self.stop.is_set():
            value, partition = process * 1_000_000_000 + sent, rng.randrange(self.partitions)
            sent += 1
            self.send(producer, process, partition, value)
        producer.flush(5)

    def send(self, producer: Producer, process: int, partition: int, value: int) -> None:
        """One send, waited for: invoke, then ok with its offset, fail or info."""
        key = self.key(partition)
        self.history.record(process, "invoke", "send", partition=key, value=value)
        outcome: list = []
        try:
            producer.produce(
                self.topic,
                value=str(value).encode(),
                partition=partition,
                on_delivery=lambda err, msg: outcome.append((err, msg)),
            )
        except (BufferError, KafkaException) as exc:
            self.history.record(process, "fail", "send", partition=key, value=value, error=str(exc))
            return
        deadline = time.monotonic() + self.send_timeout_ms / 1000 + 5
        while not outcome and time.monotonic() < deadline:
            producer.poll(0.05)
        if not outcome:
            self.history.record(process, "info", "send", partition=key, value=value, error="no delivery report")
            return
        err, msg = outcome[0]
        if err is None:
            self.history.record(process, "ok", "send", partition=key, value=value, offset=msg.offset())
        else:
            self.history.record(process, send_completion(err), "send", partition=key, value=value, error=err.name())

    # -- consumers ---------------------------------------------------------------------------------
    def new_consumer(self, process: int | str) -> Consumer:
        """Assigned every partition from the beginning; an offset out of range (the log was
        truncated under it) is an error it reports, then an assign from the beginning again."""
        consumer = Consumer(
            self._config(
                **{
                    "group.id": f"isrcheck-soak-{process}",
                    "enable.auto.commit": False,
                    "auto.offset.reset": "error",
                    "fetch.wait.max.ms": 100,
                }
            )
        )
        self.assign(consumer, process)
        return consumer

    def assign(self, consumer: Consumer, process: int | str) -> None:
        keys = [self.key(p) for p in range(self.partitions)]
        self.history.record(process, "invoke", "assign", partitions=keys)
        consumer.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in range(self.partitions)])
        self.history.record(process, "ok", "assign", partitions=keys)

    def _consume(self, process: int) -> None:
        consumer = self.new_consumer(process)
        try:
            while not self.stop.is_set():
                self.poll(consumer, process)
        finally:
            consumer.close()

    def poll(self, consumer: Consumer, process: int | str, final: bool = False) -> dict[str, list]:
        """One poll: invoke, then ok with the records by partition, which it returns."""
        keys = [self.key(p) for p in range(self.partitions)]
        extra = {"final": True} if final else {}
        self.history.record(process, "invoke", "poll", partitions=keys, **extra)
        try:
            messages = consumer.consume(num_messages=500, timeout=0.2)
        except KafkaException as exc:
            self.history.record(process, "info", "poll", partitions=keys, error=str(exc), **extra)
            return {}
        records: dict[str, list] = {}
        reset = False
        for m in messages:
            if m.error() is not None:
                reset = reset or m.error().code() == KafkaError._AUTO_OFFSET_RESET
                continue
            records.setdefault(self.key(m.partition()), []).append([m.offset(), value_of(m.value())])
        self.history.record(process, "ok", "poll", partitions=keys, records=records, **extra)
        if reset:
            self.assign(consumer, process)
        return records

    # -- the final read ------------------------------------------------------------------------------
    def final_read(self, stall_s: float = 60.0) -> tuple[bool, str]:
        """A fresh consumer reads every partition to its end: past the highest offset any client saw
        there, or, where the log no longer reaches it (a loss), to its high watermark. (True, how
        far) once it has; (False, why) if the cluster served nothing new for ``stall_s``: no
        partition read further and no high watermark higher. Progress, not a deadline, bounds it: a
        slow cluster (a loaded machine) may take long, and only one that stops serving fails it."""
        wanted = self._highest_offsets()
        process = "final"
        consumer = self.new_consumer(process)
        reached: dict[str, int] = {}
        highs: dict[str, int] = {}
        errors: list[str] = []

        def done() -> bool:
            for p in range(self.partitions):
                key = self.key(p)
                try:
                    _low, high = consumer.get_watermark_offsets(TopicPartition(self.topic, p), timeout=5)
                except KafkaException as exc:
                    errors[:] = [f"{key}'s high watermark: {exc}"]
                    return False
                if high > highs.get(key, -1):
                    highs[key] = high
                    progress[0] = time.monotonic()
                if reached.get(key, -1) < min(wanted.get(key, -1), high - 1):
                    return False
            return True

        progress = [time.monotonic()]
        try:
            while time.monotonic() - progress[0] < stall_s:
                records = self.poll(consumer, process, final=True)
                for key, recs in records.items():
                    top = max(o for o, _ in recs)
                    if top > reached.get(key, -1):
                        reached[key] = top
                        progress[0] = time.monotonic()
                if not records and done():
                    return True, _final_reach(self.key, self.partitions, reached, wanted, highs)
            return False, (
                f"the cluster served nothing new for {stall_s:.0f} s: "
                f"{_final_reach(self.key, self.partitions, reached, wanted, highs)}"
                + (f"; last error: {errors[0]}" if errors else "")
            )
        finally:
            consumer.close()

    def _highest_offsets(self) -> dict[str, int]:
        highest: dict[str, int] = {}
        for e in self.history.events:
            if e["type"] != "ok":
                continue
            if e["f"] == "send":
                highest[e["partition"]] = max(highest.get(e["partition"], -1), e["offset"])
            elif e["f"] == "poll":
                for key, recs in e["records"].items():
                    highest[key] = max(highest.get(key, -1), max(o for o, _ in recs))
        return highest


def _final_reach(key, partitions: int, reached: dict, wanted: dict, highs: dict) -> str:
    """Per partition: the offset the final read reached, the highest any client saw, the HW."""
    return ", ".join(
        f"{key(p)} read to {reached.get(key(p), -1)} of {wanted.get(key(p), -1)} seen (HW {highs.get(key(p), '?')})"
        for p in range(partitions)
    )


def _where(frame) -> str:
    """Where a stuck client thread is: its innermost frames, for the report."""
    if frame is None:
        return ""
    stack = traceback.extract_stack(frame)[-3:]
    return ", in " + " < ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(stack))
