"""Record the MinHash scheme of each namespace, so a store refuses signatures of another one.

Revision ID: 0005_minhash_scheme
Revises: 0004_minhash
Create Date: 2026-12-01

Self-contained on purpose: a migration never imports live simstore code. Every signature written
before this revision was made with the only scheme simstore had, named here as it is in
``simstore.text.minhash.SCHEME`` at this revision.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005_minhash_scheme"
down_revision: str | None = "0004_minhash"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

FIRST_SCHEME = "minhash-c5-96-24x4-v1"


def upgrade() -> None:
    columns = sa.inspect(op.get_bind()).get_columns("simstore_namespaces")
    if "minhash_scheme" not in {column["name"] for column in columns}:  # else a killed upgrade
        with op.batch_alter_table("simstore_namespaces") as batch:
            batch.add_column(
                sa.Column(
                    "minhash_scheme", sa.String(64), nullable=False, server_default=FIRST_SCHEME
                )
            )
    # the default only filled the existing rows: simstore writes the scheme of every new one
    with op.batch_alter_table("simstore_namespaces") as batch:
        batch.alter_column("minhash_scheme", server_default=None, existing_type=sa.String(64))


def downgrade() -> None:
    with op.batch_alter_table("simstore_namespaces") as batch:
        batch.drop_column("minhash_scheme")
