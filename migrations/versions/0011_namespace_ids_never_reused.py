"""SQLite: namespace ids are never reused (``simstore_namespaces.id`` becomes AUTOINCREMENT).

Revision ID: 0011_namespace_ids_never_reused
Revises: 0010_minhash_16_bands
Create Date: 2026-12-03

Self-contained on purpose: a migration never imports live simstore code. Without AUTOINCREMENT
SQLite gives a new row the largest id plus one, so a namespace created after the newest one was
dropped took its id: a store opened before the drop then wrote into the new namespace, and rows
the drop missed showed up in it. Every write checks that its namespace row exists; this makes
that check mean "the namespace I opened". The table is rebuilt (SQLite cannot add AUTOINCREMENT
in place; it holds one row a namespace), and its sequence starts above every id any row still
names, so rows left by a drop before this revision are never inherited either. The largest
``ns_id`` of each table is found by one index seek per partition (a loose scan of the
``(part, ns_id)`` index), not a scan of the rows. PostgreSQL sequences and InnoDB's persistent
AUTO_INCREMENT (MariaDB >= 10.2.4, MySQL >= 8.0) never reuse an id: nothing to do there.

``downgrade`` rebuilds the table without AUTOINCREMENT.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011_namespace_ids_never_reused"
down_revision: str | None = "0010_minhash_16_bands"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "simstore_namespaces"
ROW_TABLES = ("simstore_fingerprints", "simstore_decisions")  # each has an index on (part, ns_id)


def _largest_ns_id(table: str) -> int:
    """The largest ``ns_id`` in ``table``: per distinct partition, one seek into (part, ns_id)."""
    found = (
        op.get_bind()
        .execute(
            sa.text(
                f"WITH RECURSIVE parts(p) AS ("  # noqa: S608 - table names are constants
                f"SELECT min(part) FROM {table} UNION ALL "
                f"SELECT (SELECT min(part) FROM {table} WHERE part > p) FROM parts "
                "WHERE p IS NOT NULL) "
                f"SELECT max((SELECT max(ns_id) FROM {table} WHERE part = p)) FROM parts"
            )
        )
        .scalar()
    )
    return 0 if found is None else int(found)


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        return
    with op.batch_alter_table(
        TABLE, recreate="always", table_kwargs={"sqlite_autoincrement": True}
    ) as batch:
        batch.alter_column("id", existing_type=sa.Integer, autoincrement=True)
    floor = max(
        [
            int(
                bind.execute(
                    sa.text("SELECT coalesce(max(id), 0) FROM simstore_namespaces")
                ).scalar()
            )
        ]
        + [_largest_ns_id(table) for table in ROW_TABLES]
    )
    # the rebuild's copy left the sequence at the largest id (or no row for an empty table)
    bind.execute(sa.text("DELETE FROM sqlite_sequence WHERE name = :t"), {"t": TABLE})
    bind.execute(
        sa.text("INSERT INTO sqlite_sequence (name, seq) VALUES (:t, :seq)"),
        {"t": TABLE, "seq": floor},
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    with op.batch_alter_table(
        TABLE, recreate="always", table_kwargs={"sqlite_autoincrement": False}
    ) as batch:
        batch.alter_column("id", existing_type=sa.Integer, autoincrement=True)
