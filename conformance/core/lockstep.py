"""The lockstep runner: one schedule, the reference model and the implementation, step by step.

After every step the runner compares refusals, outputs and abstract states of the two sides and
checks every state invariant of ``isrcheck.specs``; after the last step, the history properties
over what clients were told. The first disagreement is a ``divergence``, the first property that
fails on both sides within its fault budget a ``violation``. A property that fails once the run is
past its budget (the fault ledger, ``isrcheck.model.budget``) does not end the run: the verdict
lists it in ``beyond_budget`` with the step and the reason. A step refused by both sides is skipped (a no-op on both).
When several properties fail at one step, the violation names the one the schedule expects
(``prefer``) if it is among them, else the first in ``isrcheck.specs`` order.

Properties are evaluated on the model state; they are functions of the abstract state, and the
impl's abstract state equals the model's whenever the run gets that far, so both sides are
checked at once (a difference in any field the properties read is already a divergence).
"""

from __future__ import annotations

import hashlib
import operator
import time
from itertools import product
from typing import TYPE_CHECKING, Iterable

from isrcheck.conformance.core.diff import common_prefix, diff
from isrcheck.conformance.core.render import render_state, step_text
from isrcheck.conformance.core.run import Frame, Run
from isrcheck.conformance.core.schedule import Schedule, ScheduleConfig
from isrcheck.conformance.core.sut import ImplFailure, SutFailure, SystemUnderTest
from isrcheck.conformance.core.verdict import DIVERGENCE, INVALID, PASS, SUT_FAILURE, VIOLATION, Verdict
from isrcheck.conformance.core.wire import wire_view
from isrcheck.model import (
    InvalidStep,
    ModelConfig,
    Replica,
    State,
    Step,
    StepRefused,
    apply,
    enabled,
    initial_state,
)
from isrcheck.model.alphabet import (
    CONSUME,
    CORRUPT,
    CORRUPT_LIVE,
    CRASH,
    FAIL_DISK,
    HANDLE_FETCH_RESPONSE,
    REGISTER,
    RESTART,
)
from isrcheck.model.budget import EMPTY_LEDGER, exceeded, leaving
from isrcheck.model.config import ConfigError
from isrcheck.model.history import COUNTERS, EMPTY_HISTORY, PINNED_COUNTERS
from isrcheck.model.reads import changed_parts, reads_mask
from isrcheck.specs import PROPERTIES

if TYPE_CHECKING:
    from isrcheck.conformance.core.sut_spec import SutSpec

INVARIANTS = tuple(p for p in PROPERTIES if p.kind == "invariant")
HISTORY = tuple(p for p in PROPERTIES if p.kind == "history")


