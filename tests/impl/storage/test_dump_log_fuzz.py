"""dump-log on random bytes and on random damage to a sound segment, index, time index and
checkpoints: always a clean report, in text and in JSON. Exit 0 with no problem, or exit 1 with every
problem at a byte position inside the file and a one-line summary naming the file on stderr; never a
traceback, never exit 2 for a file it could open."""

import contextlib
import io
import json
import os
import struct
import tempfile

from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from isrcheck.conformance.cli.main import main
from isrcheck.impl.storage import Log, LogConfig, Record

EXTREMES = [0, 1, -1, 60, 61, 2**31 - 1, -(2**31), 2**63 - 1, -(2**63)]


def _seed(compression):
    """The files of a sound log directory: two segments, several index entries, two epochs."""
    with tempfile.TemporaryDirectory() as directory:
        log = Log.open(directory, LogConfig(segment_bytes=700, index_interval_bytes=60, compression_type=compression))
        for i in range(12):
            records = [
                Record(
                    b"key-%d" % i,
                    b"v" * (i % 5),
                    timestamp_ms=1000 + i * (-1) ** i,
                    headers=(("h", b"x"),) if i % 3 == 0 else (),
                )
            ] * (1 + i % 3)
            log.append_as_leader(records, leader_epoch=i // 4)
        log.high_watermark = log.log_end_offset
        log.close()
        return {
            name: open(os.path.join(directory, name), "rb").read()
            for name in os.listdir(directory)
            if not name.startswith(".")
        }


SEEDS = [_seed("none"), _seed("gzip")]


@st.composite
def damaged_files(draw):
    """(the sound directory's files, the name of the one damaged, its damaged bytes)."""
    files = draw(st.sampled_from(SEEDS))
    logs = sorted(n for n in files if n.endswith(".log"))
    name = draw(st.sampled_from(sorted(files) + logs * 3))  # most checks are on .log files
    data = bytearray(files[name])
    for _ in range(draw(st.integers(1, 3))):
        how = draw(st.sampled_from(["random", "flip", "truncate", "insert", "integer"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if how == "random":
            data = bytearray(draw(st.binary(max_size=800)))
        elif how == "flip" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif how == "truncate":
            del data[at:]
        elif how == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=40))
        elif how == "integer":
            fmt = draw(st.sampled_from([">b", ">h", ">i", ">q"]))
            value = draw(st.sampled_from(EXTREMES) | st.integers(-300, 300))
            bits = struct.calcsize(fmt) * 8
            value = (value + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1)
            if at + struct.calcsize(fmt) <= len(data):
                struct.pack_into(fmt, data, at, value)
    if name.endswith(".log") and draw(st.booleans()):
        fix_crcs(data)  # let damaged records reach the record and gzip decoders
    return files, name, bytes(data)


def fix_crcs(data):
    position = 0
    while position + 61 <= len(data):
        size = 12 + struct.unpack_from(">i", data, position + 8)[0]
        if size < 61 or position + size > len(data):
            return
        struct.pack_into(">I", data, position + 17, crc32c(bytes(data[position + 21 : position + size])))
        position += size


def _dump(*args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["dump-log", *args])
    return code, out.getvalue(), err.getvalue()


@settings(max_examples=400, deadline=None, derandomize=True)
@given(damaged_files(), st.sampled_from(["5242880", "64"]))
def test_damaged_files_get_a_clean_report(case, max_message_size):
    files, name, data = case
    with tempfile.TemporaryDirectory() as directory:
        for other, content in files.items():
            with open(os.path.join(directory, other), "wb") as handle:
                handle.write(data if other == name else content)
        path = os.path.join(directory, name)
        code, text, err = _dump(path, "--max-message-size", max_message_size)
        json_code, out, json_err = _dump(path, "--json", "--max-message-size", max_message_size)
    assert code in (0, 1) and json_code == code and err == json_err, err
    doc = json.loads(out)
    assert doc["valid"] == (code == 0) and (doc["problem_count"] == 0) == (code == 0)
    assert all(0 <= p["position"] <= len(data) for p in doc["problems"])
    if code == 0:
        assert err == "" and "problem at byte" not in text
    else:
        assert err.startswith(f"isrcheck dump-log: {path}: ") and " at byte " in err and err.count("\n") == 1
        assert "problem at byte" in text
    assert "Traceback" not in text + err


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    st.sampled_from(
        [
            "00000000000000000000.log",
            "00000000000000000000.index",
            "00000000000000000000.timeindex",
            "leader-epoch-checkpoint",
            "replication-offset-checkpoint",
        ]
    ),
    st.binary(max_size=2000),
)
def test_random_bytes_get_a_clean_report(name, data):
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, name)
        with open(path, "wb") as handle:
            handle.write(data)
        code, text, err = _dump(path)
    assert code in (0, 1) and "Traceback" not in text + err
    assert (code == 1) == ("problem at byte" in text) == err.startswith(f"isrcheck dump-log: {path}: ")
