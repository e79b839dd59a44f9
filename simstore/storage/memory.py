"""The store's memory of boilerplate in ``simstore_segments`` (``simstore.policy.boilerplate``):
the counts a batch's texts see, read in its transaction, and the counts it adds, written there.

The counts are summed over the time partitions of the keep window (every partition without one)
and written in the partition of each text's time, so they leave with the purge of the partition.
A batch's rows are upserted in key order, after every other write of the transaction: adds that
carry one footer wait for each other on its row, never in a cycle.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import mysql, postgresql, sqlite
from sqlalchemy.engine import Connection

from simstore.policy.boilerplate import LineCounts, segments_of, set_aside
from simstore.policy.policies import Item, Policy
from simstore.storage import _prepared as prepared
from simstore.storage.retention import partition_of, window_start
from simstore.storage.schema import segments
from simstore.storage.scope import Scope


def remember(
    conn: Connection,
    ns_id: int,
    policy: Policy,
    items: Sequence[Item],
    moments: Sequence[datetime],
    *,
    keep: timedelta | None,
    partition_seconds: int,
    skip: Collection[int] = (),
    count: bool = True,
    counts: LineCounts | None = None,
) -> LineCounts | None:
    """Set the items' boilerplate aside in input order by the counts the namespace holds (None,
    and nothing done, under a policy without the memory). The counts seen, with those the batch
    adds (``LineCounts.added``: ``write_counts`` writes them) unless ``count`` is False (a
    query). ``counts``: those of earlier batches of one call, continued (queries decided in
    order: each counts the ones before it, and nothing is written)."""
    least = policy.boilerplate_least
    if least is None or not items:
        return counts
    if counts is None:
        counts = LineCounts(least)
    keys = segments_of(items, skip) - counts.counts.keys()
    if keys:
        since = _since(keep, min(moments), partition_seconds)
        counts.counts.update(read_counts(conn, ns_id, keys, since))
    parts = [partition_of(moment, partition_seconds) for moment in moments]
    set_aside(policy, items, counts, partitions=parts, skip=skip, count=count)
    return counts


def _since(keep: timedelta | None, at: datetime, partition_seconds: int) -> int | None:
    """The first partition of the keep window at ``at`` (None: every partition counts)."""
    start = None if keep is None else window_start(at, keep)
    return None if start is None else partition_of(start, partition_seconds)


def _counted(ns_id: int, since: int | None, keys: Sequence[int] | None = None) -> sa.Select[Any]:
    """The texts that carried each line (of ``keys``, or every line) from partition ``since``."""
    where = [segments.c.ns_id == ns_id]
    if keys is not None:
        where.insert(0, segments.c.segment.in_(keys))
    if since is not None:
        where.append(segments.c.part >= since)
    return (
        sa.select(segments.c.segment, sa.func.sum(segments.c.texts))
        .where(*where)
        .group_by(segments.c.segment)
    )


def read_counts(
    conn: Connection, ns_id: int, keys: Collection[int], since: int | None
) -> dict[int, int]:
    """Texts that carried each of these lines, in the partitions from ``since`` (every one:
    None)."""
    found: dict[int, int] = {}
    for chunk in prepared.chunks(sorted(keys)):
        for key, texts in conn.execute(_counted(ns_id, since, chunk)):
            found[int(key)] = int(texts)
    return found


def window_counts(scope: Scope, at: datetime) -> dict[int, int]:
    """Every line's count in a namespace's keep window at ``at`` (every partition without one):
    what a batch decided elsewhere against the store starts from (``simstore.spark``)."""
    since = _since(scope.keep, at, scope.partition_seconds)
    with scope.connections.reading() as conn:
        return {int(key): int(texts) for key, texts in conn.execute(_counted(scope.ns_id, since))}


def write_counts(conn: Connection, ns_id: int, added: Mapping[tuple[int, int], int]) -> None:
    """Add ``added`` ((partition, key): texts) to the namespace's counts."""
    if not added:
        return
    rows = [
        {"segment": key, "ns_id": ns_id, "part": part, "texts": texts}
        for (part, key), texts in sorted(added.items(), key=lambda pair: (pair[0][1], pair[0][0]))
    ]
    dialect = conn.dialect.name
    for first in range(0, len(rows), _UPSERT_ROWS):
        chunk = rows[first : first + _UPSERT_ROWS]
        if dialect in ("mysql", "mariadb"):
            insert = mysql.insert(segments).values(chunk)
            more = segments.c.texts + insert.inserted.texts
            conn.execute(insert.on_duplicate_key_update(texts=more))
            continue
        upsert = (postgresql.insert if dialect == "postgresql" else sqlite.insert)(segments).values(
            chunk
        )
        conn.execute(
            upsert.on_conflict_do_update(
                index_elements=["segment", "ns_id", "part"],
                set_={"texts": segments.c.texts + upsert.excluded.texts},
            )
        )


_UPSERT_ROWS = 200  # rows of one upsert statement (4 parameters each: under SQLite's limits)


def purge_counts(conn: Connection, ns_id: int, cutoff: int) -> int:
    """Delete the counts of the partitions before ``cutoff``; the rows deleted."""
    parts = [
        int(part)
        for part in conn.execute(
            sa.select(segments.c.part)
            .where(segments.c.part < cutoff, segments.c.ns_id == ns_id)
            .distinct()
        ).scalars()
    ]
    deleted = 0
    for part in parts:
        result = conn.execute(
            sa.delete(segments).where(segments.c.part == part, segments.c.ns_id == ns_id)
        )
        deleted += int(result.rowcount)
    return deleted
