"""Corpus-scale dedup on Apache Spark with exactly ``SimStore.add_many``'s decisions.

``dedup(df, key=..., text=..., order=...)`` decides every row of a DataFrame as a store would
if the rows were added in ``order`` with one fixed moment (``add_many(..., at=...)``): a text is
a near-duplicate of its best confirmed *earlier kept* text (smallest SimHash distance, then
smallest key), else kept. Not "one per connected component": in a chain A ~ B ~ C where A and C
are not near, C is kept when B was a duplicate of A.

Only the DB-free batch API and the policy layer decide (``simstore.policy.batch``,
``simstore.policy.decide``, ``simstore.policy.policies``); Spark moves the data. The stages
(``STAGES``):

1. ``sign``: ``batch.sign`` over each partition (``mapInArrow``: Arrow keeps nulls null and bytes
   bytes, none of pandas' NaN or string-array surprises). Under a policy with the memory of
   boilerplate, each item's lines that enough earlier items (by ``order``; and the texts of a
   hand-over it is decided ``against``) carried are found by a window over each line key's items
   and set aside on the executors (``Policy.set_aside``, then signed again), as
   ``batch.remember_boilerplate`` does in input order (timed with ``collapse``).
2. ``collapse``: rows whose items are identical in everything a policy looks at (fingerprint,
   radius, threshold, comparison text, signature, planned) form a class; only its first row (the
   representative) enters the joins. Exact: every member of a class is confirmed by every other
   text exactly like its representative, and if the class's item confirms itself, no member but
   the first can be kept (each later one has at least the first's kept match, or the first), so
   later members are only ever *new* sides. They are replayed with the representative's edges in
   both directions (``last`` marks the representatives that need the reverse ones). A class
   whose item does not confirm itself is not collapsed.
3. ``candidates``: explode band keys and self-join (shared-key counts; big buckets split in blocks,
   see Guard rails); plus SimHash band probes (``simstore.policy.probes.band_values``, the store's
   own probe sets) when some item is unsigned (``SimHashOnly``, ``SimHashVerification``, unsigned
   rows of a store).
4. ``confirm``: ``decide.confirm_candidates`` (``Policy.is_candidate``, then
   ``Policy.confirm_many``, vectorised) per partition.
5. ``components``: connected components of the confirmed edges: union-find on the driver when the
   edges fit (``driver_edges``), else GraphFrames when importable, else min-label propagation with
   pointer jumping.
6. ``replay``: per component, ``batch.replay`` in input order (``cogroup.applyInArrow``); texts in
   no edge are decided without it (kept, or a copy of their kept representative).

Small inputs. Up to ``driver_rows`` rows (``DRIVER_ROWS``) are collected and decided on the
driver by the same batch API in one Spark job: below that, Spark's fixed cost per job (some
thirty of them) is all of the time. Up to ``driver_items`` rows (``DRIVER_ITEMS``) the executors
sign them (the costly part, spread over every core) and the driver collects the signed items and
decides them by the batch API: a few jobs instead of some thirty, and no shuffle of the texts.
``start`` gives a quiet session sized for the input.

Guard rails. The collapse takes exact copies (boilerplate repeated thousands of times) out of the
band-key buckets. A bucket still shared by many distinct texts (a boilerplate paragraph) has more
than ``split_buckets`` texts split into blocks by a hash of the node, and each pair of blocks is its
own join key (``_candidates_stage``): all the bucket's pairs are still made, exactly once, but in
many tasks of at most about ``split_buckets**2`` pairs a key, not all in the one task that holds
the key; ``dedup`` logs the largest bucket at INFO, and ``counts`` gets the most pairs one task
made. Pairs sharing fewer band keys than ``Policy.min_shared`` of their new side (most of a
boilerplate bucket's) are never candidates of two signed texts, so they are dropped before the
confirm stage. The output is deterministic for a fixed input (it does not depend on partitioning,
the shuffle partition count, the components step or the split); its row order is not: sort by the
key or join on it. Memory per task is bounded by one Arrow batch in the Python stages and one
component in the replay.

``incremental``: pass ``store=`` to dedup a new batch against the kept rows of a store's window,
as ``add_many`` on that store would, or ``against=`` a hand-over directory of an earlier run
(``simstore.spark._against``: a PostgreSQL store is read by Spark's JDBC source where the session
has the driver). ``load(store, result)`` hands a result (``with_items=True``) over to a store.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simstore.errors import missing_extra

try:
    import pyarrow as pa
    from pyspark.sql import DataFrame, Row, SparkSession, Window
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
except ImportError as _error:  # pragma: no cover - exercised without the extra
    raise missing_extra("simstore.spark needs PySpark and PyArrow", "spark") from _error

import numpy as np

from simstore.errors import InvalidInput, InvalidType, SimstoreError
from simstore.io import handover
from simstore.policy import batch
from simstore.policy.decide import keeps_base_candidate_rule
from simstore.policy.policies import DEFAULT_POLICY, Item, Policy, check_policy
from simstore.spark import _against
from simstore.spark import _executor as executor
from simstore.spark._executor import ITEM_FIELDS
from simstore.spark._executor import SIGN_CHUNK as SIGN_CHUNK  # simstore.spark.SIGN_CHUNK
from simstore.spark._session import LOG_CONF, fit, output_files, start
from simstore.storage.retention import EPOCH, utc_naive
from simstore.text.encoding import from_signed
from simstore.text.presets import Preset, get_preset
from simstore.validate import DEFAULT_MAX_DISTANCE, check_int, check_radius

if TYPE_CHECKING:
    from simstore.store import SimStore

__all__ = [
    "DRIVER_ROWS_CONF", "LOG_CONF", "RESULT_COLUMNS", "STAGES",
    "dedup", "fit", "load", "output_files", "start",
]  # fmt: skip

log = logging.getLogger("simstore")

STAGES = ("sign", "collapse", "candidates", "confirm", "components", "replay")
RESULT_COLUMNS = ("key", "kept", "duplicate_of", "distance", "measure", "score")
# with_items=True (``segments``: each text's line keys, under a policy with the memory of
# boilerplate; none under another)
ITEM_COLUMNS = ("order", "fingerprint", "text", "signature", "band_keys", "segments")
DRIVER_EDGES = 20_000_000  # up to this many confirmed edges, components are found on the driver
DRIVER_ROWS = 20_000  # up to this many rows, dedup decides them on the driver (batch.dedup's way)
DRIVER_ROWS_CONF = "spark.simstore.driverRows"  # a session's own default for driver_rows
# up to this many rows, the executors sign them and the driver decides the signed items (about
# 1 KB each there)
DRIVER_ITEMS = 200_000
DRIVER_ITEMS_CONF = "spark.simstore.driverItems"  # a session's own default for driver_items
MAX_DISTANCE = DEFAULT_MAX_DISTANCE  # dedup's SimHash radius by default, as SimStore's
SPLIT_BUCKETS = 1_000  # a band-key bucket of more texts is split: at most ~1M pairs per join key

_ITEM_DDL = (
    "order long, key string, fp long, b0 int, b1 int, b2 int, b3 int, radius int, "
    "threshold double, text string, signature binary, band_keys array<long>, planned boolean, "
    "mostly_cjk boolean, prior boolean, moment long, least int, segments array<long>, "
    "boilerplate array<long>"
)
_CLASS_COLUMNS = (
    "fp", "radius", "threshold", "text", "signature", "planned", "mostly_cjk", "twin"
)  # fmt: skip
_SELF_DDL = "rep long, self_ok boolean, self_distance int, self_measure string, self_score double"
_EDGE_DDL = "new long, old long, distance int, measure string, score double"
_PROBE_DDL = "node long, band int, value int"
_VERDICT_DDL = (
    "order long, key string, kept boolean, duplicate_of string, distance int, measure string, "
    "score double"
)


def driver_components(
    new: np.ndarray[Any, Any], old: np.ndarray[Any, Any]
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """(nodes, labels) of an edge list: each node's label is the smallest node of its connected
    component (vectorised union-find: hook roots to the smaller, then jump pointers)."""
    nodes = np.unique(np.concatenate([new, old]))
    a, b = np.searchsorted(nodes, new), np.searchsorted(nodes, old)
    parent = np.arange(len(nodes))
    while True:
        root_a, root_b = parent[a], parent[b]
        if np.array_equal(root_a, root_b):
            return nodes, nodes[parent]
        low = np.minimum(root_a, root_b)
        np.minimum.at(parent, root_a, low)
        np.minimum.at(parent, root_b, low)
        while True:
            jumped = parent[parent]
            if np.array_equal(jumped, parent):
                break
            parent = jumped


def _spark_components(edges: DataFrame) -> DataFrame:
    """(node, comp): min-label propagation with pointer jumping, in Spark."""
    pairs = edges.select(F.col("new").alias("a"), F.col("old").alias("b"))
    both = pairs.unionByName(pairs.select(F.col("b").alias("a"), F.col("a").alias("b")))
    both = both.localCheckpoint()
    labels = both.groupBy("a").agg(F.least(F.min("b"), F.first("a")).alias("comp"))
    labels = labels.withColumnRenamed("a", "node").localCheckpoint()
    while True:
        spread = (
            both.join(labels.withColumnRenamed("node", "b"), "b")
            .groupBy("a")
            .agg(F.min("comp").alias("seen"))
            .withColumnRenamed("a", "node")
        )
        moved = labels.join(spread, "node").select(
            "node", F.least("comp", "seen").alias("comp"), F.col("comp").alias("was")
        )
        target = moved.select(F.col("node").alias("to"), F.col("comp").alias("jump"))
        jumped = moved.join(target, F.col("comp") == F.col("to"), "left").select(
            "node", F.coalesce("jump", "comp").alias("comp"), "was"
        )
        jumped = jumped.localCheckpoint()
        changed = jumped.filter(F.col("comp") != F.col("was")).limit(1).count()
        labels = jumped.select("node", "comp")
        if not changed:
            return labels


def _components(
    spark: SparkSession, edges: DataFrame, count: int, driver_edges: int
) -> tuple[DataFrame, bool]:
    """(node, comp) of the ``count`` confirmed edges, and whether Spark computed it (then it is
    worth persisting; a table made on the driver is in memory already)."""
    if count == 0:
        return spark.createDataFrame([], schema="node long, comp long"), False
    if count <= driver_edges:
        table = edges.select("new", "old").toArrow()
        new = table.column("new").to_numpy()
        old = table.column("old").to_numpy()
        nodes, labels = driver_components(new, old)
        frame = pa.table(
            {"node": pa.array(nodes, pa.int64()), "comp": pa.array(labels, pa.int64())}
        )
        return spark.createDataFrame(frame, schema="node long, comp long"), False
    try:
        from graphframes import GraphFrame
    except ImportError:
        return _spark_components(edges), True
    vertices = edges.select(F.col("new").alias("id")).union(edges.select("old")).distinct()
    graph = GraphFrame(vertices, edges.select(F.col("new").alias("src"), F.col("old").alias("dst")))
    found: DataFrame = graph.connectedComponents(algorithm="graphx")
    return found.select(F.col("id").alias("node"), F.col("component").alias("comp")), True


def _check_input(df: DataFrame, key: str, text: str, order: str) -> DataFrame:
    fields = {field.name: field.dataType for field in df.schema.fields}
    for name in (key, text, order):
        if name not in fields:
            raise InvalidInput(f"no column {name!r} (the DataFrame has {sorted(fields)})")
    for name in (key, text):
        if not isinstance(fields[name], T.StringType):
            raise InvalidType(
                f"column {name!r} must be a string, not {fields[name].simpleString()}"
            )
    if not isinstance(fields[order], (T.IntegerType, T.LongType, T.ShortType, T.ByteType)):
        raise InvalidType(f"order column {order!r} must be an integer, not {fields[order]}")
    return df.select(
        F.col(order).cast("long").alias("order"),
        F.col(key).alias("key"),
        F.col(text).alias("text"),
    )


def _validate(rows: DataFrame) -> int:
    """Nulls, and keys or orders given twice, refused before anything is computed (one
    aggregation; the offending row is looked for only when there is one). The row count."""
    found = rows.agg(
        F.count(F.lit(1)).alias("rows"),
        F.count_if(F.col("key").isNull() | F.col("text").isNull() | F.col("order").isNull()),
        F.count_distinct("key"),
        F.count_distinct("order"),
    ).collect()[0]
    total, nulls, keys, orders = (int(value) for value in found)
    if not nulls and keys == orders == total:
        return total
    null = rows.filter(
        F.col("key").isNull() | F.col("text").isNull() | F.col("order").isNull()
    ).limit(1)
    for row in null.collect():
        raise InvalidInput(f"a row has a null key, text or order: {row.asDict()}")
    for name in ("key", "order"):
        twice = rows.groupBy(name).count().filter(F.col("count") > 1).limit(1).collect()
        if twice:
            raise InvalidInput(f"{name} {twice[0][name]!r} appears more than once")
    return total


def _validate_rows(table: pa.Table) -> None:
    """``_validate`` on a collected input: the same refusals, with the same messages."""
    columns = {name: table.column(name).to_pylist() for name in ("order", "key", "text")}
    for i in range(table.num_rows):
        if any(values[i] is None for values in columns.values()):
            row = {name: columns[name][i] for name in ("order", "key", "text")}
            raise InvalidInput(f"a row has a null key, text or order: {row}")
    for name in ("key", "order"):
        seen: set[Any] = set()
        for value in columns[name]:
            if value in seen:
                raise InvalidInput(f"{name} {value!r} appears more than once")
            seen.add(value)


def _translate(error: Exception) -> SimstoreError | None:
    """A simstore error raised on an executor, as the driver sees it, back as a simstore error."""
    found = re.findall(r"InvalidInput: simstore\.spark: (.*)", str(error))
    return InvalidInput(found[-1]) if found else None


class _Stages:
    """Runs the job's actions: names each in Spark's UI and event log, times it when asked."""

    def __init__(self, spark: SparkSession, timings: dict[str, float] | None) -> None:
        self.spark = spark
        self.timings = timings
        self.persisted: list[DataFrame] = []  # cached by this run: released when it ends

    def keep(self, frame: DataFrame) -> DataFrame:
        """``frame`` persisted until ``release`` (it is read more than once downstream)."""
        persisted = frame.persist()
        self.persisted.append(persisted)
        return persisted

    def release(self) -> None:
        """Unpersist what this run cached (the result, computed and cached, needs none of it)."""
        for frame in self.persisted:
            frame.unpersist()
        self.persisted.clear()

    def run(self, stage: str, action: Callable[[], Any]) -> Any:
        self.spark.sparkContext.setJobDescription(f"simstore: {stage}")
        started = time.perf_counter()
        try:
            return action()
        except Exception as error:
            translated = _translate(error)
            if translated is not None:
                raise translated from None
            raise
        finally:
            if self.timings is not None:
                self.timings[stage] = self.timings.get(stage, 0.0) + time.perf_counter() - started
            self.spark.sparkContext.setJobDescription(None)  # type: ignore[arg-type]

    def materialise(self, stage: str, frame: DataFrame) -> DataFrame:
        """``frame`` persisted and computed now (it is read more than once downstream)."""
        persisted = self.keep(frame)
        self.run(stage, persisted.count)
        return persisted

    def measure(self, stage: str, frame: DataFrame, **counts: Any) -> tuple[DataFrame, Row]:
        """``frame`` persisted and computed now by one aggregation of ``counts`` (name: column),
        whose row is returned with it: the counts a later step needs, without a job of their
        own."""
        persisted = self.keep(frame)
        aggregated = persisted.agg(*(column.alias(name) for name, column in counts.items()))
        return persisted, self.run(stage, lambda: aggregated.collect()[0])


@dataclass(frozen=True)
class _Recipe:
    """What decides: the preset, the policy, the SimHash radius and the moment of every add."""

    preset: Preset
    policy: Policy
    radius: int
    moment: datetime


def _recipe(
    store: SimStore | None,
    preset: str | Preset,
    policy: Policy | None,
    max_distance: int,
    at: datetime | None,
) -> _Recipe:
    if store is not None:
        return _Recipe(store.preset, store.policy, store.max_distance, utc_naive(at))
    chosen_preset = get_preset(preset)
    chosen_policy = DEFAULT_POLICY if policy is None else check_policy(policy)
    radius = check_radius(max_distance)
    return _Recipe(chosen_preset, chosen_policy, radius, EPOCH if at is None else utc_naive(at))


def dedup(
    df: DataFrame,
    *,
    key: str,
    text: str,
    order: str,
    preset: str | Preset = "default",
    policy: Policy | None = None,
    max_distance: int = MAX_DISTANCE,
    store: SimStore | None = None,
    against: str | Path | None = None,
    at: datetime | None = None,
    with_items: bool = False,
    check: bool = True,
    driver_edges: int = DRIVER_EDGES,
    driver_rows: int | None = None,
    driver_items: int | None = None,
    split_buckets: int = SPLIT_BUCKETS,
    timings: dict[str, float] | None = None,
    counts: dict[str, int] | None = None,
) -> DataFrame:
    """Decide every row of ``df`` as ``SimStore.add_many`` would, adding them in ``order``.

    ``key``, ``text`` and ``order`` name the columns (strings, strings, integers; all three
    unique per row but the text; no nulls). Returns a DataFrame of ``RESULT_COLUMNS``: ``kept``,
    or the ``duplicate_of`` key with the ``distance``, ``measure`` and ``score`` that confirmed it
    (``measure`` and ``score`` null when the distance alone decided), computed and cached when
    ``dedup`` returns (what the run cached on the way is released): ``unpersist()`` it when
    done. ``with_items`` adds
    ``order``, the signed ``fingerprint``, what a store keeps of each text (``text``,
    ``signature``, ``band_keys``) and the keys of its lines that a store's memory of boilerplate
    counts (``segments``; none under a policy without it), for ``load``.

    ``store``: dedup against that store's kept rows (its preset, policy and radius then apply,
    and its window at ``at``, default now), as ``add_many(rows, at=at)`` would on it; keys must
    be new to the store (one that is not is refused: ``ingest`` replays it; so is a policy with
    the memory of boilerplate, whose counts in the store are not read). The store is read
    by Spark's JDBC source when it is PostgreSQL and the session has its JDBC driver, else
    through the driver. ``against``: the same against the kept rows of a hand-over directory
    (``--handover`` of ``simstore spark dedup``), as ``db load`` of it then ``add_many`` would;
    its recipe must be this run's. ``check`` runs the input checks (one pass and two small
    aggregations);
    ``driver_edges`` bounds the confirmed edges whose components are found on the driver;
    ``driver_rows``: an input of at most this many rows (without a store, timings or counts) is
    collected (one job of at most ``driver_rows + 1`` rows tells) and decided on the driver by
    the batch API itself, one Spark job instead of some thirty, whose fixed costs dominate a
    small input (default: the session's ``spark.simstore.driverRows``, else ``DRIVER_ROWS``;
    0: never); ``driver_items``: a bigger input of at most this many rows (without a store,
    timings or counts) is signed on the executors, collected signed and decided on the driver by
    the batch API (default: the session's ``spark.simstore.driverItems``, else ``DRIVER_ITEMS``;
    0: never);
    ``split_buckets``: a band key shared by more texts than this has its pairs made in blocks of
    about this many texts, spread over Spark's tasks (0: never split; the decisions are the same);
    ``timings``, when given, gets each stage's wall seconds (each stage then runs on its own);
    ``counts`` gets ``largest_bucket`` (the most texts sharing one band key), ``split_buckets``
    (the buckets split), ``largest_task_pairs`` (the most band-key pairs one task of the
    candidate join made) and ``band_key_pairs`` (all it made: a pair once per key it shares); one
    more pass over the join counts them.
    """
    if store is not None and against is not None:
        raise InvalidInput("dedup takes store or against, not both")
    recipe = _recipe(store, preset, policy, max_distance, at)
    if against is not None:
        _check_handover(df.sparkSession, str(against), recipe)
    check_int("driver_edges", driver_edges, lowest=0)
    check_int("split_buckets", split_buckets, lowest=0)
    stages = _Stages(df.sparkSession, timings)
    rows = _check_input(df, key, text, order)
    limit = _driver_setting(stages.spark, "driver_rows", driver_rows, DRIVER_ROWS_CONF, DRIVER_ROWS)
    signed_limit = _driver_setting(
        stages.spark, "driver_items", driver_items, DRIVER_ITEMS_CONF, DRIVER_ITEMS
    )
    on_driver = store is None and against is None and timings is None and counts is None
    size = None  # the input's rows, when counted: up to signed_limit + 1 (no Python involved)
    if store is not None or against is not None:
        _refuse_known_keys(stages, rows, store, against)
    elif on_driver and signed_limit > limit:
        size = stages.run("sign", lambda: rows.limit(signed_limit + 1).count())
    if limit and on_driver and (size is None or size <= limit):
        # at most limit + 1 rows in one job: as many or fewer is the whole input, a small one
        head = stages.run("sign", lambda: rows.limit(limit + 1).toArrow())
        if head.num_rows <= limit:
            return _on_driver(stages, head, recipe, with_items, check)
    if check:
        stages.run("sign", lambda: _validate(rows))
    if size is not None and size <= signed_limit:
        return _signed_then_on_driver(stages, rows, recipe, with_items)
    items = _sign_stage(stages, rows, recipe, store, against)
    items = _boilerplate_stage(stages, items, recipe, store, against)
    nodes, measured = _collapse_stage(stages, items, recipe)
    reps = nodes.filter(~F.col("follower"))
    pairs = _candidates_stage(
        stages, reps, recipe.policy, split_buckets, counts, measured["reps"], measured["unsigned"]
    )
    edges, confirmed = _confirm_stage(stages, reps, pairs, recipe)
    labels, in_spark = stages.run(
        "components", lambda: _components(stages.spark, edges, confirmed, driver_edges)
    )
    if in_spark:
        labels = stages.materialise("components", labels)
    result = _replay_stage(nodes, edges, labels)
    if with_items:  # from the cached nodes, which hold every item column: not signed again
        extra = nodes.filter(~F.col("prior")).select(
            "order", F.col("fp").alias("fingerprint"), "text", "signature", "band_keys", "segments"
        )
        result = result.join(extra, "order").select(*RESULT_COLUMNS, *ITEM_COLUMNS)
    else:
        result = result.select(*RESULT_COLUMNS)
    result = result.persist()
    stages.run("replay", result.count)
    stages.release()
    return result


def _check_handover(spark: SparkSession, path: str, recipe: _Recipe) -> None:
    try:
        stamp = _against.handover_stamp(spark, path)
    except Exception as error:  # Spark's AnalysisException: no such folder, not Parquet
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise InvalidInput(f"cannot read the hand-over {path}: {reason}") from None
    wanted = handover.made_with(recipe.preset, recipe.policy, recipe.radius)
    if stamp is not None and stamp != wanted:
        raise InvalidInput(
            f"the hand-over {path} was made with {stamp}; this run decides with {wanted}: "
            "give the same preset and policy"
        )


def _refuse_known_keys(
    stages: _Stages, rows: DataFrame, store: SimStore | None, against: str | Path | None
) -> None:
    """A key already decided would be decided again here, but replayed by ``ingest``."""
    known = (
        _against.store_keys(stages.spark, store.scope)
        if store is not None
        else stages.spark.read.parquet(str(against)).select("key")
    )
    found = stages.run(
        "sign", lambda: rows.select("key").join(known, "key", "left_semi").limit(3).collect()
    )
    if found:
        where = "the store" if store is not None else f"the hand-over {against}"
        named = ", ".join(repr(row.key) for row in found)
        raise InvalidInput(
            f"keys already decided in {where} (e.g. {named}): leave them out of the input "
            "(ingest replays a known key's decision; this run would decide it again)"
        )


def _driver_setting(
    spark: SparkSession, name: str, given: int | None, conf: str, default: int
) -> int:
    """``given``, else the session's ``conf``, else ``default``: a row count, 0 or more."""
    configured = spark.conf.get(conf, None)
    chosen = given if given is not None else default if configured is None else int(configured)
    check_int(name, chosen, lowest=0)
    return chosen


