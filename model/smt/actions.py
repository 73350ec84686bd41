"""One encoded transition per step kind of ``model/actions.py``: its guard (when the model takes
the step) and its effect (the successor), each following the model's action of the same name.
Protocol differences are the ``rules`` calls (``model/smt/protocols.py``). A step the encoding
does not cover raises ``Unsupported`` naming it; nothing is skipped silently.
"""

from __future__ import annotations

from typing import Callable

import z3

from ..alphabet import CRASH, FENCE, MESSAGE_KINDS, STEPS, Step
from .protocols import Protocol
from .state import ERROR, KIND, ORPHANS, Bounds
from .terms import Next, count, zmin


class Unsupported(ValueError):
    """A step (or a field value of it) the encoding does not cover."""


def _rules(nx: Next) -> Protocol:
    return nx.rules


def _not(x):
    return z3.Not(x)


def maybe_increment_leader_hw(nx: Next, r: int) -> None:
    """Partition.maybeIncrementLeaderHW: HW = min LEO over the maximal ISR (only moves up), then
    DelayedProduce completion of the acks=all requests the HW passed (acknowledged with NONE
    while the ISR holds min.insync.replicas members); nothing while the HW is blocked (KIP-966).
    hw_waits_for_caught_up: the minimum also takes each follower outside the maximal ISR that is
    eligible (``_eligible``) and not lagging (shouldWaitForReplicaToJoinIsr, KAFKA-15021)."""

    def lead(x: Next) -> None:
        n, b = x.b.replicas, x.b
        new_hw = x.rep(r, "len")
        for f in range(n):
            if f != r:
                member = z3.Or(x.rep(r, f"isr{f}"), z3.And(x.rep(r, "pend"), x.rep(r, f"pisr{f}")))
                remote = x.rep(r, f"rleo{f}")
                if x.cfg.hw_waits_for_caught_up:  # a remote LEO = leader LEO is never below the minimum
                    member = z3.Or(member, z3.And(_eligible(x, r, f), _not(_lags(x, r, f))))
                new_hw = z3.If(z3.And(member, remote < new_hw), remote, new_hw)
        hw = z3.If(new_hw > x.rep(r, "hw"), new_hw, x.rep(r, "hw"))
        x.set_rep(r, hw=hw)
        enough = x.isr_count(r) >= x.cfg.min_insync_replicas
        done = {
            k: z3.And(x.rep(r, f"pp{k}"), x.rep(r, f"ppoff{k}") + x.rep(r, f"ppn{k}") <= hw)
            for k in range(1, b.records + 1)
        }
        for t in range(1, b.records + 1):
            for k in range(max(1, t - b.batch + 1), t + 1):
                acks = z3.And(done[k], enough, x.rep(r, f"ppn{k}") > t - k)
                x[f"acked{t}"] = z3.Or(x[f"acked{t}"], acks)
                x[f"ackoff{t}"] = z3.If(acks, x.rep(r, f"ppoff{k}") + (t - k), x[f"ackoff{t}"])
        for k in range(1, b.records + 1):
            _clear_pending(x, r, k, done[k])

    nx.branch(z3.And(nx.rep(r, "leader") == r, _not(_rules(nx).hw_blocked(nx, r))), lead)


def _eligible(nx: Next, r: int, f: int):
    """Partition.isReplicaIsrEligible of leader r's follower f (the model's ``isr_eligible``): its remote
    LEO known; with metadata_cache its leader's cache holds it unfenced at the broker epoch its Fetch
    carried, unless that was -1."""
    known = nx.rep(r, f"rleo{f}") >= 0
    if not _cache(nx):
        return known
    cached, stored = nx.rep(r, f"mc{f}"), nx.rep(r, f"rbe{f}")
    return z3.And(known, cached != -1, z3.Or(stored == -1, stored == cached))


def _cache(nx: Next) -> bool:
    """Whether the encoded model's brokers hold a metadata cache (metadata_cache)."""
    return nx.cfg.metadata_cache and nx.b.metadata_cache


def _alive_broker_epochs(nx: Next) -> dict:
    """Per broker j the controller's registration as a cache holds it (``mc<j>``): -1 fenced, awaiting
    unfence or in controlled shutdown, or registered and not yet caught up with its registration
    (unregistered with a broker epoch), else its epoch."""
    return {
        f"mc{j}": z3.If(
            z3.Or(nx.inactive(j), z3.And(nx.rep(j, "unreg"), nx.rep(j, "bepoch") >= 0)), -1, nx[f"c.bep{j}"]
        )
        for j in range(nx.b.replicas)
    }


def _replayed_registrations(nx: Next, r: int) -> None:
    """A restarted broker's cache: the controller's registrations (metadata_cache)."""
    if nx.b.metadata_cache:
        nx.set_rep(r, **_alive_broker_epochs(nx))


def _clear_pending(nx: Next, r: int, k: int, when=True) -> None:
    nx.set_rep(r, **{f"pp{k}": z3.If(when, False, nx.rep(r, f"pp{k}"))})
    for f in ("ppoff", "ppdl", "ppn"):
        nx.set_rep(r, **{f"{f}{k}": z3.If(when, 0, nx.rep(r, f"{f}{k}"))})


def _isr_fields(nx: Next, key: str) -> dict:
    return {f"isr{j}": nx[f"{key}{j}"] for j in range(nx.b.replicas)}


def _serving(nx: Next, r: int):
    """Broker r handles requests: up and registered (KRaft enables request processing then)."""
    return z3.And(nx.rep(r, "alive"), _not(nx.rep(r, "unreg")))


def _leader_guard(nx: Next, r: int):
    guard = z3.And(_serving(nx, r), nx.rep(r, "leader") == r, _not(nx.rep(r, "pend")))
    if nx.cfg.rules.committed_partition_state:  # the model's flag: one AlterPartition per partition
        guard = z3.And(guard, _not(_awaits_answer(nx, r)))
    return guard


def _awaits_answer(nx: Next, r: int):
    """Broker r's AlterPartitionManager holds an AlterPartition: one in flight and no orphan, or its answer."""
    q = "alter_partition"
    sent = [z3.And(slot < nx.queue_len(q, r), _not(nx.msg(q, r, slot, "orphan"))) for slot in range(nx.b.capacity(q))]
    return z3.Or(_has_message(nx, "alter_partition_responses", r), *sent)


def _propose_isr(nx: Next, r: int, proposed: list, epochs: list | None = None) -> None:
    """An AlterPartition for ``proposed`` naming each member's broker epoch as the leader knows it
    (KIP-903), or the resend of the pending one with the ``epochs`` it was proposed with."""
    if epochs is None:
        known = _rules(nx).proposal_epoch
        epochs = [
            z3.If(m, known(nx.rep(r, "bepoch") if j == r else nx.rep(r, f"rbe{j}")), -1) for j, m in enumerate(proposed)
        ]
    nx.push(
        "alter_partition",
        r,
        {
            "lepoch": nx.rep(r, "lepoch"),
            "pepoch": nx.rep(r, "pepoch"),
            **{f"isr{j}": m for j, m in enumerate(proposed)},
            **{f"ep{j}": e for j, e in enumerate(epochs)},
        },
    )
    nx.set_rep(
        r,
        pend=z3.BoolVal(True),
        **{f"pisr{j}": m for j, m in enumerate(proposed)},
        **{f"pep{j}": e for j, e in enumerate(epochs)},
    )


