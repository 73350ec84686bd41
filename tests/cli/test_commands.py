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
        proc = subprocess.run(
            [sys.executable, "-m", "isrcheck.conformance.cli.main", name, "--help"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, (name, proc.stderr)
        assert name in proc.stdout


def test_every_command_lives_in_the_cli_room():
    """Each sub-command's arguments and printing are in conformance/cli/, one module per command;
    engines and impl hand it values (46.3: commands used to live in engines/*/command.py and impl/)."""
    where = {name: module for name, (module, _) in COMMANDS.items()}
    assert where == {name: f"isrcheck.conformance.cli.{name.replace('-', '_')}" for name in COMMANDS}


def _third_party_imports() -> dict[str, str]:
    """Every top-level module the installed packages import (at the top or inside a function),
    that is neither the standard library nor isrcheck's: module -> a file importing it."""
    import ast
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    folders = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    found = {}
    for folder in folders.values():
        for source in (root / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module]
                    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
                    else []
                )
                for name in names:
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names and top != "isrcheck":
                        found.setdefault(top, str(source.relative_to(root)))
    return found


def test_every_module_the_commands_import_comes_with_the_plain_install():
    """``pip install .`` (no extras) gives every command what it imports: a module is either
    the standard library's or a distribution of ``[project] dependencies``."""
    import re
    import tomllib
    from importlib.metadata import packages_distributions
    from pathlib import Path

    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]
    required = {re.split(r"[<>=!~\[ ;]", d)[0].lower().replace("_", "-") for d in project["dependencies"]}
    distributions = packages_distributions()
    imported = _third_party_imports()
    assert imported.pop("pytest") == "conformance/engines/pytest_plugin.py"  # loaded by pytest only
    missing = {
        module: where
        for module, where in imported.items()
        if not {d.lower().replace("_", "-") for d in distributions.get(module, [module])} & required
    }
    assert not missing, f"imported but only in an extra or nowhere: {missing}"


def test_version_prints_the_installed_version(isrcheck_cli):
    from importlib.metadata import version

    for flag in ("--version", "-V"):
        proc = isrcheck_cli(flag)
        assert proc.returncode == 0 and proc.stdout == f"isrcheck {version('isrcheck')}\n", proc


def test_no_command_lists_every_command_one_line_each(capsys):
    assert main([]) == 2
    out = capsys.readouterr().out
    lines = out.splitlines()
    for name, (_, help_text) in COMMANDS.items():
        assert sum(1 for line in lines if line.split()[:1] == [name]) == 1, name
        assert any(line.split()[:1] == [name] and help_text in line for line in lines), name
    assert "isrcheck COMMAND --help" in out and "Traceback" not in out
