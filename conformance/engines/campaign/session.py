"""Starting Spark for a job (fuzz, guided fuzz, cover, the gate's engines): embedded local mode by
default, a cluster via --master, or the session spark-submit already configured. Java or Spark
problems become SparkUnavailable, bad input with a one-line reason instead of a JVM stack trace.
``JobSession`` is how every engine gets its session and gives it back."""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path

from isrcheck.conformance.vocabulary import UsageError

LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")


class SparkUnavailable(UsageError):
    """Spark cannot start (no Java, bad master URL, ...); the message says why (exit code 2)."""


def under_spark_submit() -> bool:
    """True when spark-submit launched this interpreter (it already owns the JVM and the master)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def find_java() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        return str(candidate) if candidate.exists() else None
    return shutil.which("java")


# Thread, failure and worker counts are at least 1: Spark refuses local[0] only once started.
_N = r"[1-9]\d{0,5}"
_HOST = r"[A-Za-z0-9._-]+|\[[0-9A-Fa-f:]+\]"
_MASTER = re.compile(
    rf"^(local(\[(\*|{_N})(,{_N})?\])?|local-cluster\[{_N},{_N},{_N}\]|yarn"
    rf"|spark://({_HOST})(:\d+)?(,({_HOST})(:\d+)?)*|k8s://\S+)$"
)
_PORT = re.compile(r":(\d+)(?=,|$)")


def check_master(master: str) -> None:
    """Reject a malformed master URL here: Spark would answer only after starting a JVM, with a
    stack trace."""
    bad_port = master.startswith("spark://") and any(not 1 <= int(port) <= 65535 for port in _PORT.findall(master))
    if bad_port or not _MASTER.match(master):
        raise SparkUnavailable(
            f"--master {master!r} is not a Spark master URL (local, local[N] or local[N,F] with "
            "N, F >= 1, local[*], spark://host:7077, yarn, k8s://https://host:443)"
        )


def start_spark(master: str | None, app_name: str = "isrcheck-fuzz", shuffle_partitions: int = 8):
    """A SparkSession with quiet logs, no UI and executors on this very Python interpreter."""
    if master:
        check_master(master)
    if not under_spark_submit():
        if find_java() is None:
            where = (
                f"JAVA_HOME={os.environ['JAVA_HOME']} has no bin/java"
                if os.environ.get("JAVA_HOME")
                else "no `java` on PATH and JAVA_HOME is not set"
            )
            raise SparkUnavailable(f"Spark needs Java 17 or newer: {where}")
    # Executors must run the same interpreter, so they import the isrcheck installed here.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    try:
        # pyspark: only when a session starts
        from pyspark.sql import SparkSession
    except ImportError as exc:
        raise SparkUnavailable(f"pyspark is not installed: {exc}") from None
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    elif not under_spark_submit():
        builder = builder.master("local[*]")
    builder = (
        builder.config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.python.worker.reuse", "true")
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={LOG4J_CONFIG}")
    )
    try:
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
    except Exception as exc:  # Py4J / PySpark errors carry JVM traces; keep the first line
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise SparkUnavailable(f"Spark did not start (master {master or 'local[*]'}): {first}") from None
    return spark


class JobSession:
    """The Spark session of one job: ``spark``, a session the caller owns (and stops), or else
    one started here for ``master`` (``start_spark``, app ``isrcheck-<app>``) on first ``get``
    and stopped when the ``with`` block ends. A malformed ``master`` is refused at once, before
    any work, unless ``lazy`` (a job that may never ask for Spark: the gate). After Ctrl-C the
    session started here is silenced before it stops: PySpark cancelled the job, and the late
    reports of its tasks are noise."""

    def __init__(self, app: str, master: str | None = None, spark=None, *, lazy: bool = False) -> None:
        self.app, self.master, self.session, self.owned = f"isrcheck-{app}", master, spark, spark is None
        if self.owned and master is not None and not lazy:
            check_master(master)

    def get(self):
        """The session, started on the first call."""
        if self.session is None:
            self.session = start_spark(self.master, app_name=self.app)
        return self.session

    def __enter__(self) -> "JobSession":
        return self

    def __exit__(self, kind, exc, tb) -> None:
        if self.owned and self.session is not None:
            if kind is not None and issubclass(kind, KeyboardInterrupt):
                self.session.sparkContext.setLogLevel("OFF")
            self.session.stop()
            self.session = None
