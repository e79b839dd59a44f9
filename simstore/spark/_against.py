"""What a new batch is decided against: the kept rows of a live store, or of a hand-over.

``dedup(store=...)`` and ``dedup(against=...)`` add these rows to the run as *priors*: items
ordered before every new row, always kept, only ever the old side of a pair. Their order among
themselves is never read (priors are never paired with each other, and a new text's best kept
match is chosen by distance, time and key), so each prior's order is ``first_order - 1 - rank``
for any ``rank`` unique among them: the row id of a store's row, the input order of a hand-over's.

A PostgreSQL store is read by Spark's JDBC source, in parallel ranges of row ids, when the session
can load PostgreSQL's JDBC driver (``start`` puts Debian's ``libpostgresql-jdbc-java`` jar on the
classpath when it is installed); other stores, and PostgreSQL without the driver, are read
through SQLAlchemy on the driver and parallelised. Either way the SQL is
``simstore.storage.snapshot``'s.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable
from datetime import datetime
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from simstore.errors import InvalidInput
from simstore.io import handover
from simstore.policy.boilerplate import whole_band_keys
from simstore.policy.policies import Policy
from simstore.spark import _executor as executor
from simstore.storage import memory, snapshot
from simstore.storage.retention import utc_naive
from simstore.storage.schema import stored_text_of
from simstore.storage.scope import Scope

log = logging.getLogger("simstore")

# text or packed_text: a store's row has one of them (simstore.storage.schema.kept_text_of)
KEPT_DDL = (
    "rank long, key string, fp long, text string, signature binary, moment long, packed_text binary"
)
ROWS_PER_READ = 200_000  # rows of a store in one JDBC read task


def store_rows(spark: SparkSession, scope: Scope, at: datetime) -> DataFrame:
    """The store's kept rows inside its window at ``at`` (``KEPT_DDL``)."""
    if _by_jdbc(spark, scope):
        return _read_jdbc(spark, scope, at)
    rows = [
        (rank, key, fp, text, sig, executor.micros(utc_naive(added_at)), packed)
        for rank, key, fp, text, sig, added_at, packed in snapshot.kept_rows(scope, at)
    ]
    return spark.createDataFrame(rows, KEPT_DDL)


def store_keys(spark: SparkSession, scope: Scope) -> DataFrame:
    """Every key the store has a decision for (kept or duplicate), as a column ``key``."""
    if _by_jdbc(spark, scope):
        return _jdbc(spark, scope, snapshot.decided_keys_query(scope), {}).toDF("key")
    keys = [(key,) for key in snapshot.decided_keys(scope)]
    return spark.createDataFrame(keys, "key string")


def handover_rows(spark: SparkSession, path: str, moment: datetime) -> DataFrame:
    """The kept rows of a hand-over directory (``dedup(..., with_items=True)`` as ``spark
    dedup --handover`` writes it), as if loaded into a store just before ``moment``."""
    frame = spark.read.parquet(path)
    # (line keys are read by handover_counts, when there are any)
    missing = [c for c in handover.HANDOVER_COLUMNS if c not in frame.columns and c != "segments"]
    if missing:
        raise InvalidInput(f"{path} is not a hand-over directory: it lacks {missing}")
    loaded = executor.micros(utc_naive(moment)) - 1  # db load writes them before the new batch
    return frame.filter(F.col("kept")).select(
        F.col("order").cast("long").alias("rank"),
        "key",
        F.col("fingerprint").cast("long").alias("fp"),
        "text",
        "signature",
        F.lit(loaded).cast("long").alias("moment"),
        F.lit(None).cast("binary").alias("packed_text"),
        # as db load writes them: a text with lines set aside is found by its whole text's too
        F.col("band_keys").cast("array<long>").alias("band_keys"),
    )


def handover_counts(spark: SparkSession, path: str) -> DataFrame | None:
    """How many texts of a hand-over carried each line (``segment``, ``before``), as ``db load``
    counts them; None for a hand-over without line keys (made before they were handed over: a
    load counts nothing of it)."""
    frame = spark.read.parquet(path)
    if "segments" not in frame.columns:
        return None
    lines = frame.select(F.explode("segments").alias("segment"))
    return lines.groupBy("segment").agg(F.count(F.lit(1)).alias("before"))


def store_counts(spark: SparkSession, scope: Scope, at: datetime) -> DataFrame:
    """How many texts of a store's keep window at ``at`` carried each line (``segment``,
    ``before``), as its adds read them (``simstore.storage.memory``), read on the driver."""
    counts = memory.window_counts(scope, utc_naive(at))
    return spark.createDataFrame(list(counts.items()), "segment long, before long")