def _send_leader_and_isr(nx: Next, to) -> None:
    """The controller's partition state, to broker ``to`` if it is alive; marked ``reg`` to a broker
    that registered and does not serve yet (``next_state.addressed``)."""
    registered = z3.And(nx.rep(to, "unreg"), nx.rep(to, "bepoch") >= 0)
    state = {"leader": nx["c.leader"], "lepoch": nx["c.lepoch"], "pepoch": nx["c.pepoch"]}
    state.update(reg=z3.If(registered, 1, 0), **_isr_fields(nx, "c.isr"))
    nx.push("leader_and_isr", to, state, when=nx.rep(to, "alive"))


def _broadcast(nx: Next, skip: int = -1) -> None:
    """To every unfenced broker but ``skip``, in id order."""
    for b in range(nx.b.replicas):
        if b != skip:
            nx.branch(_not(nx[f"c.fenced{b}"]), lambda x, b=b: _send_leader_and_isr(x, b))


def _remove_broker(nx: Next, r: int, isr: list, unclean: tuple):
    """A partition change taking ``r`` out of leadership and the ISR (now ``isr``), the ELR by
    KIP-966's rule; the condition that anything changed."""
    n, rules = nx.b.replicas, _rules(nx)
    leads = nx["c.leader"] == r
    elr = rules.elr_after(nx, isr, unclean)
    changed = z3.simplify(
        z3.Or(
            leads,
            *(z3.Xor(isr[j], nx[f"c.isr{j}"]) for j in range(n)),
            *(z3.Xor(elr[j], nx[f"c.elr{j}"]) for j in range(n)),
        )
    )
    nx["c.lkl"] = z3.If(leads, rules.last_known_leader(r), nx["c.lkl"])
    nx["c.lepoch"] = z3.If(leads, nx["c.lepoch"] + 1, nx["c.lepoch"])
    nx["c.leader"] = z3.If(leads, -1, nx["c.leader"])
    nx["c.pepoch"] = z3.If(changed, nx["c.pepoch"] + 1, nx["c.pepoch"])
    for j in range(n):
        nx[f"c.isr{j}"], nx[f"c.elr{j}"] = isr[j], elr[j]
    return changed


def _register(nx: Next, r: int, unclean=False) -> None:
    """Broker registration: a new broker epoch (KIP-903); after an unclean shutdown (KIP-966) the
    controller first takes ``r`` out of ISR, ELR and leadership; then unfences it (with
    unfence_at_heartbeat: it awaits unfence) and sends it the partition state."""
    rules = _rules(nx)
    epoch = rules.next_broker_epoch(nx[f"c.bep{r}"])
    nx[f"c.bep{r}"] = epoch
    nx.set_rep(r, bepoch=epoch, unclean=z3.BoolVal(False))

    def uncleanly(x: Next) -> None:
        isr = [x[f"c.isr{j}"] if j != r else z3.BoolVal(False) for j in range(x.b.replicas)]
        x.branch(_remove_broker(x, r, isr, (r,)), lambda y: _broadcast(y, skip=r))

    nx.branch(unclean, uncleanly)
    _end_controlled_shutdown(nx, r)
    nx[f"c.fenced{r}"] = z3.BoolVal(False)
    if nx.b.unfence:
        nx[f"c.await{r}"] = z3.BoolVal(nx.cfg.unfence_at_heartbeat)
    _send_leader_and_isr(nx, r)  # to a started broker (KRaft): it serves once it applied this one


def _has_message(nx: Next, q: str, r: int, index: int = 0):
    return z3.BoolVal(False) if index >= nx.b.capacity(q) else nx.queue_len(q, r) > index


# -- client requests -----------------------------------------------------------------------------------


def guard_produce(nx: Next, st: Step):
    return _serving(nx, st.replica)


def effect_produce(nx: Next, st: Step) -> None:
    r, acks, n = st.replica, st.arg, st.records
    record = nx["produced"] + 1

    def append(x: Next) -> None:
        b = x.b
        offset = x.rep(r, "len")
        x.fits.append(offset + n <= b.log)
        for k in range(b.log):
            here = z3.And(k >= offset, k < offset + n)
            x.set_rep(
                r,
                **{
                    f"e{k}": z3.If(here, x.rep(r, "lepoch"), x.rep(r, f"e{k}")),
                    f"rec{k}": z3.If(here, record + (k - offset), x.rep(r, f"rec{k}")),
                    f"base{k}": z3.If(here, offset, x.rep(r, f"base{k}")),
                },
            )
        length = offset + n
        x.set_rep(r, len=length, durable=x.flush_policy(length, x.rep(r, "durable")))
        if acks == -1:
            x.fits.append(record + n - 1 <= b.records)
            for k in range(1, b.records + 1):
                here = record == k
                x.set_rep(
                    r,
                    **{
                        f"pp{k}": z3.Or(here, x.rep(r, f"pp{k}")),
                        f"ppoff{k}": z3.If(here, offset, x.rep(r, f"ppoff{k}")),
                        f"ppdl{k}": z3.If(here, x["now"] + x.cfg.request_timeout_ticks, x.rep(r, f"ppdl{k}")),
                        f"ppn{k}": z3.If(here, n, x.rep(r, f"ppn{k}")),
                    },
                )
        maybe_increment_leader_hw(x, r)

    accepted = nx.rep(r, "leader") == r
    if acks == -1:
        accepted = z3.And(accepted, nx.isr_count(r) >= nx.cfg.min_insync_replicas)
    nx.branch(accepted, append)
    nx["produced"] = nx["produced"] + n


def guard_consume(nx: Next, st: Step):
    return _serving(nx, st.replica)


def effect_consume(nx: Next, st: Step) -> None:
    r = st.replica
    served = nx.rep(r, "leader") == r
    refused = _rules(nx).consume_error(nx, r)
    if refused is not None:
        served = z3.And(served, _not(refused))
    bad = nx.rep(r, "bad")  # a damaged batch below the HW fails the consumer's CRC check
    served = z3.And(served, _not(z3.And(bad >= 0, bad < nx.rep(r, "hw"))))

    def read(x: Next) -> None:
        b, hw = x.b, x.rep(r, "hw")
        for o in range(b.log):
            rec = x.rep(r, f"rec{o}")
            x.fits.append(z3.Implies(o < hw, z3.And(rec >= 1, rec <= b.records)))
            for k in range(1, b.records + 1):
                x[f"cons{o}_{k}"] = z3.Or(x[f"cons{o}_{k}"], z3.And(o < hw, rec == k))
        x["regressed"] = z3.Or(x["regressed"], hw < x["maxhw"])
        x["maxhw"] = z3.If(hw > x["maxhw"], hw, x["maxhw"])

    nx.branch(served, read)


# -- replication: the follower's fetch round -------------------------------------------------------------


def _outstanding(nx: Next, r: int):
    """A fetch of r under its fetcher's tag, not an orphan of an earlier process."""
    leader, epoch = _fetcher_tag(nx, r)
    found = []
    for q in ("fetch_requests", "fetch_responses"):
        for slot in range(nx.b.capacity(q)):
            found.append(
                z3.And(
                    slot < nx.queue_len(q, r),
                    nx.msg(q, r, slot, "leader") == leader,
                    nx.msg(q, r, slot, "lepoch") == epoch,
                    _not(nx.msg(q, r, slot, "orphan")) if q == "fetch_requests" else True,
                )
            )
    if nx.b.held_reads:  # its read held by the tag's leader
        at1 = _held(nx, r, "at1")
        found.append(z3.And(at1 == leader + 1, _held(nx, r, "lepoch") == epoch, _not(_held(nx, r, "orphan"))))
    return z3.Or(found)


def _held(nx: Next, r: int, field: str):
    """Field ``field`` of the slot of the read of follower r's Fetch its leader holds."""
    return nx[f"held{r}.{field}"]


