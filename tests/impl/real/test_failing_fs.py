"""The real runtime's failing disk (``impl/real/failing.py``): real files through the OS, with the
next write, fsync or read failing on command, once, as the simulated disk's do."""

import errno

import pytest

from isrcheck.impl.real.failing import FailingFileSystem
from isrcheck.impl.storage import Log, LogConfig, OsFileSystem, Record


def test_each_armed_operation_fails_once_with_its_errno_and_changes_nothing(tmp_path):
    fs = FailingFileSystem(OsFileSystem())
    path = str(tmp_path / "f")
    handle = fs.open(path)
    handle.append(b"abc")
    for operation, code, call in (
        ("write", errno.ENOSPC, lambda: handle.append(b"def")),
        ("fsync", errno.EIO, handle.fsync),
        ("read", errno.EIO, lambda: handle.read(0, 3)),
    ):
        fs.failures.fail_next(operation, code)
        with pytest.raises(OSError) as err:
            call()
        assert err.value.errno == code
        call()  # the next one works
    handle.close()
    assert (tmp_path / "f").read_bytes() == b"abcdef"
    with pytest.raises(ValueError, match="operation must be one of"):
        fs.failures.fail_next("truncate")


def test_a_log_on_a_failing_disk_raises_the_os_error_and_keeps_its_recovery_point(tmp_path):
    fs = FailingFileSystem(OsFileSystem())
    log = Log.open(str(tmp_path / "t-0"), LogConfig(), fs=fs)
    log.append_as_leader([Record(key=b"", value=b"1")], leader_epoch=0)
    log.flush()
    log.append_as_leader([Record(key=b"", value=b"2")], leader_epoch=0)
    fs.failures.fail_next("fsync")
    with pytest.raises(OSError):
        log.flush()
    assert log.recovery_point == 1  # a failed fsync never counts as durable
