"""Keeping a namespace tidy: purging old partitions, removing a key, refreshing statistics.

Each function takes the store's ``Connections`` and works in bounded transactions of its own, so
readers and writers go on meanwhile. ``SimStore.purge`` and ``SimStore.remove`` call these.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from simstore.errors import InvalidType
from simstore.policy.boilerplate import whole_band_keys
from simstore.results import Purged
from simstore.storage import _prepared as prepared
from simstore.storage import expiry, memory, partitions
from simstore.storage._connections import Connections
from simstore.storage.db import translate_errors
from simstore.storage.locking import lock_for_write, lock_tables, require_namespace
from simstore.storage.retention import EPOCH, partition_of, utc_aware, window_start
from simstore.storage.schema import (
    band_keys_in_row,
    decisions,
    fingerprints,
    minhash_keys,
    namespaces,
    stored_text_of,
)
from simstore.storage.scope import Scope
from simstore.text import minhash

log = logging.getLogger("simstore")

PURGE_BATCH_ROWS = 10_000
_TIMES = {fingerprints: fingerprints.c.added_at, decisions: decisions.c.decided_at}
ROWS_PER_BAND_KEY_DELETE = 128  # up to 3,072 keys: one IN list within prepared.MAX_IN
# what ``delete_band_keys`` needs of a kept row
_SIGNED_ROW = (
    fingerprints.c.id,
    fingerprints.c.ns_id,
    fingerprints.c.signature,
    fingerprints.c.packed_text,
)


def purge_scope(
    scope: Scope, window: timedelta | None, now: datetime, *, dry_run: bool = False
) -> Purged | None:
    """``purge`` of one open namespace (``NamespaceDropped`` if it has been dropped), then the
    eviction of its kept texts past its cap (``max_kept``, ``evict_over_cap``); None when it has
    neither a window nor a cap."""
    if not isinstance(dry_run, bool):
        raise InvalidType(f"dry_run must be a bool, not {type(dry_run).__name__}")
    with scope.connections.reading() as conn:
        require_namespace(conn, scope.ns_id, scope.namespace)
        cap = expiry.max_kept_of(conn, scope.ns_id)
    if window is None and cap is None:
        return None
    # rows an add may move (expiry by last sighting) are deleted under the namespace's lock
    exclusive = scope.policy.expire_by_last_seen
    done = Purged(None, None, scope.partition_seconds, 0, 0, 0, 0, dry_run)
    if window is not None:
        done = purge(
            scope.connections,
            scope.ns_id,
            scope.partition_seconds,
            window,
            now,
            scope.namespace,
            dry_run=dry_run,
            exclusive=exclusive,
        )
    if cap is None:
        return done
    if dry_run:
        cutoff = None if window is None else _cutoff(window, now, scope.partition_seconds)
        with scope.connections.reading() as conn:
            counts = expiry.kept_per_partition(conn, scope.ns_id, cutoff)
        evicted, band_keys = expiry.evicted_by(counts, cap), 0
    else:
        evicted, band_keys = evict_over_cap(scope, cap, exclusive=exclusive)
    return dataclasses.replace(
        done, evicted=evicted, band_keys=done.band_keys + band_keys, max_kept=cap
    )


def evict_over_cap(scope: Scope, max_kept: int, *, exclusive: bool = False) -> tuple[int, int]:
    """Delete the namespace's kept texts past ``max_kept``, oldest first: the time partitions
    before the one that crosses the cap whole (``_purge_rows``), then that one's oldest rows (by
    time, then id), in bounded batches; (rows, band keys) deleted. The cap is counted once, at
    the start: what adds keep meanwhile stays until the next purge."""
    with scope.connections.reading() as conn:
        cut = expiry.over_cap(expiry.kept_per_partition(conn, scope.ns_id), max_kept)
    if cut is None:
        return 0, 0
    part, excess = cut
    total, band_keys = _purge_rows(scope.connections, scope.ns_id, part, exclusive=exclusive)
    while excess > 0:
        with scope.connections.transaction() as conn:
            if exclusive:
                lock_for_write(conn, scope.ns_id, None, namespace=scope.namespace)
            found = conn.execute(
                sa.select(*_SIGNED_ROW)
                .where(fingerprints.c.ns_id == scope.ns_id, fingerprints.c.part == part)
                .order_by(fingerprints.c.added_at, fingerprints.c.id)
                .limit(min(excess, PURGE_BATCH_ROWS))
            ).all()
            band_keys += _delete_kept(conn, found)
        total += len(found)
        excess = 0 if not found else excess - len(found)
    log.info("evicted %d kept texts past the cap of %d from %s", total, max_kept, scope.namespace)
    return total, band_keys


def _cutoff(window: timedelta, now: datetime, partition_seconds: int) -> int:
    """The first partition inside ``window`` at ``now``."""
    start = window_start(now, window)
    assert start is not None  # noqa: S101 - a window was given
    return partition_of(start, partition_seconds)


def purge(
    connections: Connections,
    ns_id: int,
    partition_seconds: int,
    window: timedelta,
    now: datetime,
    namespace: str,
    *,
    dry_run: bool = False,
    exclusive: bool = False,
) -> Purged:
    """Delete the rows of the partitions wholly older than ``now - window``; counts per table.

    On a partitioned PostgreSQL database whole partitions past the database's window are dropped
    first (``simstore.storage.partitions``; their rows, of every namespace, are
    ``partition_rows``). The
    MinHash band keys go with their fingerprints. ``dry_run`` counts what would go and writes
    nothing. ``exclusive``: each batch of kept rows is deleted under the namespace's exclusive
    lock (a namespace whose adds move kept rows: ``simstore.storage.expiry``).
    """
    start = window_start(now, window)
    cutoff = _cutoff(window, now, partition_seconds)
    before = EPOCH + timedelta(seconds=cutoff * partition_seconds)
    if dry_run:
        return _would_purge(connections, ns_id, cutoff, window, now, partition_seconds)
    band_keys = partition_rows = 0
    if connections.dialect == "postgresql":
        with connections.transaction() as conn:
            lock_tables(conn)  # no add holds a table's lock that a DROP needs, nor waits for one
            layout = partitions.read(conn)
            if layout is not None:
                # the dropped rows' band keys are in them (band_keys_in_row): they go too
                partition_rows = partitions.drop_expired(conn, layout, now)
                partitions.make_ahead(conn, layout, now)
    kept, removed_keys = _purge_rows(connections, ns_id, cutoff, exclusive=exclusive)
    with connections.transaction() as conn:
        memory.purge_counts(conn, ns_id, cutoff)
    logged = 0
    while True:
        with connections.transaction() as conn:
            ids = [
                row[0]
                for row in conn.execute(
                    sa.select(decisions.c.id)
                    .where(decisions.c.ns_id == ns_id, decisions.c.part < cutoff)
                    .limit(PURGE_BATCH_ROWS)
                )
            ]
            if ids:
                conn.execute(sa.delete(decisions).where(decisions.c.id.in_(ids)))
        logged += len(ids)
        if len(ids) < PURGE_BATCH_ROWS:
            break
    done = Purged(
        window, utc_aware(before), partition_seconds, kept, logged, band_keys + removed_keys,
        partition_rows, dry_run=False,
    )  # fmt: skip
    log.info("purged %d rows older than %s from %s", done.rows, start, namespace)
    return done


def _would_purge(
    connections: Connections,
    ns_id: int,
    cutoff: int,
    window: timedelta,
    now: datetime,
    partition_seconds: int,
) -> Purged:
    """What ``purge`` would delete now, counted per table (nothing is written)."""
    before = EPOCH + timedelta(seconds=cutoff * partition_seconds)
    with connections.reading() as conn:
        layout = partitions.read(conn) if connections.dialect == "postgresql" else None
        dropped = None
        partition_rows = 0
        if layout is not None:  # the partitions past the database's window go whole
            dropped = _dropped_before(layout, now)
        if dropped is not None:
            for table, moment in _TIMES.items():
                partition_rows += _count(conn, table, moment < dropped)
        counts = []
        for table in (fingerprints, decisions):
            where = [table.c.ns_id == ns_id, table.c.part < cutoff]
            if dropped is not None:  # not counted twice
                where.append(_TIMES[table] >= dropped)
            counts.append(_count(conn, table, *where))
        kept, logged = counts
        # the band keys of the kept rows that go (a partition drop takes its rows' keys too)
        going = [fingerprints.c.ns_id == ns_id, fingerprints.c.part < cutoff]
        if dropped is not None:
            going.append(fingerprints.c.added_at >= dropped)
        if band_keys_in_row(conn.dialect):
            total = sa.func.coalesce(sa.func.sum(sa.func.cardinality(fingerprints.c.band_keys)), 0)
            band_keys = int(conn.execute(sa.select(total).where(*going)).scalar_one())
        else:
            band_keys = _count(
                conn,
                minhash_keys.join(fingerprints, fingerprints.c.id == minhash_keys.c.fp_id),
                minhash_keys.c.ns_id == ns_id,
                *going,
            )
    return Purged(
        window, utc_aware(before), partition_seconds, kept, logged, band_keys, partition_rows, True
    )


def _count(conn: Connection, table: sa.FromClause, *where: Any) -> int:
    return int(
        conn.execute(sa.select(sa.func.count()).select_from(table).where(*where)).scalar_one()
    )


def _purge_rows(
    connections: Connections, ns_id: int, cutoff: int, *, exclusive: bool = False
) -> tuple[int, int]:
    """Delete the kept rows of partitions before ``cutoff`` with their MinHash band keys, in
    bounded batches (each batch's band keys and rows in one transaction, under the namespace's
    exclusive lock when ``exclusive``); (rows, band keys).

    The band keys are found by primary key: recomputed from each row's stored signature, which
    is how they were made (``Policy.sign``), so the side table needs no index of its own.
    """
    total = band_keys = 0
    while True:
        with connections.transaction() as conn:
            if exclusive:
                lock_for_write(conn, ns_id, None)
            found = conn.execute(
                sa.select(*_SIGNED_ROW)
                .where(fingerprints.c.ns_id == ns_id, fingerprints.c.part < cutoff)
                .limit(PURGE_BATCH_ROWS)
            ).all()
            band_keys += _delete_kept(conn, found)
        total += len(found)
        if len(found) < PURGE_BATCH_ROWS:
            return total, band_keys


def _delete_kept(conn: Connection, found: Sequence[Sequence[Any]]) -> int:
    """Delete kept rows given as (id, ns_id, signature) and their band keys; the band keys."""
    band_keys = delete_band_keys(conn, found)
    ids = [int(row[0]) for row in found]
    for chunk in prepared.chunks(ids):
        conn.execute(sa.delete(fingerprints).where(fingerprints.c.id.in_(chunk)))
    return band_keys


def _dropped_before(layout: partitions.Partitioning, now: datetime) -> datetime | None:
    """The rows added before this moment sit in partitions a purge at ``now`` drops whole (None:
    it drops none).

    Partitions are aligned to the interval, so those that end at or before now - keep hold
    exactly the rows added before that moment floored to the interval; but the legacy partition
    (everything before the first boundary, the table as it was when partitioned) goes only once
    the first boundary itself is that old, and until then no partition is dropped at all.
    """
    step = int(layout.interval.total_seconds())
    seconds = int((now - layout.keep - EPOCH).total_seconds())
    boundary = EPOCH + timedelta(seconds=seconds // step * step)
    return boundary if layout.first_boundary <= boundary else None


def delete_band_keys(conn: Connection, rows: Sequence[Sequence[Any]]) -> int:
    """Delete the ``simstore_minhash`` rows of kept rows given as (id, ns_id, signature) or
    (id, ns_id, signature, packed_text).

    Each row's band keys are recomputed from its signature (distinct, as ``Policy.sign`` stores
    them, under the band layout its namespace's recorded policy signs with: ``_layouts``) and
    deleted: on SQLite by their full primary keys in one executemany (a seek each), on
    a server ``ROWS_PER_BAND_KEY_DELETE`` rows a statement (their keys and their ids). Rows
    without a signature have no band keys. Returns the band-key rows asked to go. On PostgreSQL
    the keys are in the rows themselves and go with them: only counted.
    """
    signed = [
        (int(row[0]), int(row[1]), bytes(row[2]), None if len(row) < 4 else row[3])
        for row in rows
        if row[2] is not None and minhash.is_stored_signature(bytes(row[2]))
    ]
    if not signed:
        return 0
    layouts = _layouts(conn, {row[1] for row in signed})
    held = [
        set().union(
            *(minhash.stored_band_keys([signature], layout)[0] for layout in layouts[ns]),
            # a text with lines set aside is found by its whole text's keys too (Policy.sign)
            *(whole_band_keys(stored_text_of(None, packed), layout) for layout in layouts[ns]),
        )
        for _row_id, ns, signature, packed in signed
    ]
    if band_keys_in_row(conn.dialect):
        return sum(map(len, held))
    if conn.dialect.name == "sqlite":  # in-process: an executemany of primary keys is cheapest
        # in primary-key order: the batch's deletes then walk the B-tree once, left to right
        params = sorted(
            (key, ns, row_id)
            for (row_id, ns, _signature, _packed), row_keys in zip(signed, held, strict=True)
            for key in row_keys
        )
        prepared.delete_band_key(conn.dialect).run_rows(conn, params)
        return len(params)
    # a server: executemany of DELETE is a round trip a row (PyMySQL), so many rows a statement
    by_namespace: dict[int, list[tuple[int, set[int]]]] = {}
    for (row_id, ns, _signature, _packed), row_keys in zip(signed, held, strict=True):
        by_namespace.setdefault(ns, []).append((row_id, row_keys))
    for ns, owned in by_namespace.items():
        for chunk in prepared.chunks(owned, ROWS_PER_BAND_KEY_DELETE):
            ids = [row_id for row_id, _keys in chunk]
            wanted = sorted(set().union(*(row_keys for _id, row_keys in chunk)))
            statement = prepared.delete_band_keys_of(
                conn.dialect, prepared.padded(len(wanted)), prepared.padded(len(ids))
            )
            statement.run(
                conn,
                {
                    "ns": ns,
                    **prepared.padded_params("k", wanted),
                    **prepared.padded_params("i", ids),
                },
            )
    return sum(map(len, held))


def _layouts(conn: Connection, ns_ids: set[int]) -> dict[int, tuple[str, ...]]:
    """The MinHash band layout of each namespace's keys, from its recorded policy recipe
    (``minhash_bands``; a recipe without it signs with ``minhash.LAYOUT``, as
    ``policies.policy_from_recipe`` reads it). A namespace whose recipe names no known layout
    (none recorded, unreadable) gets every layout: deleting keys a row never had deletes
    nothing, and no key of it stays behind."""
    found = dict(
        conn.execute(
            sa.select(namespaces.c.id, namespaces.c.policy).where(namespaces.c.id.in_(ns_ids))
        ).all()
    )
    out: dict[int, tuple[str, ...]] = {}
    for ns in ns_ids:
        try:
            layout = json.loads(found[ns])["params"].get("minhash_bands", minhash.LAYOUT)
        except (KeyError, TypeError, ValueError, AttributeError):
            layout = None
        out[ns] = (layout,) if layout in minhash.LAYOUTS else tuple(minhash.LAYOUTS)
    return out


def remove(scope: Scope, key: str) -> bool:
    """Forget ``key`` (its kept row, band keys and decision); True if there was anything
    (``NamespaceDropped`` when the namespace is gone)."""
    ns_id = scope.ns_id
    with scope.connections.transaction() as conn:
        lock_for_write(conn, ns_id, None, namespace=scope.namespace)
        found = conn.execute(
            sa.select(*_SIGNED_ROW).where(fingerprints.c.ns_id == ns_id, fingerprints.c.key == key)
        ).all()
        delete_band_keys(conn, found)
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
        # the tables, or their partitions when they are partitioned (simstore.storage.partitions)
        stale = conn.exec_driver_sql(
            "SELECT relname FROM pg_stat_user_tables "
            "WHERE relname ~ "
            "'^simstore_(fingerprints|decisions|minhash)(_p([0-9]+|_legacy|_default))?$' "
            "AND n_mod_since_analyze > 0.2 * GREATEST(n_live_tup, 10000)"
        ).scalars()
        tables = sorted(str(name) for name in stale)
        if tables:
            log.info("analyzing %s after a bulk load", ", ".join(tables))
            conn.exec_driver_sql(f"ANALYZE {', '.join(tables)}")  # names from the fixed set
            conn.commit()