def _set_held(nx: Next, r: int, fields: dict, when=True) -> None:
    """Set the slot of follower r's held read to ``fields`` (the others 0/False) where ``when``."""
    p = f"held{r}."
    for key in [k for k in nx.s if k.startswith(p)]:
        value = fields.get(key[len(p) :])
        if value is None:
            value = z3.BoolVal(False) if z3.is_bool(nx.s[key]) else z3.IntVal(0)
        nx.s[key] = value if when is True else z3.If(when, value, nx.s[key])


def _split(nx: Next) -> bool:
    """Whether the encoded model splits a leader's fetch handling (split_fetch_handling)."""
    return nx.cfg.split_fetch_handling and nx.b.held_reads


def _previous(nx: Next) -> bool:
    """Whether the encoded model catches a follower up as of its previous Fetch (catch_up_at_previous_fetch)."""
    return nx.cfg.catch_up_at_previous_fetch and nx.b.prev_fetch


def _no_previous_fetch(nx: Next) -> dict:
    """Every follower's last Fetch state at its neutral values (-1, 0), where the encoding holds one."""
    if not nx.b.prev_fetch:
        return {}
    return {f"{f}{j}": z3.IntVal(v) for j in range(nx.b.replicas) for f, v in (("lfl", -1), ("lft", 0))}


def _stale(nx: Next) -> bool:
    """Whether the encoded model keeps a new follower's fetcher stale (split_become_follower)."""
    return nx.cfg.split_become_follower and nx.b.stale_fetcher


def _fetcher_tag(nx: Next, r: int) -> tuple:
    """The (leader, leader epoch) r's fetcher fetches under: its stale one's, else the partition's."""
    leader, epoch = nx.rep(r, "leader"), nx.rep(r, "lepoch")
    if not nx.b.stale_fetcher:
        return leader, epoch
    stale = nx.rep(r, "stale")
    return z3.If(stale, nx.rep(r, "sfl"), leader), z3.If(stale, nx.rep(r, "sfe"), epoch)


def guard_send_fetch(nx: Next, st: Step):
    r = st.replica
    leader = _fetcher_tag(nx, r)[0]  # a stale fetcher fetches from its old leader (maybeFetch)
    return z3.And(nx.rep(r, "alive"), leader != -1, leader != r, _not(_outstanding(nx, r)))


def effect_send_fetch(nx: Next, st: Step) -> None:
    r = st.replica
    (leader, epoch), n = _fetcher_tag(nx, r), nx.rep(r, "len")
    query = z3.BoolVal(False)
    if _rules(nx).uses_epoch_queries:
        query = z3.And(nx.rep(r, "trunc") >= 0, n > 0)
    nx.push(
        "fetch_requests",
        r,
        {
            "leader": leader,
            "lepoch": epoch,
            "off": z3.If(query, -1, n),
            "lfe": z3.If(query, -1, nx.latest_epoch(f"r{r}.")),
            "qe": z3.If(query, nx.rep(r, "trunc"), -1),
            "mb": z3.If(query, 0, st.max_batches),
            "be": z3.If(query, -1, _rules(nx).fetch_broker_epoch(nx, r)),
        },
        when=nx.of_replica(leader, "alive"),
    )


def guard_handle_fetch(nx: Next, st: Step):
    request = _request_guard(nx, st)
    if not _split(nx):
        return request
    r = st.replica  # a held read completes, once its batches are read (hw_only: read_fetch next)
    return z3.If(_held(nx, r, "at1") > 0, _not(_held(nx, r, "oo")), request)


def _request_guard(nx: Next, st: Step):
    """Follower ``st.replica``'s oldest fetch request may be handled now."""
    if nx.b.capacity("fetch_requests") == 0:
        return z3.BoolVal(False)
    to = nx.msg("fetch_requests", st.replica, 0, "leader")  # a destination not registered yet: it waits
    waits = z3.Or([z3.And(to == d, nx.rep(d, "unreg")) for d in range(nx.b.replicas)])
    return z3.And(_has_message(nx, "fetch_requests", st.replica), _not(waits))


def _read(nx: Next, d: int, req: dict) -> dict:
    """Step 6's read on broker d: the HW before this fetch's increment, its time, the LEO and the
    batches (``_batches``)."""
    return {"hw": nx.rep(d, "hw"), "ft": nx["now"], "lr": nx.rep(d, "len"), **_batches(nx, d, req["off"], req["mb"])}


def _batches(nx: Next, d: int, off, max_batches) -> dict:
    """The whole batches on broker d from the one holding ``off`` (log[start:stop]), at most
    ``max_batches``, a damaged batch among them sent unchecked."""
    leo = nx.rep(d, "len")
    start = z3.If(off < leo, nx.log_field(f"r{d}.", "base", off), leo)  # the whole batch
    stop = _fetch_end(nx, d, start, max_batches)
    rn, bad = stop - start, nx.rep(d, "bad")
    fields = {"rn": rn, "rstart": z3.If(rn > 0, start, 0), "bad1": z3.If(z3.And(start <= bad, bad < stop), bad + 1, 0)}
    for k in range(nx.b.log):
        for f in ("e", "rec", "base"):
            fields[f"{f}{k}"] = z3.If(k < rn, nx.log_field(f"r{d}.", f, start + k), 0)
    return fields


def _update_follower_fetch_state(nx: Next, d: int, r: int, read: dict, detached=None) -> None:
    """Partition.updateFollowerFetchState on broker d from a read of follower r's Fetch: remote LEO,
    broker epoch and Replica.updateFetchStateOrThrow's times, unless ``detached``; then
    maybeIncrementLeaderHW. Caught up at the read's time if its fetch offset reached the LEO read;
    with catch_up_at_previous_fetch, else as of the previous Fetch if it reached the LEO that one
    read; the later time is kept."""

    def update(x: Next) -> None:
        lcu, off, leo, t = x.rep(d, f"lcu{r}"), read["off"], read["lr"], read["ft"]
        caught = lcu
        if _previous(x):
            lfl, lft = x.rep(d, f"lfl{r}"), x.rep(d, f"lft{r}")
            caught = z3.If(z3.And(off >= lfl, lft > lcu), lft, lcu)
            x.set_rep(d, **{f"lfl{r}": z3.If(leo > lfl, leo, lfl), f"lft{r}": t})
        caught = z3.If(off >= leo, z3.If(t > lcu, t, lcu), caught)
        x.set_rep(d, **{f"rleo{r}": off, f"rbe{r}": read["be"], f"lcu{r}": caught})

    nx.branch(True if detached is None else _not(detached), update)
    maybe_increment_leader_hw(nx, d)


def _respond_read(nx: Next, r: int, leader, read: dict, orphan) -> None:
    """The answer with what was read (none to a follower down or to an orphan); the read's other
    fields are no fields of an answer."""
    fields = {**read, "leader": leader, "err": z3.IntVal(ERROR["NONE"]), "kind": z3.IntVal(KIND["records"])}
    fields.update(ep=z3.IntVal(-1), end=z3.IntVal(-1))
    nx.push("fetch_responses", r, fields, when=z3.And(nx.rep(r, "alive"), _not(orphan)))


def effect_handle_fetch(nx: Next, st: Step) -> None:
    if not _split(nx):
        return _handle_request(nx, st)
    r = st.replica
    n = nx.b.replicas

    def complete(x: Next) -> None:
        held = {k[len(f"held{r}.") :]: v for k, v in x.s.items() if k.startswith(f"held{r}.")}
        x.cases(held["at1"] - 1, range(n), lambda y, d: _update_follower_fetch_state(y, d, r, held, held["det"]))
        _respond_read(x, r, held["at1"] - 1, held, held["orphan"])
        _set_held(x, r, {})

    nx.branch(_held(nx, r, "at1") > 0, complete, lambda x: _handle_request(x, st))


