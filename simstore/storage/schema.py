"""simstore's tables, as SQLAlchemy Core on simstore's own MetaData.

Every table is prefixed ``simstore_`` so that simstore can live in a host application's database.

Index columns lead with the selective column (a band value, a key, a partition) and never with
``ns_id`` alone: a planner working from stale statistics (PostgreSQL right after a bulk load,
before ANALYZE) would otherwise pick an index on the namespace and filter a whole namespace by hand.
For the same reason there is no foreign key on ``ns_id`` (MySQL would add an index led by it);
simstore itself writes every row, always with an existing namespace id.
The migrations in ``migrations/`` create exactly this schema; a test compares the two.
"""

from __future__ import annotations

import zlib
from datetime import datetime
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.dialects import mysql, postgresql

from simstore.text.edges import MARK

metadata = sa.MetaData()

# SQLite only aliases the rowid for a column typed exactly INTEGER.
RowId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
# MySQL's DATETIME keeps whole seconds unless told otherwise.
Timestamp = sa.DateTime().with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")
# Keys compare byte for byte on every dialect: MySQL's default collation ignores case and its
# utf8mb4_bin ignores trailing spaces, so the migration gives key columns MariaDB's
# utf8mb4_nopad_bin (MySQL 8: utf8mb4_0900_bin, which the migration picks there instead).
KeyText = sa.String(255).with_variant(
    mysql.VARCHAR(255, charset="utf8mb4", collation="utf8mb4_nopad_bin"), "mysql", "mariadb"
)

LongText = sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb")
LongBytes = sa.LargeBinary().with_variant(mysql.MEDIUMBLOB(), "mysql", "mariadb")
# PostgreSQL keeps a row's MinHash band keys in the row, under a GIN index; elsewhere the column
# stays NULL and the keys are rows of simstore_minhash (see band_keys_in_row)
BandKeyArray = sa.LargeBinary().with_variant(postgresql.ARRAY(sa.Integer()), "postgresql")
# A MinHash band key is a signed 32-bit value: INT on MySQL/MariaDB (InnoDB stores BIGINT in 8
# bytes; revision 0015), BIGINT elsewhere as first made (SQLite stores it in 4 bytes either way,
# and PostgreSQL keeps band keys in the fingerprint row)
BandKey = sa.BigInteger().with_variant(mysql.INTEGER(), "mysql", "mariadb")

BAND_COLUMNS = ("b0", "b1", "b2", "b3")

# The SimHash band indexes of simstore_fingerprints: (name, columns, dialect options).
# Covering: a band lookup, its window filter and the fingerprint come from the index alone. b0
# and b2 lead the pairs (b0, b1) and (b2, b3): one index serves both a 16-bit band lookup and a
# 32-bit pair lookup (simstore.policy.probes, the pair plan). Partial (SQLite, PostgreSQL: MySQL
# has no
# partial indexes, so there they hold every row): only rows with ``simhash_indexed``, and that
# column is in the index because SQLite answers from a partial index alone only when every
# column the query names is in it.
SIMHASH_INDEXED = "simhash_indexed"
SIMHASH_BAND_INDEXES: tuple[tuple[str, tuple[str, ...], dict[str, Any]], ...] = tuple(
    (
        f"ix_simstore_fingerprints_{'_'.join(bands)}",
        (*bands, "ns_id", "part", "fp", SIMHASH_INDEXED),
        {
            "postgresql_include": ["id"],
            "sqlite_where": sa.text(f"{SIMHASH_INDEXED} = 1"),
            "postgresql_where": sa.text(SIMHASH_INDEXED),
        },
    )
    for bands in (("b0", "b1"), ("b1",), ("b2", "b3"), ("b3",))
)

namespaces = sa.Table(
    "simstore_namespaces",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", KeyText, nullable=False, unique=True),
    sa.Column("preset_name", sa.String(64), nullable=False),
    sa.Column("preset_version", sa.Integer, nullable=False),
    sa.Column("preset_params", sa.Text, nullable=False),
    sa.Column("band_layout", sa.String(16), nullable=False),
    sa.Column("partition_seconds", sa.Integer, nullable=False),
    sa.Column("created_with", sa.String(32), nullable=False),
    sa.Column("created_at", Timestamp, nullable=False),
    # bumped by every write transaction on SQLite and MySQL: taking this row's lock is the mutex
    sa.Column("write_count", sa.BigInteger, nullable=False, server_default="0"),
    # whether any row was kept without a MinHash signature (from a fingerprint, under another
    # policy, or before signatures existed): only then must MinHash queries look up SimHash bands
    # too. It only ever turns true.
    sa.Column("unsigned_rows", sa.Boolean, nullable=False, server_default=sa.true()),
    # the MinHash scheme (simstore.text.minhash.SCHEME) its signatures and band keys were made with
    sa.Column("minhash_scheme", sa.String(64), nullable=False),
    # the policy and every parameter, canonical JSON (simstore.policy.policies.Policy.recipe); NULL
    # for a namespace of simstore 0.3 with unsigned rows, until a store opens it and records one
    sa.Column("policy", sa.Text, nullable=True),
    # ids are never reused (SQLite needs AUTOINCREMENT for that: revision 0011): a store opened
    # before a drop must never reach a namespace created after it (simstore.storage.locking)
    sqlite_autoincrement=True,
    mysql_charset="utf8mb4",
    mysql_collate="utf8mb4_bin",
)

