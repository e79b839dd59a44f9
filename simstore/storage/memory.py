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

import sqlalchemy as sa
from sqlalchemy.dialects import mysql, postgresql, sqlite
from sqlalchemy.engine import Connection

from simstore.policy.boilerplate import LineCounts, segments_of, set_aside
from simstore.policy.policies import Item, Policy
from simstore.storage import _prepared as prepared
from simstore.storage.retention import partition_of, window_start
from simstore.storage.schema import segments


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
) -> LineCounts | None:
    """Set the items' boilerplate aside in input order by the counts the namespace holds (None,
    and nothing done, under a policy without the memory). The counts seen, with those the batch
    adds (``LineCounts.added``: ``write_counts`` writes them) unless ``count`` is False (a
    query)."""
    least = policy.boilerplate_least
    if least is None or not items:
        return None
    keys = segments_of(items, skip)
    since = None
    if keep is not None:
        start = window_start(min(moments), keep)
        since = None if start is None else partition_of(start, partition_seconds)
    counts = LineCounts(least, read_counts(conn, ns_id, keys, since) if keys else {})
    parts = [partition_of(moment, partition_seconds) for moment in moments]
    set_aside(policy, items, counts, partitions=parts, skip=skip, count=count)
    return counts


def read_counts(
    conn: Connection, ns_id: int, keys: Collection[int], since: int | None
) -> dict[int, int]:
    """Texts that carried each of these lines, in the partitions from ``since`` (every one:
    None)."""
    found: dict[int, int] = {}
    for chunk in prepared.chunks(sorted(keys)):
        where = [segments.c.segment.in_(chunk), segments.c.ns_id == ns_id]
        if since is not None:
            where.append(segments.c.part >= since)
        statement = (
            sa.select(segments.c.segment, sa.func.sum(segments.c.texts))
            .where(*where)
            .group_by(segments.c.segment)
        )
        for key, texts in conn.execute(statement):
            found[int(key)] = int(texts)
    return found


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
