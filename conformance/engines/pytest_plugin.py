"""pytest plugin (entry point ``pytest11``): isrcheck schedule files as test items.

Every ``*.json`` file is collected when pytest walks a folder named by the ini option
``isrcheck_corpus`` (``pytest specs/scenarios``), or anywhere with ``--isrcheck``, as the gate
replays every file of its corpus: a schedule gives one item per protocol it expects a verdict on
(``kip101-scenario1.json::hw-truncation``), or one item on its own protocol expecting no failure
when it states none; a file that is not a schedule (``format`` may be left out, so none is told
apart by it) gives one failing item, ``invalid``, naming why. None is skipped. A failure names the
step, the violated property in words or the model/implementation diff, and the command that
replays it. Items are plain functions of their file, so ``-n auto`` (pytest-xdist) works.
"""

from __future__ import annotations

from pathlib import Path

import pytest


def pytest_addoption(parser) -> None:
    group = parser.getgroup("isrcheck")
    group.addoption(
        "--isrcheck",
        action="store_true",
        default=False,
        help="collect isrcheck schedule files (*.json) as tests with their expected verdicts",
    )
    parser.addini(
        "isrcheck_corpus", type="paths", default=[], help="folders whose isrcheck schedule files are collected as tests"
    )


def _wanted(file_path: Path, config) -> bool:
    if config.getoption("isrcheck"):
        return True
    here = file_path.resolve()
    return any(here.is_relative_to(Path(folder).resolve()) for folder in config.getini("isrcheck_corpus"))


def pytest_collect_file(file_path: Path, parent):
    if file_path.suffix != ".json" or not _wanted(file_path, parent.config):
        return None
    return ScheduleFile.from_parent(parent, path=file_path)


class ScheduleFile(pytest.File):
    def collect(self):
        # every pytest run loads this plugin: the harness only when a schedule is collected
        from isrcheck.conformance.core.schedule import Expected, ScheduleError, load_schedule

        try:
            schedule = load_schedule(self.path)
        except ScheduleError as exc:
            yield BadSchedule.from_parent(self, name="invalid", message=str(exc))
            return
        expected = dict(schedule.expected) or {schedule.protocol: Expected("pass")}
        for protocol in sorted(expected):
            yield ScheduleItem.from_parent(self, name=protocol, protocol=protocol, expected=expected[protocol])


class BadSchedule(pytest.Item):
    def __init__(self, *, message: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.message = message

    def runtest(self) -> None:
        raise ScheduleFailure(self.message)

    def repr_failure(self, excinfo, style=None):
        return str(excinfo.value)

    def reportinfo(self):
        return self.path, None, f"{self.path.name}: invalid schedule"


class ScheduleFailure(Exception):
    """A schedule that did not give its expected verdict (the message says how)."""


class ScheduleItem(pytest.Item):
    def __init__(self, *, protocol: str, expected, **kwargs) -> None:
        super().__init__(**kwargs)
        self.protocol, self.expected = protocol, expected

    def runtest(self) -> None:
        # every pytest run loads this plugin: the harness only when a schedule runs
        from isrcheck.conformance.core.lockstep import run_schedule
        from isrcheck.conformance.core.schedule import load_schedule

        schedule = load_schedule(self.path).with_protocol(self.protocol)
        verdict = run_schedule(schedule)
        if not self.expected.matches(verdict):
            raise ScheduleFailure(self._explain(schedule, verdict))

    def _explain(self, schedule, verdict) -> str:
        # every pytest run loads this plugin: the specs only to explain a failure
        from isrcheck.specs import BY_ID

        want = self.expected.summary()
        lines = [f"{self.path.name} [{self.protocol}]: expected {want}, got {verdict.summary()}"]
        if verdict.step is not None and verdict.step < len(schedule.steps):
            lines.append(f"step {verdict.step}: {schedule.steps[verdict.step]}")
        if verdict.property in BY_ID:
            lines.append(f"{verdict.property}: {BY_ID[verdict.property].statement}")
        if verdict.diff:
            lines.append(verdict.diff)
        lines.append(f"replay: isrcheck check {self.path} --protocol {self.protocol} --expected")
        return "\n".join(lines)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, ScheduleFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, f"{self.path.name} [{self.protocol}]"
