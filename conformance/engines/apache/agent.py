"""isrcheck's event recorder for Apache Kafka: a Java agent, built once from the project's own files.

``agent_jar(say=...) -> Path`` is what every command that records a Kafka run calls. The agent's
source is ``jvm/agent/`` (its own ``pom.xml``, the Java files under ``src/``); it is built with
``mvn package`` into the cache (``<cache>/agent/<hash>/isrcheck-kafka-agent.jar``, the cache of
``distribution.cache_root``), where ``<hash>`` is that of the pom and every source file: an edited
source builds anew, an unchanged one never again. As for Kafka's jars, the build runs under a file
lock into a temporary folder renamed when complete, so runs at once build once and a build cut short
leaves nothing half done. Every failure is an ``AgentBuildError`` (a usage error, exit 2) naming what
is wrong: Maven missing, the registry unreachable (ByteBuddy comes from Maven Central), a compile error.

The agent is started with ``-javaagent:JAR=EVENT_FILE`` and the system properties
``isrcheck.events.node`` (the node's id) and ``isrcheck.events.origin_ns`` (the run's origin on the
host's monotonic clock, ``time.monotonic_ns()``; Java's ``System.nanoTime`` reads the same clock):
``jvm_options``. What it records is in docs/validate.md ("Apache Kafka's own events").
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

from isrcheck.conformance.engines.apache.distribution import _maven_failure, cache_root, locked_folder
from isrcheck.conformance.vocabulary import UsageError

JAR = "isrcheck-kafka-agent.jar"
BUILD_TIMEOUT_S = 900


class AgentBuildError(UsageError):
    """The agent cannot be built: the message says why and what to do (exit 2)."""


def agent_source() -> Path:
    """The folder of the agent's Maven project (``jvm/agent``)."""
    return Path(str(resources.files("isrcheck.jvm") / "agent"))


def _sources(root: Path) -> list[Path]:
    if not (root / "pom.xml").is_file():
        raise AgentBuildError(f"the agent's source is missing: no {root / 'pom.xml'} (a broken install of isrcheck)")
    return [root / "pom.xml", *sorted((root / "src").rglob("*.java"))]


def source_hash(root: Path | None = None) -> str:
    """A short hash of the agent's pom and sources: the cache folder of their build."""
    root = root or agent_source()
    digest = hashlib.sha256()
    for path in _sources(root):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def cached_jar() -> Path | None:
    """The built agent for the current sources, if the cache has it."""
    jar = cache_root() / "agent" / source_hash() / JAR
    return jar if jar.is_file() else None


def agent_jar(say=lambda line: None) -> Path:
    """The agent's jar for the current sources, built once (see the module docstring)."""
    root = agent_source()
    folder = cache_root() / "agent" / source_hash(root)
    jar = folder / JAR
    if jar.is_file():
        return jar
    maven = shutil.which("mvn")
    if maven is None:
        raise AgentBuildError(
            "Maven (mvn) is not installed, and the event recorder for Apache Kafka is built with "
            "it: install it (Debian: apt-get install maven)"
        )
    with locked_folder(folder, AgentBuildError, "the agent's cache"):  # another run may be building it
        if jar.is_file():
            return jar
        say(f"building the event recorder for Apache Kafka (a Java agent) into {folder} (once)")
        partial = Path(tempfile.mkdtemp(prefix="build.partial.", dir=folder))
        try:
            proc = subprocess.run(
                [maven, "-B", "-q", "-f", str(root / "pom.xml"), "package", f"-DbuildDirectory={partial}"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=BUILD_TIMEOUT_S,
            )
            built = partial / JAR
            if proc.returncode != 0 or not built.is_file():
                detail = _maven_failure("(agent)", proc.stdout + proc.stderr).replace(
                    "Maven failed to fetch Apache Kafka (agent)", "Maven failed"
                )
                raise AgentBuildError(f"the event recorder for Apache Kafka did not build: {detail}")
            built.rename(folder / (JAR + ".partial"))
            (folder / (JAR + ".partial")).rename(jar)
        except subprocess.TimeoutExpired:
            raise AgentBuildError(
                f"Maven did not build the event recorder within {BUILD_TIMEOUT_S} s: is Maven Central reachable?"
            ) from None
        finally:
            shutil.rmtree(partial, ignore_errors=True)
    return jar


def jvm_options(jar: Path, event_file: Path, node: int, origin_ns: int) -> tuple[str, ...]:
    """The JVM options that record a node's events into ``event_file``."""
    return (
        f"-javaagent:{jar}={event_file}",
        f"-Disrcheck.events.node={node}",
        f"-Disrcheck.events.origin_ns={origin_ns}",
    )


__all__ = ["AgentBuildError", "JAR", "agent_jar", "agent_source", "cached_jar", "jvm_options", "source_hash"]
