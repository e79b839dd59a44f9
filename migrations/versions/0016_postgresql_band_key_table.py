"""PostgreSQL: MinHash band keys as rows of ``simstore_minhash``, answered from its primary key.

Revision ID: 0016_postgresql_band_key_table
Revises: 0015_minhash_int_keys
Create Date: 2026-12-06

Self-contained on purpose: a migration never imports live simstore code. Since revision 0007
PostgreSQL kept a row's band keys in the row (``band_keys integer[]`` under a GIN index), so
every row a key's GIN probe found was a visit to the wide fingerprint row, including the many
rows that share one key and are then dropped. The other dialects' side table
``simstore_minhash(band_key, ns_id, fp_id)`` answers the same lookup, and counts the keys each
row shares, from its primary key alone (index-only scans). On PostgreSQL its rows also carry
their fingerprint row's ``added_at``: a partitioned database (``simstore db partition``)
partitions them by it with the same bounds as the rows, so a purge drops them with their rows.

The steps, each of which checks what is already done, so that an upgrade killed at any point
resumes when run again:

1. the side table takes its PostgreSQL shape (``band_key`` INT, ``added_at``, and partitions
   mirroring ``simstore_fingerprints``' when that is partitioned; the table is empty until step
   2 fills it) and a progress mark (``simstore_settings``) is written, in one transaction;
2. the keys are copied from the arrays, ``BATCH`` rows at a time in id order, each batch with
   its progress mark in one statement: a killed copy resumes after the last batch committed;
3. the GIN index and the arrays go (the column is dropped and made again, empty: both only
   change the catalog) with the progress mark, in the transaction that records the revision.

Steps 1 and 2 commit as they go when simstore owns the connection (``simstore db upgrade``),
holding the upgrade lock at session level meanwhile so that no other upgrader starts. On a
caller's connection everything runs in the caller's transaction. Stop writers of an older
simstore before upgrading (as for every revision). MySQL, MariaDB and SQLite are not changed.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import context, op

revision: str = "0016_postgresql_band_key_table"
down_revision: str | None = "0015_minhash_int_keys"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BATCH = 5000  # fingerprint rows a copy statement (~24 keys each)
KEYS = "simstore_minhash"
ROWS = "simstore_fingerprints"
GIN_INDEX = "ix_simstore_fingerprints_band_keys"
PARTITIONED_INDEX = "ix_simstore_minhash_band_key"
PROGRESS = "upgrade_0016_copied_to"  # the highest fingerprint id whose keys are copied
UPGRADE_LOCK_KEY = 0x73696D73746F7265  # simstore.storage.migrate.UPGRADE_LOCK_KEY


def _one(sql: str, **params: object) -> object:
    return op.get_bind().execute(sa.text(sql), params).scalar()


def _commits() -> bool:
    """Whether steps 1 and 2 commit as they go: only on simstore's own connection."""
    return bool(context.config.attributes.get("simstore_owns_connection", False))


def _is_partitioned(table: str) -> bool:
    return _one("SELECT relkind FROM pg_class WHERE oid = CAST(:t AS regclass)", t=table) == "p"


def _has_column(table: str, column: str) -> bool:
    found = _one(
        "SELECT count(*) FROM pg_attribute WHERE attrelid = CAST(:t AS regclass) "
        "AND attname = :c AND NOT attisdropped",
        t=table,
        c=column,
    )
    return bool(found)


def _column_type(table: str, column: str) -> str:
    return str(
        _one(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = CAST(:t AS regclass) AND attname = :c AND NOT attisdropped",
            t=table,
            c=column,
        )
    )


