"""The command-line front door: unknown commands and bad arguments exit 2 with a message, no traceback."""
import subprocess
import sys

from isrcheck.conformance.cli.main import COMMANDS, main


def test_unknown_command_exits_2(capsys):
    try:
        main(["no-such-command"])
    except SystemExit as exc:
        assert exc.code == 2
    err = capsys.readouterr().err
    assert "invalid choice" in err and "Traceback" not in err


def test_every_command_module_loads_and_has_help():
    for name in COMMANDS:
        proc = subprocess.run([sys.executable, "-m", "isrcheck.conformance.cli.main", name, "--help"],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, (name, proc.stderr)
        assert name in proc.stdout
