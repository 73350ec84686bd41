"""A power loss played on a real directory: what was fsynced (or truncated, or renamed after an
fsync) stays, the rest of each file goes, a file never made durable disappears."""
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
    never.append(b"x" * 10)
    fs.write_file_atomically(str(data / "checkpoint"), b"0\n5\n")  # temp file fsynced, renamed
    cut = fs.open(str(data / "cut.log"))
    cut.append(b"c" * 30)
    cut.fsync()
    cut.truncate(10)
    for f in (log, never, cut):
        f.close()
    assert os.path.getsize(data / "00.log") == 150  # a process crash would keep it all

    lost = power_loss(str(data), journal)
    assert (data / "00.log").read_bytes() == b"a" * 100
    assert not (data / "never.tmp").exists()
    assert (data / "checkpoint").read_bytes() == b"0\n5\n"
    assert (data / "cut.log").read_bytes() == b"c" * 10
    assert lost == {str(data / "00.log"): 50, str(data / "never.tmp"): 10}
    assert durable_lengths(journal)[str(data / "checkpoint")] == 4


def test_a_journal_line_cut_by_the_kill_is_not_a_record(tmp_path):
    journal = tmp_path / "j"
    journal.write_text("durable\t/x/a\t7\ndurable\t/x/a\t9")  # the kill came mid-line
    assert durable_lengths(str(journal)) == {"/x/a": 7}