def guard_read_fetch(nx: Next, st: Step):
    if not _split(nx):
        return z3.BoolVal(False)  # split_fetch_handling off: refused
    r = st.replica  # an hw_only read's batches, or a request's read
    return z3.Or(z3.And(_held(nx, r, "at1") > 0, _held(nx, r, "oo")), guard_read_fetch_hw(nx, st))


def guard_read_fetch_hw(nx: Next, st: Step):
    if not _split(nx) or nx.b.capacity("fetch_requests") == 0:
        return z3.BoolVal(False)  # split_fetch_handling off: refused
    r = st.replica
    req = {f: nx.msg("fetch_requests", r, 0, f) for f in ("leader", "lepoch", "off", "lfe", "qe", "mb", "be")}
    reads = []
    for d in range(nx.b.replicas):  # checks 1-5 of handle_fetch answer nothing: step 6 reads
        check = _rules(nx).check_fetch(nx, d, req)
        passes = z3.BoolVal(True) if check is None else _not(check[0])
        reads.append(
            z3.And(req["leader"] == d, nx.rep(d, "leader") == d, passes, req["qe"] < 0, req["off"] <= nx.rep(d, "len"))
        )
    return z3.And(_request_guard(nx, st), _held(nx, r, "at1") == 0, z3.Or(reads))


def effect_read_fetch(nx: Next, st: Step) -> None:
    r = st.replica
    p = f"held{r}."
    if not _split(nx):  # refused (guard_read_fetch): no held slots to read
        return _read_request(nx, r, hw_only=False)

    def batches(x: Next, d: int) -> None:  # the LEO and batches now; the HW and its time read before stay
        off = _held(x, r, "off")
        fields = {**_batches(x, d, off, _held(x, r, "mb")), "lr": x.rep(d, "len"), "oo": z3.BoolVal(False), "mb": 0}
        x.s.update({p + k: z3.IntVal(v) if isinstance(v, int) else v for k, v in fields.items()})

    nx.branch(
        z3.And(_held(nx, r, "at1") > 0, _held(nx, r, "oo")),
        lambda x: x.cases(_held(x, r, "at1") - 1, range(x.b.replicas), batches),
        lambda x: _read_request(x, r, hw_only=False),
    )


def effect_read_fetch_hw(nx: Next, st: Step) -> None:
    _read_request(nx, st.replica, hw_only=True)


def _read_request(nx: Next, r: int, hw_only: bool) -> None:
    """Follower r's oldest fetch request read and held by its destination: whole, or (read_fetch_hw)
    its HW alone, with its time, the LEO and the batches left to read_fetch."""
    req = nx.pop("fetch_requests", r)

    def read(x: Next, d: int) -> None:
        fields = {"at1": z3.IntVal(d + 1), "orphan": req["orphan"], **{f: req[f] for f in ("lepoch", "off", "be")}}
        if hw_only:
            fields.update(hw=x.rep(d, "hw"), ft=x["now"], lr=z3.IntVal(-1), oo=z3.BoolVal(True), mb=req["mb"])
        else:
            fields.update(_read(x, d, req))
        _set_held(x, r, fields)

    nx.cases(req["leader"], range(nx.b.replicas), read)


def _handle_request(nx: Next, st: Step) -> None:
    """The whole handling of follower ``st.replica``'s oldest fetch request."""
    r = st.replica
    req = nx.pop("fetch_requests", r)
    rules = _rules(nx)

    def serve(x: Next, d: int) -> None:
        def respond(y: Next, error: str | object, kind: str, epoch=-1, end=-1) -> None:
            fields = {
                "leader": z3.IntVal(d),
                "lepoch": req["lepoch"],
                "err": ERROR[error] if isinstance(error, str) else error,
                "kind": z3.IntVal(KIND[kind]),
                "hw": -1,
                "ep": epoch,
                "end": end,
            }
            y.push(
                "fetch_responses",
                r,
                {k: z3.IntVal(v) if isinstance(v, int) else v for k, v in fields.items()},
                when=z3.And(y.rep(r, "alive"), _not(req["orphan"])),  # an orphan's connection is closed
            )

        def records(y: Next) -> None:
            read = {**_read(y, d, req), "off": req["off"], "be": req["be"], "lepoch": req["lepoch"]}
            _update_follower_fetch_state(y, d, r, read)
            _respond_read(y, r, z3.IntVal(d), read, req["orphan"])

        def fetch(y: Next) -> None:
            leo = y.rep(d, "len")
            y.branch(req["off"] > leo, lambda z: respond(z, "OFFSET_OUT_OF_RANGE", "error", end=leo), records)

        def query(y: Next) -> None:
            epoch, end = rules.answer_epoch_query(y, f"r{d}.", req["qe"])
            respond(y, "NONE", "epoch_end", epoch=epoch, end=end)

        def valid(y: Next) -> None:
            y.branch(req["qe"] >= 0, query, fetch)

        def led(y: Next) -> None:
            check = rules.check_fetch(y, d, req)
            if check is None:
                return valid(y)
            refused, error, epoch, end = check
            y.branch(
                refused,
                lambda z: z.branch(
                    error != ERROR["NONE"],
                    lambda w: respond(w, error, "error"),
                    lambda w: respond(w, "NONE", "diverging", epoch=epoch, end=end),
                ),
                valid,
            )

        x.branch(x.rep(d, "leader") != d, lambda y: respond(y, "NOT_LEADER_OR_FOLLOWER", "error"), led)

    nx.cases(req["leader"], range(nx.b.replicas), serve)


def _fetch_end(nx: Next, d: int, start, max_batches):
    """Where a Fetch from batch base ``start`` ends: the leader's LEO, or with ``max_batches`` > 0
    (replica.fetch.max.bytes in whole batches) the end of that many batches, if the log has them."""
    return nx.nth_batch_end(f"r{d}.", start, max_batches, nx.rep(d, "len"))


def guard_handle_fetch_response(nx: Next, st: Step):
    return z3.And(nx.rep(st.replica, "alive"), _has_message(nx, "fetch_responses", st.replica))


def effect_handle_fetch_response(nx: Next, st: Step) -> None:
    r = st.replica
    resp = nx.pop("fetch_responses", r)
    p = f"r{r}."
    rules = _rules(nx)

    def records(x: Next) -> None:
        # a damaged batch (the CRC check refuses the whole response), or a first batch below the
        # LEO (diverged batch boundaries): the append fails, nothing changes
        x.branch(
            z3.Or(resp["bad1"] > 0, z3.And(resp["rn"] > 0, resp["rstart"] < x.rep(r, "len"))), lambda y: None, accept
        )

    def accept(x: Next) -> None:
        def append(y: Next) -> None:
            cut, rn = resp["rstart"], resp["rn"]
            y.fits.append(cut + rn <= y.b.log)
            for k in range(y.b.log):
                for f in ("e", "rec", "base"):
                    theirs = z3.IntVal(0)
                    for j in range(y.b.log - 1, -1, -1):
                        theirs = z3.If(k - cut == j, resp[f"{f}{j}"], theirs)
                    y[f"{p}{f}{k}"] = z3.If(k < cut, y[f"{p}{f}{k}"], z3.If(k < cut + rn, theirs, 0))
            y.set_rep(r, len=cut + rn, durable=zmin(y.rep(r, "durable"), cut))

        x.branch(resp["rn"] > 0, append)
        n = x.rep(r, "len")
        x.set_rep(r, durable=x.flush_policy(n, x.rep(r, "durable")), hw=zmin(resp["hw"], n))

    def diverging(x: Next) -> None:
        own_epoch, own_end = x.end_offset_for(p, resp["ep"])
        x.truncate_to(r, z3.If(own_epoch == resp["ep"], zmin(resp["end"], own_end), own_end))

    def by_kind(x: Next) -> None:
        kind = resp["kind"]
        x.branch(
            kind == KIND["records"],
            records,
            lambda y: y.branch(
                kind == KIND["epoch_end"],
                lambda z: rules.handle_epoch_answer(z, r, resp["ep"], resp["end"]),
                lambda z: z.branch(
                    kind == KIND["diverging"],
                    diverging,
                    lambda w: w.branch(
                        resp["err"] == ERROR["OFFSET_OUT_OF_RANGE"], lambda v: v.truncate_to(r, resp["end"])
                    ),
                ),
            ),
        )

    leader, epoch = _fetcher_tag(nx, r)  # an answer to another fetcher's request is discarded
    nx.branch(z3.And(resp["leader"] == leader, resp["lepoch"] == epoch), by_kind)