class Lockstep:
    """An incremental run: feed steps one at a time (generators choose the next one from
    ``enabled_steps``); ``outcome`` is set once the run has failed; ``verdict()`` ends it.

    The implementation is ``sut``: None for the in-process simulation, a ``sut_spec.SutSpec`` for
    an external program (its one process in this Python process), or a ``SystemUnderTest``; it is
    reset when the first step runs. The ghost history of what its clients were told is kept here,
    from its outputs, so any system under test is judged by the same bookkeeping as the model.
    ``prefer`` names the property a violation reports when it fails at the same step as others."""

    def __init__(
        self,
        protocol: str,
        config: ScheduleConfig,
        impl: bool = True,
        properties: Iterable[str] | None = None,
        sut: SutSpec | SystemUnderTest | None = None,
        prefer: str | None = None,
    ) -> None:
        self.protocol = protocol
        self.prefer = prefer
        self.invariants, self.history = INVARIANTS, HISTORY
        if properties is not None:  # check only these (e.g. to replay one counterexample of the explorer)
            wanted = set(properties)
            unknown = sorted(wanted - {p.id for p in PROPERTIES})
            if unknown:
                raise ValueError(f"unknown property {', '.join(unknown)}")
            self.invariants = tuple(p for p in INVARIANTS if p.id in wanted)
            self.history = tuple(p for p in HISTORY if p.id in wanted)
        # an invariant whose reads a step left alone is not checked again: it passed there (else
        # the run ended), or failed outside its budget, noted once (the ledger only grows)
        self._reads = tuple((p, reads_mask(p)) for p in self.invariants)
        self._checked = False  # the initial state is not checked; the first state after it is, whole
        self.cfg = ModelConfig.of(protocol, config)
        self.state = initial_state(self.cfg)
        self.config = config
        self.ledger = EMPTY_LEDGER  # what the run did that the properties' fault budgets read
        self.beyond: dict[str, tuple[str, int, str]] = {}  # property id -> its failure outside its budget
        self.impl: SystemUnderTest | None = None
        if impl:
            from isrcheck.conformance.core.sut_spec import (
                open_sut,
            )  # the systems under test load impl: a model-only run never does

            self.impl = open_sut(sut)
            self._agreed = _Agreed()
            self._impl_history = EMPTY_HISTORY
            self._impl_ready = False
        self.index = 0  # steps taken (including those refused by both)
        self.outcome: Verdict | None = None
        self.last_outputs: list[dict] = []  # what clients were told at the last step the model took (else empty)
        # at a divergence, the implementation's side of it (its outputs, or its abstract state)
        self.impl_outputs: list[dict] | None = None
        self.impl_state: State | None = None
        self.refused: list[tuple[int, Step, str]] = []  # (index, step, the model's reason), refused by both
        self.model_seconds = 0.0
        self.impl_seconds = 0.0
        self._hash = hashlib.blake2b(_seed_text(self.state).encode(), digest_size=16)
        self._text = _StateText()
        self._coverage: set[str] = set()
        self._shapes: dict = {}  # broker -> (replica, ISR member, its part of the shape); "flight" -> (queues, part)
        self._bad_batches: set[int] = set()  # down brokers whose recovery must reject a batch by its CRC
        self._previous = "init"

    @classmethod
    def run(
        cls,
        schedule: Schedule,
        impl: bool = True,
        properties: Iterable[str] | None = None,
        sut: SutSpec | SystemUnderTest | None = None,
        record: bool = False,
    ) -> Run:
        """Replay ``schedule`` in lockstep on ``sut`` (or on the model alone with ``impl=False``),
        checking every property or only those named in ``properties``, up to its verdict; with
        ``record``, keep a frame per step. A schedule whose config or steps the model rejects is an
        invalid one (a verdict, not an exception). A violation names the property the schedule
        expects on its protocol when that one fails at the same step as others."""
        try:
            run = cls(
                schedule.protocol,
                schedule.config,
                impl=impl,
                properties=properties,
                sut=sut,
                prefer=expected_property(schedule),
            )
            steps = [Step.from_json(s) for s in schedule.steps]
        except (ConfigError, InvalidStep) as exc:
            return Run(schedule, invalid(str(exc)), frames=() if record else None)
        initial = run.state
        frames = [] if record else None
        for i, st in enumerate(steps):
            failed = run.step(st)
            if frames is not None:
                refused = run.refused[-1][2] if run.refused and run.refused[-1][0] == i else None
                frames.append(Frame(i, dict(schedule.steps[i]), refused, tuple(run.last_outputs), run.state))
            if failed is not None:
                break
        return Run(
            schedule,
            run.verdict(),
            tuple(run.refused),
            run.impl_outputs,
            run.impl_state,
            initial if record else None,
            None if frames is None else tuple(frames),
            run.model_seconds,
            run.impl_seconds,
        )

    # -- generators' view ------------------------------------------------------------------------
    def enabled_steps(self) -> list[Step]:
        """The model's enabled steps, in its deterministic order."""
        return enabled(self.cfg, self.state)

    # -- one step --------------------------------------------------------------------------------
    def step(self, step) -> Verdict | None:
        """Run one step on both sides; a Verdict when the run fails at this step, else None."""
        if self.outcome is not None:
            raise RuntimeError("the run already ended with " + self.outcome.summary())
        i = self.index
        self.index += 1
        self.last_outputs = []
        st = step if type(step) is Step else Step.from_json(step)
        if taken_in_restart(self.cfg, self.state, st):
            self._hash.update(f"{i}:{st!r}:in restart\n".encode())
            return None
        t0 = time.perf_counter()
        try:
            new_state, outputs = apply(self.cfg, self.state, st)
            model_refusal = None
        except StepRefused as exc:
            new_state, outputs, model_refusal = self.state, [], exc.reason
        t1 = time.perf_counter()
        self.model_seconds += t1 - t0
        impl_refusal, impl_outputs = model_refusal, outputs  # a model-only run agrees with itself
        if self.impl is not None:
            try:
                if not self._impl_ready:
                    self.impl.reset(self.protocol, self.config)
                    self._impl_ready = True
                impl_refusal, impl_outputs = self.impl.step(st)
            except SutFailure as exc:  # no answer to compare: the system under test failed
                return self._fail(SUT_FAILURE, None, i, f"step {i} {_show_step(st)}: {self.impl.name} failed: {exc}")
            except Exception as exc:  # ImplFailure: the implementation itself failed
                return self._fail(DIVERGENCE, None, i, f"step {i} {_show_step(st)}: the implementation raised {exc}")
            self.impl_seconds += time.perf_counter() - t1
        name = st.name
        if (model_refusal is None) != (impl_refusal is None):
            return self._fail(
                DIVERGENCE,
                None,
                i,
                (
                    f"step {i} {_show_step(st)}: refused by the "
                    + (
                        f"model ({model_refusal}) but taken by the implementation"
                        if model_refusal is not None
                        else f"implementation ({impl_refusal}) but taken by the model"
                    )
                ),
            )
        if model_refusal is not None:
            self._hash.update(f"{i}:{st!r}:refused\n".encode())
            self.refused.append((i, st, model_refusal))
            return None
        before, self.state = self.state, new_state
        self.last_outputs = outputs
        if impl_outputs != outputs:
            self.impl_outputs = impl_outputs
            return self._fail(
                DIVERGENCE, None, i, f"step {i} {_show_step(st)}: outputs differ\n" + diff(outputs, impl_outputs)
            )
        if self.impl is not None:
            t2 = time.perf_counter()
            self._impl_history = self._impl_history.after(st, impl_outputs, before)
            try:
                impl_state = State(*self.impl.system_state(), *self._impl_history)
            except SutFailure as exc:
                return self._fail(SUT_FAILURE, None, i, f"step {i} {_show_step(st)}: {self.impl.name} failed: {exc}")
            except ImplFailure as exc:
                return self._fail(
                    DIVERGENCE,
                    None,
                    i,
                    f"step {i} {_show_step(st)}: the implementation's state could not be read: {exc}",
                )
            self.impl_seconds += time.perf_counter() - t2
            expected = wire_view(new_state, self.protocol)
            impl_state = self._agreed.share(expected, impl_state)
            if impl_state != expected:
                self.impl_state = impl_state
                return self._fail(
                    DIVERGENCE,
                    None,
                    i,
                    f"step {i} {_show_step(st)}: abstract states differ\n" + diff(expected, impl_state),
                )
        self._record(i, st, name, outputs, before)
        ledger = self.ledger.after(before, st, new_state, self.cfg.rules.known_losses)
        if ledger is not self.ledger:
            verdict = self._last_within(ledger, i, before)
            if verdict is not None:
                return verdict
        if self._checked:  # what a property reads the step left alone: its answer is the last one
            changed = changed_parts(before, new_state)
            failed = [p for p, reads in self._reads if reads & changed and not p.check(new_state)]
        else:
            failed = [p for p in self.invariants if not p.check(new_state)]
            self._checked = True
        if failed:
            return self._judge(failed, i, st, new_state)
        return None

    def _last_within(self, ledger, i: int, before) -> Verdict | None:
        """Take the new ``ledger``; but first, the history properties (otherwise checked at the
        end) whose budget step ``i`` ends are checked in ``before``, the last state within it, so a
        run that leaves a budget still had it checked up to there."""
        failed = [p for p in leaving(self.history, self.cfg, self.ledger, ledger) if not p.check(before)]
        if failed:
            prop = self._preferred(failed, before)
            return self._fail(
                VIOLATION,
                prop.id,
                max(i - 1, 0),
                f"{prop.id} fails after step {i - 1}, the last within its fault budget: "
                f"{prop.statement}\n{render_state(before)}",
                _others(failed, prop),
            )
        self.ledger = ledger
        return None

    def _judge(self, failed: list, i: int, st: Step | None, state) -> Verdict | None:
        """The violation among the ``failed`` properties (the preferred one, else the first) that
        fail within their budget; the others are noted as failing outside it."""
        within = []
        for prop in failed:
            why = exceeded(prop, self.ledger, self.cfg)
            if why is None:
                within.append(prop)
            elif prop.id not in self.beyond:
                self.beyond[prop.id] = (prop.id, i, why)
                self._hash.update(f"{i}:beyond:{prop.id}\n".encode())
        if not within:
            return None
        prop = self._preferred(within, state)
        return self._fail(VIOLATION, prop.id, i, _violation_text(prop, i, st, state), _others(within, prop))

    def _preferred(self, within: list, state):
        """The preferred property if it fails in ``state`` within its budget too (a history
        property fails as soon as its state does), else the first of ``within``."""
        if self.prefer is None or within[0].id == self.prefer:
            return within[0]
        return next(
            (
                p
                for p in within + [q for q in self.history if q not in within]
                if p.id == self.prefer and not p.check(state) and exceeded(p, self.ledger, self.cfg) is None
            ),
            within[0],
        )

    def _record(self, i: int, st: Step, name: str, outputs: list[dict], before) -> None:
        h = self._hash
        h.update(f"{i}:{st!r}:{outputs!r}:".encode())
        h.update(self._text.delta(before, self.state))
        cov = self._coverage
        cov.add(f"{self._previous}>{name}")
        for out in outputs:
            cov.add(f"{out['type']}:{out['error']}")
        cov.add(_shape(self.state, self._shapes))
        cov.update(divergence_rungs(self.state))
        if name in _DISK_STEPS:
            cov.update(disk_paths(st, before, self._bad_batches, outputs))
        self._previous = name

    def _fail(self, kind: str, prop: str | None, i: int, text: str, also: tuple[str, ...] = ()) -> Verdict:
        self._hash.update(f"{i}:{kind}:{prop}\n".encode())
        self.outcome = Verdict(
            kind,
            prop,
            i,
            text,
            self._hash.hexdigest(),
            tuple(sorted(self._coverage)),
            i + 1,
            tuple(self.beyond.values()),
            self.outside_budget(),
            also,
        )
        return self.outcome

    def outside_budget(self) -> tuple[str, ...]:
        """The checked properties whose fault budget the run has left (the ledger only grows, so
        each was within its budget up to some step and outside it from there on)."""
        return tuple(p.id for p in self.invariants + self.history if exceeded(p, self.ledger, self.cfg) is not None)

    # -- the end -----------------------------------------------------------------------------------
    def verdict(self) -> Verdict:
        """The run's verdict: its failure, or the history properties over what clients saw."""
        if self.outcome is not None:
            return self.outcome
        last = self.index - 1
        failed = [p for p in self.history if not p.check(self.state)]
        if failed:
            verdict = self._judge(failed, max(last, 0), None, self.state)
            if verdict is not None:
                return verdict
        return Verdict(
            PASS,
            None,
            None,
            None,
            self._hash.hexdigest(),
            tuple(sorted(self._coverage)),
            self.index,
            tuple(self.beyond.values()),
            self.outside_budget(),
        )


