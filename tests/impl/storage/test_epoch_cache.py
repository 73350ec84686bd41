"""LeaderEpochFileCache: Kafka's assign / truncate rules, end offsets for OffsetsForLeaderEpoch, and
the leader-epoch-checkpoint file it writes through to."""

import pytest

from isrcheck.impl.storage import CorruptLogError, LeaderEpochFileCache, SimulatedFileSystem

PATH = "/logs/t-0/leader-epoch-checkpoint"


def cache(entries=()):
    fs = SimulatedFileSystem()
    fs.makedirs("/logs/t-0")
    c = LeaderEpochFileCache(fs, PATH)
    for epoch, offset in entries:
        c.assign(epoch, offset)
    return fs, c


def test_assign_keeps_the_first_offset_of_each_epoch_and_persists_it():
    fs, c = cache([(0, 0), (0, 5), (2, 7), (2, 9), (5, 12)])
    assert [tuple(e) for e in c.entries] == [(0, 0), (2, 7), (5, 12)]
    assert fs.read_file(PATH) == b"0\n3\n0 0\n2 7\n5 12\n"
    assert [tuple(e) for e in LeaderEpochFileCache.load(fs, PATH).entries] == [(0, 0), (2, 7), (5, 12)]


def test_assigning_a_lower_epoch_replaces_the_higher_ones_as_kafka_does():
    _, c = cache([(0, 0), (2, 7), (5, 12)])
    c.assign(3, 10)
    assert [tuple(e) for e in c.entries] == [(0, 0), (2, 7), (3, 10)]


def test_truncation_from_either_end():
    _, c = cache([(0, 0), (2, 7), (5, 12)])
    c.truncate_from_end(12)
    assert [tuple(e) for e in c.entries] == [(0, 0), (2, 7)]
    c.truncate_from_start(9)
    assert [tuple(e) for e in c.entries] == [(2, 9)]
    c.clear()
    assert c.entries == [] and c.latest_epoch == -1


def test_end_offsets_kip_279_and_kip_101():
    _, c = cache([(1, 0), (3, 4), (4, 9)])
    assert [c.end_offset_for(e, 15) for e in range(6)] == [(-1, 0), (1, 4), (1, 4), (3, 9), (4, 15), (4, 15)]
    assert [c.end_offset_for_v0(e, 15) for e in range(6)] == [-1, 4, 4, 9, 15, -1]
    assert c.epoch_for_offset(5) == 3 and c.epoch_for_offset(0) == 1


@pytest.mark.parametrize("content", [b"0\n2\n0 0\n", b"1\n0\n", b"0\n2\n3 0\n1 5\n", b"0\n1\nx y\n"])
def test_malformed_checkpoints_name_the_file(content):
    fs, _ = cache()
    fs.open(PATH).append(content)
    with pytest.raises(CorruptLogError, match="leader-epoch-checkpoint"):
        LeaderEpochFileCache.load(fs, PATH)
