"""MySQL/MariaDB: band keys as 4-byte INT, not BIGINT.

Revision ID: 0015_minhash_int_keys
Revises: 0014_packed_text
Create Date: 2026-12-05

Self-contained on purpose: a migration never imports live simstore code. Every band key is a
signed 32-bit value (one per band of four one-byte signature values), but ``simstore_minhash``
declared it BIGINT, which InnoDB stores in 8 bytes: with ``ns_id``, ``fp_id`` and InnoDB's 18
bytes of per-row header and transaction fields, a key row shrinks from 38 to 34 bytes, and a
text has 16 of them. SQLite stores a 32-bit value in 4 bytes whatever the declared type, and
PostgreSQL keeps the keys in the fingerprint row (``simstore_minhash`` is empty there): both are
left as they are.

``ALTER TABLE ... MODIFY`` copies the table (minutes on a big one) and is atomic on MariaDB 10.6+
and MySQL 8, so a killed upgrade leaves the old table whole; it is run only while the column is
still BIGINT, so running the upgrade again resumes it.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015_minhash_int_keys"
down_revision: str | None = "0014_packed_text"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE = "simstore_minhash"


def _on_mysql() -> bool:
    return op.get_bind().dialect.name in ("mysql", "mariadb")


def _band_key_is(type_name: str) -> bool:
    """Whether ``band_key`` is reflected as this type (MySQL's BIGINT or INTEGER)."""
    columns = sa.inspect(op.get_bind()).get_columns(TABLE)
    (band_key,) = (column for column in columns if column["name"] == "band_key")
    return type(band_key["type"]).__name__ == type_name


def upgrade() -> None:
    if _on_mysql() and _band_key_is("BIGINT"):
        op.execute(f"ALTER TABLE {TABLE} MODIFY band_key INT NOT NULL")


def downgrade() -> None:
    if _on_mysql() and _band_key_is("INTEGER"):
        op.execute(f"ALTER TABLE {TABLE} MODIFY band_key BIGINT NOT NULL")