fingerprints = sa.Table(
    "simstore_fingerprints",
    metadata,
    sa.Column("id", RowId, primary_key=True, autoincrement=True),
    sa.Column("ns_id", sa.Integer, nullable=False),
    sa.Column("key", KeyText, nullable=False),
    # the unsigned fingerprint as a signed BIGINT (two's complement)
    sa.Column("fp", sa.BigInteger, nullable=False),
    *(sa.Column(band, sa.Integer, nullable=False) for band in BAND_COLUMNS),
    sa.Column("added_at", Timestamp, nullable=False),
    # time partition: floor(seconds since the epoch / partition length), for retention
    sa.Column("part", sa.Integer, nullable=False),
    # the normalised text, kept only for texts a verification policy may need to compare exactly:
    # rows written before revision 0014 (never written since; see packed_text)
    sa.Column("text", LongText, nullable=True),
    # the MinHash signature (simstore.text.minhash) under the default verification policy, else NULL
    sa.Column("signature", sa.LargeBinary, nullable=True),
    # PostgreSQL: the signature's distinct band keys (integer[], GIN-indexed), else NULL
    sa.Column("band_keys", BandKeyArray, nullable=True),
    # whether SimHash band lookups find the row: exactly the rows without a signature (a signed
    # row is found by its MinHash band keys), so that the band indexes hold no signed row
    sa.Column(SIMHASH_INDEXED, sa.Boolean, nullable=False, server_default=sa.true()),
    # the same text since revision 0014, zlib-compressed UTF-8 (pack_text, kept_text_of)
    sa.Column("packed_text", LongBytes, nullable=True),
    sa.UniqueConstraint("key", "ns_id", name="uq_simstore_fingerprints_key"),
    *(sa.Index(name, *columns, **options) for name, columns, options in SIMHASH_BAND_INDEXES),
    sa.Index("ix_simstore_fingerprints_part", "part", "ns_id"),
    mysql_charset="utf8mb4",
    mysql_collate="utf8mb4_bin",
)

# The duplicates' decisions (a kept text's row in simstore_fingerprints is the record of the add
# that kept it; rows with inserted true are older versions' kept ones): decision_log reads both.
decisions = sa.Table(
    "simstore_decisions",
    metadata,
    sa.Column("id", RowId, primary_key=True, autoincrement=True),
    sa.Column("ns_id", sa.Integer, nullable=False),
    sa.Column("key", KeyText, nullable=False),
    sa.Column("fp", sa.BigInteger, nullable=False),
    sa.Column("decided_at", Timestamp, nullable=False),
    sa.Column("part", sa.Integer, nullable=False),
    sa.Column("inserted", sa.Boolean, nullable=False),
    sa.Column("duplicate_of", KeyText, nullable=True),
    sa.Column("distance", sa.SmallInteger, nullable=True),
    # which exact measure confirmed the duplicate, and its score (NULL: decided by distance alone)
    sa.Column("measure", sa.String(16), nullable=True),
    sa.Column("score", sa.Float, nullable=True),
    sa.UniqueConstraint("key", "ns_id", name="uq_simstore_decisions_key"),
    sa.Index("ix_simstore_decisions_part", "part", "ns_id"),
    sa.Index("ix_simstore_decisions_duplicate_of", "duplicate_of", "ns_id"),
    mysql_charset="utf8mb4",
    mysql_collate="utf8mb4_bin",
)

# The GIN index over simstore_fingerprints.band_keys, PostgreSQL's only: the migration makes it
# (fastupdate off: a pending list would be flushed inside some unlucky add), and the model
# comparisons leave it out, since no other dialect has it.
POSTGRESQL_BAND_KEY_INDEX = "ix_simstore_fingerprints_band_keys"


def band_keys_in_row(dialect: sa.Dialect) -> bool:
    """Whether this dialect keeps MinHash band keys in the fingerprint row (PostgreSQL: an array
    under a GIN index, whose compressed entries cost a fraction of 16 heap tuples and their
    B-tree entries) rather than as rows of ``simstore_minhash`` (SQLite, MySQL/MariaDB)."""
    return dialect.name == "postgresql"