# -- partition state: LeaderAndIsr and the ISR ------------------------------------------------------------


def guard_deliver_leader_and_isr(nx: Next, st: Step):
    r = st.replica
    if not _split(nx):
        return _has_message(nx, "leader_and_isr", r, st.index)
    # makeLeader / makeFollower take the write lock: it waits while r holds an hw_only read
    reading = [z3.And(_held(nx, f, "at1") == r + 1, _held(nx, f, "oo")) for f in range(nx.b.replicas)]
    return z3.And(_has_message(nx, "leader_and_isr", r, st.index), _not(z3.Or(reading)))


def effect_deliver_leader_and_isr(nx: Next, st: Step) -> None:
    r = st.replica
    m = nx.pop("leader_and_isr", r, st.index)
    nx.set_rep(r, unreg=z3.And(nx.rep(r, "unreg"), m["reg"] == 0))  # caught up with its registration
    for slot in range(nx.b.capacity("leader_and_isr")):  # it serves: the marks of the others are cleared
        key = f"leader_and_isr{r}.{slot}.reg"
        nx.s[key] = z3.If(m["reg"] != 0, 0, nx.s[key])
    le, pe = nx.rep(r, "lepoch"), nx.rep(r, "pepoch")
    # KRaft's partition state applies the same partition epoch too (makeLeader skips only an older one)
    same = nx.cfg.rules.committed_partition_state
    newer = z3.Or(m["lepoch"] > le, z3.And(m["lepoch"] == le, m["pepoch"] >= pe if same else m["pepoch"] > pe))
    if not _rules(nx).follows_leaderless:
        newer = z3.And(newer, m["leader"] != -1)
    nx.branch(newer, lambda x: _apply_partition_state(x, r, m))


def _apply_partition_state(nx: Next, r: int, m: dict) -> None:
    """Broker r applies a newer partition state ``m`` (leader, lepoch, pepoch, isr<j>): the same
    leader epoch updates ISR and partition epoch; a newer one runs makeLeader or makeFollower."""
    n = nx.b.replicas
    le = nx.rep(r, "lepoch")
    isr = {f"isr{j}": m[f"isr{j}"] for j in range(n)}
    neutral = {
        **{f"{f}{j}": z3.IntVal(-1) for j in range(n) for f in ("rleo", "rbe", "pep")},
        **{f"pisr{j}": z3.BoolVal(False) for j in range(n)},
        "pend": z3.BoolVal(False),
        **_no_previous_fetch(nx),  # resetReplicaState for a new leader
    }

    def make_leader(x: Next) -> None:
        x.set_rep(
            r,
            leader=z3.IntVal(r),
            lepoch=m["lepoch"],
            pepoch=m["pepoch"],
            eso=x.rep(r, "len"),
            trunc=z3.IntVal(-1),
            **isr,
            **neutral,
            **{f"lcu{j}": z3.If(m[f"isr{j}"], x["now"], 0) for j in range(n)},
        )
        if x.b.stale_fetcher:  # the fetcher removed first, a stale one too
            x.set_rep(r, **_NO_STALE_FETCHER)
        maybe_increment_leader_hw(x, r)

    def make_follower(x: Next) -> None:
        for k in range(1, x.b.records + 1):
            _clear_pending(x, r, k)
        old_fetcher = _fetcher_tag(x, r)
        x.set_rep(
            r,
            leader=m["leader"],
            lepoch=m["lepoch"],
            pepoch=m["pepoch"],
            eso=z3.IntVal(-1),
            **isr,
            **neutral,
            **{f"lcu{j}": z3.IntVal(0) for j in range(n)},
        )
        if x.b.held_reads:  # remoteReplicasMap cleared: the updates of its held reads reach nothing
            for f in range(n):
                x.s[f"held{f}.det"] = z3.Or(_held(x, f, "det"), _held(x, f, "at1") == r + 1)
        if _stale(x):  # the fetcher replaced later, by remove_fetcher
            x.set_rep(r, stale=z3.BoolVal(True), sfl=old_fetcher[0], sfe=old_fetcher[1])
        else:
            _rules(x).new_fetcher(x, r)

    def same_epoch(y: Next) -> None:
        y.set_rep(r, pepoch=m["pepoch"], **isr)
        if y.cfg.rules.committed_partition_state:  # CommittedPartitionState; makeLeader raises the HW
            y.branch(m["leader"] == r, committed)

    def committed(y: Next) -> None:
        y.set_rep(r, **{k: v for k, v in neutral.items() if k == "pend" or k.startswith(("pisr", "pep"))})
        maybe_increment_leader_hw(y, r)

    nx.branch(
        m["lepoch"] == le,
        same_epoch,
        lambda y: y.branch(m["leader"] == r, make_leader, make_follower),
    )


_NO_STALE_FETCHER = {"stale": z3.BoolVal(False), "sfl": z3.IntVal(0), "sfe": z3.IntVal(0)}


def guard_remove_fetcher(nx: Next, st: Step):
    if not _stale(nx):
        return z3.BoolVal(False)
    return z3.And(nx.rep(st.replica, "alive"), nx.rep(st.replica, "stale"))


def effect_remove_fetcher(nx: Next, st: Step) -> None:
    if not nx.b.stale_fetcher:
        return
    nx.set_rep(st.replica, **_NO_STALE_FETCHER)
    _rules(nx).new_fetcher(nx, st.replica)


def guard_update_metadata_cache(nx: Next, st: Step):
    if not _cache(nx):
        return z3.BoolVal(False)
    r = st.replica
    differs = [nx.rep(r, k) != v for k, v in _alive_broker_epochs(nx).items()]
    return z3.And(nx.rep(r, "alive"), z3.Or(differs))


def effect_update_metadata_cache(nx: Next, st: Step) -> None:
    if nx.b.metadata_cache:
        nx.set_rep(st.replica, **_alive_broker_epochs(nx))


def _lags(nx: Next, r: int, f: int):
    """Leader r's follower f has not caught up within the lag time (the model's ``lagging``)."""
    return nx["now"] - nx.rep(r, f"lcu{f}") > nx.cfg.replica_lag_time_max_ticks


def _lagging(nx: Next, r: int) -> list:
    return [
        z3.And(nx.rep(r, f"isr{f}"), _lags(nx, r, f)) if f != r else z3.BoolVal(False) for f in range(nx.b.replicas)
    ]


def _caught_up(nx: Next, r: int) -> list:
    in_sync = _rules(nx).in_sync
    return [
        z3.And(_not(nx.rep(r, f"isr{f}")), in_sync(nx, r, nx.rep(r, f"rleo{f}")), _eligible(nx, r, f))
        if f != r
        else z3.BoolVal(False)
        for f in range(nx.b.replicas)
    ]


