"""isrcheck dump-log prints batches, records and index entries; flags corruption with exit 1."""
import json

from isrcheck.conformance.cli import main
from isrcheck.impl.storage import Log, LogConfig, Record


def make_log(tmp_path):
    log = Log.open(str(tmp_path), LogConfig(index_interval_bytes=50))
    for i in range(6):
        log.append_as_leader([Record(b"key-%d" % i, b"v" * i)], leader_epoch=i // 3)
    log.close()
    return tmp_path / "00000000000000000000.log"


def test_text_dump_lists_every_batch_and_record(tmp_path, capsys):
    path = make_log(tmp_path)
    assert main(["dump-log", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.count("baseOffset:") == 6 and out.count("| offset:") == 6
    assert "partitionLeaderEpoch: 1" in out and "isvalid: true" in out and "key: key-5" in out


def test_json_dump_of_log_and_indexes(tmp_path, capsys):
    path = make_log(tmp_path)
    assert main(["dump-log", str(path), "--json"]) == 0
    dump = json.loads(capsys.readouterr().out)
    assert [b["base_offset"] for b in dump["batches"]] == list(range(6))
    assert [b["partition_leader_epoch"] for b in dump["batches"]] == [0, 0, 0, 1, 1, 1]
    assert dump["batches"][4]["records"][0]["value_size"] == 4 and dump["valid"]
    positions = {b["base_offset"]: b["position"] for b in dump["batches"]}
    assert main(["dump-log", str(path.with_suffix(".index")), "--json"]) == 0
    index = json.loads(capsys.readouterr().out)
    assert index["entries"] and all(positions[e["offset"]] == e["position"] for e in index["entries"])
    assert main(["dump-log", str(path.with_suffix(".timeindex"))]) == 0
    assert "timestamp:" in capsys.readouterr().out


def test_corrupt_and_torn_files_exit_1(tmp_path, capsys):
    path = make_log(tmp_path)
    data = bytearray(path.read_bytes())
    data[70] ^= 0xFF
    path.write_bytes(bytes(data[:-5]))
    assert main(["dump-log", str(path), "--json"]) == 1
    dump = json.loads(capsys.readouterr().out)
    assert dump["batches"][0]["crc_valid"] is False and dump["torn_tail"]["bytes"] > 0


def test_bad_paths_exit_2_with_a_message(tmp_path, capsys):
    assert main(["dump-log", str(tmp_path / "00000000000000000000.log")]) == 2
    assert "cannot read" in capsys.readouterr().err
    (tmp_path / "notes.txt").write_text("x")
    assert main(["dump-log", str(tmp_path / "notes.txt")]) == 2
    err = capsys.readouterr().err
    assert "not a segment file" in err and "Traceback" not in err


def test_checkpoint_files_are_decoded(tmp_path, capsys):
    make_log(tmp_path)
    assert main(["dump-log", str(tmp_path / "leader-epoch-checkpoint"), "--json"]) == 0
    dump = json.loads(capsys.readouterr().out)
    assert dump["entries"] == [{"epoch": 0, "start_offset": 0}, {"epoch": 1, "start_offset": 3}]
    assert main(["dump-log", str(tmp_path / "recovery-point-offset-checkpoint")]) == 0
    assert "recovery_point: 6" in capsys.readouterr().out
    (tmp_path / "replication-offset-checkpoint").write_text("0\n2\n5\n")
    assert main(["dump-log", str(tmp_path / "replication-offset-checkpoint")]) == 1
    assert "malformed" in capsys.readouterr().out