def handover_stamp(spark: SparkSession, path: str) -> str | None:
    """The recipe a hand-over was made with (its ``made_with``), None when it holds no row."""
    first = spark.read.parquet(path).select("made_with").limit(1).collect()
    return None if not first else str(first[0][0])


def prior_items(rows: DataFrame, first_order: int, policy: Policy, item_ddl: str) -> DataFrame:
    """Kept rows (``KEPT_DDL``) as the items of the run, ordered before ``first_order``."""
    return rows.mapInArrow(functools.partial(_priors, first_order=first_order, policy=policy),
                           item_ddl)  # fmt: skip


def _priors(
    batches: Iterable[pa.RecordBatch], *, first_order: int, policy: Policy
) -> Iterable[pa.RecordBatch]:
    for record in batches:
        columns = record.to_pydict()
        given = columns.get("band_keys") or [None] * record.num_rows  # (a store's: from signatures)
        items = []
        for key, fp, plain, packed, signature, held in zip(
            columns["key"], columns["fp"], columns["text"], columns["packed_text"],
            columns["signature"], given, strict=True,
        ):  # fmt: skip
            text = stored_text_of(plain, packed)  # (lines set aside marked: make_item reads them)
            keys = (
                ()
                if signature is None
                else tuple(sorted(set(held)))
                if held
                else tuple(
                    sorted(
                        {
                            *handover.band_keys_of(signature, policy.minhash_bands),
                            *whole_band_keys(text, policy.minhash_bands),
                        }
                    )
                )
            )
            # a kept row is only ever the old side: its radius, threshold and script are unread
            items.append(
                executor.make_item(
                    key, fp, 0, None, text, signature, keys, signature is not None, False
                )
            )
        orders = [first_order - 1 - rank for rank in columns["rank"]]
        yield executor.items_batch(orders, items, True, columns["moment"], policy)


def _by_jdbc(spark: SparkSession, scope: Scope) -> bool:
    """Whether Spark reads the store itself: PostgreSQL over TCP, with the driver loadable."""
    url = scope.connections.engine.url
    return scope.dialect == "postgresql" and bool(url.host) and _has_driver(spark)


def _has_driver(spark: SparkSession) -> bool:
    """Whether the session's JVM can load PostgreSQL's JDBC driver."""
    try:
        jvm: Any = spark.sparkContext._jvm
        loader = jvm.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName("org.postgresql.Driver", True, loader)
    except Exception:  # any failure means: not loadable in this session
        log.info("simstore.spark: no PostgreSQL JDBC driver; the store is read on the driver")
        return False
    return True


def _read_jdbc(spark: SparkSession, scope: Scope, at: datetime) -> DataFrame:
    """The kept rows read by Spark's JDBC source in ranges of row ids (one task each)."""
    query = snapshot.kept_query(scope, at)
    ranges: dict[str, str] = {}
    if query.rows and query.low is not None and query.high is not None:
        ranges = {
            "partitionColumn": "rank",
            "lowerBound": str(query.low),
            "upperBound": str(query.high + 1),
            "numPartitions": str(max(1, -(-query.rows // ROWS_PER_READ))),
        }
    tasks = ranges.get("numPartitions", "1")
    log.info("simstore.spark: reading %s kept rows by JDBC in %s tasks", query.rows, tasks)
    frame = _jdbc(spark, scope, query.sql, ranges)
    return frame.select(
        F.col("rank").cast("long"),
        "key",
        F.col("fp").cast("long"),
        "text",
        "signature",
        F.col("moment").cast("long"),
        "packed_text",
    )


def _jdbc(spark: SparkSession, scope: Scope, query: str, ranges: dict[str, str]) -> DataFrame:
    url = scope.connections.engine.url
    address = f"jdbc:postgresql://{url.host}:{url.port or 5432}/{url.database or ''}"
    reader = (
        spark.read.format("jdbc")
        .option("url", address)
        .option("driver", "org.postgresql.Driver")
        .option("dbtable", f"({query}) AS simstore_kept")
        .option("fetchsize", "10000")  # streamed in pages, not read whole into the JVM
    )
    if url.username:
        reader = reader.option("user", url.username)
    if url.password:
        reader = reader.option("password", str(url.password))
    for name, value in ranges.items():
        reader = reader.option(name, value)
    return reader.load()