def _on_driver(
    stages: _Stages, rows: pa.Table, recipe: _Recipe, with_items: bool, check: bool
) -> DataFrame:
    """A small input, collected, decided on the driver: ``batch`` signs, pairs, confirms and
    replays it in input order (what every stage below does, spread over Spark), and the verdicts
    go back as a DataFrame of the same columns. ``check``: ``_validate``'s checks, here."""
    if check:
        _validate_rows(rows)
    table = rows.sort_by("order")
    orders = table.column("order").to_pylist()
    keys = table.column("key").to_pylist()
    texts = table.column("text").to_pylist()
    policy, radius = recipe.policy, recipe.radius
    items = batch.sign(texts, keys=keys, preset=recipe.preset, policy=policy, max_distance=radius)
    batch.remember_boilerplate(items, policy=policy)
    return _decided_on_driver(stages, orders, items, recipe, with_items)


def _signed_then_on_driver(
    stages: _Stages, rows: DataFrame, recipe: _Recipe, with_items: bool
) -> DataFrame:
    """A medium input (checked already): signed on the executors (``_sign_stage``), the signed
    items collected and decided on the driver, as ``_on_driver`` decides them."""
    signed = _sign_stage(stages, rows, recipe, None, None).select("order", *ITEM_FIELDS)
    table = stages.run("sign", signed.toArrow).sort_by("order")
    log.info("simstore.spark: %s rows signed by Spark, decided on the driver", table.num_rows)
    columns = [table.column(name).to_pylist() for name in ITEM_FIELDS]
    items = [executor.make_item(*values) for values in zip(*columns, strict=True)]
    batch.remember_boilerplate(items, policy=recipe.policy)  # (items made whole: as signed)
    return _decided_on_driver(stages, table.column("order").to_pylist(), items, recipe, with_items)


