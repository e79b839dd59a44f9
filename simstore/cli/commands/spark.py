"""``spark dedup``: a corpus deduplicated on Apache Spark by ``simstore.spark.dedup``."""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import tempfile
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import click

from simstore.cli._app import Settings, main, open_store, requested_policy
from simstore.cli._spark_progress import SparkProgress
from simstore.cli.output import emit, pairs
from simstore.errors import InvalidInput
from simstore.policy.policies import DEFAULT_POLICY

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from simstore.store import SimStore

SPARK_FORMATS = ("jsonl", "csv", "parquet")
ORDER = "__simstore_order"  # the read order, when no --order column is given
BYTES_PER_RECORD = 600  # an input record's size, to size the shuffles before anything is read


@main.group()
def spark() -> None:
    """Batch dedup on Apache Spark (needs: pip install 'simstore[spark]').

    The decisions are exactly those of 'simstore ingest' adding the records in input order to an
    empty namespace with the same preset and policy.
    """


def _format_of(path: str, given: str | None) -> str:
    if given:
        return given
    name = path.rstrip("/").lower()
    for suffix, kind in ((".jsonl", "jsonl"), (".json", "jsonl"), (".csv", "csv")):
        if name.endswith(suffix):
            return kind
    if name.endswith(".parquet") or Path(path).is_dir():
        return "parquet"
    raise InvalidInput(f"cannot tell the format of {path!r}: give --format")


def _read(session: SparkSession, path: str, kind: str) -> DataFrame:
    if kind == "jsonl":
        return session.read.json(path)
    if kind == "csv":
        return session.read.option("header", True).option("multiLine", True).csv(path)
    return session.read.parquet(path)


def _write(
    frame: DataFrame, path: str, kind: str, files: int, order: str | None = None, drop: bool = True
) -> None:
    """``frame`` written to ``path`` in ``files`` files; by ``order`` when given (the first
    file holds the first records, each file sorted; the column written only if not ``drop``)."""
    if order is None:
        frame = frame.repartition(files) if files > 1 else frame.coalesce(1)
    else:
        ranged = frame.repartitionByRange(files, order) if files > 1 else frame.repartition(1)
        frame = ranged.sortWithinPartitions(order)
        if drop:
            frame = frame.drop(order)
    writer = frame.write.mode("errorifexists")
    if kind == "jsonl":
        writer.json(path)
    elif kind == "csv":
        writer.option("header", True).csv(path)
    else:
        writer.parquet(path)


def _records_in(path: str) -> int:
    """About how many records the input holds, from its bytes (a folder's files summed), to
    size the shuffles before anything is read."""
    where = Path(path)
    files = [item for item in where.rglob("*") if item.is_file()] if where.is_dir() else [where]
    return sum(item.stat().st_size for item in files if item.exists()) // BYTES_PER_RECORD


def _write_decided(
    frame: DataFrame,
    result: DataFrame,
    key: str,
    order: str,
    paths: tuple[str, str | None],
    kind: str,
    files: tuple[int, int],
) -> None:
    """The kept records of ``frame`` to ``out`` (its own columns) in ``files[0]`` files; the
    duplicates' decisions to ``dups`` when given, in ``files[1]``; both in input order."""
    from pyspark.sql import functions as F

    from simstore.spark import RESULT_COLUMNS

    out, dups = paths
    verdicts = result.select(*RESULT_COLUMNS).withColumnRenamed("key", key)
    decided = frame.join(verdicts, key)
    kept = decided.filter(F.col("kept")).select(*frame.columns)
    _write(kept, out, kind, files[0], order, drop=order == ORDER)
    if dups:
        duplicates = decided.filter(~F.col("kept")).select(
            key, "duplicate_of", "distance", "measure", "score", order
        )
        _write(duplicates, dups, "csv" if kind == "csv" else "jsonl", files[1], order)