def guard_shrink_isr(nx: Next, st: Step):
    return z3.And(_leader_guard(nx, st.replica), z3.Or(_lagging(nx, st.replica)))


def effect_shrink_isr(nx: Next, st: Step) -> None:
    r = st.replica
    _propose_isr(nx, r, [z3.And(nx.rep(r, f"isr{j}"), _not(out)) for j, out in enumerate(_lagging(nx, r))])


def _adding(nx: Next, st: Step) -> list:
    """Per broker, whether ``expand_isr`` adds it: caught up, and the follower it names if any."""
    every = st.arg is None or st.arg < 0
    return [new if every or j == st.arg else z3.BoolVal(False) for j, new in enumerate(_caught_up(nx, st.replica))]


def guard_expand_isr(nx: Next, st: Step):
    return z3.And(_leader_guard(nx, st.replica), z3.Or(_adding(nx, st)))


def effect_expand_isr(nx: Next, st: Step) -> None:
    r = st.replica
    _propose_isr(nx, r, [z3.Or(nx.rep(r, f"isr{j}"), new) for j, new in enumerate(_adding(nx, st))])
    maybe_increment_leader_hw(nx, r)


def guard_handle_alter_partition(nx: Next, st: Step):
    return _has_message(nx, "alter_partition", st.replica)


def effect_handle_alter_partition(nx: Next, st: Step) -> None:
    r, n = st.replica, nx.b.replicas
    m = nx.pop("alter_partition", r)
    ineligible = z3.Or(
        [
            z3.And(m[f"isr{j}"], z3.Or(nx.inactive(j), z3.And(m[f"ep{j}"] != -1, m[f"ep{j}"] != nx[f"c.bep{j}"])))
            for j in range(n)
        ]
    )
    error = z3.If(
        z3.Or(nx["c.leader"] != r, m["lepoch"] != nx["c.lepoch"]),
        ERROR["FENCED_LEADER_EPOCH"],
        z3.If(
            m["pepoch"] != nx["c.pepoch"],
            ERROR["INVALID_UPDATE_VERSION"],
            z3.If(ineligible, ERROR["INELIGIBLE_REPLICA"], ERROR["NONE"]),
        ),
    )

    def commit(x: Next) -> None:
        isr = [m[f"isr{j}"] for j in range(n)]
        elr = _rules(x).elr_after(x, isr)
        for j in range(n):
            x[f"c.isr{j}"], x[f"c.elr{j}"] = isr[j], elr[j]
        x["c.pepoch"] = x["c.pepoch"] + 1

    nx.branch(error == ERROR["NONE"], commit)
    nx.push(
        "alter_partition_responses",
        r,
        {
            "err": error,
            "lepoch": nx["c.lepoch"],
            "pepoch": nx["c.pepoch"],
            "rlepoch": m["lepoch"],
            **_isr_fields(nx, "c.isr"),
        },
        when=z3.And(nx.rep(r, "alive"), _not(m["orphan"])),  # an orphan's connection is closed
    )


def guard_handle_alter_partition_response(nx: Next, st: Step):
    return z3.And(nx.rep(st.replica, "alive"), _has_message(nx, "alter_partition_responses", st.replica))


def effect_handle_alter_partition_response(nx: Next, st: Step) -> None:
    r, n = st.replica, nx.b.replicas
    m = nx.pop("alter_partition_responses", r)

    def adopt(x: Next) -> None:
        x.set_rep(r, pepoch=m["pepoch"], **{f"isr{j}": m[f"isr{j}"] for j in range(n)})
        maybe_increment_leader_hw(x, r)

    def answer(x: Next) -> None:
        x.set_rep(
            r,
            pend=z3.BoolVal(False),
            **{f"pisr{j}": z3.BoolVal(False) for j in range(n)},
            **{f"pep{j}": z3.IntVal(-1) for j in range(n)},
        )
        x.branch(z3.And(m["lepoch"] == x.rep(r, "lepoch"), m["pepoch"] >= x.rep(r, "pepoch")), adopt)

    pending = nx.rep(r, "pend") if nx.cfg.rules.committed_partition_state else True  # else forgotten: ignored
    nx.branch(z3.And(m["rlepoch"] == nx.rep(r, "lepoch"), pending), answer)


# -- the controller -----------------------------------------------------------------------------------------


def _elect_choice(nx: Next) -> tuple:
    """(clean choice or -1, its ISR, unclean choice or -1): the variant's clean election (ISR;
    KIP-966: then ELR, then last known leader), the first active broker."""
    clean, isr = _rules(nx).elect_clean(nx)
    unclean = z3.IntVal(-1)
    for j in range(nx.b.replicas - 1, -1, -1):
        unclean = z3.If(_not(nx.inactive(j)), j, unclean)
    return clean, isr, unclean


def guard_elect(nx: Next, st: Step):
    target = st.replica
    if target != -1:
        return z3.And(nx[f"c.isr{target}"], _not(nx.inactive(target)), nx["c.leader"] != target)
    clean, _isr, unclean = _elect_choice(nx)
    eligible = z3.Or(clean != -1, unclean != -1) if nx.cfg.unclean_leader_election_enable else clean != -1
    return z3.And(nx["c.leader"] == -1, eligible)


def effect_elect(nx: Next, st: Step) -> None:
    n = nx.b.replicas
    if st.replica != -1:
        leader = z3.IntVal(st.replica)
        isr, elr = [nx[f"c.isr{j}"] for j in range(n)], [nx[f"c.elr{j}"] for j in range(n)]
    else:
        clean, chosen, unclean = _elect_choice(nx)
        leader = z3.If(clean != -1, clean, unclean)
        isr = [z3.If(clean != -1, chosen[j], unclean == j) for j in range(n)]
        elr = [z3.And(clean != -1, e) for e in _rules(nx).elr_after(nx, chosen)]  # an unclean leader: no ELR
    nx["c.leader"], nx["c.lepoch"], nx["c.pepoch"] = leader, nx["c.lepoch"] + 1, nx["c.pepoch"] + 1
    nx["c.lkl"] = z3.IntVal(-1)
    for j in range(n):
        nx[f"c.isr{j}"], nx[f"c.elr{j}"] = isr[j], elr[j]
    _broadcast(nx)


def guard_fence(nx: Next, st: Step):
    return _not(nx.registration_fenced(st.replica))  # a registration awaiting unfence is fenced already


def effect_fence(nx: Next, st: Step) -> None:
    r = st.replica
    changed = _remove_broker(nx, r, _rules(nx).isr_after_fence(nx, r), ())
    nx[f"c.fenced{r}"] = z3.BoolVal(True)
    _end_controlled_shutdown(nx, r)
    nx.branch(changed, _broadcast)


def _end_controlled_shutdown(nx: Next, r: int) -> None:
    """A fence or registration ends r's controlled shutdown (kraft_controlled_shutdown)."""
    if nx.b.controlled_shutdown:
        nx[f"c.ics{r}"] = z3.BoolVal(False)


def guard_controlled_shutdown(nx: Next, st: Step):
    r = st.replica
    if not (nx.cfg.kraft_controlled_shutdown and nx.b.controlled_shutdown):
        return z3.BoolVal(False)
    return z3.And(nx.rep(r, "alive"), _not(nx.rep(r, "unreg")), nx.rep(r, "bepoch") >= 0, _not(nx.inactive(r)))