def _decided_on_driver(
    stages: _Stages, orders: list[int], items: list[Item], recipe: _Recipe, with_items: bool
) -> DataFrame:
    """The verdicts of signed ``items`` in input order (``orders``), by the batch API, as a
    DataFrame of dedup's columns."""
    policy, radius = recipe.policy, recipe.radius
    keys = [item.key for item in items]
    edges = batch.confirm(items, batch.candidates(items, policy=policy), policy=policy,
                          max_distance=radius)  # fmt: skip
    verdicts = batch.replay(keys, edges)
    columns: dict[str, list[Any]] = {
        "key": keys,
        "kept": [verdict.kept for verdict in verdicts],
        "duplicate_of": [verdict.duplicate_of for verdict in verdicts],
        "distance": [verdict.distance for verdict in verdicts],
        "measure": [verdict.measure for verdict in verdicts],
        "score": [verdict.score for verdict in verdicts],
    }
    ddl = _VERDICT_DDL.removeprefix("order long, ")
    if with_items:
        signed = executor.items_batch(orders, items, False, [0] * len(items), policy)
        columns |= {
            "order": orders,
            "fingerprint": signed.column("fp").to_pylist(),
            "text": signed.column("text").to_pylist(),
            "signature": signed.column("signature").to_pylist(),
            "band_keys": signed.column("band_keys").to_pylist(),
            "segments": signed.column("segments").to_pylist(),
        }
        ddl += ", order long, fingerprint long, text string, signature binary"
        ddl += ", band_keys array<long>, segments array<long>"
    return stages.spark.createDataFrame(pa.table(columns), schema=ddl)


