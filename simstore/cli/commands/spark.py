"""``spark dedup``: a corpus deduplicated on Apache Spark by ``simstore.spark.dedup``."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import click

from simstore.cli._app import Settings, main, requested_policy
from simstore.cli.output import emit, pairs
from simstore.errors import InvalidInput
from simstore.policy.verify import DEFAULT_POLICY

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

SPARK_FORMATS = ("jsonl", "csv", "parquet")


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


def _write(frame: DataFrame, path: str, kind: str) -> None:
    writer = frame.write.mode("errorifexists")
    if kind == "jsonl":
        writer.json(path)
    elif kind == "csv":
        writer.option("header", True).csv(path)
    else:
        writer.parquet(path)


def _start(master: str, debug: bool) -> SparkSession:
    """A session for the command (Spark's logging and progress bar only with --debug)."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName("simstore spark dedup")
    if master.startswith("local"):
        # local workers run this interpreter, the one simstore is installed in (PySpark's default
        # is whatever "python3" is first on PATH, often one without simstore)
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = builder.config("spark.ui.showConsoleProgress", str(debug).lower())
    started = session.getOrCreate()
    started.sparkContext.setLogLevel("INFO" if debug else "ERROR")
    return started


def _write_decided(
    frame: DataFrame, result: DataFrame, key: str, out: str, dups: str | None, kind: str
) -> None:
    """The kept records of ``frame`` to ``out`` (its own columns); the duplicates' decisions to
    ``dups`` when given."""
    from pyspark.sql import functions as F

    from simstore.spark import RESULT_COLUMNS

    verdicts = result.select(*RESULT_COLUMNS).withColumnRenamed("key", key)
    decided = frame.join(verdicts, key)
    _write(
        decided.filter(F.col("kept")).select(*frame.columns).drop("__simstore_order"),
        out,
        kind,
    )
    if dups:
        duplicates = decided.filter(~F.col("kept")).select(
            key, "duplicate_of", "distance", "measure", "score"
        )
        _write(duplicates, dups, "csv" if kind == "csv" else "jsonl")


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
) -> None:
    """Deduplicate IN (JSON lines, CSV with a header, or Parquet) into --out.

    The kept records are written to --out in IN's format, every column kept; --dups gets each
    duplicate's key, duplicate_of, distance, measure and score; --handover every record's
    decision with its fingerprint, kept text and MinHash signature (Parquet), which 'simstore db
    load' writes into a store. Spark's own logging and progress stay off the output unless
    --debug.

    --out, --dups and --handover must be new paths, none of them IN, the database file or
    another of them (exit 4, checked before Spark starts).
    """
    from simstore.io.outputs import check_paths

    check_paths(
        {"--out": out, "--dups": dups, "--handover": handover},
        inputs={"IN": source},
        database=settings.url,
    )
    simspark = _simstore_spark()  # before pyspark: MissingExtra without the spark extra
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from simstore.io import handover as handing
    from simstore.text.presets import get_preset

    chosen = _format_of(source, kind)
    ours = SparkSession.getActiveSession() is None  # a caller's session is left running
    started = _start(master, settings.debug)
    try:
        frame = _read(started, source, chosen)
        column = order or "__simstore_order"
        if order is None:
            frame = frame.withColumn(column, F.monotonically_increasing_id())
        preset = get_preset(settings.preset or "default")
        policy = requested_policy(settings) or DEFAULT_POLICY
        result = simspark.dedup(
            frame,
            key=key,
            text=text,
            order=column,
            preset=preset,
            policy=policy,
            with_items=handover is not None,
        ).persist()
        _write_decided(frame, result, key, out, dups, chosen)
        if handover is not None:
            stamp = handing.made_with(preset, policy, simspark.MAX_DISTANCE)
            stamped = result.withColumn("made_with", F.lit(stamp))
            _write(stamped.select(*handing.HANDOVER_COLUMNS), handover, "parquet")
        counts = result.groupBy("kept").count().collect()
        tally = {bool(row["kept"]): int(row["count"]) for row in counts}
    finally:
        if ours:
            started.stop()
    summary = {
        "records read": sum(tally.values()),
        "kept": tally.get(True, 0),
        "duplicates": tally.get(False, 0),
    }
    emit(settings, {**summary, "out": out, "dups": dups, "handover": handover}, pairs(summary))


def _simstore_spark() -> ModuleType:
    from simstore import spark

    return spark