# the ghost counters of fault classes added after the first trace hashes (the disk faults' and any
# later one), left out of the trace hash's first state (zero there)
_UNHASHED = frozenset(COUNTERS).difference(PINNED_COUNTERS)


def _seed_text(state: State) -> str:
    """The initial state as the trace hash starts from: written as its ``repr`` writes it, field
    by field, but without the counters of later fault classes, so every run hashes as it did
    before those faults existed."""
    return (
        "State("
        + ", ".join(f"{name}={value!r}" for name, value in zip(State._fields, state) if name not in _UNHASHED)
        + ")"
    )


_DISK_STEPS = frozenset((CRASH, CORRUPT, FAIL_DISK, RESTART, CORRUPT_LIVE, CONSUME, HANDLE_FETCH_RESPONSE))


def disk_paths(st: Step, before, bad: set[int], outputs: list = ()) -> list[str]:
    """Coverage of the disk faults (docs/steps.md, "Disk faults") and the recovery paths they
    force: ``disk:<fault>`` for the fault, ``disk:crc`` for a restart whose log recovery must
    reject a batch by its CRC (a torn tail of garbage, a corruption at rest, or under a live broker
    that did not shut down cleanly), ``disk:crc-read`` for a read that meets a damaged batch (a
    follower's CRC check refuses a fetch response, a consumer's fetch fails), ``disk:offline``
    for a log directory taken offline, ``disk:offline-leader`` when it was the leader's. ``bad``
    holds the down brokers with such a batch, kept across steps."""
    r = st.replica
    name = st.name
    if name == CONSUME:
        return ["disk:crc-read"] if any(o["error"] == "CORRUPT_MESSAGE" for o in outputs) else []
    if name == HANDLE_FETCH_RESPONSE:
        rep, resp = before.replicas[r], before.fetch_responses[r][0]
        current = resp.leader == rep.leader and resp.leader_epoch == rep.leader_epoch
        return ["disk:crc-read"] if current and resp.bad_batch >= 0 else []
    if name == CORRUPT_LIVE:
        return ["disk:corrupt-live"]
    if name in (CRASH, FAIL_DISK) and (name == FAIL_DISK or st.arg != "clean") and before.replicas[r].bad_batch >= 0:
        bad.add(r)  # no clean shutdown: recovery will meet the damaged batch
    if name == CRASH:
        if st.tail == "cut":
            return []
        bad.add(r)
        return [f"disk:tail:{st.tail}"]
    if name == CORRUPT:
        bad.add(r)
        return ["disk:corrupt"]
    if st.name == RESTART:
        if r not in bad:
            return []
        bad.discard(r)
        return ["disk:crc"]
    out = [f"disk:{st.arg}", "disk:offline"]
    return out + ["disk:offline-leader"] * (before.controller.leader == r)


