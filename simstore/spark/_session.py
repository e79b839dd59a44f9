"""Starting a Spark session for simstore: quiet unless asked, sized for the input.

Spark's JVM writes to the stderr it was started with, before any log level can be set: log4j's
"default profile" lines, WARNs about the host name and the native-hadoop library, the JVM's own
"WARNING: Using incubator modules". ``start(quiet=True)`` gives the JVM a log4j2 configuration at
level ERROR (``spark.driver.extraJavaOptions``) and starts it with its stderr in a log file, so
nothing of it reaches the terminal; the Python workers' stderr goes there too (the JVM relays it).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import math
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from pyspark.sql import SparkSession

__all__ = ["RECORDS_PER_FILE", "RECORDS_PER_PARTITION", "fit", "output_files", "start"]

log = logging.getLogger("simstore")

RECORDS_PER_PARTITION = 25_000  # texts a shuffle partition is sized for (~1 CPU-second a stage)
RECORDS_PER_FILE = 50_000  # output records a file by default: two files per 100k records
LOG_CONF = "spark.simstore.log"  # where a quiet session's JVM writes (the path, in the SparkConf)

_LOG4J2 = """status = error
rootLogger.level = {level}
rootLogger.appenderRef.stderr.ref = stderr
appender.console.type = Console
appender.console.name = stderr
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{yy/MM/dd HH:mm:ss}} %p %c{{1}}: %m%n%ex
"""


JDBC_JARS = ("/usr/share/java/postgresql.jar",)  # Debian's libpostgresql-jdbc-java


def jdbc_jars() -> list[str]:
    """The JDBC driver jars installed where ``start`` looks for them."""
    return [jar for jar in JDBC_JARS if Path(jar).is_file()]


def start(
    master: str = "local[*]",
    *,
    quiet: bool = True,
    records: int | None = None,
    conf: Mapping[str, str] | None = None,
    app_name: str = "simstore",
    log_dir: Path | None = None,
) -> SparkSession:
    """A Spark session for ``dedup`` (an active one is returned as it is).

    ``quiet``: nothing of the JVM's on the terminal (its stderr goes to ``spark.log`` in
    ``log_dir``, the caller's to remove, else in a temporary folder removed when Python exits;
    the session's ``spark.simstore.log`` setting is its path; log4j at ERROR), no progress bar,
    no web UI. Local workers run this interpreter (the one simstore is installed in), adaptive
    query execution is on, and ``records`` (when known) sizes the shuffles (``fit``). ``conf``
    is passed to the builder last, so it wins."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    if master.startswith("local"):
        # PySpark's default for its workers is the first "python3" on PATH, often one without
        # simstore; local workers run this interpreter instead
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    settings = {
        "spark.sql.adaptive.enabled": "true",
        "spark.ui.showConsoleProgress": "false",
    }
    jars = jdbc_jars()  # a PostgreSQL store is then read by Spark's JDBC source (dedup store=)
    if jars:
        settings["spark.jars"] = ",".join(jars)
    builder = SparkSession.builder.master(master).appName(app_name)
    if not quiet:
        for name, value in {**settings, **(conf or {})}.items():
            builder = builder.config(name, value)
        session = builder.getOrCreate()
    else:
        folder = log_dir
        if folder is None:
            folder = Path(tempfile.mkdtemp(prefix="simstore-spark-"))
            atexit.register(shutil.rmtree, folder, ignore_errors=True)
        config = folder / "log4j2.properties"
        config.write_text(_LOG4J2.format(level="error"), encoding="utf-8")
        java = f"-Dlog4j2.configurationFile={config.as_uri()}"
        given = dict(conf or {})
        extra = given.pop("spark.driver.extraJavaOptions", "")
        settings |= {
            "spark.ui.enabled": "false",
            "spark.driver.extraJavaOptions": f"{java} {extra}".strip(),
            LOG_CONF: str(folder / "spark.log"),
        }
        for name, value in {**settings, **given}.items():
            builder = builder.config(name, value)
        with _stderr_to(folder / "spark.log"):
            session = builder.getOrCreate()
        session.sparkContext.setLogLevel("ERROR")
        log.info("simstore.spark: Spark's own log is %s", folder / "spark.log")
    if records is not None:
        fit(session, records)
    return session


@contextlib.contextmanager
def _stderr_to(path: Path) -> Iterator[None]:
    """File descriptor 2 pointed at ``path`` for a while: a process started meanwhile (the JVM)
    keeps writing its stderr there."""
    sys.stderr.flush()
    saved = os.dup(2)
    target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.dup2(target, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(target)


def fit(session: SparkSession, records: int) -> int:
    """Size the session's shuffles for ``records`` input rows: one partition per
    ``RECORDS_PER_PARTITION``, at least the default parallelism (Spark's 200 made a small
    input run hundreds of near-empty tasks). Returns the partition count set."""
    parallelism = max(1, session.sparkContext.defaultParallelism)
    partitions = max(parallelism, math.ceil(records / RECORDS_PER_PARTITION))
    session.conf.set("spark.sql.shuffle.partitions", str(partitions))
    return partitions


def output_files(records: int, files: int | None = None) -> int:
    """How many files ``records`` output rows are written in: ``files`` when given, else one per
    ``RECORDS_PER_FILE`` (at least one)."""
    if files is not None:
        return max(1, files)
    return max(1, math.ceil(records / RECORDS_PER_FILE))
