"""Keeping a namespace tidy: purging old partitions, removing a key, refreshing statistics.

Each function takes the store's ``Connections`` and works in bounded transactions of its own, so
readers and writers go on meanwhile. ``SimStore.purge`` and ``SimStore.remove`` call these.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

import sqlalchemy as sa

from simstore import _prepared as prepared
from simstore import partitions
from simstore._connections import Connections
from simstore._finder import chunks
from simstore.db import translate_errors
from simstore.locking import lock_for_write
from simstore.retention import partition_of, window_start
from simstore.schema import decisions, fingerprints, minhash_keys

log = logging.getLogger("simstore")

PURGE_BATCH_ROWS = 10_000


def purge(
    connections: Connections,
    ns_id: int,
    partition_seconds: int,
    window: timedelta,
    now: datetime,
    namespace: str,
) -> int:
    """Delete the rows of the partitions wholly older than ``now - window``; rows deleted.

    On a partitioned PostgreSQL database whole partitions past the database's window are dropped
    first (``simstore.partitions``). The MinHash side rows go with their fingerprints (they are
    index rows of those and not counted).
    """
    start = window_start(now, window)
    assert start is not None  # noqa: S101 - a window was given
    cutoff = partition_of(start, partition_seconds)
    total = 0
    if connections.dialect == "postgresql":
        with connections.transaction() as conn:
            layout = partitions.read(conn)
            if layout is not None:
                total += partitions.drop_expired(conn, layout, now)
                partitions.make_ahead(conn, layout, now)
    _purge_band_keys(connections, ns_id, cutoff)
    for table in (fingerprints, decisions):
        while True:
            with connections.transaction() as conn:
                ids = [
                    row[0]
                    for row in conn.execute(
                        sa.select(table.c.id)
                        .where(table.c.ns_id == ns_id, table.c.part < cutoff)
                        .limit(PURGE_BATCH_ROWS)
                    )
                ]
                if ids:
                    conn.execute(sa.delete(table).where(table.c.id.in_(ids)))
            total += len(ids)
            if len(ids) < PURGE_BATCH_ROWS:
                break
    log.info("purged %d rows older than %s from %s", total, start, namespace)
    return total


def _purge_band_keys(connections: Connections, ns_id: int, cutoff: int) -> int:
    """Delete the MinHash side rows of partitions before ``cutoff``, in bounded batches.

    Rows of one fingerprint lie together in the (part, ns_id, fp_id) index, so a batch is the
    fingerprints whose rows the first PURGE_BATCH_ROWS index entries name, all rows of each.
    """
    total = 0
    while True:
        with connections.transaction() as conn:
            found = conn.execute(
                sa.select(minhash_keys.c.part, minhash_keys.c.fp_id)
                .where(minhash_keys.c.part < cutoff, minhash_keys.c.ns_id == ns_id)
                .limit(PURGE_BATCH_ROWS)
            ).all()
            parts = sorted({int(part) for part, _fp_id in found})
            fp_ids = sorted({int(fp_id) for _part, fp_id in found})
            for chunk in chunks(fp_ids, prepared.MAX_IN):
                total += conn.execute(
                    sa.delete(minhash_keys).where(
                        minhash_keys.c.part.in_(parts),
                        minhash_keys.c.ns_id == ns_id,
                        minhash_keys.c.fp_id.in_(chunk),
                    )
                ).rowcount
        if len(found) < PURGE_BATCH_ROWS:
            return total


def remove(connections: Connections, ns_id: int, key: str) -> bool:
    """Forget ``key`` (its kept row, band keys and decision); True if there was anything."""
    with connections.transaction() as conn:
        lock_for_write(conn, ns_id, None)
        row = conn.execute(
            sa.select(fingerprints.c.id, fingerprints.c.part).where(
                fingerprints.c.ns_id == ns_id, fingerprints.c.key == key
            )
        ).first()
        if row is not None:
            conn.execute(
                sa.delete(minhash_keys).where(
                    minhash_keys.c.part == row.part,
                    minhash_keys.c.ns_id == ns_id,
                    minhash_keys.c.fp_id == row.id,
                )
            )
        removed = conn.execute(
            sa.delete(fingerprints).where(fingerprints.c.ns_id == ns_id, fingerprints.c.key == key)
        ).rowcount
        removed += conn.execute(
            sa.delete(decisions).where(decisions.c.ns_id == ns_id, decisions.c.key == key)
        ).rowcount
    return bool(removed > 0)


def refresh_statistics(connections: Connections) -> None:
    """ANALYZE simstore's tables after bulk loads when PostgreSQL's statistics lag far behind.

    Without statistics (autovacuum off, or not yet run after a bulk load) PostgreSQL takes a
    large table for a tiny one and answers key and band lookups by scanning whole namespaces:
    measured here, batch times grew from 2 s to 26 s within 60k rows. This is what autovacuum's
    analyze would do (at a 20% change threshold); ANALYZE blocks neither readers nor writers.
    """
    if connections.dialect != "postgresql" or connections.caller_connection is not None:
        return
    with translate_errors(connections.engine.url), connections.engine.connect() as conn:
        # the tables, or their partitions when they are partitioned (simstore.partitions)
        stale = conn.exec_driver_sql(
            "SELECT relname FROM pg_stat_user_tables "
            "WHERE relname ~ '^simstore_(fingerprints|decisions|minhash)(_p[a-z0-9]+)?$' "
            "AND n_mod_since_analyze > 0.2 * GREATEST(n_live_tup, 10000)"
        ).scalars()
        tables = sorted(str(name) for name in stale)
        if tables:
            log.info("analyzing %s after a bulk load", ", ".join(tables))
            conn.exec_driver_sql(f"ANALYZE {', '.join(tables)}")  # names from the fixed set
            conn.commit()