# MinHash-LSH band keys of the fingerprints that have a signature, on SQLite and MySQL (empty on
# PostgreSQL: band_keys_in_row): one row per distinct key of each such fingerprint (16 at most;
# 32-bit values: BandKey). The primary key answers "which rows of this namespace have band key k"
# from the index alone (SQLite keeps the table as that index: WITHOUT ROWID). The retention
# window is checked on the fingerprint rows the keys lead to, so the keys carry no partition.
# There is no other index: purges and removals recompute a row's band keys from its stored
# signature and delete them by primary key (simstore.storage.maintenance).
minhash_keys = sa.Table(
    "simstore_minhash",
    metadata,
    sa.Column("band_key", BandKey, nullable=False),
    sa.Column("ns_id", sa.Integer, nullable=False),
    sa.Column("fp_id", sa.BigInteger, nullable=False),
    sa.PrimaryKeyConstraint("band_key", "ns_id", "fp_id", name="pk_simstore_minhash"),
    sqlite_with_rowid=False,
    mysql_charset="utf8mb4",
    mysql_collate="utf8mb4_bin",
)


# database-wide settings (name -> text value), e.g. PostgreSQL partitioning
# (simstore.storage.partitions)
# The store's memory of boilerplate (simstore.policy.boilerplate): how many texts added in a time
# partition carried a line (its simstore.text.edges.segment_key); written only under a policy that
# keeps the memory, purged with the partition
segments = sa.Table(
    "simstore_segments",
    metadata,
    sa.Column("segment", sa.BigInteger, nullable=False),
    sa.Column("ns_id", sa.Integer, nullable=False),
    sa.Column("part", sa.Integer, nullable=False),
    sa.Column("texts", sa.Integer, nullable=False),
    sa.PrimaryKeyConstraint("segment", "ns_id", "part", name="pk_simstore_segments"),
    sa.Index("ix_simstore_segments_part", "part", "ns_id"),
    sqlite_with_rowid=False,  # (the key is the table: no rowid B-tree beside it)
)

settings = sa.Table(
    "simstore_settings",
    metadata,
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
    mysql_charset="utf8mb4",
    mysql_collate="utf8mb4_bin",
)


class FingerprintRow(NamedTuple):
    """A ``simstore_fingerprints`` row as simstore inserts it (every column but ``id``)."""

    ns_id: int
    key: str
    fp: int  # signed (simstore.text.encoding.to_signed)
    b0: int
    b1: int
    b2: int
    b3: int
    added_at: datetime
    part: int
    text: str | None
    signature: bytes | None
    band_keys: list[int] | None  # PostgreSQL only (band_keys_in_row)
    simhash_indexed: bool  # signature is None
    packed_text: bytes | None  # pack_text(the comparison text)


def pack_text(text: str | None) -> bytes | None:
    """A comparison text as ``packed_text`` stores it."""
    return None if text is None else zlib.compress(text.encode("utf-8"), 6)


def stored_text_of(text: str | None, packed: bytes | None) -> str | None:
    """The text a row stores, from its ``text`` and ``packed_text`` columns (at most one is set:
    ``text`` by simstore before revision 0014); lines set aside as boilerplate are marked in it
    (``simstore.text.edges.marked``)."""
    if packed is not None:
        return zlib.decompress(packed).decode("utf-8")
    return text


def kept_text_of(text: str | None, packed: bytes | None) -> str | None:
    """The normalised text of a row (``stored_text_of``, whole: its marks removed)."""
    stored = stored_text_of(text, packed)
    return stored.replace(MARK, "") if stored is not None and MARK in stored else stored


def kept_as_decisions(*where: Any) -> sa.Select[Any]:
    """The kept rows (``where`` on ``fingerprints``) as the decisions that kept them, in the
    columns of ``simstore_decisions`` (the row's id, its moment as ``decided_at``)."""
    return sa.select(
        fingerprints.c.id,
        fingerprints.c.ns_id,
        fingerprints.c.key,
        fingerprints.c.fp,
        fingerprints.c.added_at.label("decided_at"),
        fingerprints.c.part,
        sa.true().label("inserted"),
        sa.null().label("duplicate_of"),
        sa.null().label("distance"),
        sa.null().label("measure"),
        sa.null().label("score"),
    ).where(*where)


def decision_log(ns_id: Any) -> sa.Subquery:
    """Every decision of a namespace in the columns of ``simstore_decisions``: that table's rows
    and each kept row as the decision that kept it (ids come from two tables: do not join on
    them)."""
    logged = sa.select(decisions).where(decisions.c.ns_id == ns_id)
    kept = kept_as_decisions(fingerprints.c.ns_id == ns_id)
    return sa.union_all(logged, kept).subquery("decision_log")


class DecisionRow(NamedTuple):
    """A decision as a ``simstore_decisions`` row (every column but ``id``); a kept add's is
    its kept row (``kept_as_decisions``)."""

    ns_id: int
    key: str
    fp: int
    decided_at: datetime
    part: int
    inserted: bool
    duplicate_of: str | None
    distance: int | None
    measure: str | None
    score: float | None


class BandKeyRow(NamedTuple):
    """A ``simstore_minhash`` row."""

    band_key: int
    ns_id: int
    fp_id: int


ROWS: dict[str, type[FingerprintRow] | type[DecisionRow] | type[BandKeyRow]] = {
    fingerprints.name: FingerprintRow,
    decisions.name: DecisionRow,
    minhash_keys.name: BandKeyRow,
}
"""The named row of each table simstore inserts into (a test checks them against the columns)."""
