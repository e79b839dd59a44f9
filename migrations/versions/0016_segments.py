"""The store's memory of boilerplate: line counts per time partition.

Revision ID: 0016_segments
Revises: 0015_minhash_int_keys
Create Date: 2026-12-06

Self-contained on purpose: a migration never imports live simstore code. ``simstore_segments``
counts, per namespace and time partition, the texts added that carried a line (by a 64-bit key
of the normalised line), so that a line many texts carry (a footer, a disclaimer) is set aside
before a text is compared. A new, empty table: creating it is quick on every dialect, and an
upgrade killed before it is recorded finds the table there and makes only its index if missing.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016_segments"
down_revision: str | None = "0015_minhash_int_keys"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "simstore_segments"


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())
    if TABLE in inspector.get_table_names():  # (an upgrade killed after the table was made)
        if "ix_simstore_segments_part" not in {i["name"] for i in inspector.get_indexes(TABLE)}:
            op.create_index("ix_simstore_segments_part", TABLE, ["part", "ns_id"])
        return
    op.create_table(
        TABLE,
        sa.Column("segment", sa.BigInteger, nullable=False),
        sa.Column("ns_id", sa.Integer, nullable=False),
        sa.Column("part", sa.Integer, nullable=False),
        sa.Column("texts", sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint("segment", "ns_id", "part", name="pk_simstore_segments"),
        sqlite_with_rowid=False,
    )
    op.create_index("ix_simstore_segments_part", TABLE, ["part", "ns_id"])


def downgrade() -> None:
    op.drop_index("ix_simstore_segments_part", table_name=TABLE)
    op.drop_table(TABLE)
