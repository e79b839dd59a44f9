"""Kept comparison texts are stored compressed, in a new column.

Revision ID: 0014_packed_text
Revises: 0013_postgresql_add_locks
Create Date: 2026-12-05

Self-contained on purpose: a migration never imports live simstore code. A new nullable column
``simstore_fingerprints.packed_text``: the normalised text a policy compares exactly, as
zlib-compressed UTF-8 (about half the bytes of English text, two thirds of Chinese). Rows written
before keep theirs in ``text``, which is read as before and never written again; nothing is
rewritten, so the upgrade is quick on any size of table (an added nullable column is metadata
only on PostgreSQL, MariaDB and SQLite; on partitioned PostgreSQL the partitions get it from
their parent).

Resumable where DDL is not transactional (MySQL/MariaDB): the column is added only when missing.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0014_packed_text"
down_revision: str | None = "0013_postgresql_add_locks"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "simstore_fingerprints"
COLUMN = "packed_text"


def _has_column() -> bool:
    columns = sa.inspect(op.get_bind()).get_columns(TABLE)
    return any(column["name"] == COLUMN for column in columns)


def upgrade() -> None:
    if not _has_column():
        packed = sa.LargeBinary().with_variant(mysql.MEDIUMBLOB(), "mysql", "mariadb")
        op.add_column(TABLE, sa.Column(COLUMN, packed, nullable=True))


def downgrade() -> None:
    if _has_column():
        op.drop_column(TABLE, COLUMN)