# a Replica as its repr writes it, the log (its second field) given as text: its last fields,
def taken_in_restart(cfg, state, st: Step) -> bool:
    """Whether ``st`` is a registration its broker's restart already made: before kip-903 a restart
    registers in its own step (docs/steps.md, `register`), so a schedule written for every variant
    names that registration, taken as done on both sides: neither taken nor refused."""
    return st.name == REGISTER and not cfg.rules.start_before_registration and state.replicas[st.replica].alive


# bad_batch, unregistered, held_reads, stale_fetcher, last_fetch_leo, last_fetch_time and
# cached_broker_epochs, only away from their defaults, as its repr shows them
_REPLICA_OPTIONAL = (
    ("bad_batch", -1),
    ("unregistered", False),
    ("held_reads", ()),
    ("stale_fetcher", ()),
    ("last_fetch_leo", ()),
    ("last_fetch_time", ()),
    ("cached_broker_epochs", ()),
)
assert Replica._fields[-len(_REPLICA_OPTIONAL) :] == tuple(f for f, _ in _REPLICA_OPTIONAL)


def _replica_text(shown: tuple) -> str:
    """The format of a Replica's repr showing the optional fields flagged in ``shown``."""
    fields = Replica._fields[: -len(_REPLICA_OPTIONAL)] + tuple(f for (f, _), on in zip(_REPLICA_OPTIONAL, shown) if on)
    return "Replica(" + ", ".join(f"{f}=%s" if f == "log" else f"{f}=%r" for f in fields) + ")"