def _sign_stage(
    stages: _Stages,
    rows: DataFrame,
    recipe: _Recipe,
    store: SimStore | None,
    against: str | Path | None,
) -> DataFrame:
    """1. sign: the items of ``rows``, after the kept rows of ``store`` or of the hand-over
    ``against`` as priors when given one."""
    signer = executor.sign_batches(
        recipe.preset, recipe.policy, recipe.radius, executor.micros(recipe.moment)
    )
    items = rows.mapInArrow(signer, _ITEM_DDL)
    if store is not None or against is not None:
        first = stages.run("sign", lambda: rows.agg(F.min("order")).collect()[0][0])
        first_order = 0 if first is None else int(first)
        kept = (
            _against.store_rows(stages.spark, store.scope, recipe.moment)
            if store is not None
            else _against.handover_rows(stages.spark, str(against), recipe.moment)
        )
        prior = _against.prior_items(kept, first_order, recipe.policy, _ITEM_DDL)
        items = items.unionByName(prior)
    if stages.timings is not None:
        items = stages.materialise("sign", items)
    return items


def _boilerplate_stage(
    stages: _Stages,
    items: DataFrame,
    recipe: _Recipe,
    store: SimStore | None,
    against: str | Path | None,
) -> DataFrame:
    """1b. the memory of boilerplate (``simstore.policy.boilerplate``), under a policy that keeps
    it: each item's line keys that at least ``least`` items earlier in input order carried (a
    window over each line key's items), with the texts of the hand-over ``against`` (all of them
    before the run's), set aside on the executors and the items changed signed again
    (``executor.set_aside_batches``)."""
    least = recipe.policy.boilerplate_least
    if least is None:
        return items
    items = stages.keep(items)  # read twice: its lines counted, then the items set aside
    lines = items.filter(~F.col("prior")).select("order", F.explode("segments").alias("segment"))
    # the items before it that carried the line: its rank among them (orders are unique, and an
    # item's line keys distinct)
    earlier = F.row_number().over(Window.partitionBy("segment").orderBy("order")) - 1
    before = None
    if against is not None:
        before = _against.handover_counts(stages.spark, str(against))
    elif store is not None:
        before = _against.store_counts(stages.spark, store.scope, recipe.moment)
    if before is not None:
        lines = lines.join(before, "segment", "left")
        earlier = earlier + F.coalesce(F.col("before"), F.lit(0))
    common = (
        lines.withColumn("earlier", earlier)
        .filter(F.col("earlier") >= least)
        .groupBy("order")
        .agg(F.collect_list("segment").alias("common"))
    )
    joined = items.join(common, "order", "left")
    return joined.mapInArrow(executor.set_aside_batches(recipe.policy), _ITEM_DDL)