@spark.command("dedup")
@click.argument("source", metavar="IN")
@click.option("--out", "out", required=True, metavar="DIR", help="Where the kept records go.")
@click.option("--dups", metavar="DIR", help="Where the duplicates' decisions go (optional).")
@click.option(
    "--handover",
    metavar="DIR",
    help="Where every decision goes with what a store keeps, as Parquet, for 'simstore db load'.",
)
@click.option("--master", default="local[*]", show_default=True, help="Spark master URL.")
@click.option("--format", "kind", type=click.Choice(SPARK_FORMATS), help="Input format.")
@click.option("--key", "key", default="id", show_default=True, help="The key column.")
@click.option("--text", "text", default="text", show_default=True, help="The text column.")
@click.option(
    "--order",
    "order",
    help="An integer column giving the input order [default: the order the records are read].",
)
@click.option(
    "--files",
    type=click.IntRange(min=1),
    help="Files per output folder [default: one per 50,000 records it holds].",
)
@click.option(
    "--against",
    metavar="URL|DIR",
    help="Decide the records against what is already kept: the namespace of the store at URL "
    "(as 'ingest' into it would; its recipe applies), or a hand-over DIR of an earlier run. "
    "Then 'simstore db load' the --handover into that store.",
)
@click.pass_obj
def dedup_command(
    settings: Settings,
    source: str,
    out: str,
    dups: str | None,
    handover: str | None,
    master: str,
    kind: str | None,
    key: str,
    text: str,
    order: str | None,
    files: int | None,
    against: str | None,
) -> None:
    """Deduplicate IN (JSON lines, CSV with a header, or Parquet) into --out.

    The kept records are written to --out in IN's format, every column kept; --dups gets each
    duplicate's key, duplicate_of, distance, measure and score; --handover every record's
    decision with its fingerprint, kept text and MinHash signature (Parquet), which 'simstore db
    load' writes into a store. Each in input order (--order, else the order records are read)
    and in a few files (--files). Spark's own output (JVM and log4j) goes to a log file in the
    temporary folder, kept when the command fails; --debug shows it on stderr instead.

    --out, --dups and --handover must be new paths, none of them IN, the database file or
    another of them (exit 4, checked before Spark starts).

    --against decides a new batch against kept texts: a store's namespace (a PostgreSQL store
    is read by Spark's JDBC source when Debian's libpostgresql-jdbc-java is installed) or an
    earlier run's hand-over. Keys already decided there are refused (ingest replays them).
    """
    from simstore.io.outputs import check_paths

    against_dir = against if against is not None and Path(against).is_dir() else None
    check_paths(
        {"--out": out, "--dups": dups, "--handover": handover},
        inputs={"IN": source, **({"--against": against_dir} if against_dir else {})},
        database=settings.url if against is None or against_dir else against,
    )
    chosen = _format_of(source, kind)
    with contextlib.ExitStack() as stack:
        store = None
        if against is not None and against_dir is None:
            store = stack.enter_context(open_store(dataclasses.replace(settings, url=against)))
        run = _Run(source, chosen, (out, dups, handover), key, text, order, files, store,
                   against_dir)  # fmt: skip
        _dedup(settings, run, master)


@dataclasses.dataclass(frozen=True)
class _Run:
    """What one ``spark dedup`` reads, decides against and writes."""

    source: str
    kind: str
    outputs: tuple[str, str | None, str | None]  # --out, --dups, --handover
    key: str
    text: str
    order: str | None
    files: int | None
    store: SimStore | None
    against_dir: str | None


def _dedup(settings: Settings, run: _Run, master: str) -> None:
    out, dups, handover = run.outputs
    source = run.source
    simspark = _simstore_spark()  # before pyspark: MissingExtra without the spark extra
    from pyspark.sql import SparkSession

    ours = SparkSession.getActiveSession() is None  # a caller's session is left running
    log_dir = (
        None if settings.debug or not ours else Path(tempfile.mkdtemp(prefix="simstore-spark-"))
    )
    started = simspark.start(
        master, quiet=not settings.debug, app_name="simstore spark dedup", log_dir=log_dir
    )
    if ours and settings.debug:
        started.sparkContext.setLogLevel("INFO")
    if ours:
        simspark.fit(started, _records_in(source))
    progress = SparkProgress(not settings.quiet)
    progress.phase(f"reading {source}")
    try:
        with progress.shown(started):
            kept, duplicates = _decide_and_write(progress, started, settings, run)
    finally:
        if ours:
            started.stop()
    if log_dir is not None:  # the run succeeded: Spark's log is not worth keeping
        shutil.rmtree(log_dir, ignore_errors=True)
    summary = {"records read": kept + duplicates, "kept": kept, "duplicates": duplicates}
    emit(settings, {**summary, "out": out, "dups": dups, "handover": handover}, pairs(summary))


def _decide_and_write(
    progress: SparkProgress, started: SparkSession, settings: Settings, run: _Run
) -> tuple[int, int]:
    """Read, decide and write the outputs: the kept and duplicate counts."""
    from pyspark.sql import functions as F

    from simstore.io import handover as handing
    from simstore.text.presets import get_preset

    simspark = _simstore_spark()
    out, dups, handover = run.outputs
    key, order, files, store, chosen = run.key, run.order, run.files, run.store, run.kind
    frame = _read(started, run.source, chosen)
    column = order or ORDER
    if order is None:
        frame = frame.withColumn(column, F.monotonically_increasing_id())
    preset = get_preset(settings.preset or "default")
    policy = requested_policy(settings) or DEFAULT_POLICY
    radius = simspark.MAX_DISTANCE
    if store is not None:
        preset, policy, radius = store.preset, store.policy, store.max_distance
    result = simspark.dedup(
        frame,
        key=key,
        text=run.text,
        order=column,
        preset=preset,
        policy=policy,
        store=store,
        against=run.against_dir,
        with_items=handover is not None,
    )
    progress.phase("deciding")
    counts = result.groupBy("kept").count().collect()  # the result is computed and cached
    tally = {bool(row["kept"]): int(row["count"]) for row in counts}
    kept, duplicates = tally.get(True, 0), tally.get(False, 0)
    sizes = (simspark.output_files(kept, files), simspark.output_files(duplicates, files))
    progress.phase(f"writing {kept:,} kept and {duplicates:,} duplicates")
    _write_decided(frame, result, key, column, (out, dups), chosen, sizes)
    if handover is not None:
        stamp = handing.made_with(preset, policy, radius)
        stamped = result.withColumn("made_with", F.lit(stamp))
        every = simspark.output_files(kept + duplicates, files)
        chosen_columns = stamped.select(*handing.HANDOVER_COLUMNS)
        _write(chosen_columns, handover, "parquet", every, "order", drop=False)
    result.unpersist()
    return kept, duplicates


def _simstore_spark() -> ModuleType:
    from simstore import spark

    return spark