def effect_controlled_shutdown(nx: Next, st: Step) -> None:
    """handleBrokerInControlledShutdown: r joins the brokers in controlled shutdown; one partition change
    takes it out of the ISR as a fence would and, where it led, a clean election in the same leader epoch."""
    r, n = st.replica, nx.b.replicas
    if not nx.b.controlled_shutdown:
        return
    led = nx["c.leader"] == r
    nx[f"c.ics{r}"] = z3.BoolVal(True)
    changed = _remove_broker(nx, r, _rules(nx).isr_after_fence(nx, r), ())

    def elect(x: Next) -> None:
        leader, chosen = _rules(x).elect_clean(x)
        elected = leader != -1
        elr = _rules(x).elr_after(x, chosen)
        x["c.leader"] = z3.If(elected, leader, -1)
        x["c.lkl"] = z3.If(elected, -1, x["c.lkl"])
        for j in range(n):
            x[f"c.isr{j}"] = z3.If(elected, chosen[j], x[f"c.isr{j}"])
            x[f"c.elr{j}"] = z3.If(elected, elr[j], x[f"c.elr{j}"])

    nx.branch(led, elect)
    nx.branch(changed, _broadcast)


def guard_rejoin(nx: Next, st: Step):
    return z3.And(nx.rep(st.replica, "alive"), nx[f"c.fenced{st.replica}"], _not(nx.rep(st.replica, "unreg")))


def effect_rejoin(nx: Next, st: Step) -> None:
    _register(nx, st.replica)  # a live broker: a clean registration


def guard_unfence(nx: Next, st: Step):
    r = st.replica
    if not nx.cfg.unfence_at_heartbeat:
        return z3.BoolVal(False)
    caught_up = z3.And(nx.rep(r, "alive"), nx.rep(r, "bepoch") >= 0, _not(nx.rep(r, "unreg")))
    return z3.And(caught_up, nx.registration_fenced(r))


def effect_unfence(nx: Next, st: Step) -> None:
    """The heartbeat that shows ``r`` caught up unfences it, its broker epoch kept; a fenced one is sent the
    current state (one awaiting unfence was sent every change)."""
    r = st.replica
    fenced = nx[f"c.fenced{r}"]
    nx[f"c.fenced{r}"] = z3.BoolVal(False)
    if nx.b.unfence:
        nx[f"c.await{r}"] = z3.BoolVal(False)
    nx.branch(fenced, lambda x: _send_leader_and_isr(x, r))


# -- brokers: failures, restarts, disks, fsync ---------------------------------------------------------------


def guard_crash(nx: Next, st: Step):
    r = st.replica
    if not (st.survive or st.torn):
        return nx.rep(r, "alive")
    unflushed = count(nx.batch_ends(f"r{r}.", nx.rep(r, "durable")))  # a torn batch is one more than survive
    return z3.And(nx.rep(r, "alive"), st.survive < unflushed if st.torn else st.survive <= unflushed)


def effect_crash(nx: Next, st: Step) -> None:
    """Clean shutdown flushes; a power loss keeps the first ``survive`` unflushed batches (write-back
    is sequential); a ``torn`` next batch is cut by log recovery, as if never written."""
    r = st.replica
    lost = z3.BoolVal(st.arg == "power")
    if st.arg == "clean":
        nx.set_rep(r, durable=nx.rep(r, "len"), hwc=nx.rep(r, "hw"))
    elif st.survive:
        nx.set_rep(r, durable=nx.nth_batch_end(f"r{r}.", nx.rep(r, "durable"), st.survive, nx.rep(r, "durable")))
    if st.arg != "clean":  # a damaged batch: the restart's recovery (no clean shutdown file) cuts there
        bad, durable = nx.rep(r, "bad"), nx.rep(r, "durable")
        lost = z3.Or(lost, bad >= 0)
        nx.set_rep(r, durable=z3.If(bad >= 0, zmin(durable, bad), durable))
    for k in range(1, nx.b.records + 1):
        _clear_pending(nx, r, k)
    nx.set_rep(
        r,
        alive=z3.BoolVal(False),
        plost=lost,
        # an unclean shutdown not yet told to the controller stays one (the broker never registered)
        unclean=z3.Or(
            nx.rep(r, "unclean"),
            z3.If(
                nx.rep(r, "bepoch") >= 0,
                z3.BoolVal(_rules(nx).unclean_shutdown(st.arg, nx.cfg.unclean_shutdown_detection, True)),
                z3.BoolVal(_rules(nx).unclean_shutdown(st.arg, nx.cfg.unclean_shutdown_detection, False)),
            ),
        ),
        unreg=z3.BoolVal(False),
        **(_NO_STALE_FETCHER if nx.b.stale_fetcher else {}),  # its fetchers die with it
    )
    # what reached r is gone; what r sent stays on the wire, its requests orphaned
    for q in ("leader_and_isr", "alter_partition_responses", "fetch_responses"):
        nx.clear(q, r)
    for q in ORPHANS:
        for slot in range(nx.b.capacity(q)):
            nx.s[f"{q}{r}.{slot}.orphan"] = z3.Or(nx.msg(q, r, slot, "orphan"), slot < nx.queue_len(q, r))
    for f in range(nx.b.replicas):
        if f != r:
            nx.keep_only("fetch_requests", f, lambda slot, f=f: nx.msg("fetch_requests", f, slot, "leader") != r)
    if nx.b.held_reads:  # its handlings die with it; a read of r's request is updated from, never answered
        for f in range(nx.b.replicas):
            _set_held(nx, f, {}, when=_held(nx, f, "at1") == r + 1)
        nx.s[f"held{r}.orphan"] = z3.Or(_held(nx, r, "orphan"), _held(nx, r, "at1") > 0)


def guard_restart(nx: Next, st: Step):
    return _not(nx.rep(st.replica, "alive"))


def effect_restart(nx: Next, st: Step) -> None:
    r, n = st.replica, nx.b.replicas
    p = f"r{r}."
    unclean = nx.rep(r, "unclean")
    started = nx.cfg.rules.start_before_registration  # the model's flag
    nx.branch(nx.rep(r, "plost"), lambda x: x.cut_log(p, zmin(x.rep(r, "durable"), x.rep(r, "len"))))
    length = nx.rep(r, "len")
    bad = nx.rep(r, "bad")  # kept by a clean shutdown (no recovery), else cut with the log
    nx.set_rep(
        r,
        alive=z3.BoolVal(True),
        durable=zmin(nx.rep(r, "durable"), length),
        bad=z3.If(bad < length, bad, -1),
        hw=zmin(nx.rep(r, "hwc"), length),
        leader=z3.IntVal(-1),
        lepoch=z3.IntVal(-1),
        pepoch=z3.IntVal(-1),
        eso=z3.IntVal(-1),
        trunc=z3.IntVal(-1),
        pend=z3.BoolVal(False),
        plost=z3.BoolVal(False),
        unclean=unclean if started else z3.BoolVal(False),  # told to the controller by its registration
        unreg=z3.BoolVal(started),
        bepoch=z3.IntVal(-1) if started else nx.rep(r, "bepoch"),
        **{
            f"{f}{j}": v
            for j in range(n)
            for f, v in (
                ("isr", z3.BoolVal(False)),
                ("pisr", z3.BoolVal(False)),
                ("rleo", z3.IntVal(-1)),
                ("lcu", z3.IntVal(0)),
                ("rbe", z3.IntVal(-1)),
                ("pep", z3.IntVal(-1)),
            )
        },
        **_no_previous_fetch(nx),
    )
    for k in range(1, nx.b.records + 1):
        _clear_pending(nx, r, k)
    if not started:
        _register(nx, r, unclean)
        _replayed_registrations(nx, r)  # the image its registration's answer brought
        return
    _replayed_registrations(nx, r)
    # the replayed metadata log: the controller's current state, applied as a LeaderAndIsr would be
    state = {"leader": nx["c.leader"], "lepoch": nx["c.lepoch"], "pepoch": nx["c.pepoch"], **_isr_fields(nx, "c.isr")}
    _apply_partition_state(nx, r, state)