def _collapse_stage(stages: _Stages, items: DataFrame, recipe: _Recipe) -> tuple[DataFrame, Row]:
    """2. collapse identical items into classes (priors never collapse: each is its own).

    Every item gets its ``node`` (its class's representative, or itself), ``follower`` (a later
    member of a collapsed class) and ``reach`` (the class's last order). With the nodes, their
    counts: ``reps`` (the representatives, which enter the joins) and ``unsigned`` (those of
    them without band keys, which need SimHash probes)."""
    twin = F.when(F.col("prior"), F.col("order")).otherwise(F.lit(-1))
    # lines set aside: an item is found by its whole text's band keys too, and the kept texts
    # it is compared with lose its boilerplate (neither follows from its signature then)
    remembered = ("band_keys", "boilerplate") if recipe.policy.boilerplate_least else ()
    window = Window.partitionBy(*_CLASS_COLUMNS, *remembered)
    classed = (
        items.withColumn("twin", twin)
        .withColumn("rep", F.min("order").over(window))
        .withColumn("last", F.max("order").over(window))
        .withColumn("size", F.count(F.lit(1)).over(window))
        .withColumn("rep_key", F.min_by("key", "order").over(window))
        .drop("twin")
    )
    # read twice below (the self-checks and the join), computed once: the first task to need a
    # cached partition computes it, the other waits for it (Spark's block locks)
    classed = stages.keep(classed)
    checker = executor.self_batches(recipe.policy, recipe.radius)
    selves = classed.filter((F.col("size") > 1) & (F.col("order") == F.col("rep")))
    selves = selves.mapInArrow(checker, _SELF_DDL)
    nodes = classed.join(selves, "rep", "left")
    collapsed = F.coalesce(F.col("self_ok"), F.lit(False))
    nodes = nodes.select(
        "*",
        F.when(collapsed, F.col("rep")).otherwise(F.col("order")).alias("node"),
        (collapsed & (F.col("order") != F.col("rep"))).alias("follower"),
        F.when(collapsed, F.col("last")).otherwise(F.col("order")).alias("reach"),
    )
    rep = ~F.col("follower")
    unsigned = F.col("signature").isNull() | (F.size("band_keys") == 0)
    return stages.measure(
        "collapse", nodes, reps=F.count_if(rep), unsigned=F.count_if(rep & unsigned)
    )


