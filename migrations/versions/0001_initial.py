"""Initial schema: namespaces, band-indexed fingerprints, decisions log.

Revision ID: 0001_initial
Revises:
Create Date: 2026-11-29

Self-contained on purpose: a migration never imports live simstore code.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

revision: str = "0001_initial"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ROW_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
TIMESTAMP = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")
KEY_TEXT = sa.String(255).with_variant(
    mysql.VARCHAR(255, charset="utf8mb4", collation="utf8mb4_bin"), "mysql", "mariadb"
)
LONG_TEXT = sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb")
MYSQL_TABLE = {"mysql_charset": "utf8mb4", "mysql_collate": "utf8mb4_bin"}
BANDS = ("b0", "b1", "b2", "b3")


def upgrade() -> None:
    """Each table and index is made unless there already (MySQL's DDL commits as it goes, so a
    killed first upgrade is run again over what it made); the collations are set every time."""
    tables = _tables()
    if "simstore_namespaces" not in tables:
        _create_namespaces()
    if "simstore_fingerprints" not in tables:
        _create_fingerprints()
    made = _indexes("simstore_fingerprints")
    for band in BANDS:
        if f"ix_simstore_fingerprints_{band}" not in made:
            op.create_index(
                f"ix_simstore_fingerprints_{band}",
                "simstore_fingerprints",
                [band, "ns_id", "part", "fp"],
                postgresql_include=["id"],
            )
    if "ix_simstore_fingerprints_part" not in made:
        op.create_index("ix_simstore_fingerprints_part", "simstore_fingerprints", ["part", "ns_id"])
    if "simstore_decisions" not in tables:
        _create_decisions()
    made = _indexes("simstore_decisions")
    if "ix_simstore_decisions_part" not in made:
        op.create_index("ix_simstore_decisions_part", "simstore_decisions", ["part", "ns_id"])
    if "ix_simstore_decisions_duplicate_of" not in made:
        op.create_index(
            "ix_simstore_decisions_duplicate_of", "simstore_decisions", ["duplicate_of", "ns_id"]
        )

    _compare_keys_byte_for_byte()


def _create_namespaces() -> None:
    op.create_table(
        "simstore_namespaces",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", KEY_TEXT, nullable=False),
        sa.Column("preset_name", sa.String(64), nullable=False),
        sa.Column("preset_version", sa.Integer, nullable=False),
        sa.Column("preset_params", sa.Text, nullable=False),
        sa.Column("band_layout", sa.String(16), nullable=False),
        sa.Column("partition_seconds", sa.Integer, nullable=False),
        sa.Column("created_with", sa.String(32), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("write_count", sa.BigInteger, nullable=False, server_default="0"),
        sa.UniqueConstraint("name"),
        **MYSQL_TABLE,
    )


def _create_fingerprints() -> None:
    op.create_table(
        "simstore_fingerprints",
        sa.Column("id", ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("ns_id", sa.Integer, nullable=False),
        sa.Column("key", KEY_TEXT, nullable=False),
        sa.Column("fp", sa.BigInteger, nullable=False),
        *(sa.Column(band, sa.Integer, nullable=False) for band in BANDS),
        sa.Column("added_at", TIMESTAMP, nullable=False),
        sa.Column("part", sa.Integer, nullable=False),
        sa.Column("text", LONG_TEXT, nullable=True),
        sa.UniqueConstraint("key", "ns_id", name="uq_simstore_fingerprints_key"),
        **MYSQL_TABLE,
    )


def _create_decisions() -> None:
    op.create_table(
        "simstore_decisions",
        sa.Column("id", ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("ns_id", sa.Integer, nullable=False),
        sa.Column("key", KEY_TEXT, nullable=False),
        sa.Column("fp", sa.BigInteger, nullable=False),
        sa.Column("decided_at", TIMESTAMP, nullable=False),
        sa.Column("part", sa.Integer, nullable=False),
        sa.Column("inserted", sa.Boolean, nullable=False),
        sa.Column("duplicate_of", KEY_TEXT, nullable=True),
        sa.Column("distance", sa.SmallInteger, nullable=True),
        sa.Column("measure", sa.String(16), nullable=True),
        sa.Column("score", sa.Float, nullable=True),
        sa.UniqueConstraint("key", "ns_id", name="uq_simstore_decisions_key"),
        **MYSQL_TABLE,
    )


def _tables() -> set[str]:
    """The tables already there: on MySQL (DDL not transactional) a killed upgrade runs again."""
    return set(sa.inspect(op.get_bind()).get_table_names())


def _indexes(table: str) -> set[str]:
    """The indexes already on ``table``: on MySQL a killed upgrade runs again over them."""
    return {str(index["name"]) for index in sa.inspect(op.get_bind()).get_indexes(table)}


def _compare_keys_byte_for_byte() -> None:
    """MySQL-family binary collations of utf8mb4 are PAD SPACE: 'a' and 'a ' would be one key.

    MariaDB's utf8mb4_nopad_bin and MySQL 8's utf8mb4_0900_bin compare every byte.
    """
    bind = op.get_bind()
    if bind.dialect.name not in ("mysql", "mariadb"):
        return
    collation = (
        "utf8mb4_nopad_bin" if getattr(bind.dialect, "is_mariadb", False) else "utf8mb4_0900_bin"
    )
    for table, column, nullable in (
        ("simstore_namespaces", "name", False),
        ("simstore_fingerprints", "key", False),
        ("simstore_decisions", "key", False),
        ("simstore_decisions", "duplicate_of", True),
    ):
        null = "NULL" if nullable else "NOT NULL"
        op.execute(
            f"ALTER TABLE {table} MODIFY `{column}` VARCHAR(255) "
            f"CHARACTER SET utf8mb4 COLLATE {collation} {null}"
        )


def downgrade() -> None:
    op.drop_table("simstore_decisions")
    op.drop_table("simstore_fingerprints")
    op.drop_table("simstore_namespaces")
