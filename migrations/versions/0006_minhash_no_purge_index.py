"""Drop the MinHash side table's purge index: purges recompute band keys from the signatures.

Revision ID: 0006_minhash_no_purge_index
Revises: 0005_minhash_scheme
Create Date: 2026-12-01

Self-contained on purpose: a migration never imports live simstore code. The (part, ns_id, fp_id)
index cost about as much disk as the side table itself (SQLite: 579 of 2,038 bytes per kept text
with the default policy); simstore now finds a purged or removed row's band keys by recomputing
them from its stored signature and deletes them by primary key. Nothing else changes: the rows
and the primary key stay as they are.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006_minhash_no_purge_index"
down_revision: str | None = "0005_minhash_scheme"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    indexes = sa.inspect(op.get_bind()).get_indexes("simstore_minhash")
    if "ix_simstore_minhash_part" in {index["name"] for index in indexes}:  # else a killed upgrade
        op.drop_index("ix_simstore_minhash_part", table_name="simstore_minhash")


def downgrade() -> None:
    op.create_index("ix_simstore_minhash_part", "simstore_minhash", ["part", "ns_id", "fp_id"])