def guard_register(nx: Next, st: Step):
    r = st.replica
    return z3.And(nx.rep(r, "alive"), nx.rep(r, "bepoch") < 0)


def effect_register(nx: Next, st: Step) -> None:
    r = st.replica
    unclean = nx.rep(r, "unclean")

    def shut_down(x: Next) -> None:  # a session expired and not fenced yet: taken out as a fence would
        changed = _remove_broker(x, r, _rules(x).isr_after_fence(x, r), ())
        x.branch(changed, lambda y: _broadcast(y, skip=r))

    nx.branch(z3.And(_not(nx[f"c.fenced{r}"]), _not(unclean)), shut_down)
    _register(nx, r, unclean)


def guard_lose_disk(nx: Next, st: Step):
    return _not(nx.rep(st.replica, "alive"))


def effect_lose_disk(nx: Next, st: Step) -> None:
    r = st.replica
    nx.cut_log(f"r{r}.", z3.IntVal(0))
    nx.set_rep(
        r,
        durable=z3.IntVal(0),
        hw=z3.IntVal(0),
        hwc=z3.IntVal(0),
        plost=z3.BoolVal(True),
        bad=z3.IntVal(-1),
        unclean=z3.BoolVal(_rules(nx).unclean_shutdown("lost disk", nx.cfg.unclean_shutdown_detection)),
    )


def guard_corrupt(nx: Next, st: Step):
    r = st.replica
    return z3.And(_not(nx.rep(r, "alive")), nx.rep(r, "plost"), nx.rep(r, "durable") > 0)


def effect_corrupt(nx: Next, st: Step) -> None:
    """The last durable batch is damaged at rest: durable goes back to its base offset."""
    p = f"r{st.replica}."
    nx.set_rep(st.replica, durable=nx.log_field(p, "base", nx.rep(st.replica, "durable") - 1))


def guard_fail_disk(nx: Next, st: Step):
    r = st.replica
    operation = st.arg.split(":")[0]
    if operation == "fsync":
        return z3.And(nx.rep(r, "alive"), nx.rep(r, "durable") != nx.rep(r, "len"))
    if operation == "read":
        return z3.And(nx.rep(r, "alive"), nx.rep(r, "len") > 0)
    return nx.rep(r, "alive")


def effect_fail_disk(nx: Next, st: Step) -> None:
    """The broker halts (a failed fsync as a power loss that wrote nothing back, else as a process
    crash), then the controller fences it unless it was already."""
    r = st.replica
    effect_crash(nx, Step(CRASH, r, "power" if st.arg.startswith("fsync") else "process"))
    nx.branch(_not(nx.registration_fenced(r)), lambda x: effect_fence(x, Step(FENCE, r)))


def guard_corrupt_live(nx: Next, st: Step):
    r = st.replica
    return z3.And(nx.rep(r, "alive"), nx.rep(r, "durable") > 0, nx.rep(r, "bad") < 0)


def effect_corrupt_live(nx: Next, st: Step) -> None:
    """The last durable batch of a live broker is damaged: it is its bad batch until cut."""
    p = f"r{st.replica}."
    nx.set_rep(st.replica, bad=nx.log_field(p, "base", nx.rep(st.replica, "durable") - 1))


def guard_flush(nx: Next, st: Step):
    r = st.replica
    return z3.And(
        nx.rep(r, "alive"), z3.Or(nx.rep(r, "durable") != nx.rep(r, "len"), nx.rep(r, "hwc") != nx.rep(r, "hw"))
    )


def effect_flush(nx: Next, st: Step) -> None:
    nx.set_rep(st.replica, durable=nx.rep(st.replica, "len"), hwc=nx.rep(st.replica, "hw"))


def guard_checkpoint_hw(nx: Next, st: Step):
    return z3.And(nx.rep(st.replica, "alive"), nx.rep(st.replica, "hwc") != nx.rep(st.replica, "hw"))


def effect_checkpoint_hw(nx: Next, st: Step) -> None:
    nx.set_rep(st.replica, hwc=nx.rep(st.replica, "hw"))


def guard_tick(nx: Next, st: Step):
    return z3.BoolVal(True)


def effect_tick(nx: Next, st: Step) -> None:
    """Clock advance; DelayedProduce past request.timeout.ms expires (REQUEST_TIMED_OUT)."""
    nx["now"] = nx["now"] + 1
    for r in range(nx.b.replicas):
        for k in range(1, nx.b.records + 1):
            _clear_pending(nx, r, k, z3.And(nx.rep(r, f"pp{k}"), nx.rep(r, f"ppdl{k}") < nx["now"]))


def guard_drop(nx: Next, st: Step):
    return _has_message(nx, MESSAGE_KINDS[st.arg], st.replica, st.index)


def effect_drop(nx: Next, st: Step) -> None:
    """Loss of one message; the leader resends a pending ISR change whose request or answer, sent in
    its current leader epoch, is lost."""
    r = st.replica
    q = MESSAGE_KINDS[st.arg]
    sent_in = (
        nx.msg(q, r, st.index, "lepoch" if st.arg == "alter_partition" else "rlepoch")
        if st.arg in ("alter_partition", "alter_partition_response")
        else None
    )
    orphan = nx.msg(q, r, st.index, "orphan") if st.arg == "alter_partition" else z3.BoolVal(False)
    nx.pop(q, r, st.index)
    if sent_in is not None:
        n = nx.b.replicas
        nx.branch(
            z3.And(nx.rep(r, "pend"), sent_in == nx.rep(r, "lepoch"), _not(orphan)),
            lambda x: _propose_isr(
                x, r, [x.rep(r, f"pisr{j}") for j in range(n)], [x.rep(r, f"pep{j}") for j in range(n)]
            ),
        )


ENCODED: dict[str, tuple[Callable, Callable]] = {
    name: (globals()[f"guard_{name}"], globals()[f"effect_{name}"]) for name in STEPS if f"guard_{name}" in globals()
}


def unsupported(st: Step) -> str | None:
    """Why the encoding cannot take ``st``, or None."""
    if st.name not in ENCODED:
        return f"step {st.name!r} has no SMT encoding"
    return None


def successor(cfg, rules: Protocol, b: Bounds, s: dict, st: Step) -> tuple:
    """(guard, successor, fits, room) of step ``st`` from the encoded state ``s``: the model takes
    the step where ``guard`` holds, reaching ``successor``, which the encoding holds where ``fits``
    (its logs and record ids) and ``room`` (its message FIFOs) hold."""
    reason = unsupported(st)
    if reason:
        raise Unsupported(reason)
    guard, effect = ENCODED[st.name]
    nx = Next(cfg, b, s, rules)
    effect(nx, st)
    for fault in STEPS[st.name].faults:  # History.after's fault counters
        counted = fault_counted(s, st, fault)
        if not z3.is_false(counted):
            key = f"h.{fault.counter}"
            nx[key] = nx[key] + (1 if z3.is_true(counted) else z3.If(counted, 1, 0))
    return guard(Next(cfg, b, s, rules), st), nx.s, _all(nx.fits), _all(nx.room)


def fault_counted(s: dict, st: Step, fault):
    """``Fault.counts`` as a formula over the encoded state before ``st``."""
    when, r = fault.when, st.replica
    if when == "unfenced":
        return z3.Not(s[f"c.fenced{r}"])
    if when == "alive":
        return z3.And(s[f"r{r}.alive"], z3.Not(s[f"r{r}.unreg"]))
    return z3.BoolVal(fault.counts(st, None))  # decided by the step alone


def _all(conds: list):
    return z3.And(conds) if conds else z3.BoolVal(True)
