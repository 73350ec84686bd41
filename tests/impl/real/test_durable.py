"""A power loss played on a real directory, as the simulated file system plays it: a file whose
directory entry no fsync of the directory made durable goes; the others keep their durable bytes
(an fsync, a truncation), plus what the page cache had written back."""

import os

from isrcheck.impl.real.durable import JournaledFileSystem, durable_lengths, power_loss


def test_a_power_loss_keeps_exactly_what_was_made_durable(tmp_path):
    data, journal = tmp_path / "d", str(tmp_path / "d.journal")
    data.mkdir()
    fs = JournaledFileSystem(journal)
    log = fs.open(str(data / "00.log"))
    log.append(b"a" * 100)
    log.fsync()
    log.append(b"b" * 50)  # in the page cache only
    never = fs.open(str(data / "never.tmp"))
    never.append(b"x" * 10)  # its entry becomes durable below, its bytes never
    cut = fs.open(str(data / "cut.log"))
    cut.append(b"c" * 30)
    cut.fsync()
    cut.truncate(10)
    fs.write_file_atomically(str(data / "checkpoint"), b"0\n5\n")  # temp fsynced, renamed, directory fsynced
    late = fs.open(str(data / "late.log"))  # created after the directory's last fsync
    late.append(b"z" * 5)
    late.fsync()
    torn = fs.open(str(data / "01.log"))
    torn.append(b"t" * 40)
    for f in (log, never, cut, late, torn):
        f.close()
    assert os.path.getsize(data / "00.log") == 150  # a process crash would keep it all

    lost = power_loss(str(data), journal, written_back={str(data / "01.log"): 15})
    assert (data / "00.log").read_bytes() == b"a" * 100
    assert (data / "never.tmp").read_bytes() == b""
    assert (data / "checkpoint").read_bytes() == b"0\n5\n"
    assert (data / "cut.log").read_bytes() == b"c" * 10
    assert not (data / "late.log").exists()
    assert (data / "01.log").read_bytes() == b"t" * 15  # written back up to a torn write
    assert lost == {
        str(data / "00.log"): 50,
        str(data / "never.tmp"): 10,
        str(data / "late.log"): 5,
        str(data / "01.log"): 25,
    }
    assert durable_lengths(journal)[str(data / "checkpoint")] == 4


def test_a_journal_line_cut_by_the_kill_is_not_a_record(tmp_path):
    journal = tmp_path / "j"
    journal.write_text("durable\t/x/a\t7\ndurable\t/x/a\t9")  # the kill came mid-line
    assert durable_lengths(str(journal)) == {"/x/a": 7}
