"""Database-wide settings: a name -> value table (first use: PostgreSQL partitioning).

Revision ID: 0003_settings
Revises: 0002_band_pairs
Create Date: 2026-11-29

Self-contained on purpose: a migration never imports live simstore code.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003_settings"
down_revision: str | None = "0002_band_pairs"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if "simstore_settings" in _tables():  # made by a killed upgrade on MySQL
        return
    op.create_table(
        "simstore_settings",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
        mysql_charset="utf8mb4",
        mysql_collate="utf8mb4_bin",
    )


def _tables() -> set[str]:
    """The tables already there: on MySQL (DDL not transactional) a killed upgrade runs again."""
    return set(sa.inspect(op.get_bind()).get_table_names())


def downgrade() -> None:
    op.drop_table("simstore_settings")
