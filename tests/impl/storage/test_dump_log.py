"""isrcheck dump-log prints batches, records, index entries and checkpoints, and names every problem
with its file and byte position: exit 1 for a corrupt file, 2 for a path it cannot dump."""

import contextlib
import io
import json
import struct

import pytest

from isrcheck.conformance.cli.main import main
from isrcheck.impl.storage import Log, LogConfig, Record, build_batch

NAME = "00000000000000000000"


def dump(*args):
    """(exit code, stdout, stderr) of ``isrcheck dump-log ARGS``."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["dump-log", *map(str, args)])
    return code, out.getvalue(), err.getvalue()


def make_log(tmp_path, **config):
    log = Log.open(str(tmp_path), LogConfig(index_interval_bytes=50, **config))
    for i in range(6):
        log.append_as_leader([Record(b"key-%d" % i, b"v" * i, timestamp_ms=1000 + i)], leader_epoch=i // 3)
    log.close()
    return tmp_path / f"{NAME}.log"


def positions(path):
    """Byte position of each batch of a sound .log."""
    code, out, _ = dump(path, "--json")
    assert code == 0
    return [b["position"] for b in json.loads(out)["batches"]]


def patch(path, position, fmt, *values):
    data = bytearray(path.read_bytes())
    struct.pack_into(fmt, data, position, *values)
    path.write_bytes(bytes(data))


def assert_problem(result, path, position, words):
    """Exit 1; stdout names the byte position beside the problem; stderr names file and position."""
    code, out, err = result
    assert code == 1, (out, err)
    assert f"problem at byte {position}: " in out and words in out, out
    assert str(path) in err and f"at byte {position}: " in err and words in err, err
    assert "Traceback" not in out + err


def test_text_dump_lists_every_batch_and_record(tmp_path):
    path = make_log(tmp_path)
    code, out, err = dump(path)
    assert code == 0 and not err
    assert out.count("baseOffset:") == 6 and out.count("| offset:") == 6 and "problem" not in out
    assert "partitionLeaderEpoch: 1" in out and "isvalid: true" in out and "key: key-5" in out


def test_json_dump_of_log_and_indexes(tmp_path):
    path = make_log(tmp_path)
    code, out, _ = dump(path, "--json")
    doc = json.loads(out)
    assert code == 0 and doc["valid"] and doc["problem_count"] == 0 and doc["torn_tail"] is None
    assert [b["base_offset"] for b in doc["batches"]] == list(range(6))
    assert [b["partition_leader_epoch"] for b in doc["batches"]] == [0, 0, 0, 1, 1, 1]
    assert doc["batches"][4]["records"][0]["value_size"] == 4
    batch_at = {b["last_offset"]: b["position"] for b in doc["batches"]}
    code, out, _ = dump(path.with_suffix(".index"), "--json")
    index = json.loads(out)
    assert code == 0 and index["entries"] and index["checked_against"] == str(path)
    assert all(batch_at[e["offset"]] == e["position"] for e in index["entries"])
    code, out, _ = dump(path.with_suffix(".timeindex"))
    assert code == 0 and "timestamp: 1001 offset: 1" in out


def test_gzip_and_large_batches(tmp_path):
    path = make_log(tmp_path, compression_type="gzip")
    code, out, _ = dump(path)
    assert code == 0 and "compresscodec: gzip" in out and out.count("| offset:") == 6
    code, out, _ = dump(path, "--max-message-size", 64)  # every batch is larger: CRC only
    assert code == 0 and out.count("records not decoded") == 6 and "| offset:" not in out
    second = positions(path)[1]
    data = bytearray(path.read_bytes())
    data[second + 70] ^= 0xFF
    path.write_bytes(bytes(data))
    assert_problem(dump(path, "--max-message-size", 64), path, second, "CRC mismatch")


def test_a_batch_that_inflates_past_the_limit_is_not_decoded(tmp_path):
    path = tmp_path / f"{NAME}.log"
    bomb = build_batch(0, [Record(b"k", bytes(8 << 20))], 0, 0, compression="gzip")
    path.write_bytes(bomb.buffer)
    code, out, _ = dump(path)
    assert code == 0 and bomb.size < 20_000
    assert "records not decoded: the batch inflates to more than --max-message-size (5242880 bytes)" in out


# ------------------------------------------------------------------------- corrupt .log files


def test_crc_mismatch_names_the_batch_position(tmp_path):
    path = make_log(tmp_path)
    second = positions(path)[1]
    data = bytearray(path.read_bytes())
    data[second + 70] ^= 0xFF
    path.write_bytes(bytes(data))
    assert_problem(dump(path), path, second, "CRC mismatch: stored")
    code, out, _ = dump(path, "--json")
    doc = json.loads(out)
    assert code == 1 and not doc["valid"] and doc["batches"][1]["crc_valid"] is False
    assert doc["problems"] == [doc["batches"][1]["problems"][0]] and doc["problems"][0]["position"] == second


def test_wrong_magic(tmp_path):
    path = make_log(tmp_path)
    third = positions(path)[2]
    patch(path, third + 16, ">b", 1)  # magic is not covered by the CRC
    assert_problem(dump(path), path, third, "magic 1, expected 2")


def test_negative_and_non_monotonic_offsets(tmp_path):
    path = make_log(tmp_path)
    starts = positions(path)
    patch(path, starts[1], ">q", -7)  # the base offset is not covered by the CRC
    assert_problem(dump(path), path, starts[1], "negative base offset -7")
    patch(path, starts[1], ">q", 1)
    patch(path, starts[3], ">q", 2)  # batch 3 claims offset 2 again
    assert_problem(
        dump(path),
        path,
        starts[3],
        f"offsets not ascending: base offset 2 is not above 2, the last offset of the batch at byte {starts[2]}",
    )


def test_offsets_outside_the_segment(tmp_path):
    path = make_log(tmp_path)
    renamed = path.with_name("00000000000000000004.log")
    path.rename(renamed)
    assert_problem(dump(renamed), renamed, 0, "offsets 0..0 outside the segment")


def test_torn_tail_and_a_length_shorter_than_a_header(tmp_path):
    path = make_log(tmp_path)
    last = positions(path)[-1]
    data = path.read_bytes()
    path.write_bytes(data[:-5])
    assert_problem(
        dump(path), path, last, f"torn tail: batch declares {len(data) - last} bytes, {len(data) - last - 5} remain"
    )
    code, out, _ = dump(path, "--json")
    assert json.loads(out)["torn_tail"] == {
        "position": last,
        "bytes": len(data) - last - 5,
        "reason": f"batch declares {len(data) - last} bytes, {len(data) - last - 5} remain",
    }
    path.write_bytes(data)
    patch(path, last + 8, ">i", -3)
    assert_problem(dump(path), path, last, "batch declares 9 bytes, less than its 61-byte header")
    path.write_bytes(data + b"\x00" * 7)
    assert_problem(dump(path), path, len(data), "torn tail: partial batch header")


def test_records_that_do_not_decode(tmp_path):
    path = make_log(tmp_path)
    first = positions(path)[0]
    data = bytearray(path.read_bytes())
    data[first + 61] = 0x7F  # the first record's length varint: -64
    from crc32c import crc32c

    struct.pack_into(">I", data, first + 17, crc32c(bytes(data[first + 21 : first + 73])))
    path.write_bytes(bytes(data))
    assert_problem(dump(path), path, first, "records: batch at offset 0: record length")


# ------------------------------------------------------------------------------------ indexes


def test_index_entries_out_of_order_or_pointing_past_the_log(tmp_path):
    path = make_log(tmp_path)
    index = path.with_suffix(".index")
    sound = index.read_bytes()
    entries = list(struct.iter_unpack(">ii", sound))
    index.write_bytes(sound[8:16] + sound[:8] + sound[16:])
    assert_problem(dump(index), index, 8, f"out of order: offset {entries[0][0]}")
    index.write_bytes(sound[:16] + struct.pack(">ii", entries[2][0], 99_999) + sound[24:])
    assert_problem(dump(index), index, 16, "byte 99999 is past the end of the 453-byte log")
    index.write_bytes(sound[:8] + struct.pack(">ii", entries[1][0], entries[2][1]) + sound[16:])
    assert_problem(dump(index), index, 8, f"the batch there ends at offset {entries[2][0]}")
    index.write_bytes(sound + b"\x01\x02\x03")
    assert_problem(dump(index), index, len(sound), "3 trailing bytes: not a whole 8-byte entry")
    index.write_bytes(sound[:8] + struct.pack(">ii", -4, 0) + sound[16:])
    assert_problem(dump(index), index, 8, "negative relative offset -4")


def test_time_index_entries_out_of_order_or_pointing_past_the_log(tmp_path):
    path = make_log(tmp_path)
    time_index = path.with_suffix(".timeindex")
    sound = time_index.read_bytes()
    sound = sound[:24]
    (t0, o0), (t1, o1) = struct.iter_unpack(">qi", sound)
    time_index.write_bytes(sound[12:] + sound[:12])
    assert_problem(dump(time_index), time_index, 12, f"out of order: timestamp {t0} at offset {o0}")
    time_index.write_bytes(sound + struct.pack(">qi", t1 + 5, 40))
    assert_problem(dump(time_index), time_index, 24, "offset 40 is past the last batch of the log")
    time_index.write_bytes(sound[:12] + struct.pack(">qi", t1 + 5, o1))
    assert_problem(dump(time_index), time_index, 12, f"but the batch ending at offset {o1}")
    path.unlink()  # no log: entries are dumped unchecked
    time_index.write_bytes(sound)
    code, out, _ = dump(time_index)
    assert code == 0 and "not checked against the log" in out


# -------------------------------------------------------------------------------- checkpoints


def test_checkpoint_files_are_decoded(tmp_path):
    make_log(tmp_path)
    code, out, _ = dump(tmp_path / "leader-epoch-checkpoint", "--json")
    entries = json.loads(out)["entries"]
    assert code == 0 and [(e["epoch"], e["start_offset"]) for e in entries] == [(0, 0), (1, 3)]
    code, out, _ = dump(tmp_path / "recovery-point-offset-checkpoint")
    assert code == 0 and "recovery_point: 6" in out


@pytest.mark.parametrize(
    "name, text, position, words",
    [
        ("replication-offset-checkpoint", "0\n1\n-5\n", 4, "line 3: negative high_watermark"),
        ("replication-offset-checkpoint", "0\n2\n5\n", 6, "the count line says 2 entries, the file has 1"),
        ("replication-offset-checkpoint", "0\n2\n5\n6\n", 8, "2 entries: an offset checkpoint holds exactly one"),
        ("recovery-point-offset-checkpoint", "0\n1\n1_000\n", 4, "line 3 '1_000': expected recovery_point"),
        ("recovery-point-offset-checkpoint", "1\n1\n7\n", 0, "version line '1': expected 0"),
        ("recovery-point-offset-checkpoint", "0\nx\n7\n", 2, "count line 'x'"),
        ("recovery-point-offset-checkpoint", "", 0, "no version and count lines"),
        ("leader-epoch-checkpoint", "0\n2\n0 0\n1 -3\n", 8, "line 4: negative start_offset"),
        ("leader-epoch-checkpoint", "0\n2\n2 5\n1 9\n", 8, "epoch 1 from offset 9 after epoch 2 from offset 5"),
        ("leader-epoch-checkpoint", "0\n2\n0 5\n1 4\n", 8, "start offsets must not go down"),
        ("leader-epoch-checkpoint", "0\n1\n0 5 7\n", 4, "expected epoch start_offset as 2 integers"),
        ("leader-epoch-checkpoint", "0\n1\n0 99999999999999999999\n", 4, "expected epoch start_offset"),
        ("leader-epoch-checkpoint", "0\n1\n" + "7" * 300, 4, "line 3 is longer than 128 bytes"),
        ("leader-epoch-checkpoint", "0\n1\n\xff\xfe\n", 4, r"'\xff\xfe'"),
    ],
)
def test_malformed_checkpoints(tmp_path, name, text, position, words):
    path = tmp_path / name
    path.write_bytes(text.encode("latin-1"))
    assert_problem(dump(path), path, position, words)
    code, out, _ = dump(path, "--json")
    doc = json.loads(out)
    assert code == 1 and not doc["valid"] and doc["problems"][0]["position"] == position


# --------------------------------------------------------------------------------- bad input


def test_bad_paths_exit_2_with_a_message(tmp_path):
    code, _, err = dump(tmp_path / f"{NAME}.log")
    assert code == 2 and "cannot read" in err
    (tmp_path / "notes.txt").write_text("x")
    code, _, err = dump(tmp_path / "notes.txt")
    assert code == 2 and "not a segment file" in err and "Traceback" not in err
    (tmp_path / "sub" / f"{NAME}.index").mkdir(parents=True)
    code, _, err = dump(tmp_path / "sub" / f"{NAME}.index")
    assert code == 2 and "cannot read" in err


def test_help_documents_the_exit_codes():
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        main(["dump-log", "--help"])
    out = " ".join(out.getvalue().split())
    assert "0 the file is sound; 1 it is corrupt" in out and "2 the path is missing" in out