def _candidates_stage(
    stages: _Stages,
    reps: DataFrame,
    policy: Policy,
    split: int,
    counts: dict[str, int] | None,
    rep_count: int,
    unsigned_count: int,
) -> DataFrame:
    """3. candidates: shared band keys (count), and SimHash probes when an item is unsigned.

    A band-key bucket of more than ``split`` texts is split in ``parts`` blocks by a hash of the
    node (its salt): a node goes to the blocks (min(salt, j), max(salt, j)) for every j < parts,
    and a block joins the nodes of its two salts with each other (or of its one salt among
    themselves), so every pair of the bucket is made exactly once, in one of parts * (parts + 1)
    / 2 join keys of at most about split**2 pairs each, which Spark spreads over its tasks.
    No bucket holds more texts than there are representatives (``rep_count``): up to ``split``
    of them, the largest bucket is not looked for (unless counted or logged)."""
    keyed = reps.filter(F.size("band_keys") > 0).select(
        F.col("order").alias("node"), "reach", "prior", "least", F.explode("band_keys").alias("bk")
    )
    sizes = keyed.groupBy("bk").agg(F.count(F.lit(1)).alias("size"))
    largest = 0
    if 0 < split < rep_count or counts is not None or log.isEnabledFor(logging.INFO):
        largest = stages.run("candidates", lambda: sizes.agg(F.max("size")).collect()[0][0]) or 0
        log.info("simstore.spark: the largest band-key bucket holds %s texts", largest)
    split_up = 0 < split < largest
    keys = ["bk"]
    if split_up:
        big = sizes.filter(F.col("size") > split).select(
            "bk", F.ceil(F.col("size") / split).cast("int").alias("parts")
        )
        if counts is not None:
            counts["split_buckets"] = stages.run("candidates", big.count)
        parts = F.coalesce(F.col("parts"), F.lit(1))
        salted = keyed.join(big, "bk", "left").select(
            "*",
            F.pmod(F.xxhash64("node"), parts).cast("int").alias("salt"),
            F.explode(F.sequence(F.lit(0), parts - 1)).alias("j"),
        )
        keyed = salted.select(
            "node", "reach", "prior", "least", "bk", "salt",
            F.least("salt", "j").alias("blk_lo"), F.greatest("salt", "j").alias("blk_hi"),
        )  # fmt: skip
        keys += ["blk_lo", "blk_hi"]
    elif counts is not None:
        counts["split_buckets"] = 0
    low, high = keyed.alias("low"), keyed.alias("high")
    on = F.col("low.node") < F.col("high.node")
    for name in keys:
        on &= F.col(f"low.{name}") == F.col(f"high.{name}")
    if split_up:  # in block (a, b), a != b, only the pairs across its two salts
        on &= (F.col("low.salt") != F.col("high.salt")) | (
            F.col("low.blk_lo") == F.col("low.blk_hi")
        )
    joined = low.join(high, on)
    if counts is not None:
        counts["largest_bucket"] = int(largest)
        per_task = joined.groupBy(F.spark_partition_id().alias("task")).count()
        most, made = stages.run(
            "candidates", lambda: per_task.agg(F.max("count"), F.sum("count")).collect()[0]
        )
        counts["largest_task_pairs"] = int(most or 0)
        counts["band_key_pairs"] = int(made or 0)
    # a node's reach, prior and least are grouped by, not aggregated (they follow from the
    # node): a count alone is the cheapest aggregation of the pairs, the bulk of the stage
    shared = joined.groupBy(
        F.col("low.node").alias("lo"), F.col("high.node").alias("hi"),
        F.col("low.reach").alias("lo_reach"), F.col("low.prior").alias("lo_prior"),
        F.col("high.prior").alias("hi_prior"), F.col("low.least").alias("lo_least"),
        F.col("high.least").alias("hi_least"),
    ).agg(F.count(F.lit(1)).alias("shared"))  # fmt: skip
    directed = shared.filter(~F.col("hi_prior"))
    backward = shared.filter(~F.col("lo_prior") & (F.col("lo_reach") > F.col("hi")))
    if keeps_base_candidate_rule(policy):
        # two signed texts are candidates by their band keys only (Policy.is_candidate): a pair
        # sharing fewer than the new side's min_shared is never one, so it is not confirmed
        directed = directed.filter(F.col("shared") >= F.col("hi_least"))
        backward = backward.filter(F.col("shared") >= F.col("lo_least"))
    directed = directed.select(F.col("hi").alias("new"), F.col("lo").alias("old"), "shared")
    backward = backward.select(F.col("lo").alias("new"), F.col("hi").alias("old"), "shared")
    pairs = directed.unionByName(backward)
    if unsigned_count:
        pairs = (
            pairs.unionByName(_simhash_pairs(reps))
            .groupBy("new", "old")
            .agg(F.max("shared").alias("shared"))
        )
    return pairs


