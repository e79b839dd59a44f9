"""The SimHash band indexes hold only the rows kept without a MinHash signature.

Revision ID: 0009_simhash_index_unsigned
Revises: 0008_no_kept_decisions
Create Date: 2026-12-02

Self-contained on purpose: a migration never imports live simstore code. A signed row (a text
kept under the default policy) is found by its MinHash band keys; its four SimHash band index
entries were never read by the default policy's lookups, and cost ~112 bytes a kept text on
SQLite at 50M rows. A new column ``simhash_indexed`` (true exactly for the rows without a
signature) marks the rows SimHash lookups find, and the four band indexes are made again over
those rows only, with the column as their last one (SQLite answers from a partial index alone only
when the index holds every column the query names). MySQL and MariaDB have no partial indexes:
there the indexes keep every row, and the lookups filter on the column inside them.

The upgrade writes the column into the rows whose value is not the one the column was added with:
on SQLite the signed rows (the default must be true there, and SQLite cannot change a column's
default), on the servers the unsigned rows (added false, then the default set to true for new
rows). ``downgrade`` makes the full indexes again and drops the column.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009_simhash_index_unsigned"
down_revision: str | None = "0008_no_kept_decisions"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "simstore_fingerprints"
COLUMN = "simhash_indexed"
BANDS = (("b0", "b1"), ("b1",), ("b2", "b3"), ("b3",))

fingerprints = sa.table(
    TABLE, sa.column("signature", sa.LargeBinary), sa.column(COLUMN, sa.Boolean)
)


def _index_name(bands: tuple[str, ...]) -> str:
    return f"ix_simstore_fingerprints_{'_'.join(bands)}"


def upgrade() -> None:
    """Every stage is skipped or repeated harmlessly when found done: MySQL commits each DDL
    statement, so a killed upgrade runs this again from the top."""
    bind = op.get_bind()
    on_sqlite = bind.dialect.name == "sqlite"
    if COLUMN not in {column["name"] for column in sa.inspect(bind).get_columns(TABLE)}:
        op.add_column(
            TABLE,
            sa.Column(
                COLUMN,
                sa.Boolean,
                nullable=False,
                server_default=sa.true() if on_sqlite else sa.false(),
            ),
        )
    if on_sqlite:
        op.execute(
            sa.update(fingerprints)
            .where(fingerprints.c.signature.is_not(None))
            .values({COLUMN: False})
        )
    else:
        # the signed rows keep the false they were added with, also on a second run
        op.execute(
            sa.update(fingerprints).where(fingerprints.c.signature.is_(None)).values({COLUMN: True})
        )
        op.alter_column(
            TABLE,
            COLUMN,
            server_default=sa.true(),
            existing_type=sa.Boolean,
            existing_nullable=False,
        )
    for bands in BANDS:
        columns = [*bands, "ns_id", "part", "fp", COLUMN]
        found = {
            index["name"]: index["column_names"] for index in sa.inspect(bind).get_indexes(TABLE)
        }
        if found.get(_index_name(bands)) == columns:
            continue  # made by an earlier, killed run
        if _index_name(bands) in found:
            op.drop_index(_index_name(bands), table_name=TABLE)
        op.create_index(
            _index_name(bands),
            TABLE,
            columns,
            postgresql_include=["id"],
            sqlite_where=sa.text(f"{COLUMN} = 1"),
            postgresql_where=sa.text(COLUMN),
        )


def downgrade() -> None:
    for bands in BANDS:
        op.drop_index(_index_name(bands), table_name=TABLE)
        op.create_index(
            _index_name(bands), TABLE, [*bands, "ns_id", "part", "fp"], postgresql_include=["id"]
        )
    with op.batch_alter_table(TABLE) as batch:
        batch.drop_column(COLUMN)
