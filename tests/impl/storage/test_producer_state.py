"""The idempotent producer's checks (Kafka's ProducerStateManager): what a leader refuses, what it
acknowledges again, and that a new leader or a restarted broker knows what the log holds."""

import pytest

from isrcheck.impl.storage import Log, Record, build_batch
from isrcheck.impl.storage.producer_state import DuplicateBatch, SequenceError


def batch(pid: int, epoch: int, seq: int, count: int = 1):
    return build_batch(
        0,
        [Record(None, f"v{seq + i}".encode(), 1) for i in range(count)],
        0,
        1,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
    )


def append(log: Log, b, leader_epoch: int = 0):
    log.producer_state.check(b)
    return log.append_batch_as_leader(b, leader_epoch)


def test_a_retried_batch_is_acknowledged_with_the_offset_it_was_first_written_at(tmp_path):
    log = Log.open(tmp_path)
    append(log, batch(7, 0, 0, 3))
    append(log, batch(7, 0, 3, 2))
    with pytest.raises(DuplicateBatch) as dup:
        append(log, batch(7, 0, 0, 3))
    assert (dup.value.base_offset, dup.value.record_count) == (0, 3) and log.log_end_offset == 5


def test_a_gap_in_the_sequence_is_out_of_order_and_nothing_is_written(tmp_path):
    log = Log.open(tmp_path)
    append(log, batch(7, 0, 0, 2))
    with pytest.raises(SequenceError) as err:
        append(log, batch(7, 0, 5))
    assert err.value.error == "OUT_OF_ORDER_SEQUENCE_NUMBER" and log.log_end_offset == 2


def test_an_older_epoch_is_fenced_and_a_new_epoch_starts_at_sequence_zero(tmp_path):
    log = Log.open(tmp_path)
    append(log, batch(7, 1, 0))
    with pytest.raises(SequenceError) as err:
        append(log, batch(7, 0, 1))
    assert err.value.error == "INVALID_PRODUCER_EPOCH"
    with pytest.raises(SequenceError) as err:
        append(log, batch(7, 2, 4))
    assert err.value.error == "OUT_OF_ORDER_SEQUENCE_NUMBER"
    append(log, batch(7, 2, 0))


def test_a_duplicate_older_than_the_five_remembered_batches_is_refused_as_a_duplicate(tmp_path):
    log = Log.open(tmp_path)
    for seq in range(7):
        append(log, batch(7, 0, seq))
    with pytest.raises(SequenceError) as err:
        append(log, batch(7, 0, 0))
    assert err.value.error == "DUPLICATE_SEQUENCE_NUMBER" and log.log_end_offset == 7


def test_an_unknown_producer_may_start_at_any_sequence(tmp_path):
    log = Log.open(tmp_path)
    append(log, batch(9, 0, 42))
    assert log.log_end_offset == 1


def test_the_state_is_rebuilt_from_the_log_after_a_restart_and_a_truncation(tmp_path):
    log = Log.open(tmp_path)
    for seq in range(3):
        append(log, batch(7, 0, seq))
    log.close()
    log = Log.open(tmp_path)
    with pytest.raises(DuplicateBatch):
        log.producer_state.check(batch(7, 0, 2))
    log.truncate_to(2)  # the batch of sequence 2 is gone: a retry of it is new again
    log.producer_state.check(batch(7, 0, 2))


def test_a_follower_keeps_the_state_a_new_leader_needs(tmp_path):
    leader, follower = Log.open(tmp_path / "l"), Log.open(tmp_path / "f")
    follower.producer_state  # built before the appends: kept by them
    for seq in range(2):
        append(leader, batch(7, 0, seq))
    follower.append_as_follower(leader.read(0).data)
    with pytest.raises(DuplicateBatch) as dup:
        follower.producer_state.check(batch(7, 0, 1))
    assert dup.value.base_offset == 1


def test_the_client_batch_is_stored_as_written_with_the_leaders_offset_and_epoch(tmp_path):
    log = Log.open(tmp_path)
    append(log, batch(-1, -1, -1, 2))
    b = batch(-1, -1, -1, 3)
    append(log, b, leader_epoch=4)
    stored = log.read(2).batches[0]
    assert (stored.base_offset, stored.partition_leader_epoch) == (2, 4)
    assert stored.buffer[16:] == b.buffer[16:]  # magic, CRC and everything after: the client's bytes
    stored.ensure_valid()