def _confirm_stage(
    stages: _Stages, reps: DataFrame, pairs: DataFrame, recipe: _Recipe
) -> tuple[DataFrame, int]:
    """4. confirm: the candidate pairs ``recipe.policy`` confirms, as (new, old, ...) edges, and
    how many."""
    sides = reps.select(F.col("order").alias("node"), *ITEM_FIELDS)
    new_side = sides.select(
        F.col("node").alias("new"), *(F.col(n).alias(f"n_{n}") for n in ITEM_FIELDS)
    )
    old_side = sides.select(
        F.col("node").alias("old"), *(F.col(n).alias(f"o_{n}") for n in ITEM_FIELDS)
    )
    joined = pairs.join(new_side, "new").join(old_side, "old")
    confirmer = executor.confirm_batches(recipe.policy, recipe.radius)
    edges, counted = stages.measure(
        "confirm", joined.mapInArrow(confirmer, _EDGE_DDL), edges=F.count(F.lit(1))
    )
    return edges, int(counted["edges"])


def _replay_stage(nodes: DataFrame, edges: DataFrame, labels: DataFrame) -> DataFrame:
    """6. replay per component; texts in no edge need none. The verdicts of the new rows."""
    member = nodes.select(
        "order", "key", "node", "follower", "prior", "moment",
        "self_distance", "self_measure", "self_score",
    )  # fmt: skip
    grouped_nodes = member.join(labels, "node").groupBy("comp")
    edge_labels = labels.select(F.col("node").alias("new"), F.col("comp").alias("edge_comp"))
    grouped_edges = edges.join(edge_labels, "new").groupBy("edge_comp")
    replayed = grouped_nodes.cogroup(grouped_edges).applyInArrow(executor.replay, _VERDICT_DDL)
    alone = member.join(labels, "node", "left_anti").filter(~F.col("prior"))
    rep_keys = nodes.select("order", "rep_key")
    decided_alone = alone.join(rep_keys, "order").select(
        "order",
        "key",
        (~F.col("follower")).alias("kept"),
        F.when(F.col("follower"), F.col("rep_key")).alias("duplicate_of"),
        F.when(F.col("follower"), F.col("self_distance")).alias("distance"),
        F.when(F.col("follower"), F.col("self_measure")).alias("measure"),
        F.when(F.col("follower"), F.col("self_score")).alias("score"),
    )
    return replayed.unionByName(decided_alone)


