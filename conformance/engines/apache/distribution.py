"""Apache Kafka's jars, fetched once: a release from Maven Central, or a distribution a user has.

``distribution(version=None, home=None) -> Distribution`` is what every command calls:

* ``home`` (``--kafka-home DIR``, or ``$ISRCHECK_KAFKA_HOME``): a Kafka distribution already on
  this machine, its ``libs/`` used as it is; no Maven involved. Its version is read off the
  ``kafka_2.13-X.jar`` it holds.
* otherwise the release ``version`` (default ``DEFAULT_VERSION``) from the cache
  (``$ISRCHECK_KAFKA_CACHE``, else ``$XDG_CACHE_HOME/isrcheck/kafka``, else
  ``~/.cache/isrcheck/kafka``), ``<cache>/<version>/libs``. A version not in the cache yet is
  fetched with Maven from the project's own ``jvm/pom.xml`` (``mvn dependency:copy-dependencies``),
  into a temporary folder renamed into place when complete, under a file lock: two runs fetching
  the same version at once fetch it once, and a fetch cut short leaves no half cache behind.

Every failure is a ``KafkaDistributionError`` (a usage error, exit 2) naming what is wrong and what
to do: a version that is not 4.x, one Maven Central does not serve, Maven missing or the registry
unreachable, no Java 17, a ``--kafka-home`` without Kafka's jars.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from isrcheck.conformance.vocabulary import UsageError

DEFAULT_VERSION = "4.4.0"
# the newest 4.0.x Maven Central serves (ELR off by default) and the newest 4.x (ELR on by default)
TESTED_VERSIONS = ("4.0.2", "4.4.0")
JAVA_MAJOR = 17  # Kafka 4's brokers and controllers need Java 17
_VERSION = re.compile(r"^4\.\d{1,3}\.\d{1,3}$")
_CORE_JAR = re.compile(r"^kafka_2\.13-(\d+\.\d+\.\d+)\.jar$")
MAVEN_TIMEOUT_S = 900


class KafkaDistributionError(UsageError):
    """Kafka's jars cannot be had: the message says why and what to do (exit 2)."""


@dataclass(frozen=True)
class Distribution:
    """A Kafka release's class path: ``libs`` holds every jar a KRaft node needs."""

    version: str
    libs: Path

    @property
    def classpath(self) -> str:
        return str(self.libs / "*")

    def java(self, main: str, *args: str, jvm: tuple[str, ...] = ()) -> list[str]:
        """The command line that runs ``main`` of this release with ``args``."""
        return [java_binary(), *jvm, "-cp", self.classpath, main, *args]

    def default_elr(self) -> bool:
        """Whether a cluster formatted without a feature level has Eligible Leader Replicas (KIP-966:
        on for new clusters from 4.1)."""
        major, minor, _ = (int(x) for x in self.version.split("."))
        return (major, minor) >= (4, 1)


