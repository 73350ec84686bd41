"""``[tool.isrcheck.gate]``: what a release gate replays and runs, read from pyproject.toml.

    [tool.isrcheck.gate]
    protocols = ["kip-320"]          # corpus expectations checked on these (default: every variant)
    corpus = ["tests/corpus"]        # the project's own corpus folders (each must exist); new failures go to the first
    scenarios = true                 # also replay the shipped specs/scenarios (default true)
    master = "local[1]"              # Spark master for the Spark engines (default local[*])
    shrink_seconds = 10              # per new failure

    [tool.isrcheck.gate.explore]     # an engine runs when its table is present
    protocols = ["kip-320"]          # default: the gate's protocols
    max_records = 1                  # explorer scope (isrcheck explore's bounds) and cluster config

    [tool.isrcheck.gate.fuzz]
    schedules = 200                  # and/or seconds = 120: the budget
    steps = 60

Paths are relative to the file's folder. Every mistake is a ConfigError naming its key
(``[tool.isrcheck.gate.fuzz].schedules: ...``); the command turns it into exit 2.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from isrcheck.conformance.core.schedule import PROTOCOLS
from isrcheck.conformance.vocabulary import read_text
from isrcheck.specs import __file__ as _specs_file

TABLE = "tool.isrcheck.gate"
SHIPPED_SCENARIOS = Path(_specs_file).parent / "scenarios"
_TOP = ("protocols", "corpus", "scenarios", "master", "shrink_seconds")


class ConfigError(ValueError):
    """A gate config that cannot run; the message names the file and key."""


@dataclass(frozen=True)
class GateConfig:
    source: Path
    protocols: tuple[str, ...] = PROTOCOLS
    corpus: tuple[Path, ...] = ()  # the project's own folders (the first receives new failures)
    scenarios: bool = True
    master: str | None = None
    shrink_seconds: float = 10.0
    engines: dict[str, dict] = field(default_factory=dict)  # engine name -> its table (as written)

    @property
    def folders(self) -> tuple[Path, ...]:
        """Every corpus folder replayed, shipped scenarios first."""
        return ((SHIPPED_SCENARIOS,) if self.scenarios else ()) + self.corpus

    @property
    def save_to(self) -> Path | None:
        return self.corpus[0] if self.corpus else None

    def engine_protocols(self, name: str) -> tuple[str, ...]:
        return tuple(self.engines[name].get("protocols", self.protocols))

    def engine_options(self, name: str) -> dict:
        return {k: v for k, v in self.engines[name].items() if k != "protocols"}


def _protocols(value, where: str) -> tuple[str, ...]:
    if not (isinstance(value, list) and value and all(isinstance(p, str) for p in value)):
        raise ConfigError(f"{where}: expected a non-empty list of protocol names, got {value!r}")
    for p in value:
        if p not in PROTOCOLS:
            raise ConfigError(f"{where}: unknown protocol {p!r} (known: {', '.join(PROTOCOLS)})")
    return tuple(dict.fromkeys(value))


def load_gate_config(path: str | Path, engines: tuple[str, ...]) -> GateConfig:
    """Read ``path``'s ``[tool.isrcheck.gate]``; ``engines`` are the engine tables it may hold."""
    path = Path(path)
    text = read_text(path, "a gate config file", error=ConfigError)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    table = data
    for key in TABLE.split("."):
        table = table.get(key) if isinstance(table, dict) else None
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: no [{TABLE}] table")
    where = f"{path}: [{TABLE}]"
    for key in sorted(table):
        if key not in _TOP and key not in engines:
            raise ConfigError(f"{where}.{key}: unknown key (known: {', '.join(_TOP + engines)})")
    base = path.parent
    protocols = _protocols(table["protocols"], f"{where}.protocols") if "protocols" in table else PROTOCOLS
    corpus = table.get("corpus", [])
    if not (isinstance(corpus, list) and all(isinstance(c, str) and c for c in corpus)):
        raise ConfigError(f"{where}.corpus: expected a list of folder names, got {corpus!r}")
    folders = tuple(base / c for c in corpus)
    for name, folder in zip(corpus, folders):  # a folder that is not there would replay nothing, silently
        if folder.exists() and not folder.is_dir():
            raise ConfigError(f"{where}.corpus: {name} is not a folder")
        if not folder.is_dir():
            raise ConfigError(f"{where}.corpus: folder {name} does not exist (create it, or remove it from corpus)")
    scenarios = table.get("scenarios", True)
    if not isinstance(scenarios, bool):
        raise ConfigError(f"{where}.scenarios: expected true or false, got {scenarios!r}")
    master = table.get("master")
    if master is not None and not (isinstance(master, str) and master):
        raise ConfigError(f"{where}.master: expected a Spark master URL, got {master!r}")
    shrink = table.get("shrink_seconds", 10.0)
    if isinstance(shrink, bool) or not isinstance(shrink, (int, float)) or not 0.001 <= shrink <= 86_400:
        raise ConfigError(f"{where}.shrink_seconds: expected a number of seconds 0.001..86,400, got {shrink!r}")
    tables = {}
    for name in engines:
        if name in table:
            sub = table[name]
            if not isinstance(sub, dict):
                raise ConfigError(f"{where}.{name}: expected a table [{TABLE}.{name}], got {sub!r}")
            if "protocols" in sub:
                _protocols(sub["protocols"], f"{path}: [{TABLE}.{name}].protocols")
            tables[name] = dict(sub)
    return GateConfig(path, protocols, folders, scenarios, master, float(shrink), tables)
