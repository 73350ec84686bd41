"""A bug planted for the tests of validate: it lives where only timers reach."""

import dataclasses


def eager_isr_check(original):
    """``ReplicaManager._isr_check`` (Kafka's isr-expiration task) run with half of
    replica.lag.time.max.ms: followers leave the ISR too soon. Lockstep never runs this timer (it
    takes shrink_isr as a step of its own), only a run that drives itself does."""

    def check(self) -> None:
        saved = {pid: p.config for pid, p in self.partitions.items()}
        for p in self.partitions.values():
            p.config = dataclasses.replace(p.config, replica_lag_time_max_ms=p.config.replica_lag_time_max_ms // 2)
        try:
            original(self)
        finally:
            for pid, p in self.partitions.items():
                p.config = saved[pid]

    return check


def isr_timer_never_rearmed(original):
    """``ReplicaManager._isr_check`` (Kafka's isr-expiration task) that runs once and never
    schedules itself again: a follower that falls behind after the first check never leaves the ISR."""

    def check(self) -> None:
        self.scheduler = _NoRearm(self.scheduler, check)
        try:
            original(self)
        finally:
            self.scheduler = self.scheduler.inner

    return check


class _NoRearm:
    """A scheduler that drops the timer of ``task`` and passes everything else on."""

    def __init__(self, inner, task) -> None:
        self.inner, self.task = inner, task

    def schedule(self, delay_ms, callback):
        if getattr(callback, "__func__", None) is self.task:
            return None
        return self.inner.schedule(delay_ms, callback)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def lag_credits_now(original):
    """``Partition.fetch_from_follower`` whose lag rule credits every fetch as caught up "now",
    whatever its offset: a follower that fetches but falls behind stays in the ISR."""

    def fetch(self, req):
        resp = original(self, req)
        follower = self.followers.get(req.replica_id)
        if follower is not None:
            follower.last_caught_up_ms = self.scheduler.now_ms()
        return resp

    return fetch


def delayed_fetch_never_expires(original):
    """``DelayedFetchPurgatory._expire`` that never answers: a parked fetch waits for records."""

    def expire(self, op) -> None:
        return None

    return expire
