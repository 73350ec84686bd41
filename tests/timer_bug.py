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