def _simhash_pairs(reps: DataFrame) -> DataFrame:
    """Directed (new, old, shared=0) pairs whose fingerprints a SimHash lookup of ``new`` at its
    radius finds (the store's probe sets), in both directions where a follower needs them."""
    probes = (
        reps.filter(~F.col("prior"))
        .select("order", "fp", "radius")
        .mapInArrow(executor.probes, _PROBE_DDL)
    )
    own = (
        reps.select(
            F.col("order").alias("held"),
            F.col("prior").alias("held_prior"),
            F.array(
                *(F.struct(F.lit(b).alias("band"), F.col(f"b{b}").alias("value")) for b in range(4))
            ).alias("bands"),
        )
        .select("held", F.explode("bands").alias("bv"))
        .select("held", F.col("bv.band").alias("band"), F.col("bv.value").alias("value"))
    )
    reach = reps.select(F.col("order").alias("node"), "reach")
    found = probes.join(own, ["band", "value"]).filter(F.col("node") != F.col("held"))
    found = found.join(reach, "node").filter(
        (F.col("held") < F.col("node")) | (F.col("reach") > F.col("held"))
    )
    return found.select(
        F.col("node").alias("new"),
        F.col("held").alias("old"),
        F.lit(0).cast("long").alias("shared"),
    ).distinct()


def load(
    store: SimStore, result: DataFrame, *, at: datetime | None = None, batch_size: int = 5_000
) -> handover.LoadReport:
    """Hand a ``dedup(..., with_items=True)`` result over to ``store`` (``simstore.io.handover``):
    its rows stream to the driver partition by partition and are written in bulk."""
    missing = [name for name in (*RESULT_COLUMNS, *ITEM_COLUMNS) if name not in result.columns]
    if missing:
        raise InvalidInput(f"load needs a dedup(..., with_items=True) result; missing {missing}")
    return handover.load(
        store, (_load_row(row.asDict()) for row in result.toLocalIterator()), at=at,
        batch_size=batch_size,
    )  # fmt: skip


def _load_row(row: Mapping[str, Any]) -> handover.LoadRow:
    return handover.LoadRow(
        key=row["key"],
        kept=bool(row["kept"]),
        fingerprint=from_signed(int(row["fingerprint"])),
        text=row["text"],
        signature=None if row["signature"] is None else bytes(row["signature"]),
        band_keys=row["band_keys"],
        segments=row["segments"],
        duplicate_of=row["duplicate_of"],
        distance=row["distance"],
        measure=row["measure"],
        score=row["score"],
    )