_REPLICA_TEXTS = {shown: _replica_text(shown) for shown in product((False, True), repeat=len(_REPLICA_OPTIONAL))}


class _StateText:
    """What changed from one state to the next, as stable text for the trace hash: the initial
    state and every delta determine the whole sequence of states. Parts that are the same object
    as before are skipped (the model shares what a step leaves alone); the rest is written by
    value, as ``repr`` writes it (the same in every process and hash seed). Logs and the
    acked/consumed histories grow with the run while a step changes a few items of them, so the
    text of each item is kept per place and only the items after the part shared with the last
    tuple there are written anew."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[tuple, list[str]]] = {}  # place -> (tuple, repr of each item)

    def delta(self, old, new) -> bytes:
        out = []
        for name, a, b in zip(new._fields, old, new):
            if a is b:
                continue
            if type(b) is tuple and type(a) is tuple and len(a) == len(b):
                out.extend(
                    f"{name}[{k}]={self._text(f'{name}[{k}]', y)};" for k, (x, y) in enumerate(zip(a, b)) if x is not y
                )
            else:
                out.append(f"{name}={self._text(name, b)};")
        return "".join(out).encode()

    def _text(self, place: str, value) -> str:
        if type(value) is tuple:
            return self._tuple(place, value)
        if type(value) is Replica:  # repr of the named tuple, its log through the kept text
            k = len(_REPLICA_OPTIONAL)
            shown = tuple(v != d for v, (_, d) in zip(value[-k:], _REPLICA_OPTIONAL))
            extra = tuple(v for v, on in zip(value[-k:], shown) if on)
            return _REPLICA_TEXTS[shown] % (value[0], self._tuple(place, value[1]), *value[2:-k], *extra)
        return repr(value)

    def _tuple(self, place: str, items: tuple) -> str:
        """``repr(items)``, reusing the text of the prefix shared with the last tuple at ``place``."""
        seen, parts = self._kept.get(place, ((), []))
        if items is not seen:
            same = common_prefix(seen, items)
            parts = parts[:same] + [repr(x) for x in items[same:]]
            self._kept[place] = (items, parts)
        return f"({parts[0]},)" if len(parts) == 1 else f"({', '.join(parts)})"


class _Agreed:
    """Both sides' logs and acked/consumed histories grow with the run, so comparing the abstract
    states item by item every step would cost the length of the run. Per place the last pair of
    tuples found equal is kept; when both sides extended that pair, only the new items are
    compared (each prefix is compared with the kept tuple it shares its objects with), and the
    implementation's equal tuple is replaced by the model's, so the state comparison meets the
    same object. Tuples that differ are left for that comparison to report. A replica found equal
    is replaced by the model's, and kept as such while neither side rebuilt it (the abstraction
    hands out the same object for a broker a step left alone), so most steps compare replicas by
    identity."""

    _HISTORY = tuple((name, State._fields.index(name)) for name in ("acked", "consumed"))

    def __init__(self) -> None:
        self._pairs: dict[object, tuple[tuple, tuple]] = {}  # place -> (model's, implementation's)
        self._replicas: dict[int, tuple] = {}  # broker -> (model's replica, implementation's) found equal

    def share(self, expected, actual):
        replicas = tuple(self._replica(k, m, a) for k, (m, a) in enumerate(zip(expected.replicas, actual.replicas)))
        if all(map(operator.is_, replicas, expected.replicas)):
            replicas = expected.replicas
        fields = list(actual)
        fields[0] = replicas
        for name, at in self._HISTORY:
            if self._equal(name, expected[at], actual[at]):
                fields[at] = expected[at]
        return type(actual)(*fields)

    def _replica(self, k: int, m, a):
        """Broker ``k``'s replica as the implementation has it (``a``), the model's ``m`` if equal."""
        kept = self._replicas.get(k)
        if kept is not None and kept[0] is m and kept[1] is a:
            return m
        if not self._equal(k, m.log, a.log):
            return a
        if a[0] != m[0] or a[2:] != m[2:]:  # equal logs (``log`` is a Replica's second field), other fields not
            return a._replace(log=m.log)
        self._replicas[k] = (m, a)
        return m

    def _equal(self, place, m: tuple, a: tuple) -> bool:
        pm, pa = self._pairs.get(place, ((), ()))
        if m is not pm or a is not pa:
            n = len(pm)
            if len(m) != len(a):
                return False
            if len(m) >= n and m[:n] == pm and a[:n] == pa:
                if m[n:] != a[n:]:
                    return False
            elif m != a:
                return False
            self._pairs[place] = (m, a)
        return True


# the State fields of the five message kinds, in flight per replica
_QUEUES = slice(State._fields.index("fetch_requests"), State._fields.index("now"))


def _shape(state, kept: dict | None = None) -> str:
    """A coarse abstract-state fingerprint for coverage, e.g. ``s:L0i.F1i.D0-|1|10000``: per broker
    its role (Leader, Follower, No leader known, Down), how far its HW lags its LEO (capped at 3),
    controller-ISR membership, truncating fetcher (t), pending ISR change (p); whether the
    controller has a leader; messages in flight per kind (capped at 2). ``kept``, if given, keeps
    each broker's part for its replica object (a step leaves most brokers alone)."""
    c = state.controller
    parts = []
    for i, r in enumerate(state.replicas):
        member = i in c.isr
        last = kept.get(i) if kept is not None else None
        if last is not None and last[0] is r and last[1] == member:
            parts.append(last[2])
            continue
        role = "D" if not r.alive else ("L" if r.leader == i else ("F" if r.leader >= 0 else "N"))
        part = (
            f"{role}{min(len(r.log) - r.hw, 3)}{'i' if member else '-'}"
            f"{'t' if r.truncating_epoch >= 0 else ''}{'p' if r.pending_isr is not None else ''}"
        )
        if kept is not None:
            kept[i] = (r, member, part)
        parts.append(part)
    queues = state[_QUEUES]
    last = kept.get("flight") if kept is not None else None
    if last is not None and all(map(operator.is_, last[0], queues)):
        flight = last[1]
    else:
        flight = "".join(str(min(sum(map(len, q)), 2)) for q in queues)
        if kept is not None:
            kept["flight"] = (queues, flight)
    return f"s:{'.'.join(parts)}|{int(c.leader >= 0)}|{flight}"


