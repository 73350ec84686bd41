"""Fixtures shared by the whole suite: the scenario corpus and running isrcheck as a program.

Tests are laid out like the packages (tests/model, tests/impl/..., tests/conformance,
tests/campaign, tests/cli); a test that takes a ``scenario_file`` argument runs once per schedule
of ``specs/scenarios``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import isrcheck.specs

SCENARIO_DIR = Path(isrcheck.specs.__file__).parent / "scenarios"
SCENARIO_FILES = sorted(SCENARIO_DIR.glob("*.json"))


def pytest_generate_tests(metafunc):
    if "scenario_file" in metafunc.fixturenames:
        metafunc.parametrize("scenario_file", SCENARIO_FILES, ids=lambda p: p.stem)


@pytest.fixture(scope="session")
def scenario_files() -> list[Path]:
    """Every schedule of the shipped scenario corpus, by name."""
    return SCENARIO_FILES


@pytest.fixture(scope="session")
def scenario():
    """``scenario("kip101-scenario1")`` -> the path of that shipped schedule, as a string."""

    def path(name: str) -> str:
        found = SCENARIO_DIR / f"{name}.json"
        assert found.exists(), f"no scenario {name!r} in {SCENARIO_DIR}"
        return str(found)

    return path


@pytest.fixture(scope="session")
def faulty_sut() -> str:
    """The command line of tests/conformance/faulty_sut.py, a system under test that misbehaves on
    purpose: append ``MODE N [ONCE_FILE [STARTS_FILE]]`` (its docstring says what each does)."""
    return f"{sys.executable} {Path(__file__).parent / 'conformance' / 'faulty_sut.py'}"


@pytest.fixture(scope="session")
def isrcheck_cli():
    """Run ``isrcheck ARGS...`` as its own process: ``isrcheck_cli("check", path, hash_seed="7")``."""

    def run(*args, hash_seed: str | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
        env = dict(os.environ)
        if hash_seed is not None:
            env["PYTHONHASHSEED"] = hash_seed
        return subprocess.run(
            [sys.executable, "-m", "isrcheck.conformance.cli.main", *map(str, args)],
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
        )

    return run


@pytest.fixture(scope="session")
def isrcheck_serve():
    """Start ``isrcheck serve ARGS...`` as its own process, as a user does: (the process, its
    banner) once the banner's last line says it serves; its stdout stays open for the caller."""

    def start(*args) -> tuple[subprocess.Popen, str]:
        proc = subprocess.Popen(
            [sys.executable, "-m", "isrcheck.conformance.cli.main", "serve", *map(str, args)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        banner = []
        for line in proc.stdout:
            banner.append(line)
            if line.startswith("Stop with Ctrl-C"):
                break
        return proc, "".join(banner)

    return start


ARTIFACTS = Path(os.environ.get("ISRCHECK_TEST_ARTIFACTS", Path(__file__).resolve().parent.parent / "test-artifacts"))


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """Where tests leave files for people to look at (screenshots); ISRCHECK_TEST_ARTIFACTS
    overrides the default test-artifacts/ of the checkout."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


def _chromium() -> str | None:
    import shutil

    return next((p for p in (shutil.which("chromium"), shutil.which("chromium-browser")) if p), None)


@pytest.fixture
def browser():
    """A real headless Chromium (Debian's ``chromium``, driven by Playwright), one per test:
    Playwright's sync API keeps an event loop running in this thread while it is open, which
    would break every later ``asyncio.run`` of the worker (the real-socket tests). Skipped with the
    reason when it is absent, except in CI (CI=true), where .ci/run installs it: there a missing
    browser fails the test."""
    executable = _chromium()
    if executable is None:
        reason = "no chromium on PATH (Debian: apt-get install chromium)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason}; .ci/run installs it, so CI must have it")
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


@pytest.fixture
def open_page(browser):
    """``open_page(path)`` -> (page, errors): the file loaded in a fresh page, and every console
    error, uncaught page error and request for anything but the file itself."""
    pages = []

    def load(path: Path):
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on(
            "request",
            lambda r: (
                None
                if r.url.startswith(("file:", "data:"))
                else errors.append(f"not self-contained: requested {r.url}")
            ),
        )
        page.goto(Path(path).resolve().as_uri(), wait_until="load")
        pages.append(page)
        return page, errors

    yield load
    for page in pages:
        page.close()


@pytest.fixture(scope="module")
def spark():
    """An embedded Spark session on two local cores, one per test module (its start-up is seconds)."""
    from isrcheck.conformance.engines.campaign import start_spark  # Spark loads only where a test asks

    session = start_spark("local[2]")
    yield session
    session.stop()
