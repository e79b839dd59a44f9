"""Band-pair indexes: lead the b0 and b2 indexes with the pairs (b0, b1) and (b2, b3).

Revision ID: 0002_band_pairs
Revises: 0001_initial
Create Date: 2026-11-29

A lookup on ``b0 = ? AND b1 IN (...)`` seeks a 32-bit key, so at tens of millions of rows a
radius <= 3 query can probe the two 32-bit halves at radius 1 (66 seeks, almost no false
candidates) instead of four 16-bit bands (4 seeks, about 4N/65536 candidates). The new indexes
still serve plain ``b0 = ?`` and ``b2 = ?`` lookups through their leading column, so the schema
keeps four band indexes, one column wider each for two of them.

Self-contained on purpose: a migration never imports live simstore code.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002_band_pairs"
down_revision: str | None = "0001_initial"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "simstore_fingerprints"
PAIRS = (("b0", "b1"), ("b2", "b3"))


def upgrade() -> None:
    for high, low in PAIRS:
        # create first: the table is never without an index on its leading band; each step is
        # skipped when done (a killed upgrade on MySQL, whose DDL commits, is run again)
        if f"ix_simstore_fingerprints_{high}_{low}" not in _indexes(TABLE):
            op.create_index(
                f"ix_simstore_fingerprints_{high}_{low}",
                TABLE,
                [high, low, "ns_id", "part", "fp"],
                postgresql_include=["id"],
            )
        if f"ix_simstore_fingerprints_{high}" in _indexes(TABLE):
            op.drop_index(f"ix_simstore_fingerprints_{high}", table_name=TABLE)


def _indexes(table: str) -> set[str]:
    """The indexes already on ``table``: on MySQL a killed upgrade runs again over them."""
    return {str(index["name"]) for index in sa.inspect(op.get_bind()).get_indexes(table)}


def downgrade() -> None:
    for high, low in PAIRS:
        op.create_index(
            f"ix_simstore_fingerprints_{high}",
            TABLE,
            [high, "ns_id", "part", "fp"],
            postgresql_include=["id"],
        )
        op.drop_index(f"ix_simstore_fingerprints_{high}_{low}", table_name=TABLE)