def cache_root() -> Path:
    if os.environ.get("ISRCHECK_KAFKA_CACHE"):
        return Path(os.environ["ISRCHECK_KAFKA_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "isrcheck" / "kafka"


def check_version(version: str) -> str:
    if not _VERSION.match(version):
        raise KafkaDistributionError(
            f"Kafka version {version!r}: isrcheck runs Apache Kafka 4.x in KRaft mode, written as 4.MINOR.PATCH "
            f"(tested: {', '.join(TESTED_VERSIONS)})"
        )
    return version


def distribution(
    version: str | None = None, home: str | None = None, fetch: bool = True, say=lambda line: None
) -> Distribution:
    """The jars of ``home`` (a distribution's folder) or of release ``version`` (cached, fetched if
    ``fetch``); see the module docstring."""
    home = home or os.environ.get("ISRCHECK_KAFKA_HOME") or None
    check_java()
    if home is not None:
        return _from_home(Path(home), version)
    version = check_version(version or DEFAULT_VERSION)
    libs = cache_root() / version / "libs"
    if _complete(libs):
        return Distribution(version, libs)
    if not fetch:
        raise KafkaDistributionError(
            f"Apache Kafka {version} is not in the cache ({libs}): "
            f"fetch it with `isrcheck kafka --fetch --kafka-version {version}`"
        )
    return _fetch(version, libs, say)


def _from_home(home: Path, version: str | None) -> Distribution:
    libs = home / "libs"
    found = [m.group(1) for m in map(_CORE_JAR.match, os.listdir(libs)) if m] if libs.is_dir() else []
    if not found:
        raise KafkaDistributionError(
            f"--kafka-home {home}: no libs/kafka_2.13-VERSION.jar there; give the folder "
            f"of an Apache Kafka 4.x distribution (the one holding bin/ and libs/)"
        )
    if version is not None and version not in found:
        raise KafkaDistributionError(
            f"--kafka-home {home} holds Kafka {found[0]}, not {version}: "
            f"drop --kafka-version or give a distribution of {version}"
        )
    return Distribution(check_version(found[0]), libs)


def _complete(libs: Path) -> bool:
    return (libs / ".complete").is_file()


@contextlib.contextmanager
def locked_folder(folder: Path, error: type, what: str):
    """``folder`` of the cache, created, held under its file lock (another run may be filling it); ``error``
    (naming ``what``) if it cannot be created."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise error(
            f"{what} {folder} cannot be created ({exc.strerror}): set ISRCHECK_KAFKA_CACHE to a writable folder"
        ) from None
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield folder


def _fetch(version: str, libs: Path, say) -> Distribution:
    maven = shutil.which("mvn")
    if maven is None:
        raise KafkaDistributionError(
            "Maven (mvn) is not installed: install it (Debian: apt-get install maven), "
            "or give --kafka-home DIR of an Apache Kafka distribution"
        )
    folder = libs.parent
    with locked_folder(folder, KafkaDistributionError, "the Kafka cache"):  # another run may fetch it too
        if _complete(libs):
            return Distribution(version, libs)
        say(f"fetching Apache Kafka {version}'s jars from Maven Central into {libs} (once)")
        partial = Path(tempfile.mkdtemp(prefix="libs.partial.", dir=folder))
        try:
            pom = resources.files("isrcheck.jvm") / "pom.xml"
            with resources.as_file(pom) as pom_path:
                proc = subprocess.run(
                    [
                        maven,
                        "-B",
                        "-q",
                        "-f",
                        str(pom_path),
                        "dependency:copy-dependencies",
                        f"-Dkafka.version={version}",
                        f"-DoutputDirectory={partial}",
                    ],
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    text=True,
                    errors="replace",
                    timeout=MAVEN_TIMEOUT_S,
                )
            if proc.returncode != 0:
                raise KafkaDistributionError(_maven_failure(version, proc.stdout + proc.stderr))
            (partial / ".complete").write_text(f"Apache Kafka {version}\n")
            shutil.rmtree(libs, ignore_errors=True)  # only ever a folder this module made
            partial.rename(libs)
        except subprocess.TimeoutExpired:
            raise KafkaDistributionError(
                f"Maven did not fetch Apache Kafka {version} within {MAVEN_TIMEOUT_S} s: is Maven Central reachable?"
            ) from None
        finally:
            shutil.rmtree(partial, ignore_errors=True)
    return Distribution(version, libs)


def _maven_failure(version: str, output: str) -> str:
    """One line saying why Maven failed, from its output."""
    output = re.sub(r"\x1b\[[0-9;]*m", "", output)  # Maven's colours
    lines = [line.strip() for line in output.splitlines() if "[ERROR]" in line and line.strip() != "[ERROR]"]
    detail = lines[0].replace("[ERROR] ", "") if lines else (output.strip().splitlines() or ["no output"])[-1]
    if len(detail) > 300:
        detail = detail[:297] + "..."
    if re.search(
        r"org\.apache\.kafka:kafka_2\.13:(jar|pom):" + re.escape(version) + r" was not found", output
    ) or re.search(
        r"(Could not find artifact|Failure to find) org\.apache\.kafka:kafka_2\.13:(jar|pom):" + re.escape(version),
        output,
    ):
        return (
            f"Apache Kafka {version} is not served by Maven Central (org.apache.kafka:kafka_2.13:{version} "
            f"not found): choose a released 4.x version, e.g. {DEFAULT_VERSION}"
        )
    if re.search(r"Could not transfer|Unknown host|Connection refused|timed out|Network is unreachable", output):
        return (
            f"Maven could not reach its registry to fetch Apache Kafka {version} ({detail}): check the network "
            f"or Maven's settings, or give --kafka-home DIR of a Kafka distribution"
        )
    return f"Maven failed to fetch Apache Kafka {version}: {detail}"


def java_binary() -> str:
    home = os.environ.get("JAVA_HOME")
    candidate = os.path.join(home, "bin", "java") if home else shutil.which("java")
    if not candidate or not os.access(candidate, os.X_OK):
        raise KafkaDistributionError(
            f"Java {JAVA_MAJOR} is not installed (no java on PATH or in JAVA_HOME): "
            f"Apache Kafka 4 needs Java {JAVA_MAJOR} or newer"
        )
    return candidate


def check_java() -> None:
    """KafkaDistributionError unless ``java`` is Java 17 or newer."""
    out = subprocess.run([java_binary(), "-version"], capture_output=True, text=True, errors="replace").stderr
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    major = int(match.group(1)) if match else 0
    major = int(match.group(2) or 0) if major == 1 else major  # "1.8.0": Java 8
    if major < JAVA_MAJOR:
        raise KafkaDistributionError(
            f"{java_binary()} is Java {major or 'of an unknown version'}: Apache Kafka 4 "
            f"needs Java {JAVA_MAJOR} or newer (set JAVA_HOME)"
        )


__all__ = [
    "DEFAULT_VERSION",
    "TESTED_VERSIONS",
    "Distribution",
    "KafkaDistributionError",
    "cache_root",
    "check_version",
    "distribution",
    "java_binary",
]