def _shape_side_table() -> None:
    """Step 1 (each part only when not yet done)."""
    if _is_partitioned(ROWS) and not _is_partitioned(KEYS):
        # empty (PostgreSQL kept its keys in the rows): made again, partitioned like the rows
        op.execute(f"DROP TABLE {KEYS}")
        op.execute(
            f"CREATE TABLE {KEYS} (band_key INTEGER NOT NULL, ns_id INTEGER NOT NULL, "
            "fp_id BIGINT NOT NULL, added_at TIMESTAMP WITHOUT TIME ZONE NOT NULL) "
            "PARTITION BY RANGE (added_at)"
        )
        op.execute(f"CREATE INDEX {PARTITIONED_INDEX} ON {KEYS} (band_key, ns_id, fp_id)")
        bounds = op.get_bind().execute(
            sa.text(
                "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i "
                "JOIN pg_class c ON c.oid = i.inhrelid "
                "WHERE i.inhparent = CAST(:t AS regclass) ORDER BY c.relname"
            ),
            {"t": ROWS},
        )
        for name, bound in bounds.all():
            suffix = str(name).removeprefix(ROWS)  # _p_legacy, _p_default, _p<seconds>
            op.execute(f"CREATE TABLE {KEYS}{suffix} PARTITION OF {KEYS} {bound}")
    if _column_type(KEYS, "band_key") == "bigint":
        op.execute(f"ALTER TABLE {KEYS} ALTER COLUMN band_key TYPE INTEGER")
    if not _has_column(KEYS, "added_at"):
        op.execute(f"ALTER TABLE {KEYS} ADD COLUMN added_at TIMESTAMP WITHOUT TIME ZONE")
        op.execute(f"UPDATE {KEYS} SET added_at = '1970-01-01' WHERE added_at IS NULL")  # noqa: S608
        op.execute(f"ALTER TABLE {KEYS} ALTER COLUMN added_at SET NOT NULL")
    op.execute(
        "INSERT INTO simstore_settings (name, value) VALUES ('"  # noqa: S608 - constants
        + PROGRESS
        + "', '0') "
        "ON CONFLICT (name) DO NOTHING"
    )


def _copy_keys(commits: bool) -> None:
    """Step 2: the arrays' keys into the side table, a batch (and its progress mark) a statement."""
    bind = op.get_bind()
    done = int(str(_one("SELECT value FROM simstore_settings WHERE name = :n", n=PROGRESS)))
    while True:
        last = _one(
            f"SELECT max(id) FROM (SELECT id FROM {ROWS} WHERE id > :done "  # noqa: S608
            "ORDER BY id LIMIT :batch) AS batch",
            done=done,
            batch=BATCH,
        )
        if last is None:
            return
        bind.execute(
            sa.text(
                f"WITH copied AS (INSERT INTO {KEYS} (band_key, ns_id, fp_id, added_at) "  # noqa: S608
                f"SELECT DISTINCT k.band_key, f.ns_id, f.id, f.added_at FROM {ROWS} AS f "
                "CROSS JOIN LATERAL unnest(f.band_keys) AS k(band_key) "
                "WHERE f.id > :done AND f.id <= :last AND f.band_keys IS NOT NULL) "
                # a CTE that writes runs to completion whether or not it is read
                "UPDATE simstore_settings SET value = CAST(:last AS TEXT) WHERE name = :progress"
            ),
            {"done": done, "last": int(str(last)), "progress": PROGRESS},
        )
        if commits:
            bind.commit()
        done = int(str(last))


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    if not _has_column(ROWS, "band_keys"):  # a database made without the arrays: nothing to do
        return
    commits = _commits()
    _shape_side_table()
    if commits:  # the lock at session level too: a commit ends the transaction's hold of it
        _one("SELECT pg_advisory_lock(:k)", k=UPGRADE_LOCK_KEY)
        bind.commit()
    _copy_keys(commits)
    op.execute(f"DROP INDEX IF EXISTS {GIN_INDEX}")
    op.execute(f"ALTER TABLE {ROWS} DROP COLUMN band_keys")
    op.execute(f"ALTER TABLE {ROWS} ADD COLUMN band_keys INTEGER[]")
    op.execute("DELETE FROM simstore_settings WHERE name = '" + PROGRESS + "'")  # noqa: S608
    if commits:  # held by this transaction again (it records the revision), then by it alone
        _one("SELECT pg_advisory_xact_lock(:k)", k=UPGRADE_LOCK_KEY)
        _one("SELECT pg_advisory_unlock(:k)", k=UPGRADE_LOCK_KEY)


def downgrade() -> None:
    """The keys back into the arrays under their GIN index, and the side table emptied back to
    its shape of revision 0015 (one transaction)."""
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        f"UPDATE {ROWS} AS f SET band_keys = held.keys FROM (SELECT fp_id, "  # noqa: S608
        f"array_agg(band_key ORDER BY band_key) AS keys FROM {KEYS} GROUP BY fp_id) AS held "
        "WHERE f.id = held.fp_id"
    )
    op.execute(f"CREATE INDEX {GIN_INDEX} ON {ROWS} USING gin (band_keys) WITH (fastupdate = off)")
    op.execute(f"DROP TABLE {KEYS}")
    op.execute(
        f"CREATE TABLE {KEYS} (band_key BIGINT NOT NULL, ns_id INTEGER NOT NULL, "
        "fp_id BIGINT NOT NULL, "
        "CONSTRAINT pk_simstore_minhash PRIMARY KEY (band_key, ns_id, fp_id))"
    )
