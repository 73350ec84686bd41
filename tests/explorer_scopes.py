"""The scopes the explorer's tests explore, named once: the tests of the explorer, of its symmetry
reduction and of its partial-order reduction share them."""

from isrcheck.model import Scope

DEFAULT = Scope()
SMALL = Scope(max_records=1, max_epoch=2, max_crashes=1)
# history properties need consume steps, which the default scope leaves out; this small scope
# keeps them (and flushes) in
WITH_READS = Scope(
    max_records=1,
    max_epoch=2,
    max_crashes=1,
    consumes=True,
    flushes=True,
    acks=(1, -1),
    crash_kinds=("clean", "process"),
)
UNCLEAN_SCOPE = Scope(max_records=1, max_epoch=4, max_crashes=3)  # the ISR can shrink to one fenced member
KIP101_SCENARIO1 = Scope(max_records=1, max_epoch=2, max_crashes=2, max_bounces=1)
KAFKA_14139 = Scope(max_records=1, max_crashes=1, max_power_losses=1)  # a stale ISR expansion
LAST_REPLICA_STANDING = Scope(max_records=1, max_crashes=2, max_power_losses=1)

# every fault class of the scope in, each once, on small logs
ALL_FAULTS = Scope(
    max_records=2,
    max_epoch=2,
    max_crashes=2,
    max_power_losses=1,
    max_drops=1,
    max_clock=2,
    consumes=True,
    flushes=True,
    acks=(1, -1),
    crash_kinds=("clean", "process"),
    max_bounces=1,
    max_zombies=1,
    max_leader_moves=1,
    max_disk_losses=1,
    max_batch_records=2,
    partial_fetches=True,
    torn_writes=True,
    hw_checkpoints=True,
    fetch_rounds=False,
    garbage_tails=True,
    max_corruptions=1,
    max_disk_failures=1,
    max_fsync_failures=1,
)


# (protocol, config, scope): variants, fault classes and cluster sizes the comparison covers
COMPARED = [
    ("hw-truncation", dict(replicas=2, min_insync_replicas=1), Scope(max_records=1, max_epoch=3, max_crashes=1)),
    ("hw-truncation", dict(), Scope(max_records=1, max_epoch=1, max_crashes=1, max_power_losses=1, max_disk_losses=1)),
    ("kip-101", dict(), Scope(max_records=1, max_epoch=2, max_crashes=1)),
    ("kip-101", dict(), Scope(max_records=1, max_epoch=1, max_crashes=1, max_bounces=1)),
    (
        "kip-279",
        dict(replicas=2, min_insync_replicas=1),
        Scope(max_records=1, max_epoch=3, max_crashes=1, max_power_losses=1, flushes=True),
    ),
    (
        "kip-320",
        dict(replicas=2, min_insync_replicas=1),
        Scope(max_records=1, max_epoch=2, max_crashes=1, consumes=True, acks=(1, -1), max_drops=1),
    ),
    ("kip-320", dict(unclean_leader_election_enable=True), Scope(max_records=1, max_epoch=2, max_crashes=1)),
    ("kip-903", dict(replicas=2), Scope(max_records=1, max_epoch=2, max_crashes=1, max_zombies=1, max_bounces=1)),
    (
        "kip-966",
        dict(replicas=2),
        Scope(
            max_records=2,
            max_epoch=2,
            max_crashes=1,
            max_power_losses=1,
            max_disk_losses=1,
            torn_writes=True,
            max_batch_records=2,
        ),
    ),
    (
        "kip-966",
        dict(replicas=2),
        Scope(
            max_records=1,
            max_epoch=1,
            max_crashes=1,
            max_power_losses=1,
            torn_writes=True,
            garbage_tails=True,
            max_corruptions=1,
            max_disk_failures=1,
            max_fsync_failures=1,
            flushes=True,
        ),
    ),
    (
        "kip-966",
        dict(replicas=2),
        Scope(
            max_records=1,
            max_epoch=1,
            max_crashes=0,
            max_leader_moves=1,
            max_zombies=1,
            partial_fetches=True,
            hw_checkpoints=True,
            max_clock=1,
        ),
    ),
]

# (protocol, config, scope) of the other searches of tests/model/test_explorer.py, the default
# scope aside (a minute per variant: the slow tests take it)
EXPLORED = [
    ("kip-320", dict(), SMALL),
    ("hw-truncation", dict(), Scope(max_records=1, max_epoch=3, max_crashes=1)),
    ("kip-279", dict(), WITH_READS),
    ("kip-320", dict(), WITH_READS),
    ("kip-320", dict(unclean_leader_election_enable=True), UNCLEAN_SCOPE),
    ("kip-101", dict(), KIP101_SCENARIO1),
    (
        "kip-320",
        dict(replicas=2, min_insync_replicas=2),
        Scope(max_records=1, max_crashes=2, max_power_losses=2, crash_kinds=()),
    ),
    ("kip-320", dict(), KAFKA_14139),
    ("kip-320", dict(), Scope(max_records=1, max_crashes=2, max_power_losses=1, exclude_known_losses=True)),
    ("kip-903", dict(replicas=2, min_insync_replicas=2), LAST_REPLICA_STANDING),
    (
        "kip-966",
        dict(replicas=2, min_insync_replicas=1),
        Scope(max_records=2, max_epoch=2, max_crashes=1, max_power_losses=1, max_disk_losses=1),
    ),
]
