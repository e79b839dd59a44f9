"""What a new batch is decided against: the kept rows of a live store, or of a hand-over.

``dedup(store=...)`` and ``dedup(against=...)`` add these rows to the run as *priors*: items
ordered before every new row, always kept, only ever the old side of a pair. Their order among
themselves is never read (priors are never paired with each other, and a new text's best kept
match is chosen by distance, time and key), so each prior's order is ``first_order - 1 - rank``
for any ``rank`` unique among them: the row id of a store's row, the input order of a hand-over's.

A PostgreSQL store is read by Spark's JDBC source, in parallel ranges of row ids, when the session
can load PostgreSQL's JDBC driver (``start`` puts Debian's ``libpostgresql-jdbc-java`` jar on the
classpath when it is installed); other stores, and PostgreSQL without the driver, are read
through SQLAlchemy on the driver and parallelised.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import sqlalchemy as sa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from simstore.errors import InvalidInput
from simstore.io import handover
from simstore.policy.policies import Policy
from simstore.spark import _executor as executor
from simstore.storage.retention import partition_of, utc_naive, window_start
from simstore.storage.schema import decisions, fingerprints, kept_text_of

if TYPE_CHECKING:
    from simstore.store import SimStore

log = logging.getLogger("simstore")

# text or packed_text: a store's row has one of them (simstore.storage.schema.kept_text_of)
KEPT_DDL = (
    "rank long, key string, fp long, text string, signature binary, moment long, packed_text binary"
)
ROWS_PER_READ = 200_000  # rows of a store in one JDBC read task


def store_rows(spark: SparkSession, store: SimStore, at: datetime) -> DataFrame:
    """The store's kept rows inside its window at ``at`` (``KEPT_DDL``)."""
    statement = _kept_statement(store, at)
    if _by_jdbc(spark, store):
        return _read_jdbc(spark, store, statement)
    with store.connections.reading() as conn:
        rows = [
            (int(rank), str(key), int(fp), text, None if sig is None else bytes(sig),
             executor.micros(utc_naive(added_at)), None if packed is None else bytes(packed))
            for rank, key, fp, text, sig, added_at, packed in conn.execute(statement)
        ]  # fmt: skip
    return spark.createDataFrame(rows, KEPT_DDL)


def store_keys(spark: SparkSession, store: SimStore) -> DataFrame:
    """Every key the store has a decision for (kept or duplicate), as a column ``key``."""
    kept = sa.select(fingerprints.c.key).where(fingerprints.c.ns_id == store.ns_id)
    logged = sa.select(decisions.c.key).where(decisions.c.ns_id == store.ns_id)
    statement = sa.union_all(kept, logged)
    if _by_jdbc(spark, store):
        return _jdbc(spark, store, _literal(store, statement), {}).toDF("key")
    with store.connections.reading() as conn:
        keys = [(str(row[0]),) for row in conn.execute(statement)]
    return spark.createDataFrame(keys, "key string")


def handover_rows(spark: SparkSession, path: str, moment: datetime) -> DataFrame:
    """The kept rows of a hand-over directory (``dedup(..., with_items=True)`` as ``spark
    dedup --handover`` writes it), as if loaded into a store just before ``moment``."""
    frame = spark.read.parquet(path)
    missing = [c for c in handover.HANDOVER_COLUMNS if c not in frame.columns]
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
    )


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
        items = []
        for key, fp, plain, packed, signature in zip(
            columns["key"], columns["fp"], columns["text"], columns["packed_text"],
            columns["signature"], strict=True,
        ):  # fmt: skip
            text = kept_text_of(plain, packed)
            keys = handover.band_keys_of(signature) if signature is not None else ()
            # a kept row is only ever the old side: its radius, threshold and script are unread
            items.append(
                executor.make_item(
                    key, fp, 0, None, text, signature, keys, signature is not None, False
                )
            )
        orders = [first_order - 1 - rank for rank in columns["rank"]]
        yield executor.items_batch(orders, items, True, columns["moment"], policy)


def _kept_statement(store: SimStore, at: datetime) -> sa.Select[Any]:
    statement = sa.select(
        fingerprints.c.id,
        fingerprints.c.key,
        fingerprints.c.fp,
        fingerprints.c.text,
        fingerprints.c.signature,
        fingerprints.c.added_at,
        fingerprints.c.packed_text,
    ).where(fingerprints.c.ns_id == store.ns_id)
    start = window_start(at, store.keep)
    if start is not None:
        statement = statement.where(
            fingerprints.c.part >= partition_of(start, store.partition_seconds),
            fingerprints.c.added_at >= start,
        )
    return statement


def _by_jdbc(spark: SparkSession, store: SimStore) -> bool:
    """Whether Spark reads the store itself: PostgreSQL over TCP, with the driver loadable."""
    url = store.connections.engine.url
    return store.connections.dialect == "postgresql" and bool(url.host) and _has_driver(spark)


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


def _literal(store: SimStore, statement: sa.Select[Any] | sa.CompoundSelect[Any]) -> str:
    dialect = store.connections.engine.dialect
    return str(statement.compile(dialect=dialect, compile_kwargs={"literal_binds": True}))


def _read_jdbc(spark: SparkSession, store: SimStore, statement: sa.Select[Any]) -> DataFrame:
    """The kept rows read by Spark's JDBC source in ranges of row ids (one task each)."""
    numbered = statement.subquery()
    with store.connections.reading() as conn:
        low, high, count = conn.execute(
            sa.select(sa.func.min(numbered.c.id), sa.func.max(numbered.c.id), sa.func.count())
        ).one()
    # added_at is UTC without a zone: its epoch is read as UTC, in microseconds, exactly
    moment = sa.cast(sa.extract("epoch", fingerprints.c.added_at) * 1_000_000, sa.BigInteger)
    selected = statement.with_only_columns(
        fingerprints.c.id.label("rank"),
        fingerprints.c.key,
        fingerprints.c.fp,
        fingerprints.c.text,
        fingerprints.c.signature,
        moment.label("moment"),
        fingerprints.c.packed_text,
    )
    ranges: dict[str, str] = {}
    if count:
        ranges = {
            "partitionColumn": "rank",
            "lowerBound": str(low),
            "upperBound": str(high + 1),
            "numPartitions": str(max(1, -(-int(count) // ROWS_PER_READ))),
        }
    tasks = ranges.get("numPartitions", "1")
    log.info("simstore.spark: reading %s kept rows by JDBC in %s tasks", count, tasks)
    frame = _jdbc(spark, store, _literal(store, selected), ranges)
    return frame.select(
        F.col("rank").cast("long"),
        "key",
        F.col("fp").cast("long"),
        "text",
        "signature",
        F.col("moment").cast("long"),
        "packed_text",
    )


def _jdbc(spark: SparkSession, store: SimStore, query: str, ranges: dict[str, str]) -> DataFrame:
    url = store.connections.engine.url
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
