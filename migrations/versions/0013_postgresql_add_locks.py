"""PostgreSQL: one function takes an add's locks and reads its namespace row after them.

Revision ID: 0013_postgresql_add_locks
Revises: 0012_namespace_policy
Create Date: 2026-12-04

Self-contained on purpose: a migration never imports live simstore code. An add on PostgreSQL
took its advisory locks in two statements (the namespace's shared lock, then its keys' locks)
and read the namespace row in a third, each a round trip: the row must be read by a statement
whose snapshot begins after every lock was granted, to see a drop or an unsigned row that
committed meanwhile. Inside a VOLATILE function each statement takes a fresh snapshot at READ
COMMITTED, so ``simstore_lock_for_add`` does all three in one call and returns the namespace's
``unsigned_rows`` flag (NULL: the namespace is gone). The keys are locked in the order given
(the caller sorts them). Before them it takes the tables' lock, key (lock_class, 0), shared:
partition maintenance takes it exclusively before its DDL, so an add never holds a table's lock
that a purge's DROP waits for while it waits for one the purge holds (they deadlocked).
Nothing changes on SQLite and MySQL/MariaDB.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0013_postgresql_add_locks"
down_revision: str | None = "0012_namespace_policy"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

LOCK_FOR_ADD = """
CREATE OR REPLACE FUNCTION simstore_lock_for_add(lock_class integer, ns integer, keys bigint[])
RETURNS boolean
LANGUAGE plpgsql VOLATILE
AS $body$
DECLARE
    flag boolean;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(lock_class, 0);
    PERFORM pg_advisory_xact_lock_shared(lock_class, ns);
    PERFORM pg_advisory_xact_lock(k) FROM unnest(keys) AS k;
    SELECT unsigned_rows INTO flag FROM simstore_namespaces WHERE id = ns;
    RETURN flag;
END
$body$
"""


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(LOCK_FOR_ADD)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS simstore_lock_for_add(integer, integer, bigint[])")
