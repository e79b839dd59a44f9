"""MinHash verification: a signature column on fingerprints and the LSH band-key side table.

Revision ID: 0004_minhash
Revises: 0003_settings
Create Date: 2026-11-30

Self-contained on purpose: a migration never imports live simstore code. Existing rows get no
signature; the store decides them by SimHash distance, as before, and existing namespaces are
marked as holding such rows (``unsigned_rows``), so MinHash queries keep looking them up.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004_minhash"
down_revision: str | None = "0003_settings"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # each step is skipped when done: a killed upgrade on MySQL (DDL commits) is run again
    if "signature" not in _columns("simstore_fingerprints"):
        op.add_column(
            "simstore_fingerprints", sa.Column("signature", sa.LargeBinary, nullable=True)
        )
    # existing namespaces may hold rows without signatures: true until proven otherwise
    if "unsigned_rows" not in _columns("simstore_namespaces"):
        op.add_column(
            "simstore_namespaces",
            sa.Column("unsigned_rows", sa.Boolean, nullable=False, server_default=sa.true()),
        )
    inspector = sa.inspect(op.get_bind())
    if "simstore_minhash" not in inspector.get_table_names():
        _create_minhash()
    made = {index["name"] for index in sa.inspect(op.get_bind()).get_indexes("simstore_minhash")}
    if "ix_simstore_minhash_part" not in made:
        op.create_index("ix_simstore_minhash_part", "simstore_minhash", ["part", "ns_id", "fp_id"])


def _create_minhash() -> None:
    op.create_table(
        "simstore_minhash",
        sa.Column("band_key", sa.BigInteger, nullable=False),
        sa.Column("ns_id", sa.Integer, nullable=False),
        sa.Column("part", sa.Integer, nullable=False),
        sa.Column("fp_id", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("band_key", "ns_id", "part", "fp_id", name="pk_simstore_minhash"),
        sqlite_with_rowid=False,
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_bin",
    )


def _columns(table: str) -> set[str]:
    """The columns already on ``table``: on MySQL a killed upgrade runs again over them."""
    return {str(column["name"]) for column in sa.inspect(op.get_bind()).get_columns(table)}


def downgrade() -> None:
    op.drop_index("ix_simstore_minhash_part", table_name="simstore_minhash")
    op.drop_table("simstore_minhash")
    with op.batch_alter_table("simstore_fingerprints") as batch:
        batch.drop_column("signature")
    with op.batch_alter_table("simstore_namespaces") as batch:
        batch.drop_column("unsigned_rows")