def _others(failed: list, prop) -> tuple[str, ...]:
    """The ids of the ``failed`` properties besides ``prop``, in specs' order."""
    return tuple(p.id for p in failed if p is not prop)


DIVERGENCE_RUNGS = ("d:stale", "d:diverged", "d:truncated", "d:returns", "d:committed")


def divergence_rungs(state) -> list[str]:
    """Coverage of how close a state is to the log divergence KIP-320's fetch fencing closed
    (before it, a leader serves a Fetch of any leader epoch: KIP-279's remaining gap). Rung by
    rung, for a live follower in the controller's ISR that fetches (not truncating) with a stale
    leader epoch (it missed a LeaderAndIsr): ``d:stale``; ``d:diverged``, the controller's leader
    holds another epoch than the follower at some offset both have; ``d:truncated``, so does the
    broker the follower still fetches from (it truncated and took the new leader's records);
    ``d:returns``, that broker leads again, so the follower's next Fetch is served;
    ``d:committed``, that leader's HW covers the offset (StrongIsr broken). Each rung is what
    guided fuzzing gives its parents energy for."""
    c = state.controller
    replicas = state.replicas
    top = 0
    leader = replicas[c.leader] if c.leader >= 0 else None
    for i, r in enumerate(replicas):
        lead = r.leader
        if (
            not r.alive
            or lead < 0
            or lead == i
            or r.truncating_epoch != -1
            or i not in c.isr
            or r.leader_epoch >= c.leader_epoch
        ):
            continue
        rung = 1
        at = _differs(r.log, leader.log) if leader is not None else None
        if at is not None:
            rung = 2
            if lead == c.leader:  # the broker it fetches from is the controller's leader
                rung = 4 + (leader.hw > at)
            elif _differs(r.log, replicas[lead].log) is not None:
                rung = 3
        top = max(top, rung)
    return list(DIVERGENCE_RUNGS[:top])


def _differs(log, other) -> int | None:
    """The first offset both logs hold with different epochs, or None."""
    return next((a.offset for a, b in zip(log, other) if a.epoch != b.epoch), None)


def _show_step(st: Step) -> str:
    return step_text(st.to_json())


def _violation_text(prop, i: int, st: Step | None, state) -> str:
    where = f"after step {i} {_show_step(st)}" if st is not None else "at the end of the schedule"
    return f"{prop.id} fails {where}: {prop.statement}\n{render_state(state)}"


def expected_property(schedule: Schedule) -> str | None:
    """The property the schedule expects violated on its protocol, if it names one."""
    expected = schedule.expected.get(schedule.protocol)
    return None if expected is None else expected.property


def invalid(message: str) -> Verdict:
    return Verdict(INVALID, None, None, message, hashlib.blake2b(message.encode(), digest_size=16).hexdigest())


def run_schedule(
    schedule: Schedule,
    impl: bool = True,
    properties: Iterable[str] | None = None,
    sut: SutSpec | SystemUnderTest | None = None,
) -> Verdict:
    """The verdict of ``Lockstep.run(schedule, ...)``, for callers that need nothing else."""
    return Lockstep.run(schedule, impl, properties, sut).verdict
